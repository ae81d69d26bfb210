"""The collector in the server (``session.configure_gc``): no collection runs while an
analysis runs or its results are published; the collections held back run afterwards on the
analysis thread, and only when no edit waits. Counted, never timed.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import threading
from typing import Any

from lsprotocol import types

from budgetlens_lsp.features import diagnostics
from budgetlens_lsp.session import Session
from budgetlens_lsp.workspace_index import IndexMode, ProgressHook, Snapshot

URI = "file:///w/pipelines/a.yaml"


class Cycles:
    """A fake analysis that makes reference cycles (garbage only the collector frees),
    notes whether the collector was on, and can wait for the test to let it finish."""

    def __init__(self) -> None:
        self.enabled: list[bool] = []
        self.versions: list[int | None] = []
        self.hold = False
        self.started = threading.Semaphore(0)
        self.release = threading.Semaphore(0)

    def __call__(self, snapshot: Snapshot, changed: frozenset[str], mode: IndexMode,
                 progress: ProgressHook | None) -> diagnostics.Batch:
        self.enabled.append(gc.isenabled())
        self.versions.append(snapshot.versions.get(URI))
        for _ in range(30_000):  # more than the young generation's threshold
            a: dict[str, Any] = {}
            a["self"] = a
        if self.hold:
            self.started.release()
            assert self.release.acquire(timeout=10)
        return diagnostics.Batch([types.PublishDiagnosticsParams(
            uri=URI, version=snapshot.versions.get(URI), diagnostics=[])],
            held=snapshot.superseded())


async def _acquire(sem: threading.Semaphore) -> None:
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, functools.partial(sem.acquire, timeout=10))


def _change(session: Session[Any], version: int) -> None:
    session.change(URI, version, [types.TextDocumentContentChangeWholeDocument(
        text=f"steps: []  # {version}\n")])


async def test_no_collection_during_an_analysis_and_its_publish_the_rest_afterwards(
        ) -> None:
    assert gc.isenabled()
    fake = Cycles()
    session: Session[diagnostics.Batch] = Session(fake)
    session.pause_gc = True  # what configure_gc sets (without its process-wide settings)
    collected_on: list[str] = []
    during_publish: list[bool] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "stop":
            collected_on.append(threading.current_thread().name)

    async def on_results(batch: diagnostics.Batch) -> None:
        during_publish.append(gc.isenabled())
    session.on_results = on_results
    gc.callbacks.append(note)
    try:
        session.open(URI, 1, "steps: []\n", "yaml")
        await session.flush()
        assert fake.enabled == [False] and during_publish == [False]
        assert session.collections == 1
        # the held-back collection ran on the analysis thread, and only there
        assert collected_on and all(n.startswith("budgetlens-analysis") for n in collected_on)
        assert gc.isenabled()  # on again once nothing is pending

        # a burst: version 2 is analysed, version 3 arrives meanwhile; the next analysis
        # starts without a collection in between (the edit goes first)
        fake.hold = True
        collected_on.clear()
        _change(session, 2)
        flushing = asyncio.ensure_future(session.flush())
        await _acquire(fake.started)
        _change(session, 3)
        fake.release.release()  # version 2 ends, superseded: held
        await _acquire(fake.started)  # version 3's analysis began
        assert session.collections == 1 and collected_on == []
        fake.release.release()
        await flushing
        assert fake.versions == [1, 2, 3] and fake.enabled == [False] * 3
        assert session.collections == 2  # one, after the last analysis
        assert collected_on and all(n.startswith("budgetlens-analysis") for n in collected_on)
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(note)
        gc.enable()
        session.shutdown()


async def test_without_configure_gc_the_collector_is_left_alone() -> None:
    fake = Cycles()
    session: Session[diagnostics.Batch] = Session(fake)
    try:
        session.open(URI, 1, "steps: []\n", "yaml")
        await session.flush()
        assert fake.enabled == [True] and session.collections == 0
    finally:
        session.shutdown()
