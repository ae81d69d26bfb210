"""Emacs 28 + lsp-mode 8.0 (Debian's emacs-nox, elpa-lsp-mode, elpa-yaml-mode) in batch mode,
end to end against the real server (issue 13).

The user's config is editor-clients/emacs/budgetlens-lsp-mode.el; lsp_mode_flow.el opens
files, reads the code lenses lsp-mode shows, hovers and picks code actions from lsp-mode's menu
like a user.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.clients.editors import emacs_command, run_in_examples, views
from tests.clients.nvim.nvim_harness import write_report_budget

from .test_emacs_eglot import MARKER, ok, step_line

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_in_examples(tmp_path_factory, "emacs-lsp-mode",
                           emacs_command(HERE / "lsp_mode_flow.el"))


@pytest.mark.nvim
def test_it_is_emacs_28_with_lsp_mode_8(results: dict[str, Any]) -> None:
    ok(results, "diagnostics")
    assert results["emacs_version"].startswith("28.")
    assert results["lsp_mode_version"][:2] == [8, 0]
    assert Path(results["root"]) == Path(results["workspace"])


@pytest.mark.nvim
def test_bl050_in_flymake(results: dict[str, Any]) -> None:
    ok(results, "diagnostics")
    line = step_line(results["workspace"], "write_report")
    assert any(d["code"] == "BL050" and d["line"] == line and d["type"] == ":error"
               and "write_report" in d["text"] for d in results["pipeline_diagnostics"]), \
        results["pipeline_diagnostics"]


@pytest.mark.nvim
def test_hover_as_displayed_has_the_budget_math_and_no_markup(results: dict[str, Any]) -> None:
    ok(results, "hover")
    budget = write_report_budget()
    text = results["hover"].replace(",", "")
    assert f"= {budget['total']} / {budget['window']}" in text, text
    assert "**" not in text and "`" not in text, text


@pytest.mark.nvim
def test_lenses_shown_and_fresh_after_the_fix_without_saving(results: dict[str, Any]) -> None:
    ok(results, "lenses")
    ok(results, "quickfix")
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
def test_bl050_quick_fix_is_offered_applied_and_clears_the_error(
        results: dict[str, Any]) -> None:
    ok(results, "quickfix")
    budget = write_report_budget()
    clamped = budget["context"] - (budget["total"] - budget["window"])
    offered = results["quickfixes_bl050"]
    assert any(t.startswith(f"Clamp max_context_tokens 6144 → {clamped}") for t in offered), \
        offered
    after = results["pipeline_after_fix"]
    assert not [d for d in after["diagnostics"] or [] if d["code"] == "BL050"]
    assert f"  max_context_tokens: {clamped}" in after["lines"]


@pytest.mark.nvim
def test_bl200_and_its_quick_fix_shows_the_hierarchy_context(results: dict[str, Any]) -> None:
    ok(results, "json")
    assert Path(results["json_root"]) == Path(results["workspace"])
    bl200 = [d for d in results["json_diagnostics"] if d["code"] == "BL200"]
    assert bl200 and "truncated JSON" in bl200[0]["text"]
    assert any("hierarchy" in t.lower() for t in results["quickfixes_bl200"])
    shown = results["hierarchy"]
    # lsp-mode 8.0 declares no showDocument: the server's window/showMessage
    text = "\n".join(shown["messages"] or []) + (shown["text"] or "")
    assert MARKER in text
    assert "in the middle of this sentence and the JSON is truncated" in text
    files = [f for f in views(results["tmp"]) if f.is_file()]
    assert any(MARKER in f.read_text(encoding="utf-8") for f in files), files
