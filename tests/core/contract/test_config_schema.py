"""The JSON Schema of config.json (``budgetlens schema --config``): committed, never drifting,
and describing the multi-model keys of issue 32 (a model's own serving block, gateway,
variant) so an editor completes and checks them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from budgetlens_cli.main import main

ROOT = Path(__file__).resolve().parents[3]
COPY = ROOT / "shared_core" / "budgetlens" / "contract" / "config.schema.json"


def _printed(capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["schema", "--config"]) == 0
    return capsys.readouterr().out


def test_committed_copy_equals_the_command_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert COPY.read_text("utf-8") == _printed(capsys), (
        "regenerate with `budgetlens schema --config -o"
        " shared_core/budgetlens/contract/config.schema.json`")


GOOD = {"model": "gpt-4o", "gateway": "github-models", "variant": "1m",
        "serving": {"num_ctx": 4096, "llama3.1:8b": {"num_ctx": 8192}}}


@pytest.mark.parametrize(("doc", "valid"), [
    (GOOD, True),
    ({"model": "gpt-4o", "gateway": "github-model"}, False),  # not in the gateway table
    ({"serving": {"llama3.1:8b": {"num_ctx": 0}}}, False),  # a model's block: limits > 0
    ({"serving": {"llama3.1:8b": {"num_ctx": "8192"}}}, False),
    ({"serving": {"note": "kept"}}, True),  # other keys are allowed
    ({"model_context_window": 8192, "retries": 3}, True),
])
def test_the_schema_checks_the_multi_model_keys(doc: dict[str, Any], valid: bool) -> None:
    schema = json.loads(COPY.read_text("utf-8"))
    errors = list(jsonschema.Draft7Validator(schema).iter_errors(doc))
    assert (not errors) is valid, [e.message for e in errors]
    assert {"gateway", "variant", "serving", "models_file"} <= set(schema["properties"])
