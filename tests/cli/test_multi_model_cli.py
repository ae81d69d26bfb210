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
from tests.workspaces.models import enter, model_workspace

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
    model_workspace(tmp_path, CONFIG, PIPELINE)
    return enter(tmp_path, monkeypatch)


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


CLAMPED = """\
settings:
  max_context_tokens: 127000
  budget_safety_margin_tokens: "1% + 10"
steps:
  - id: router
    type: call_model
    model: llama3.1:8b
    prompt_key: sys
    max_context_tokens: 7000
    max_output_tokens: 1500
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 2000
"""


def test_clamp_write_fits_each_step_in_its_own_window(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    make_workspace(tmp_path, config={k: v for k, v in CONFIG.items() if k != "gateway"},
                   pipelines={"p.yaml": CLAMPED}, prompts={"sys.txt": ""})
    monkeypatch.chdir(tmp_path)
    # router: 10 + 7000 + 1500 + (10 + ceil(1% of 7,010) = 81) = 8,591 > 8,192 (by 399);
    # answer: 10 + 127,000 + 2,000 + (10 + ceil(1,270.1) = 1,281) = 130,291 > 128,000.
    # The router keeps its own context 7,000: its output goes to 8192 - 10 - 7000 - 81 =
    # 1,101. The answer needs context c with 10 + c + 2000 + 10 + ceil(c / 100) <= 128,000:
    # the clamp keeps the margin it had (1,281), so c = 128000 - 10 - 2000 - 1281 = 124,709
    assert main(["clamp", "pipelines/p.yaml", "--write", "--policy", "auto_clamp"]) == 0
    text = (tmp_path / "pipelines" / "p.yaml").read_text("utf-8")
    assert "  max_context_tokens: 124709\n" in text
    assert "    max_context_tokens: 7000\n    max_output_tokens: 1101\n" in text
    capsys.readouterr()
    assert main(["check", ".", "--no-cache", "--policy", "auto_clamp"]) == 0
    out = capsys.readouterr().out
    # after: router 10 + 7000 + 1101 + 81 = 8,192; answer margin 10 + ceil(1,247.19) = 1,258,
    # 10 + 124,709 + 2,000 + 1,258 = 127,977
    assert "0 not fitting): 0 errors, 0 warnings" in out
    assert "  answer        10         0    124709      2000      1258    127977" in out
