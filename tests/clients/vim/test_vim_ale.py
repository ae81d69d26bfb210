"""Vim 9 + ALE (Debian) end to end against the real server (issue 13).

The user's config is tests/clients/vim/vimrc (Debian's ALE and
``editor-clients/vim/budgetlens.vim``); flow.vim opens files, hovers and picks code actions
from ALE's menu callback like a user. ALE has no code lenses: nothing is asserted for them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.clients.editors import run_in_examples, views, vim_command
from tests.clients.nvim.nvim_harness import write_report_budget

HERE = Path(__file__).resolve().parent
PIPELINE = "pipelines/long_report.yaml"
MARKER = "<<<CUT>>>"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_in_examples(tmp_path_factory, "vim-ale", vim_command(HERE, "flow.vim"))


def _ok(results: dict[str, Any], section: str) -> None:
    """The section of flow.vim ran to its end (flow.vim records a failed step's error)."""
    assert section not in results["errors"], results["errors"][section]


def _step_line(workspace: str, step: str) -> int:
    lines = (Path(workspace) / PIPELINE).read_text().splitlines()
    return next(i for i, line in enumerate(lines) if f"id: {step}" in line)


@pytest.mark.nvim
def test_it_is_vim_9_with_ale(results: dict[str, Any]) -> None:
    assert results["vim_version"] >= 900
    assert results["ale_loaded"] == 1


@pytest.mark.nvim
def test_bl050_on_the_over_budget_step(results: dict[str, Any]) -> None:
    _ok(results, "Diagnostics")
    line = _step_line(results["workspace"], "write_report") + 1  # ALE's lines are 1-based
    assert any(d["code"] == "BL050" and d["lnum"] == line and d["type"] == "E"
               and "write_report" in d["text"] and d["linter"] == "budgetlens"
               for d in results["pipeline_diagnostics"]), results["pipeline_diagnostics"]


@pytest.mark.nvim
def test_hover_is_plain_text_without_markdown_markup(results: dict[str, Any]) -> None:
    _ok(results, "Hover")
    budget = write_report_budget()
    text = "\n".join(results["hover"]).replace(",", "")
    assert f"= {budget['total']} / {budget['window']}" in text, text
    # ALE asks for plaintext and shows what it gets as is: no raw markdown
    assert "**" not in text and "`" not in text, text


@pytest.mark.nvim
def test_bl050_quick_fix_is_offered_applied_and_clears_the_error(
        results: dict[str, Any]) -> None:
    _ok(results, "QuickFix")
    budget = write_report_budget()
    clamped = budget["context"] - (budget["total"] - budget["window"])
    offered = results["quickfixes_bl050"]
    assert any(t.startswith(f"Clamp max_context_tokens 6144 → {clamped}") for t in offered), \
        offered
    assert results["applied_bl050"].startswith("Clamp max_context_tokens")
    after = results["pipeline_after_fix"]
    assert not [d for d in after["diagnostics"] if d["code"] == "BL050"]
    assert f"  max_context_tokens: {clamped}" in after["lines"]


@pytest.mark.nvim
def test_bl200_and_its_quick_fix_shows_the_hierarchy_context(results: dict[str, Any]) -> None:
    _ok(results, "Json")
    bl200 = [d for d in results["json_diagnostics"] if d["code"] == "BL200"]
    assert bl200 and "truncated JSON" in bl200[0]["text"]
    assert any("hierarchy" in t.lower() for t in results["quickfixes_bl200"])
    shown = results["hierarchy"]
    # ALE declares no window/showDocument: the server's window/showMessage, which ALE shows
    # in its preview window when it is longer than a line
    text = shown["messages"] + "\n".join(shown["preview"])
    assert MARKER in text
    assert "in the middle of this sentence and the JSON is truncated" in text
    files = [f for f in views(results["tmp"]) if f.is_file()]
    assert any(MARKER in f.read_text(encoding="utf-8") for f in files), files
