"""The lint pass after each analysis (``diagnostics.linted``) lints again only the files
whose result may have changed: a pipeline not checked again keeps its result. A pipeline
whose text changed on disk is read and linted again. Counted with the settings' filter, in
a workspace written here: each pipeline over budget, its BL050 suppressed by a comment."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from budgetlens.contract import lint
from budgetlens_lsp.features import diagnostics
from budgetlens_lsp.features.state import Analysis
from budgetlens_lsp.workspace_index import IndexMode, Snapshot, norm

PIPELINE = """\
settings:
  max_context_tokens: 1000
steps:
  - id: s  # budgetlens: ignore[BL050]
    type: call_model
    prompt_key: sys
    max_output_tokens: {out}
"""
COUNT = 8


@pytest.fixture
def filtered(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The files whose diagnostics the lint pass filtered by their settings, how often."""
    asked: Counter[str] = Counter()
    real = lint.LintSettings.enabled

    def enabled(self: lint.LintSettings, code: str, path: str) -> bool:
        asked[path] += 1
        return real(self, code, path)
    monkeypatch.setattr(lint.LintSettings, "enabled", enabled)
    return asked


def _workspace(tmp_path: Path) -> tuple[str, str, list[str]]:
    (tmp_path / "config.json").write_text(
        '{"model_context_window": 2048, "model_max_tokens": 8192}')
    (tmp_path / "prompts").mkdir()
    prompt = tmp_path / "prompts" / "sys.txt"
    prompt.write_text("You are terse.\n")
    (tmp_path / "pipelines").mkdir()
    paths = []
    for i in range(COUNT):
        path = tmp_path / "pipelines" / f"p{i:02d}.yaml"
        path.write_text(PIPELINE.format(out=2000 + i))
        paths.append(norm(path))
    return norm(tmp_path), norm(prompt), paths


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
