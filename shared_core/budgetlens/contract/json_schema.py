"""The JSON Schema of pipeline files, generated from the pipeline's pydantic models.

Editors use it for completion and checks of pipeline YAML (Red Hat's YAML extension through the
VS Code extension's ``yamlValidation``, or a ``# yaml-language-server: $schema=...`` comment).
A copy is committed as ``budgetlens/contract/pipeline.schema.json`` (and in the VS Code
extension); a test fails when the copies drift from what this module generates.
"""

from __future__ import annotations

import json
from typing import Any

from budgetlens.assembly.unified_budget import UnifiedContextBudgetPolicy
from budgetlens.contract.pipeline import Pipeline
from budgetlens.models.gateways import gateway_names

#: draft-07: what editors' YAML/JSON language services support best. pydantic's output only uses
#: keywords of that draft (``$defs`` is reached through ``$ref`` JSON pointers).
SCHEMA_DIALECT = "http://json-schema.org/draft-07/schema#"


def pipeline_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft-07) of a budgetlens pipeline file."""
    body = Pipeline.model_json_schema(mode="validation")
    _add_injection(body)
    _add_step_terms(body)
    schema: dict[str, Any] = {"$schema": SCHEMA_DIALECT}
    schema.update(body)
    schema["title"] = "budgetlens pipeline"
    schema["description"] = (
        "A budgetlens pipeline file (pipelines/*.yaml): an optional parent to extend, the budget"
        " settings, and the steps. For every call_model step, fixed + history +"
        " max_context_tokens + output + safety margin must fit the model_context_window of"
        " config.json. Keys not listed here are allowed and kept.")
    return schema


#: The name of the injection policy in ``$defs``.
INJECTION_DEF = "InjectionPolicy"


def _add_injection(body: dict[str, Any]) -> None:
    """Describe ``settings.injection`` with the injection policy model.

    The block is validated by ``pipeline_injection`` (codes BL100-BL105, at the exact key),
    not by the ``Settings`` model, so it is added here: the policy's own schema (every key
    with its description, type, bounds and default; no other keys) as ``$defs`` entry, and
    ``settings.injection`` as that policy or null.
    """
    policy = UnifiedContextBudgetPolicy.model_json_schema(mode="validation")
    policy.pop("$defs", None)  # pragma: no cover - the policy has no nested models
    policy["title"] = "settings.injection"
    policy["description"] = (
        "The unified injection budget policy: how much of the context left before injection"
        " knowledge cards and bucket content may take together, and how it splits between"
        " them. Keys merge along extends, the child winning; unknown keys are errors.")
    body.setdefault("$defs", {})[INJECTION_DEF] = policy
    settings = body["$defs"]["Settings"]
    settings["properties"]["injection"] = {
        "anyOf": [{"$ref": f"#/$defs/{INJECTION_DEF}"}, {"type": "null"}],
        "default": None,
        "description": "The unified injection budget policy of the pipeline's steps"
                       " (knowledge cards and bucket content); see"
                       " docs/injection-and-packing.md."}


_SERVING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The step's server limits; they replace config.json's serving for this"
                   " step (see docs/models.md).",
    "properties": {
        "max_model_len": {"type": "integer", "exclusiveMinimum": 0,
                          "description": "vLLM --max-model-len of the step's server."},
        "num_ctx": {"type": "integer", "exclusiveMinimum": 0,
                    "description": "Ollama num_ctx of the step's server."}}}

#: A step's own terms, read by the check (not the Step shape): limits.step_terms and
#: step_plan.py.
_STEP_TERMS: dict[str, dict[str, Any]] = {
    "model": {"type": "string", "description": "The step's own model (registry name): its"
                                               " window, output ceiling and tokenizer."},
    "variant": {"type": "string", "description": "A variant of the step's model with other"
                                                 " limits (1m: Claude's 1M-context beta)."},
    "serving": _SERVING_SCHEMA,
    "gateway": {"type": "string", "description": "The gateway of the step's request"
                                                 " (github-models): its per-request input cap"
                                                 " is checked (BL067)."},
    "use_context": {"type": "boolean", "description": "false: the step is not charged the"
                                                      " pipeline's max_context_tokens."},
    "max_context_tokens": {"type": "integer", "minimum": 0,
                           "description": "The step's own context budget, in place of"
                                          " settings.max_context_tokens."},
    "max_history_tokens": {"type": "integer", "minimum": 0,
                           "description": "The step's own history budget (use_history), in"
                                          " place of settings.max_history_tokens."},
}

#: ``"2% + 128"``: a percentage of the step's input plus tokens (contract/margin.py).
MARGIN_PATTERN = r"^\s*(\d+(\.\d+)?\s*%\s*(\+\s*\d+\s*)?|\d+\s*)$"


def _add_step_terms(body: dict[str, Any]) -> None:
    """Describe a step's own terms (kept keys the check reads) and the text form of
    ``budget_safety_margin_tokens``."""
    step = body["$defs"]["Step"]["properties"]
    for key, schema in _STEP_TERMS.items():
        step.setdefault(key, schema)
    margin = body["$defs"]["Settings"]["properties"]["budget_safety_margin_tokens"]
    margin["anyOf"].insert(1, {"type": "string", "pattern": MARGIN_PATTERN})
    margin["description"] = (
        "Tokens kept free in every step (default 128): a number, or \"P% + C\" (P percent"
        " of the step's input fixed + history + context, rounded up, plus C tokens).")


def add_config_terms(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` (the JSON Schema of the WorkspaceConfig shape) with the keys config.json
    has beside it for multi-model pipelines: ``gateway`` (the names of the gateway table),
    ``variant``, and a model's own ``serving`` block (a key of ``serving`` whose value is a
    mapping is checked as ``ServingLimits``). For the config.json schema."""
    props = body["properties"]
    props.setdefault("gateway", {
        "type": "string", "enum": gateway_names(),
        "description": "The gateway every step's request goes through: its per-request input"
                       " cap for the model is checked (BL067); see docs/models.md."})
    props.setdefault("variant", {
        "type": "string",
        "description": "A variant of model with other limits (1m: Claude Sonnet 4 / 4.5 with"
                       " the 1M-context beta header); see docs/models.md."})
    body["$defs"]["ServingLimits"]["additionalProperties"] = {
        "if": {"type": "object"}, "then": {"$ref": "#/$defs/ServingLimits"},
        "description": "A model name holds that model's own serving block; it wins over the"
                       " workspace-wide keys for that model."}
    return body


def pipeline_json_schema_text() -> str:
    """The schema as the committed file holds it: 2-space indented JSON and a final newline."""
    return json.dumps(pipeline_json_schema(), indent=2, ensure_ascii=False) + "\n"


__all__ = ["SCHEMA_DIALECT", "add_config_terms", "pipeline_json_schema",
           "pipeline_json_schema_text"]
