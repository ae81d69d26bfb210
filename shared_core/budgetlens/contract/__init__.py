"""The budget contract: does every ``call_model`` step of a pipeline fit the model's window?

Owns the workspace files (``config.json``, pipeline YAML with ``extends`` chains, prompt
templates), their validation (with near-miss key detection), the policy (fail_fast or
auto_clamp), the check itself (every term with where it comes from), the clamp arithmetic
within floors and the clamp plan as verified text edits, the per-step injection split, the
cache of results by input fingerprint, and the pipeline JSON Schema.

Where things are: ``model`` (the result types: ``Term``, ``StepBudget``, ``PipelineReport``,
...), ``enums`` (term, output and policy sources), ``discovery`` (pipeline files and the
config.json a pipeline uses), ``check`` (``check_pipeline``: one function per term),
``advice`` (what the messages tell the user to change), ``clamp`` (the clamp arithmetic and
shared floors), ``plan`` (the clamp plan as text edits), ``injection`` (the
``settings.injection`` block), ``config``, ``pipeline`` (their fields declared once in
``shapes``), ``template``, ``policy``, ``validation``, ``near_miss``, ``cache``,
``json_schema`` and ``report_text``.
"""
