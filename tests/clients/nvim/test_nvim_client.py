"""Real-client test: Neovim's own LSP client (0.7.2 here) against `budgetlens serve`.

tests/clients/nvim/client_flow.lua drives headless Neovim with ``vim.lsp.start_client`` and
``vim.lsp.buf_attach_client`` (no plugin) and records what Neovim received; this test asserts
on it. Expected numbers are derived by hand from the example files and the contract
(DESIGN.md §1), with the tokenizer as the independent reference for token counts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from .nvim_harness import HERE, run_in_examples, write_report_budget

PIPELINE = "pipelines/long_report.yaml"
TRUNCATED = "responses/truncated.json"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_in_examples(
        tmp_path_factory, "nvim-client", HERE / "client_flow.lua",
        extra_env={"BUDGETLENS_NVIM_PIPELINE": PIPELINE, "BUDGETLENS_NVIM_TRUNCATED": TRUNCATED})


@pytest.mark.nvim
def test_neovim_07_receives_the_budget_diagnostic_on_the_over_budget_step(
        results: dict[str, Any]) -> None:
    assert results["nvim_version"]["major"] == 0 and results["nvim_version"]["minor"] >= 7
    budget = write_report_budget()
    assert budget["total"] > budget["window"]  # the example is over budget, by hand
    error = results["budget_error"]
    assert re.fullmatch(r"BL\d{3}", error["code"])
    assert error["severity"] == 1
    # the range is the over-budget step's id in long_report.yaml
    lines = results["lines_before"]
    start, end = error["range"]["start"], error["range"]["end"]
    assert start["line"] == end["line"]
    assert lines[start["line"]][start["character"]:end["character"]] == "write_report"
    message = error["message"].replace(",", "")
    assert f"= {budget['total']} > {budget['window']}" in message
    assert f"over by {budget['total'] - budget['window']}" in message
    # Neovim itself shows it (vim.diagnostic), on the same line
    assert any(d["lnum"] == start["line"] and d["severity"] == 1
               for d in results["shown_diagnostics"])


@pytest.mark.nvim
def test_neovim_07_gets_the_step_budget_code_lenses(results: dict[str, Any]) -> None:
    budget = write_report_budget()
    titles = [lens["title"].replace(",", "") for lens in results["lenses"]
              if isinstance(lens["title"], str)]
    over = budget["total"] - budget["window"]
    expected = (f"fixed {budget['fixed']} + history 0 + context {budget['context']} + "
                f"output {budget['output']} + margin {budget['margin']} = {budget['total']} / "
                f"{budget['window']} ({over} over)")
    assert expected in titles, titles
    lines = results["lines_before"]
    write_report_line = next(i for i, line in enumerate(lines) if "id: write_report" in line)
    lens_lines = {lens["line"] for lens in results["lenses"]
                  if isinstance(lens["title"], str) and expected in lens["title"].replace(",", "")}
    assert lens_lines == {write_report_line}


@pytest.mark.nvim
def test_neovim_07_applies_the_quick_fix_and_the_diagnostic_clears(
        results: dict[str, Any]) -> None:
    budget = write_report_budget()
    chosen = results["chosen_action"]
    assert "max_context_tokens" in chosen["title"]
    # clamping the context by exactly the overrun makes the worst step fit (by hand)
    clamped = budget["context"] - (budget["total"] - budget["window"])
    before, after = results["lines_before"], results["lines_after"]
    changed = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    assert len(before) == len(after)
    assert changed == [(before[i], before[i].replace("6144", str(clamped)))
                       for i, line in enumerate(before) if "6144" in line]
    assert all(not (d["severity"] == 1 and d["code"] == results["budget_error"]["code"])
               for d in results["diagnostics_after"])
    assert results["errors_shown_after"] == 0


@pytest.mark.nvim
def test_neovim_07_runs_the_hierarchy_command_on_the_truncated_json(
        results: dict[str, Any]) -> None:
    text = (Path(results["workspace"]) / TRUNCATED).read_text(encoding="utf-8")
    lines = text.split("\n")
    info = [d for d in results["json_diagnostics"] if d["severity"] == 3]
    assert info, results["json_diagnostics"]
    assert "document.sections[1].content" in info[0]["message"]
    hierarchy = results["hierarchy"]
    assert hierarchy["cut"]["path"] == "document.sections[1].content"
    # the file ends mid-string: the cut is at the very end of its last line (by hand)
    assert hierarchy["cut"]["line"] == len(lines) - 1
    assert hierarchy["cut"]["character"] == len(lines[-1].encode("utf-16-le")) // 2
    assert hierarchy["jsonParsingSuccess"] is True
    marked = hierarchy["text"]
    assert "<<<CUT>>>" in marked
    before_marker = marked.rsplit("<<<CUT>>>", 1)[0]
    assert before_marker.rstrip().endswith("in the middle of this sentence and the JSON is"
                                           " truncated")
    assert '"title": "My Document"' in marked or "My Document" in marked
    complete = json.loads(hierarchy["completePart"])
    assert complete["document"]["sections"][1]["content"].endswith("JSON is truncated")
