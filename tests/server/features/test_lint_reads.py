"""The lint pass after each analysis (``diagnostics.linted``) reads what it must and no more:
a pipeline the background index has not checked yet is not read for comments (it has nothing
to suppress), and a checked pipeline is read again only once it is checked again. Counted
with the index's disk reads, in a workspace written here: each pipeline over budget, its
BL050 suppressed by a comment."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from budgetlens_lsp.features import diagnostics
from budgetlens_lsp.features.state import Analysis
from budgetlens_lsp.workspace_index import (
    SMALL_RECHECK,
    IndexMode,
    Snapshot,
    WorkspaceIndex,
)
from tests.workspaces.lint import suppressed_workspace


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The disk reads of the index, by path (each a stat, and a read if it changed)."""
    counted: Counter[str] = Counter()
    real = WorkspaceIndex._disk_text

    def disk_text(self: WorkspaceIndex, path: str) -> str | None:
        counted[path] += 1
        return real(self, path)
    monkeypatch.setattr(WorkspaceIndex, "_disk_text", disk_text)
    return counted


COUNT = SMALL_RECHECK + 40  # a whole re-check of more than this goes to the background


def _workspace(tmp_path: Path) -> tuple[str, list[str]]:
    root, _, paths = suppressed_workspace(tmp_path, COUNT)
    return root, paths


def test_a_pipeline_not_checked_yet_is_not_read_for_comments(
        tmp_path: Path, reads: Counter[str]) -> None:
    root, paths = _workspace(tmp_path)
    opened = paths[-1]
    analysis = Analysis()
    snap = Snapshot(overlay={opened: Path(opened).read_text()}, roots=(root,),
                    background_slice=0.0)  # the open pipeline now, the rest in the background
    diagnostics.update(analysis, snap, frozenset({opened}), IndexMode.FULL)
    unchecked = [p for p in paths if p not in analysis.index.reports]
    assert len(unchecked) >= 40  # the background has them still to do
    assert [p for p in unchecked if reads[p]] == []


def test_a_checked_pipeline_is_read_again_only_once_checked_again(
        tmp_path: Path, reads: Counter[str]) -> None:
    root, paths = _workspace(tmp_path)
    opened = paths[0]
    analysis = Analysis()
    text = Path(opened).read_text()
    diagnostics.update(analysis, Snapshot(overlay={opened: text}, roots=(root,)),
                       frozenset({opened}), IndexMode.FULL)  # everything checked at once
    others = paths[1:]
    assert all(p in analysis.index.reports for p in others)
    before = {p: reads[p] for p in others}
    for version in range(3):  # three edits of the open pipeline
        edited = text.replace("2000", str(3000 + version))
        diagnostics.update(analysis, Snapshot(overlay={opened: edited}, roots=(root,)),
                           frozenset({opened}), IndexMode.INCREMENTAL)
    assert {p: reads[p] for p in others} == before
    # each other pipeline's comment suppressed its BL050 and none is unused
    shown = diagnostics.collect(analysis.index)
    assert not any(d.code in ("BL050", "BL080") for p in others for d in shown.get(p, []))
