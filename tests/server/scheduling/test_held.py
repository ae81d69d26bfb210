"""A check overtaken by a keystroke stops midway (issue 12): mechanisms, never wall-clock.

A typing burst in one large pipeline, in process, with the real session and analysis: each
analysis is paused in the middle of its pipeline (at a stop poll of the core's check), the
next keystroke arrives, and the paused check is let go. It must stop at that poll — no
further step planned or checked — and the analysis be held, not published; only the last
version is checked to the end and published, publishes in increasing version order.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from budgetlens.contract.check import CheckStopped
from budgetlens_lsp import scheduling, workspace_index
from budgetlens_lsp.features import diagnostics
from budgetlens_lsp.features.state import Analysis
from budgetlens_lsp.session import Session
from budgetlens_lsp.workspace_index import IndexMode, norm
from tests.waiting import ANSWER_GUARD

STEPS = 150
PAUSE_AT = 40  # the poll of a check at which the test types the next keystroke
KEYSTROKES = 5
CONFIG = ('{"model_context_window": 8192, "model_max_tokens": 1024,'
          ' "prompts_dir": "prompts"}\n')


def _pipeline(context: int) -> str:
    steps = "".join(f"  - id: s{i:03d}\n    type: call_model\n    prompt_key: own\n"
                    f"    user_parts:\n      template: \"Question {{q}} ({i})\"\n"
                    f"    max_output_tokens: {200 + i}\n" for i in range(STEPS))
    return f"extends: base.yaml\nsettings:\n  max_context_tokens: {context}\nsteps:\n{steps}"


@dataclass
class CheckRun:
    path: str
    polls: int = 0
    stopped: bool = False


class PausingChecks:
    """Wraps the index's ``check_pipeline``: counts the stop polls of every check, and while
    ``pauses`` is above 0, pauses a check at its poll ``PAUSE_AT`` until the test says go."""

    def __init__(self, real: Callable[..., Any]) -> None:
        self.real = real
        self.runs: list[CheckRun] = []
        self.pauses = 0
        self.paused = threading.Semaphore(0)
        self.go = threading.Semaphore(0)

    def __call__(self, path: Any, **kwargs: Any) -> Any:
        run = CheckRun(str(path))
        self.runs.append(run)
        stop = kwargs.pop("stop", None)

        def counting_stop() -> bool:
            run.polls += 1
            if run.polls == PAUSE_AT and self.pauses > 0:
                self.pauses -= 1
                self.paused.release()
                assert self.go.acquire(timeout=ANSWER_GUARD)
            return stop is not None and stop()
        try:
            return self.real(path, stop=counting_stop, **kwargs)
        except CheckStopped:
            run.stopped = True
            raise


async def _acquire(sem: threading.Semaphore) -> None:
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, functools.partial(sem.acquire, timeout=ANSWER_GUARD))


async def test_a_check_overtaken_mid_pipeline_is_abandoned_and_never_published(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ws"
    (root / "pipelines").mkdir(parents=True)
    (root / "prompts").mkdir()
    (root / "config.json").write_text(CONFIG)
    (root / "prompts/own.txt").write_text("Answer briefly.\n")
    (root / "pipelines/base.yaml").write_text("settings:\n  max_history_tokens: 100\n")
    big = root / "pipelines/big.yaml"
    big.write_text(_pipeline(3000))
    checks = PausingChecks(workspace_index.check_pipeline)
    monkeypatch.setattr(workspace_index, "check_pipeline", checks)
    # a held streak is never cut short by the clock here (that is a separate mechanism)
    monkeypatch.setattr(scheduling, "MAX_HOLD_S", 1e9)

    analysis = Analysis()
    held: list[bool] = []  # per analysis: held (superseded) or delivered

    def analyze(*args: Any) -> diagnostics.Batch:
        batch = diagnostics.analyze(analysis, *args)
        held.append(batch.held)
        return batch
    session: Session[diagnostics.Batch] = Session(analyze)
    session.roots = [norm(root)]
    uri = big.as_uri()
    delivered: list[int | None] = []

    async def on_results(batch: diagnostics.Batch) -> None:
        delivered.extend(p.version for p in batch if p.uri == uri)
    session.on_results = on_results
    try:
        session.open(uri, 1, big.read_text(), "yaml")
        session.mark_dirty([], IndexMode.FULL)
        await session.flush()
        assert delivered == [1] and checks.runs[-1].polls >= 2 * STEPS
        first_runs = len(checks.runs)

        def type_version(version: int) -> None:  # max_context_tokens 3000 + version
            session.change(uri, version, [types.TextDocumentContentChangeWholeDocument(
                text=_pipeline(3000 + 1000 * version))])
        checks.pauses = KEYSTROKES
        type_version(2)
        for version in range(3, 3 + KEYSTROKES):
            await _acquire(checks.paused)  # the check of version - 1 is mid-pipeline
            type_version(version)  # the next keystroke arrives meanwhile
            checks.go.release()
        last = 2 + KEYSTROKES
        await session.flush()
    finally:
        session.shutdown()

    burst = checks.runs[first_runs:]
    abandoned = [r for r in burst if r.stopped]
    assert len(abandoned) == KEYSTROKES  # one per overtaken version
    # each stopped at the poll the keystroke arrived in: nothing more planned or checked
    assert [r.polls for r in abandoned] == [PAUSE_AT] * KEYSTROKES
    assert all(r.polls < STEPS for r in abandoned)
    finished = [r for r in burst if not r.stopped]
    # the last version's, to its end: its checking polls every step (its planning may take
    # over the unchanged steps of the last finished plan, and poll only the others)
    assert len(finished) == 1 and finished[0].polls >= STEPS
    assert held == [False] + [True] * KEYSTROKES + [False]
    assert delivered == sorted(delivered) and delivered[-1] == last
    assert delivered == [1, last]
    report = analysis.index.reports[norm(big)]
    assert report.context is not None and report.context.value == 3000 + 1000 * last
    assert "BL050" in [d.code for d in analysis.shown[norm(big)]]
