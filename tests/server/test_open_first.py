"""The first update checks the open pipelines before it searches the workspace.

A server starts, the editor opens a pipeline, and the first diagnostics should not wait for
a walk of the whole workspace (nor for reading its .gitignore files). So the first update,
when every open file is a pipeline, checks only those and leaves the search to the next
update. That next update checks the rest, not the open ones again. Anything else searches
first, as before: a whole re-check asked for, no background work, or an open prompt (its
diagnostics come from the pipelines that read it)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from budgetlens_lsp import workspace_index
from budgetlens_lsp.workspace_index import IndexMode, Snapshot, WorkspaceIndex, norm

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ALL = {"base.yaml", "chat.yaml", "long_report.yaml", "multilingual.yaml", "support.yaml"}


class Calls:
    """Counts the searches of the roots and the checks, by pipeline name."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.searches = 0
        self.checks: Counter[str] = Counter()
        find, check = workspace_index.find_pipelines, workspace_index.check_pipeline

        def counted_find(*args: Any, **kwargs: Any) -> Any:
            self.searches += 1
            return find(*args, **kwargs)

        def counted_check(path: str, **kwargs: Any) -> Any:
            self.checks[Path(path).name] += 1
            return check(path, **kwargs)
        monkeypatch.setattr(workspace_index, "find_pipelines", counted_find)
        monkeypatch.setattr(workspace_index, "check_pipeline", counted_check)


def _workspace(tmp_path: Path) -> tuple[Path, tuple[str, ...]]:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES, root)
    return root, (norm(root),)


def _opened(root: Path, roots: tuple[str, ...], name: str) -> tuple[str, Snapshot]:
    """The path of the pipeline ``name``, and a session's snapshot with it open."""
    opened = norm(root / "pipelines" / name)
    return opened, Snapshot(overlay={opened: Path(opened).read_text("utf-8")}, roots=roots,
                            background_slice=60.0)


def _names(index: WorkspaceIndex) -> set[str]:
    return {Path(p).name for p in index.reports}


def test_the_open_pipeline_is_checked_before_the_search(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, roots = _workspace(tmp_path)
    calls = Calls(monkeypatch)
    index = WorkspaceIndex()
    opened, snap = _opened(root, roots, "long_report.yaml")
    first = index.update(snap, frozenset([opened]), IndexMode.INCREMENTAL)
    assert calls.searches == 0
    assert _names(index) == {"long_report.yaml"} and first.more
    assert "BL050" in {d.code for d in index.reports[opened].diagnostics}

    second = index.update(snap, frozenset(), IndexMode.INCREMENTAL)
    assert calls.searches == 1 and not second.more
    assert _names(index) == ALL
    assert calls.checks["long_report.yaml"] == 1  # current already: not checked again
    third = index.update(snap, frozenset(), IndexMode.INCREMENTAL)
    assert calls.searches == 1 and not third.more  # searched once


def test_the_search_round_counts_the_open_pipeline_as_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, roots = _workspace(tmp_path)
    index = WorkspaceIndex()
    opened, snap = _opened(root, roots, "chat.yaml")
    index.update(snap, frozenset([opened]), IndexMode.INCREMENTAL)
    reports: list[tuple[int, int]] = []
    index.update(snap, frozenset(), IndexMode.INCREMENTAL, progress=lambda d, t:
                 reports.append((d, t)))
    assert reports[0] == (1, 5) and reports[-1] == (5, 5)


def test_an_edit_before_the_search_is_checked_with_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, roots = _workspace(tmp_path)
    calls = Calls(monkeypatch)
    index = WorkspaceIndex()
    opened = norm(root / "pipelines/long_report.yaml")
    text = Path(opened).read_text("utf-8")
    index.update(Snapshot(overlay={opened: text}, roots=roots, background_slice=60.0),
                 frozenset([opened]), IndexMode.INCREMENTAL)
    edited = text.replace("max_output_tokens: 2048", "max_output_tokens: 1024")
    assert edited != text
    index.update(Snapshot(overlay={opened: edited}, roots=roots, background_slice=60.0),
                 frozenset([opened]), IndexMode.INCREMENTAL)
    assert calls.searches == 1 and _names(index) == ALL
    assert calls.checks["long_report.yaml"] == 2  # the edit is checked
    assert "BL050" not in {d.code for d in index.reports[opened].diagnostics}


@pytest.mark.parametrize("case", ["whole re-check asked", "no background", "open prompt",
                                  "nothing open"])
def test_otherwise_the_first_update_searches_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    root, roots = _workspace(tmp_path)
    calls = Calls(monkeypatch)
    index = WorkspaceIndex()
    opened = norm(root / ("prompts/answer.txt" if case == "open prompt"
                          else "pipelines/long_report.yaml"))
    overlay = {} if case == "nothing open" else {opened: Path(opened).read_text("utf-8")}
    snap = Snapshot(overlay=overlay, roots=roots,
                    background_slice=None if case == "no background" else 60.0)
    mode = IndexMode.FULL if case == "whole re-check asked" else IndexMode.INCREMENTAL
    results = index.update(snap, frozenset(overlay), mode)
    assert calls.searches == 1 and _names(index) == ALL and not results.more


def test_a_failure_is_told_once_naming_the_first_file_in_path_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, roots = _workspace(tmp_path)

    def broken(path: str, **kwargs: Any) -> Any:
        raise RuntimeError("broken")
    monkeypatch.setattr(workspace_index, "check_pipeline", broken)
    index = WorkspaceIndex()
    opened, snap = _opened(root, roots, "long_report.yaml")
    index.update(snap, frozenset([opened]), IndexMode.INCREMENTAL)
    assert set(index.failures) == {opened}
    assert index.take_messages() == []  # held until the search
    index.update(snap, frozenset(), IndexMode.INCREMENTAL)
    assert {Path(p).name for p in index.failures} == ALL
    [message] = index.take_messages()
    assert message.startswith("budgetlens could not check base.yaml: RuntimeError: broken.")
