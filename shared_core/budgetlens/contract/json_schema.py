"""The JSON Schemas of pipeline files and of config.json, generated from their models.

Editors use them for completion and checks: pipeline YAML through Red Hat's YAML extension
(the VS Code extension's ``yamlValidation``, or a ``# yaml-language-server: $schema=...``
comment), config.json through its ``"$schema"`` key. Copies are committed as
``budgetlens/contract/pipeline.schema.json`` (and in the VS Code extension) and
``budgetlens/contract/config.schema.json``; a test fails when a copy drifts from what this
module generates. Each schema's ``$id`` is the address of its committed copy on the
repository's site, so SchemaStore's catalog can point at it (schemas/catalog.json,
docs/schemas.md).
"""

from __future__ import annotations

import json
from typing import Any

from budgetlens.assembly.unified_budget import UnifiedContextBudgetPolicy
from budgetlens.contract.config import WorkspaceConfig
from budgetlens.contract.pipeline import Pipeline
from budgetlens.models.gateways import gateway_names

#: draft-07: what editors' YAML/JSON language services support best. pydantic's output only uses
#: keywords of that draft (``$defs`` is reached through ``$ref`` JSON pointers).
SCHEMA_DIALECT = "http://json-schema.org/draft-07/schema#"
#: Where the committed copies are served from (raw files of the repository's main branch):
#: each schema's ``$id`` and the ``url`` of its SchemaStore catalog entry.
SCHEMA_BASE_URL = ("https://raw.githubusercontent.com/budgetlens/budgetlens/main/"
                   "shared_core/budgetlens/contract/")
PIPELINE_SCHEMA_ID = SCHEMA_BASE_URL + "pipeline.schema.json"
CONFIG_SCHEMA_ID = SCHEMA_BASE_URL + "config.schema.json"


def pipeline_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft-07) of a budgetlens pipeline file."""
    body = Pipeline.model_json_schema(mode="validation")
    _add_request_terms(body)
    _add_injection(body)
    _add_step_terms(body)
    schema: dict[str, Any] = {"$schema": SCHEMA_DIALECT, "$id": PIPELINE_SCHEMA_ID}
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
        "type": ["string", "null"], "enum": [*gateway_names(), None],
        "description": "The gateway every step's request goes through: its per-request input"
                       " cap for the model is checked (BL067); null: none (a GitHub Models"
                       " prompt file otherwise goes through github-models); see"
                       " docs/models.md."})
    props.setdefault("variant", {
        "type": "string",
        "description": "A variant of model with other limits (1m: Claude Sonnet 4 / 4.5 with"
                       " the 1M-context beta header); see docs/models.md."})
    body["$defs"]["ServingLimits"]["additionalProperties"] = {
        "if": {"type": "object"}, "then": {"$ref": "#/$defs/ServingLimits"},
        "description": "A model name holds that model's own serving block; it wins over the"
                       " workspace-wide keys for that model."}
    return body


#: The name of a ``{file: ...}`` term in ``$defs``.
TERM_FILE_DEF = "TermFile"

_TOOL = {
    "type": "object",
    "description": "A tool definition, OpenAI's shape: {type: function, function: {name,"
                   " description, parameters}}.",
    "properties": {
        "type": {"const": "function", "description": "The kind of tool: function."},
        "function": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "description": "The function's name."},
            "description": {"type": "string", "description": "What the function does."},
            "parameters": {"type": "object",
                           "description": "The function's parameters, a JSON Schema."}},
            "description": "The function the model may call."}}}


def _add_request_terms(body: dict[str, Any]) -> None:
    """Describe a step's request terms, read by the check rather than the ``Step`` model
    (contract/terms.py): ``tools``, ``response_schema`` (inline or ``{file: ...}``) and
    ``reasoning`` (a thinking budget)."""
    body.setdefault("$defs", {})[TERM_FILE_DEF] = {
        "type": "object", "additionalProperties": False, "required": ["file"],
        "title": "file",
        "description": "A JSON file inside the workspace, relative to this pipeline file.",
        "properties": {"file": {"type": "string", "minLength": 1,
                                "description": "Path of the JSON file, relative to this"
                                               " pipeline file."}}}
    ref = {"$ref": f"#/$defs/{TERM_FILE_DEF}"}
    step = body["$defs"]["Step"]["properties"]
    step["tools"] = {
        "anyOf": [{"type": "array", "items": _TOOL}, ref, {"type": "null"}], "default": None,
        "description": "Tool definitions sent with the request (a list, or {file:"
                       " tools.json}); their tokens count into the fixed part (OpenAI by its"
                       " cookbook's rule, other models ≈)."}
    step["response_schema"] = {
        "anyOf": [ref, {"type": "object"}, {"type": "null"}], "default": None,
        "description": "The response's JSON Schema (inline, or {file: schema.json}); its"
                       " tokens count into the fixed part (≈)."}
    step["reasoning"] = {
        "anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "default": None,
        "description": "Thinking budget in tokens: inside the output limit for Claude"
                       " (>= 1024, below it), beside it for OpenAI reasoning models and"
                       " Gemini (added to the total)."}


def pipeline_json_schema_text() -> str:
    """The schema as the committed file holds it: 2-space indented JSON and a final newline."""
    return json.dumps(pipeline_json_schema(), indent=2, ensure_ascii=False) + "\n"


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft-07) of a workspace's config.json."""
    body = add_config_terms(WorkspaceConfig.model_json_schema(mode="validation"))
    schema: dict[str, Any] = {"$schema": SCHEMA_DIALECT, "$id": CONFIG_SCHEMA_ID}
    schema.update(body)
    properties = schema["properties"]
    properties["$schema"] = {
        "type": "string", "description": "The JSON Schema of this file, for editors (budgetlens"
                                         " ignores the key)."}
    # read outside the shape, by the planner (BL069 when it is not a non-empty text)
    properties["models_file"] = {
        "type": "string", "minLength": 1, "pattern": "\\S", "default": "models.json",
        "description": "A models.json with corrections and additions to the model registry,"
                       " relative to config.json (default: models.json next to it)."}
    # the misspelling the reader accepts (an alias of development)
    properties["developement"] = {
        **properties["development"], "title": "Developement",
        "description": "The misspelling of development that budgetlens accepts too."}
    serving = schema["$defs"]["ServingLimits"]
    serving["description"] = ("The limits of the server that runs the model; they may be"
                              " lower than the model's own window. A key that names a model"
                              " holds that model's own block; other unknown keys are kept.")
    schema["title"] = "budgetlens config.json"
    schema["description"] = (
        "The config.json of a budgetlens workspace: the model's limits (from model, the"
        " bundled registry, or typed numbers) and the workspace's settings. The nearest"
        " config.json at or above a pipeline applies to it. Keys not listed here are allowed"
        " and kept.\nhttps://github.com/budgetlens/budgetlens/blob/main/docs/pipeline-format.md#configjson")
    # a window is needed: typed, or from the registry entry of model
    schema["anyOf"] = [{"required": ["model_context_window"]}, {"required": ["model"]}]
    return schema


def config_json_schema_text() -> str:
    """The config.json schema as the committed file holds it (as ``pipeline_json_schema_text``)."""
    return json.dumps(config_json_schema(), indent=2, ensure_ascii=False) + "\n"


__all__ = ["CONFIG_SCHEMA_ID", "PIPELINE_SCHEMA_ID", "SCHEMA_DIALECT", "add_config_terms",
           "config_json_schema", "config_json_schema_text", "pipeline_json_schema",
           "pipeline_json_schema_text"]
