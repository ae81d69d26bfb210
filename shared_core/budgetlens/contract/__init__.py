"""The budget contract: does every ``call_model`` step of a pipeline fit the model's window?

Owns the workspace files (``config.json``, pipeline YAML with ``extends`` chains, prompt
templates), their validation (with near-miss key detection), the policy (fail_fast or
auto_clamp), the check itself (every term with where it comes from), the clamp arithmetic
within floors and the clamp plan as verified text edits, the per-step injection split, the
cache of results by input fingerprint, and the pipeline JSON Schema.

Where things are: ``results`` (the result types: ``Term``, ``StepBudget``,
``PipelineReport``, ...), ``enums`` (term, output and policy sources), ``discovery``
(pipeline files and the config.json a pipeline uses), ``check`` (``check_pipeline``: the
counts and the contract on every check), ``planner`` and ``step_plan`` (what the files alone
decide, kept by the cache: the pipeline's plan and one step's), ``prompt_plan`` and
``prompt_edit`` (a prompt file in its own format: its step plan and its output-limit edit),
``terms`` (a step's tools, response schema and reasoning), ``lint`` (selection and
suppression comments), ``advice`` (what the messages
tell the user to change), ``clamp`` (the clamp arithmetic and shared floors), ``plan`` (the
clamp plan as text edits), ``injection_settings`` (the ``settings.injection`` block),
``config``, ``pipeline`` (their fields declared once in ``shapes``), ``template``,
``policy``, ``validation``, ``near_miss``, ``cache``, ``json_schema``, ``report_text`` (the
step table both adapters print: ``budget_table``), ``step_text`` (a step's sum as one line,
in a diagnostic and in a lens), ``escape`` (each output format's rule for
strings from files), ``diff`` (``budget_diff`` of two sides), ``limits`` (the window,
ceiling and tokenizer from config.json, the registry and ``serving``), ``models_file`` (the
workspace's and user's ``models.json`` over the registry), ``targets`` (the target matrix)
and ``frozen`` (``quick_init``: the frozen dataclasses a check makes set their fields in one
call).
"""
