"""The pipeline JSON Schema: generated from the core's models, committed twice, never drifting.

The committed copies are what editors load (the VS Code extension's ``yamlValidation``, a
``# yaml-language-server: $schema=...`` comment), so they must equal what ``budgetlens schema``
prints; and the schema must accept and reject the same documents as the models it came from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import ValidationError

from budgetlens.contract.pipeline import Pipeline
from budgetlens_cli.main import main

ROOT = Path(__file__).resolve().parents[3]
CORE_COPY = ROOT / "shared_core" / "budgetlens" / "contract" / "pipeline.schema.json"
EXTENSION_COPY = ROOT / "editor-clients" / "vscode" / "schemas" / "pipeline.schema.json"
REGENERATE = "budgetlens schema -o {}"


def schema_cli_output(capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["schema"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("copy", [CORE_COPY, EXTENSION_COPY], ids=["core", "vscode"])
def test_committed_copy_equals_budgetlens_schema_output(
        copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    printed = schema_cli_output(capsys)
    committed = copy.read_text(encoding="utf-8")
    assert committed == printed, (
        f"{copy.relative_to(ROOT)} drifted from the models: regenerate it with "
        f"`{REGENERATE.format(copy.relative_to(ROOT))}`")


def test_output_option_writes_the_same_text(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "pipeline.schema.json"
    assert main(["schema", "--output", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == schema_cli_output(capsys)


def test_unwritable_output_is_a_usage_error(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--output", str(tmp_path / "no" / "such" / "dir" / "s.json")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_extension_contributes_the_committed_schema_for_pipeline_files() -> None:
    manifest = json.loads((EXTENSION_COPY.parents[1] / "package.json").read_text("utf-8"))
    entries = manifest["contributes"]["yamlValidation"]
    assert {e["url"] for e in entries} == {"./schemas/pipeline.schema.json"}
    assert any("pipelines/*.yaml" in e["fileMatch"] for e in entries)


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(CORE_COPY.read_text(encoding="utf-8"))
    return schema


def test_schema_is_a_valid_draft7_schema_describing_the_pipeline_keys() -> None:
    schema = _schema()
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(schema)
    assert set(schema["properties"]) >= {"extends", "settings", "steps"}
    settings = schema["$defs"]["Settings"]["properties"]
    assert set(settings) >= {"max_context_tokens", "max_history_tokens",
                             "budget_safety_margin_tokens"}
    step = schema["$defs"]["Step"]["properties"]
    assert set(step) >= {"type", "prompt_key", "user_parts", "max_output_tokens", "max_tokens",
                         "use_history"}
    # every property an editor completes carries a description
    for props in (schema["properties"], settings, step):
        assert all(p.get("description") for p in props.values())


def test_every_example_pipeline_is_valid() -> None:
    validator = jsonschema.Draft7Validator(_schema())
    pipelines = sorted((ROOT / "examples" / "pipelines").glob("*.yaml"))
    assert pipelines, "examples/pipelines/*.yaml is empty"
    for path in pipelines:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        errors = [e.message for e in validator.iter_errors(doc)]
        assert errors == [], f"{path.name}: {errors}"


# Documents and whether a pipeline may look like that (decided by hand from DESIGN.md §1).
CASES: list[tuple[str, Any, bool]] = [
    ("full", {"extends": "base.yaml",
              "settings": {"max_context_tokens": 4096, "max_history_tokens": 0,
                           "budget_safety_margin_tokens": 128, "retrieval_top_k": 8},
              "steps": [{"id": "answer", "type": "call_model", "prompt_key": "answer",
                         "user_parts": {"template": "Q: {question}"},
                         "max_output_tokens": 512, "use_history": True},
                        {"id": "fetch", "type": "retrieve", "top_k": 3}]}, True),
    ("empty mapping", {}, True),
    ("zero context", {"settings": {"max_context_tokens": 0}}, False),
    ("negative history", {"settings": {"max_history_tokens": -1}}, False),
    ("context as a string", {"settings": {"max_context_tokens": "4096"}}, False),
    ("context as a float", {"settings": {"max_context_tokens": 4096.5}}, False),
    ("steps as a mapping", {"steps": {"answer": {"type": "call_model"}}}, False),
    ("output limit zero", {"steps": [{"type": "call_model", "max_output_tokens": 0}]}, False),
    ("use_history as a string", {"steps": [{"type": "call_model", "use_history": "yes"}]},
     False),
    ("extends as a list", {"extends": ["a.yaml"]}, False),
    ("template as a number", {"steps": [{"user_parts": {"template": 5}}]}, False),
]


@pytest.mark.parametrize(("doc", "valid"), [(d, v) for _, d, v in CASES],
                         ids=[name for name, _, _ in CASES])
def test_schema_and_models_agree_on_what_is_valid(doc: Any, valid: bool) -> None:
    schema_ok = jsonschema.Draft7Validator(_schema()).is_valid(doc)
    try:
        Pipeline.model_validate(doc)
        model_ok = True
    except ValidationError:
        model_ok = False
    assert (schema_ok, model_ok) == (valid, valid)


# settings.injection: the unified injection policy, described key by key (completion and
# validation in yaml-language-server), with the same verdicts as the BL100-BL102 checks.
INJECTION_KEYS = {"max_injection_tokens_absolute", "max_injection_tokens_pct_of_context",
                  "knowledge_card_share_default", "bucket_content_share_default",
                  "procedure_sub_budget_pct", "interaction_policy_sub_budget_pct",
                  "min_knowledge_card_tokens", "min_bucket_tokens", "schema_version"}


def test_settings_injection_is_described_key_by_key() -> None:
    schema = _schema()
    injection = schema["$defs"]["Settings"]["properties"]["injection"]
    assert injection["description"].startswith("The unified injection budget policy")
    assert injection["anyOf"] == [{"$ref": "#/$defs/InjectionPolicy"}, {"type": "null"}]
    policy = schema["$defs"]["InjectionPolicy"]
    assert policy["additionalProperties"] is False
    assert set(policy["properties"]) == INJECTION_KEYS
    assert all(p.get("description") for p in policy["properties"].values())
    assert policy["properties"]["max_injection_tokens_absolute"] == {
        "default": 6000, "minimum": 0, "type": "integer",
        "title": "Max Injection Tokens Absolute",
        "description": "Total budget for all injected context (knowledge cards + bucket"
                       " content), at most."}
    assert policy["properties"]["knowledge_card_share_default"]["maximum"] == 1


GOOD_INJECTION = """\
settings:
  max_context_tokens: 3000
  injection:
    max_injection_tokens_absolute: 2000
    max_injection_tokens_pct_of_context: 0.2
    knowledge_card_share_default: 0.4
    bucket_content_share_default: 0.6
    min_knowledge_card_tokens: 300
    min_bucket_tokens: 300
    schema_version: 1
"""


@pytest.mark.parametrize(("block", "code", "where"), [
    ("    max_injection_tokens_absolut: 2000\n", "BL101", []),
    ("    knowledge_card_share_default: 1.5\n", "BL102", ["knowledge_card_share_default"]),
    ("    min_bucket_tokens: '300'\n", "BL102", ["min_bucket_tokens"]),
    ("    min_bucket_tokens: -1\n", "BL102", ["min_bucket_tokens"]),
    ("    schema_version: 2\n", "BL102", ["schema_version"]),
])
def test_schema_and_the_injection_check_agree_on_injection_blocks(
        block: str, code: str, where: list[str]) -> None:
    from budgetlens.contract.injection_settings import check_injection_text

    validator = jsonschema.Draft7Validator(_schema())
    good = yaml.safe_load(GOOD_INJECTION)
    assert list(validator.iter_errors(good)) == []
    assert check_injection_text("p.yaml", GOOD_INJECTION).diagnostics == ()
    bad_text = "settings:\n  max_context_tokens: 3000\n  injection:\n" + block
    error = jsonschema.exceptions.best_match(validator.iter_errors(yaml.safe_load(bad_text)))
    assert error is not None
    assert list(error.absolute_path) == ["settings", "injection", *where]
    assert [d.code for d in check_injection_text("p.yaml", bad_text).diagnostics] == [code]


# A step's request terms (issue 32; contract/terms.py): read by the check, not the Step
# model, so described here for completion and validation in yaml-language-server.
TERM_CASES: list[tuple[str, Any, bool]] = [
    ("inline tools", {"tools": [{"type": "function", "function": {
        "name": "f", "description": "d", "parameters": {"type": "object"}}}]}, True),
    ("tools file", {"tools": {"file": "tools.json"}}, True),
    ("tools as a string", {"tools": "tools.json"}, False),
    ("tools file with another key", {"tools": {"file": "t.json", "path": "x"}}, False),
    ("a tool without a name", {"tools": [{"type": "function", "function": {}}]}, False),
    ("inline schema", {"response_schema": {"type": "object", "properties": {}}}, True),
    ("schema file", {"response_schema": {"file": "schema.json"}}, True),
    ("schema as a list", {"response_schema": []}, False),
    ("reasoning", {"reasoning": 2048}, True),
    ("negative reasoning", {"reasoning": -1}, False),
    ("reasoning as a string", {"reasoning": "high"}, False),
]


@pytest.mark.parametrize(("step", "valid"), [(s, v) for _, s, v in TERM_CASES],
                         ids=[name for name, _, _ in TERM_CASES])
def test_step_request_terms_are_described_and_checked(step: Any, valid: bool) -> None:
    schema = _schema()
    props = schema["$defs"]["Step"]["properties"]
    assert all(props[k]["description"] for k in ("tools", "response_schema", "reasoning"))
    doc = {"steps": [{"id": "a", "type": "call_model", **step}]}
    assert jsonschema.Draft7Validator(schema).is_valid(doc) is valid
