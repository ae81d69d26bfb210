"""The committed config.json schema has the multi-model keys (issue 32): a model's own
``serving`` block, ``gateway`` (the names of the gateway table) and ``variant``. Where the
check reads them, the schema and ``budgetlens check`` agree; an unknown gateway is a
warning for the check (BL068) and a schema error for an editor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from budgetlens_cli.main import main
from tests.core.contract.helpers import make_workspace

ROOT = Path(__file__).resolve().parents[2]
CONFIG_COPY = ROOT / "shared_core" / "budgetlens" / "contract" / "config.schema.json"

# a step whose input (10 + 1,000 + 128 = 1,138) is below every window and gateway cap here
PIPELINE = """\
settings:
  max_context_tokens: 1000
steps:
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 500
"""

# config.json documents, and whether `budgetlens check` takes them without an error (by
# hand from docs/models.md: a model's block needs limits > 0)
CONFIGS: list[tuple[str, dict[str, Any], bool]] = [
    ("a gateway", {"model": "gpt-4o", "gateway": "github-models"}, True),
    ("a variant", {"model": "claude-sonnet-4-5", "variant": "1m"}, True),
    ("a model's serving block", {"model": "gpt-4o",
                                 "serving": {"gpt-4o": {"max_model_len": 32768}}}, True),
    ("a zero limit in a model's block", {"model": "gpt-4o",
                                         "serving": {"gpt-4o": {"num_ctx": 0}}}, False),
    ("a quoted limit in a model's block", {"model": "gpt-4o",
                                           "serving": {"gpt-4o": {"num_ctx": "8192"}}}, False),
]


def _schema() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(json.loads(CONFIG_COPY.read_text("utf-8")))


@pytest.fixture(autouse=True)
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    return tmp_path


def _check(config: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    make_workspace(Path("ws"), config={**config, "format_overhead_tokens": 10},
                   pipelines={"p.yaml": PIPELINE}, prompts={"sys.txt": ""})
    main(["check", "ws", "--no-cache", "--format", "json"])
    found: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["diagnostics"]
    return found


@pytest.mark.parametrize(("config", "valid"), [(c, v) for _, c, v in CONFIGS],
                         ids=[name for name, _, _ in CONFIGS])
def test_the_config_schema_and_check_agree_on_the_multi_model_keys(
        capsys: pytest.CaptureFixture[str], config: dict[str, Any], valid: bool) -> None:
    errors = [d for d in _check(config, capsys) if d["severity"] == "error"]
    assert (not errors) is valid, errors
    assert _schema().is_valid(config) is valid


def test_an_unknown_gateway_is_a_schema_error_and_a_check_warning(
        capsys: pytest.CaptureFixture[str]) -> None:
    config = {"model": "gpt-4o", "gateway": "github-model"}
    found = _check(config, capsys)
    assert [(d["code"], d["severity"]) for d in found] == [("BL068", "warning")]
    [error] = _schema().iter_errors(config)
    assert list(error.absolute_path) == ["gateway"]
    assert "github-models" in error.message
