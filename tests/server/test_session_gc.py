"""What waits until an analysis's results are out (counted, never timed):

- the collector in the server (``session.configure_gc``): no collection runs while an
  analysis runs or its results are published; the collections held back run afterwards on
  the analysis thread, and only when no edit waits;
- freeing what the analysis replaced (the old reports, the diagnostics shown before).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import threading
import weakref
from pathlib import Path
from typing import Any

from lsprotocol import types

from budgetlens_lsp.features import diagnostics
from budgetlens_lsp.features.state import Analysis
from budgetlens_lsp.session import Session
from budgetlens_lsp.workspace_index import IndexMode, ProgressHook, Snapshot, norm
from tests.waiting import ANSWER_GUARD

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
            assert self.release.acquire(timeout=ANSWER_GUARD)
        return diagnostics.Batch([types.PublishDiagnosticsParams(
            uri=URI, version=snapshot.versions.get(URI), diagnostics=[])],
            held=snapshot.superseded())


async def _acquire(sem: threading.Semaphore) -> None:
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, functools.partial(sem.acquire, timeout=ANSWER_GUARD))


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


async def test_what_an_analysis_replaced_is_freed_after_its_publish(tmp_path: Path) -> None:
    """The old report of a re-checked pipeline (and the diagnostics shown before) stay alive
    until the new ones are published, then the analysis thread frees them."""
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "prompts").mkdir()
    (tmp_path / "config.json").write_text(
        '{"model_context_window": 8192, "model_max_tokens": 1024, "prompts_dir": "prompts"}')
    (tmp_path / "prompts/own.txt").write_text("Answer briefly.\n")
    pipeline = tmp_path / "pipelines/a.yaml"
    text = ("settings:\n  max_context_tokens: 3000\nsteps:\n  - id: s\n    type: call_model\n"
            "    prompt_key: own\n    max_output_tokens: 500\n")
    pipeline.write_text(text)
    analysis = Analysis()
    session: Session[diagnostics.Batch] = Session(
        functools.partial(diagnostics.analyze, analysis))
    session.roots = [norm(tmp_path)]
    alive_at_publish: list[bool] = []
    old: list[weakref.ref[Any]] = []

    async def on_results(batch: diagnostics.Batch) -> None:
        alive_at_publish.extend(ref() is not None for ref in old)
    session.on_results = on_results
    try:
        uri = pipeline.as_uri()
        session.open(uri, 1, text, "yaml")
        session.mark_dirty([], IndexMode.FULL)
        await session.flush()
        first = analysis.index.reports[norm(pipeline)]
        old.append(weakref.ref(first))
        del first
        session.change(uri, 2, [types.TextDocumentContentChangeWholeDocument(
            text=text.replace("3000", "7900"))])
        await session.flush()
        assert alive_at_publish == [True]  # not freed before the publish
        assert old[0]() is None  # freed after it
        assert analysis.index.retired == []
        assert "BL050" in [d.code for d in analysis.shown[norm(pipeline)]]
    finally:
        session.shutdown()
