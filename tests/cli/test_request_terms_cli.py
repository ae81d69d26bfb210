"""The request terms of a step (issue 32) in every output of ``budgetlens check``: the
table, JSON and SARIF. Expected counts follow OpenAI's cookbook, written out in
tests/core/contract/test_request_terms.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetlens_cli.main import main
from tests.core.contract.test_request_terms import WEATHER, cookbook_tools, workspace


def _pipeline(tmp_path: Path) -> Path:
    # gpt-4o: window 128,000; 127,500 context + 500 output + 100 margin + tools is over
    return workspace(tmp_path, [{"id": "a", "max_output_tokens": 500, "tools": [WEATHER]},
                                {"id": "b", "model": "claude-sonnet-4-0",
                                 "max_output_tokens": 8000, "reasoning": 2048}],
                     context=127500)


def test_json_shows_each_term_with_its_provenance(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    pipe = _pipeline(tmp_path)
    main(["check", "--no-cache", "--format", "json", str(pipe)])
    steps = {s["step"]: s for s in json.loads(capsys.readouterr().out)["steps"]}
    tools = cookbook_tools([WEATHER])
    assert steps["a"]["budget"]["tools"] == tools
    assert steps["a"]["budget"]["fixed"] == tools
    assert steps["a"]["terms"]["tools"]["source"] == "tools: 1 definition, OpenAI cookbook rule"
    assert "reasoning" not in steps["a"]["budget"]
    assert steps["b"]["budget"]["reasoning"] == 2048
    assert steps["b"]["budget"]["total"] == 127500 + 8000 + 100  # inside the output
    assert "thinking.budget_tokens" in steps["b"]["terms"]["reasoning"]["source"]


def test_text_and_sarif_name_the_terms(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    pipe = _pipeline(tmp_path)
    tools = cookbook_tools([WEATHER])
    main(["check", "--no-cache", str(pipe)])
    text = capsys.readouterr().out
    assert f"  a: tools {tools:,} (tools: 1 definition, OpenAI cookbook rule)" in text
    assert "  b: reasoning 2,048 inside the output" in text
    # claude-sonnet-4-0: window 200,000; 195,000 + 8,000 + 100 is over
    claude = workspace(tmp_path / "c", [{"id": "b", "max_output_tokens": 8000,
                                         "reasoning": 2048}], model="claude-sonnet-4-0",
                       context=195000)
    main(["check", "--no-cache", "--format", "sarif", str(pipe), str(claude)])
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    messages = [r["message"]["text"] for r in results if r["ruleId"] == "BL050"]
    assert any(f"format overhead 0 + tools {tools})" in m for m in messages), messages
    assert any("output 8000 (reasoning 2048 inside it) + margin 100 = 203100" in m
               for m in messages), messages
