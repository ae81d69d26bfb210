"""A forced analysis stops for the end of a burst (issue 12): mechanisms, never wall-clock.

After a streak of held analyses (``scheduling.MAX_HOLD_S``) the next analysis is *forced*:
it is delivered even though newer edits exist, so a long burst still sees diagnostics. But
when the editor then goes quiet (``FORCED_QUIET_S`` after a newer edit: the burst looks
over), it stops, so the last keystroke's analysis does not wait behind it; at most once per
streak, so the one after it is delivered whatever comes. Typing here is in a prompt shared
by several pipelines, with the real session and analysis in process; each analysis is
paused at a stop poll of its first check while the next keystroke arrives, and the clock is
taken out of it by setting the two constants.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from budgetlens_lsp import scheduling, workspace_index
from budgetlens_lsp.features import diagnostics
from budgetlens_lsp.features.state import Analysis
from budgetlens_lsp.session import Session
from budgetlens_lsp.workspace_index import IndexMode, Snapshot, norm

from .test_held import PAUSE_AT, PausingChecks, _acquire

CONFIG = ('{"model_context_window": 2048, "model_max_tokens": 512,'
          ' "prompts_dir": "prompts"}\n')
DEPENDENTS = 4
STEPS = 60  # per dependent: well over PAUSE_AT polls


def _dependent(i: int) -> str:
    steps = "".join(f"  - id: s{s:03d}\n    type: call_model\n"
                    f"    prompt_key: {'shared' if s == 1 else 'own'}\n"
                    f"    user_parts:\n      template: \"Q {{q}} ({i}, {s})\"\n"
                    f"    max_output_tokens: {200 + s}\n" for s in range(STEPS))
    return f"settings:\n  max_context_tokens: 1000\nsteps:\n{steps}"


def _prompt(version: int) -> str:
    # over budget (so every dependent has a contract diagnostic), one more word a version
    return "Answer with care. " * 400 + "word " * version + "\n"


def _workspace(root: Path) -> Path:
    (root / "pipelines").mkdir(parents=True)
    (root / "prompts").mkdir()
    (root / "config.json").write_text(CONFIG)
    (root / "prompts/own.txt").write_text("Answer briefly.\n")
    shared = root / "prompts/shared.txt"
    shared.write_text(_prompt(1))
    for i in range(DEPENDENTS):
        (root / f"pipelines/p{i}.yaml").write_text(_dependent(i))
    return shared


async def _burst(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet_s: float
                 ) -> tuple[list[int | None], list[bool], Analysis, PausingChecks, int]:
    """Open the prompt, then type versions 2..5, each arriving while the analysis of the one
    before is paused mid-check; every analysis after a held one is forced (MAX_HOLD_S 0)."""
    shared = _workspace(tmp_path / "ws")
    checks = PausingChecks(workspace_index.check_pipeline)
    monkeypatch.setattr(workspace_index, "check_pipeline", checks)
    monkeypatch.setattr(scheduling, "MAX_HOLD_S", 0.0)
    monkeypatch.setattr(scheduling, "FORCED_QUIET_S", quiet_s)
    analysis = Analysis()
    held: list[bool] = []
    pauses = [0]  # analyses left that pause (once each, in their first check)

    def analyze(*args: Any) -> diagnostics.Batch:
        if pauses[0] > 0:
            pauses[0] -= 1
            checks.pauses = 1
        try:
            batch = diagnostics.analyze(analysis, *args)
        finally:
            checks.pauses = 0
        held.append(batch.held)
        return batch
    session: Session[diagnostics.Batch] = Session(analyze)
    session.roots = [norm(tmp_path / "ws")]
    uri = shared.as_uri()
    delivered: list[int | None] = []

    async def on_results(batch: diagnostics.Batch) -> None:
        delivered.extend(p.version for p in batch if p.uri == uri)
    session.on_results = on_results
    try:
        session.open(uri, 1, shared.read_text(), "plaintext")
        session.mark_dirty([], IndexMode.FULL)
        await session.flush()
        first_runs = len(checks.runs)

        def type_version(version: int) -> None:
            session.change(uri, version, [types.TextDocumentContentChangeWholeDocument(
                text=_prompt(version))])
        pauses[0] = 3
        type_version(2)
        for version in (3, 4, 5):
            await _acquire(checks.paused)  # the analysis of version - 1 is mid-check
            type_version(version)
            checks.go.release()
        await session.flush()
    finally:
        session.shutdown()
    return delivered, held, analysis, checks, first_runs


async def test_a_forced_analysis_stops_once_for_the_end_of_a_burst(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    delivered, held, analysis, checks, first = await _burst(tmp_path, monkeypatch, 0.0)
    # v2: held (overtaken); v3: forced, stopped (newer edit, quiet); v4: forced again, not
    # stoppable in the same streak: delivered though v5 exists; v5: delivered
    assert held == [False, True, True, False, False]
    assert delivered == [1, 4, 5]
    counts = analysis.counts
    assert (counts.forced, counts.forced_stopped) == (2, 1)
    assert (counts.held, counts.delivered) == (2, 3)
    # v2's and v3's checks stop at the poll where the keystroke came; the second forced one
    # (v4) checks every dependent to its end, as v5's does
    stopped = [r for r in checks.runs[first:] if r.stopped]
    assert [r.polls for r in stopped] == [PAUSE_AT, PAUSE_AT]
    assert len(checks.runs[first:]) == 2 + 2 * DEPENDENTS
    assert not analysis.forced_stopped  # reset by the delivery
    # what is shown is the last version's: as a fresh analysis of it, never interrupted
    prompt = norm(tmp_path / "ws/prompts/shared.txt")
    fresh = Analysis()
    diagnostics.update(fresh, Snapshot(overlay={prompt: _prompt(5)},
                                       roots=(norm(tmp_path / "ws"),)),
                       frozenset(), IndexMode.FULL)
    assert analysis.shown == fresh.shown
    assert [d.code for d in analysis.shown[prompt]] == ["BL052"]  # cannot fit
    assert len(analysis.shown) == DEPENDENTS + 1


async def test_without_quiet_a_forced_analysis_is_delivered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The burst goes on (never quiet for FORCED_QUIET_S): forced analyses are delivered,
    as before."""
    delivered, held, analysis, checks, first = await _burst(tmp_path, monkeypatch, 1e9)
    # v2 held; v3 forced and delivered though v4 exists; v4 held (a new streak); v5 forced
    # and delivered
    assert held == [False, True, False, True, False]
    assert delivered == [1, 3, 5]
    assert (analysis.counts.forced, analysis.counts.forced_stopped) == (2, 0)
    # v2's and v4's checks stop where the keystroke came; v3's and v5's check everything
    stopped = [r for r in checks.runs[first:] if r.stopped]
    assert [r.polls for r in stopped] == [PAUSE_AT, PAUSE_AT]
    assert len(checks.runs[first:]) == 2 + 2 * DEPENDENTS


class _Clock:
    def __init__(self) -> None:
        self.superseded = False
        self.quiet = 0.0


@pytest.mark.parametrize(("superseded", "quiet", "allowed", "fires"), [
    (False, 10.0, True, False),  # nothing newer: go on
    (True, 0.01, True, False),  # newer, but the burst goes on
    (True, 0.06, True, True),  # newer, then quiet: stop
    (True, 10.0, False, False),  # the second forced analysis of a streak never stops
])
def test_forced_stop_rule(superseded: bool, quiet: float, allowed: bool, fires: bool) -> None:
    clock = _Clock()
    snap = Snapshot(superseded=lambda: clock.superseded, quiet_for=lambda: clock.quiet)
    stop = scheduling.ForcedStop(snap, allowed)
    clock.superseded, clock.quiet = superseded, quiet
    assert stop() is fires and stop.fired is fires
    clock.superseded, clock.quiet = False, 0.0
    assert stop() is fires  # once fired, it stays fired (the check is abandoned)


async def test_the_snapshot_tells_the_quiet_since_the_newest_edit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr("budgetlens_lsp.session.time.monotonic", lambda: now[0])
    session: Session[Any] = Session(lambda *args: None)
    try:
        session.open("file:///ws/prompts/a.txt", 1, "a", "plaintext")
        snap = session.snapshot()
        now[0] = 100.25
        assert snap.quiet_for() == pytest.approx(0.25)
        session.change("file:///ws/prompts/a.txt", 2,
                       [types.TextDocumentContentChangeWholeDocument(text="ab")])
        assert snap.quiet_for() == 0.0 and snap.superseded()
    finally:
        session.shutdown()
