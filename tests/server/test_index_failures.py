"""The server's index never shows silence for a file it could not check (DESIGN.md §0).

Driven directly (no server process): a pipeline check that raises becomes a BL009 error and
one queued message, is retried on the next change of any file and recovers; a failure of
the analysis around the checks marks the edited buffer and the next update re-checks all;
a failure converting a file's diagnostics to LSP is a BL009 error in their place.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from budgetlens_lsp.convert import Converter
from budgetlens_lsp.features import diagnostics as diagnostics_module
from budgetlens_lsp.features.state import Analysis
from budgetlens_lsp.workspace_index import IndexMode, Snapshot, norm

FULL, INCREMENTAL = IndexMode.FULL, IndexMode.INCREMENTAL

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def root(tmp_path: Path) -> str:
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    return norm(tmp_path / "ws")


def _codes(diags: list[object]) -> list[str]:
    return [d.code for d in diags]  # type: ignore[attr-defined]


def test_a_failing_check_is_shown_retried_and_recovers(
        root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    analysis = Analysis()
    index = analysis.index
    long_report = norm(Path(root) / "pipelines/long_report.yaml")
    monkeypatch.setenv("BUDGETLENS_TEST_FAULT", "check")
    results = diagnostics_module.update(analysis, Snapshot(roots=(root,)), frozenset(), FULL)
    assert _codes(results.publish[long_report]) == ["BL009"]
    assert index.report_for(long_report) is None
    [message] = index.take_messages()
    assert message.startswith("budgetlens could not check base.yaml: RuntimeError:")
    assert index.take_messages() == []  # taken once
    # a second failing round: same diagnostics (nothing to publish), no second message
    prompt = norm(Path(root) / "prompts/report.txt")
    again = diagnostics_module.update(analysis, Snapshot(roots=(root,)), frozenset({prompt}),
                                      INCREMENTAL)
    assert long_report not in again.publish
    assert index.take_messages() == []
    # the fault is gone: a change of an unrelated file retries the failed pipelines
    monkeypatch.delenv("BUDGETLENS_TEST_FAULT")
    other = norm(Path(root) / "responses/truncated.json")
    fixed = diagnostics_module.update(analysis, Snapshot(roots=(root,)), frozenset({other}),
                                      INCREMENTAL)
    assert _codes(fixed.publish[long_report]) == ["BL050"]
    assert index.report_for(long_report) is not None
    assert index.failures == {}


def test_a_failing_analysis_marks_the_edited_buffer_and_the_next_update_rechecks_all(
        root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    analysis = Analysis()
    index = analysis.index
    diagnostics_module.update(analysis, Snapshot(roots=(root,)), frozenset(), FULL)
    long_report = norm(Path(root) / "pipelines/long_report.yaml")
    text = Path(long_report).read_text("utf-8")
    snap = Snapshot(overlay={long_report: text}, roots=(root,))

    def broken(_: object) -> dict[str, list[object]]:
        raise KeyError("lost")

    monkeypatch.setattr(diagnostics_module, "collect", broken)
    results = diagnostics_module.update(analysis, snap, frozenset({long_report}), INCREMENTAL)
    [d] = results.publish[long_report]
    assert d.code == "BL009"
    assert d.message == ("budgetlens could not check this file: KeyError: 'lost'; details"
                         " in the log")
    assert d.range.start.line == 0 and d.range.end.character == len(text.split("\n")[0])
    assert len(index.take_messages()) == 1
    monkeypatch.undo()
    results = diagnostics_module.update(analysis, snap, frozenset(), INCREMENTAL)
    assert _codes(results.publish[long_report]) == ["BL050"]


def test_a_failing_conversion_is_an_error_in_place_of_the_diagnostics(
        root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    analysis = Analysis()
    index = analysis.index
    results = diagnostics_module.update(analysis, Snapshot(roots=(root,)), frozenset(), FULL)
    long_report = norm(Path(root) / "pipelines/long_report.yaml")

    def broken(self: Converter, diag: object, **kwargs: object) -> object:
        raise IndexError("position out of range")

    monkeypatch.setattr(Converter, "diagnostic", broken)
    [d] = diagnostics_module.to_lsp(index, results.publish[long_report])
    assert (d.code, d.severity) == ("BL009", types.DiagnosticSeverity.Error)
    assert d.message == ("budgetlens could not check this file: IndexError: position out of"
                         " range; details in the log")
    [message] = index.take_messages()
    assert message.startswith("budgetlens could not check long_report.yaml: IndexError:")
