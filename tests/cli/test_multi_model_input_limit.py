"""A model's input limit (``max_input``, BL054) with the multi-model terms (issue 32).

The registry's ``max_input`` belongs to the model's own window. A variant (``variant: 1m``)
has another window and the variant table records no input limit, so none applies to it.
A step's own ``serving`` that raises the window above config.json's lets the input limit
matter again. A gateway's input cap (BL067) counts what is sent, not a thinking budget.
Empty prompts and ``format_overhead_tokens: 10``; every sum is by hand in
each test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from budgetlens_cli.main import main
from tests.core.contract.helpers import make_workspace

LONG = """\
settings:
  max_context_tokens: 300000
  budget_safety_margin_tokens: 1000
steps:
  - id: long
    type: call_model
    prompt_key: sys
{extra}    max_output_tokens: 8000
"""


def _check(root: Path, config: dict[str, Any], extra: str,
           capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
           models: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    make_workspace(root, config={**config, "format_overhead_tokens": 10},
                   pipelines={"p.yaml": LONG.format(extra=extra)}, prompts={"sys.txt": ""})
    if models is not None:
        (root / "models.json").write_text(json.dumps({"models": models}), "utf-8")
    monkeypatch.chdir(root)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "no-user-config"))
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    status = main(["check", ".", "--no-cache", "--format", "json"])
    return status, json.loads(capsys.readouterr().out)


def _codes(data: dict[str, Any]) -> list[str]:
    return [d["code"] for d in data["diagnostics"]]


def test_a_config_variant_drops_the_registrys_input_limit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # claude-sonnet-4-5: window 200,000, max_input 200,000 in the registry; the 1m variant's
    # window is 1,000,000. Input 10 + 300,000 + 1,000 = 301,010; total + 8,000 = 309,010.
    status, data = _check(tmp_path, {"model": "claude-sonnet-4-5", "variant": "1m"}, "",
                          capsys, monkeypatch)
    step = data["steps"][0]
    assert (step["budget"]["total"], step["budget"]["window"]) == (309010, 1000000)
    assert "max_input" not in step["budget"]
    assert _codes(data) == []
    assert status == 0


def test_a_step_variant_drops_a_corrected_input_limit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the workspace's models.json gives claude-sonnet-4-5 an input limit of 190,000 (below
    # its 200,000 window): it binds the step's own model, not its 1m variant
    models = {"claude-sonnet-4-5": {"max_input": 190000}}
    extra = "    model: claude-sonnet-4-5\n    variant: 1m\n"
    status, data = _check(tmp_path, {"model": "gpt-4o"}, extra, capsys, monkeypatch, models)
    step = data["steps"][0]
    assert (step["budget"]["total"], step["budget"]["window"]) == (309010, 1000000)
    assert "max_input" not in step["budget"]
    assert _codes(data) == []
    assert status == 0


def test_the_corrected_input_limit_binds_without_the_variant(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the same step without variant: window 200,000, so it cannot fit (309,010) and its
    # input 301,010 is above 190,000: BL054 says so (the control of the test above)
    models = {"claude-sonnet-4-5": {"max_input": 190000}}
    status, data = _check(tmp_path, {"model": "gpt-4o"}, "    model: claude-sonnet-4-5\n",
                          capsys, monkeypatch, models)
    step = data["steps"][0]
    assert (step["budget"]["window"], step["budget"]["max_input"]) == (200000, 190000)
    assert "BL054" in _codes(data)
    assert status == 1


def test_a_step_serving_above_configs_brings_the_input_limit_back(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # gpt-5: window 400,000, max_input 272,000. config.json's server runs it at 200,000
    # (the input limit is moot there); the step's own server at 320,000 (it wins), where
    # the input 301,010 is 29,010 above 272,000 though the total 309,010 fits.
    config = {"model": "gpt-5", "serving": {"max_model_len": 200000}}
    extra = "    serving: {max_model_len: 320000}\n"
    status, data = _check(tmp_path, config, extra, capsys, monkeypatch)
    step = data["steps"][0]
    assert (step["budget"]["total"], step["budget"]["window"]) == (309010, 320000)
    assert step["budget"]["max_input"] == 272000
    bl054 = [d for d in data["diagnostics"] if d["code"] == "BL054"]
    assert len(bl054) == 1
    assert "sends 301,010 input tokens" in bl054[0]["message"]
    assert "lower it by 29,010" in bl054[0]["message"]
    assert status == 1


def test_a_thinking_budget_is_not_input_at_the_gateway(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # o1-mini behind GitHub Models: 4,000 input tokens a request. The step sends
    # 10 + 3,000 + 100 = 3,110; its thinking budget 2,000 is spent beside the output
    # (total 3,110 + 1,000 + 2,000 = 6,110), not sent: no BL067.
    pipeline = """\
settings:
  max_context_tokens: 3000
  budget_safety_margin_tokens: 100
steps:
  - id: think
    type: call_model
    prompt_key: sys
    reasoning: 2000
    max_output_tokens: 1000
"""
    make_workspace(tmp_path, config={"model": "o1-mini", "gateway": "github-models",
                                     "format_overhead_tokens": 10},
                   pipelines={"p.yaml": pipeline}, prompts={"sys.txt": ""})
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    status = main(["check", ".", "--no-cache", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    step = data["steps"][0]
    assert (step["budget"]["total"], step["budget"]["reasoning"]) == (6110, 2000)
    assert step["gateway_cap"]["value"] == 4000
    assert _codes(data) == []
    assert status == 0
