"""The lint pass after each analysis (``diagnostics.linted``) lints again only the files
whose result may have changed: a pipeline not checked again keeps its result. A pipeline
whose text changed on disk is read and linted again. Counted with the settings' filter, in
a workspace written here: each pipeline over budget, its BL050 suppressed by a comment."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from budgetlens_lsp.features import diagnostics
from budgetlens_lsp.features.state import Analysis
from budgetlens_lsp.workspace_index import IndexMode, Snapshot
from tests.workspaces.lint import SUPPRESSED_PIPELINE, count_filtered, suppressed_workspace

PIPELINE = SUPPRESSED_PIPELINE
COUNT = 8


@pytest.fixture
def filtered(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The files whose diagnostics the lint pass filtered by their settings, how often."""
    return count_filtered(monkeypatch)


def _workspace(tmp_path: Path) -> tuple[str, str, list[str]]:
    return suppressed_workspace(tmp_path, COUNT)


def _codes(analysis: Analysis, path: str) -> list[str]:
    return [d.code for d in diagnostics.collect(analysis.index).get(path, [])]


def test_a_pipeline_not_checked_again_is_not_linted_again(
        tmp_path: Path, filtered: Counter[str]) -> None:
    root, _, paths = _workspace(tmp_path)
    opened, others = paths[0], paths[1:]
    analysis = Analysis()
    text = Path(opened).read_text()
    diagnostics.update(analysis, Snapshot(overlay={opened: text}, roots=(root,)),
                       frozenset({opened}), IndexMode.FULL)
    before = {p: filtered[p] for p in others}
    assert all(before.values())  # each one's BL050 was filtered once
    for version in range(3):  # three edits of the open pipeline
        edited = text.replace("2000", str(2010 + version))
        diagnostics.update(analysis, Snapshot(overlay={opened: edited}, roots=(root,)),
                           frozenset({opened}), IndexMode.INCREMENTAL)
    assert {p: filtered[p] for p in others} == before
    assert filtered[opened] > 1  # the edited one is linted again
    assert all(_codes(analysis, p) == [] for p in paths)  # every BL050 still suppressed


def test_a_pipeline_edited_on_disk_is_read_and_linted_again(tmp_path: Path) -> None:
    root, _, paths = _workspace(tmp_path)
    analysis = Analysis()
    diagnostics.update(analysis, Snapshot(roots=(root,)), frozenset(), IndexMode.FULL)
    assert _codes(analysis, paths[3]) == []
    Path(paths[3]).write_text(PIPELINE.format(out=2003).replace(
        "ignore[BL050]", "ignore[BL052, BL061]"))  # saved by another program
    diagnostics.update(analysis, Snapshot(roots=(root,)), frozenset({paths[3]}),
                       IndexMode.INCREMENTAL)
    # by hand: BL050 no longer suppressed; the comment now suppresses nothing
    assert _codes(analysis, paths[3]) == ["BL050", "BL080"]
    assert all(_codes(analysis, p) == [] for p in paths if p != paths[3])
