"""``budgetlens check`` on a multi-model pipeline (issue 32), text and JSON: a Llama router
limited by its own ``num_ctx`` and charged no context, a gpt-4o answer step with its own
context behind the GitHub Models gateway. Empty prompts and format overhead 10, so by hand:
router 10 + 0 + 300 + 90 = 400 in 8,192; answer 10 + 9,000 + 2,000 + 90 = 11,100 in 128,000,
and its input 10 + 9,000 + 90 = 9,100 is 1,100 over the gateway's 8,000."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetlens_cli.main import main
from tests.core.contract.helpers import make_workspace

CONFIG = {"model": "gpt-4o", "format_overhead_tokens": 10, "gateway": "github-models",
          "serving": {"llama3.1:8b": {"num_ctx": 8192}}}
PIPELINE = """\
settings:
  max_context_tokens: 7000
  budget_safety_margin_tokens: 90
steps:
  - id: router
    type: call_model
    model: llama3.1:8b
    prompt_key: sys
    use_context: false
    max_output_tokens: 300
  - id: answer
    type: call_model
    prompt_key: sys
    max_context_tokens: 9000
    max_output_tokens: 2000
"""
SOURCE = "https://github.com/actions/ai-inference/issues/128"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    make_workspace(tmp_path, config=CONFIG, pipelines={"p.yaml": PIPELINE},
                   prompts={"sys.txt": ""})
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    return tmp_path


def test_text_names_each_steps_window_and_the_gateway_cap(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", ".", "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert ("pipelines/p.yaml:11:9: error[BL067] step 'answer' sends 9,100 input tokens"
            " (fixed 10 + history 0 + context 9,000 + margin 90), above the 8,000-token"
            f" request cap of gateway github-models ({SOURCE}, recorded 2026-12-06)"
            " (over by 1,100)") in out
    rows = [line.split() for line in out.splitlines()
            if line.startswith(("  router ", "  answer "))]
    assert rows == [["router", "10", "0", "0", "300", "90", "400", "8192", "7792", "yes"],
                    ["answer", "10", "0", "9000", "2000", "90", "11100", "128000", "116900",
                     "yes"]]


def test_json_gives_each_term_its_provenance(ws: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", ".", "--no-cache", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    # the router's model has no sourced cap at the gateway: a note at its model, no check
    assert [(d["code"], d["severity"], d["step"]) for d in data["diagnostics"]] == [
        ("BL068", "information", "router"), ("BL067", "error", "answer")]
    assert "has no recorded cap for llama-3.1-8b-instruct" in data["diagnostics"][0]["message"]
    router, answer = data["steps"]
    assert (router["budget"]["window"], router["budget"]["total"]) == (8192, 400)
    assert router["terms"]["window"]["source"].startswith(
        "config.json serving['llama3.1:8b'].num_ctx (below 131072 from model"
        " llama-3.1-8b-instruct")
    assert router["terms"]["context"]["source"] == "use_context: false"
    assert (answer["budget"]["window"], answer["budget"]["total"]) == (128000, 11100)
    assert answer["terms"]["context"]["source"] == "steps[1].max_context_tokens"
    assert answer["gateway_cap"]["value"] == 8000
    assert answer["gateway_cap"]["source"] == \
        f"gateway github-models ({SOURCE}, recorded 2026-12-06)"


def test_text_says_where_a_steps_own_window_comes_from(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", ".", "--no-cache"])
    out = capsys.readouterr().out
    assert ("  router: window 8,192 from config.json serving['llama3.1:8b'].num_ctx (below"
            " 131072 from model llama-3.1-8b-instruct (registry") in out
    assert "  answer: window" not in out  # the pipeline's window, in the table's head line
