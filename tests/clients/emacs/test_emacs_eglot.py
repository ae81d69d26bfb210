"""Emacs 28 + eglot 1.9 (Debian's emacs-nox, elpa-eglot, elpa-yaml-mode) in batch mode, end to
end against the real server (issue 13).

The user's config is editor-clients/emacs/budgetlens-eglot.el; eglot_flow.el opens files,
hovers and picks code actions from eglot's menu like a user. eglot has no code lenses:
nothing is asserted for them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.clients.editors import emacs_command, run_in_examples, views
from tests.clients.nvim.nvim_harness import write_report_budget

HERE = Path(__file__).resolve().parent
PIPELINE = "pipelines/long_report.yaml"
MARKER = "<<<CUT>>>"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_in_examples(tmp_path_factory, "emacs-eglot", emacs_command(HERE / "eglot_flow.el"))


@pytest.fixture(scope="module")
def eglot_root(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """eglot without the project rule of budgetlens-eglot.el: it roots at the file's folder."""
    return run_in_examples(tmp_path_factory, "emacs-eglot-root",
                           emacs_command(HERE / "eglot_flow.el"),
                           extra_env={"BUDGETLENS_EGLOT_NO_PROJECT_RULE": "1"})


def ok(results: dict[str, Any], section: str) -> None:
    """The section of the flow ran to its end (the flow records a failed step's error)."""
    errors = results.get("errors") or {}
    assert section not in errors, errors[section]


def step_line(workspace: str, step: str) -> int:
    lines = (Path(workspace) / PIPELINE).read_text().splitlines()
    return next(i for i, line in enumerate(lines) if f"id: {step}" in line)


@pytest.mark.nvim
def test_it_is_emacs_28_with_eglot_1_9_rooted_at_the_workspace(results: dict[str, Any]) -> None:
    ok(results, "diagnostics")
    assert results["emacs_version"].startswith("28.")
    assert results["eglot_version"] == [1, 9]
    # budgetlens-eglot.el roots the project at config.json's folder (no VCS in the copy)
    assert Path(results["root"]) == Path(results["workspace"])
    assert Path(results["json_root"]) == Path(results["workspace"])


@pytest.mark.nvim
def test_config_found_above_the_folder_eglot_chose_as_root(eglot_root: dict[str, Any]) -> None:
    # issue 13 cause 6: the server finds ../config.json like `budgetlens check` does
    ok(eglot_root, "diagnostics")
    assert Path(eglot_root["root"]) == Path(eglot_root["workspace"]) / "pipelines"
    codes = [d["code"] for d in eglot_root["pipeline_diagnostics"]]
    assert "BL050" in codes and "BL010" not in codes, eglot_root["pipeline_diagnostics"]


@pytest.mark.nvim
def test_bl050_in_flymake(results: dict[str, Any]) -> None:
    ok(results, "diagnostics")
    line = step_line(results["workspace"], "write_report")
    assert any(d["code"] == "BL050" and d["line"] == line and d["type"] == "eglot-error"
               and "write_report" in d["text"] for d in results["pipeline_diagnostics"]), \
        results["pipeline_diagnostics"]


@pytest.mark.nvim
def test_hover_as_displayed_has_the_budget_math_and_no_markup(results: dict[str, Any]) -> None:
    ok(results, "hover")
    budget = write_report_budget()
    text = results["hover"]["visible"].replace(",", "")
    assert f"= {budget['total']} / {budget['window']}" in text, text
    # markdown (eglot asks for it, markdown-mode renders it) or plain text: no raw markup shown
    assert "**" not in text and "`" not in text, text


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
    bl200 = [d for d in results["json_diagnostics"] if d["code"] == "BL200"]
    assert bl200 and "truncated JSON" in bl200[0]["text"]
    assert any("hierarchy" in t.lower() for t in results["quickfixes_bl200"])
    shown = results["hierarchy"]
    # shown through window/showDocument (a buffer visiting the generated file) or
    # window/showMessage (eglot 1.9 has no showDocument)
    text = "\n".join(shown["messages"] or []) + (shown["text"] or "")
    assert MARKER in text
    assert "in the middle of this sentence and the JSON is truncated" in text
    # the whole context is also in a generated file of the per-user cache folder
    files = [f for f in views(results["tmp"]) if f.is_file()]
    assert any(MARKER in f.read_text(encoding="utf-8") for f in files), files
