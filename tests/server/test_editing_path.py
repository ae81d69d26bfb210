"""The editing path in process (issue 12): mechanisms, never wall-clock.

- a typing burst is coalesced: the session analyses the newest text when an analysis
  starts, a superseded analysis is held (never delivered), delivered versions only grow and
  the last delivery is the last version's;
- memory: 200 edits of a big pipeline leave the server's own state (index, session,
  diagnostics shown) no bigger;
- a whole re-check of a large workspace publishes the open document first, with one
  pipeline checked, and finishes the rest in the background;
- one converter per publish batch: a prompt shared by many pipelines is read and indexed
  once per batch.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from budgetlens_lsp.convert import Converter
from budgetlens_lsp.features import diagnostics
from budgetlens_lsp.features.state import Analysis
from budgetlens_lsp.session import Session
from budgetlens_lsp.workspace_index import (
    SMALL_RECHECK,
    IndexMode,
    ProgressHook,
    Snapshot,
    norm,
)
from tests.waiting import ANSWER_GUARD

CONFIG = ('{"model_context_window": 8192, "model_max_tokens": 1024,'
          ' "prompts_dir": "prompts"}\n')


def step(i: int, prompt: str) -> str:
    return (f"  - id: s{i:03d}\n    type: call_model\n    prompt_key: {prompt}\n"
            f"    user_parts:\n      template: \"Question {{question}} ({i})\"\n"
            f"    max_output_tokens: {200 + i}\n")


def workspace(root: Path, pipelines: int, steps: int = 2, shared_by: int = 0) -> Path:
    """``pipelines`` pipelines of ``steps`` steps; the first ``shared_by`` use shared.txt."""
    (root / "pipelines").mkdir(parents=True)
    (root / "prompts").mkdir()
    (root / "config.json").write_text(CONFIG)
    (root / "prompts/own.txt").write_text("Answer briefly.\n")
    (root / "prompts/shared.txt").write_text("Be helpful.\n")
    for p in range(pipelines):
        prompt = "shared" if p < shared_by else "own"
        body = "".join(step(i, prompt) for i in range(steps))
        (root / f"pipelines/p{p:03d}.yaml").write_text(
            f"settings:\n  max_context_tokens: 3000\nsteps:\n{body}")
    return root


# --- (a) a typing burst ------------------------------------------------------------------------

class Gate:
    """A fake analysis: records the version of each snapshot it runs on, waits for the test
    to let it finish, and answers "held" when the snapshot was superseded meanwhile."""

    def __init__(self) -> None:
        self.versions: list[int | None] = []
        self.started = threading.Semaphore(0)
        self.release = threading.Semaphore(0)

    def __call__(self, snapshot: Snapshot, changed: frozenset[str], mode: IndexMode,
                 progress: ProgressHook | None) -> diagnostics.Batch:
        version = snapshot.versions.get("file:///w/pipelines/a.yaml")
        self.versions.append(version)
        self.started.release()
        self.release.acquire()
        params = [types.PublishDiagnosticsParams(uri="file:///w/pipelines/a.yaml",
                                                 version=version, diagnostics=[])]
        return diagnostics.Batch(params, held=snapshot.superseded())


async def _wait(sem: threading.Semaphore) -> None:
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, functools.partial(sem.acquire, timeout=ANSWER_GUARD))


async def test_a_typing_burst_is_coalesced_and_only_the_newest_version_is_delivered() -> None:
    gate = Gate()
    session: Session[diagnostics.Batch] = Session(gate)
    delivered: list[int | None] = []

    async def on_results(batch: diagnostics.Batch) -> None:
        delivered.extend(p.version for p in batch)
    session.on_results = on_results
    uri = "file:///w/pipelines/a.yaml"
    session.open(uri, 1, "steps: []\n", "yaml")
    flushing = asyncio.ensure_future(session.flush())
    await _wait(gate.started)  # analysing version 1
    for version in range(2, 31):  # 29 keystrokes while it runs
        session.change(uri, version, [types.TextDocumentContentChangeWholeDocument(
            text=f"steps: []  # {version}\n")])
    gate.release.release()  # version 1 ends: superseded, so held
    await _wait(gate.started)  # the next analysis: the newest text only
    assert gate.versions == [1, 30]
    session.change(uri, 31, [types.TextDocumentContentChangeWholeDocument(text="steps: []\n")])
    gate.release.release()  # version 30 ends, superseded by 31: held
    await _wait(gate.started)
    gate.release.release()  # version 31 ends: nothing newer, delivered
    await flushing
    assert gate.versions == [1, 30, 31]  # 31 versions typed, 3 analysed
    assert delivered == [31]  # the superseded ones were never published
    assert session.analyses == 3
    session.shutdown()


class _FakeServer:
    def __init__(self) -> None:
        self.sent: list[types.PublishDiagnosticsParams] = []

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams
                                          ) -> None:
        self.sent.append(params)


def test_the_publisher_never_sends_a_version_older_than_one_it_sent() -> None:
    from budgetlens_lsp.features.state import ServerState

    server = _FakeServer()
    session: Session[Any] = Session(lambda *a: None)
    ctx = ServerState(server, session, Analysis())  # type: ignore[arg-type]
    uri = "file:///w/pipelines/a.yaml"

    def push(version: int | None) -> None:
        diagnostics.publish(ctx, [types.PublishDiagnosticsParams(uri=uri, version=version,
                                                                 diagnostics=[])])
    for version in (3, 5, 4, 5, None, 7, 6):
        push(version)
    assert [p.version for p in server.sent] == [3, 5, 5, None, 7]
    session.close(uri)  # a reopened document counts afresh
    push(1)
    assert [p.version for p in server.sent][-1] == 1
    session.shutdown()


def test_a_superseded_analysis_is_held_and_the_next_one_delivers_its_changes(
        tmp_path: Path) -> None:
    root = workspace(tmp_path / "ws", 3)
    analysis = Analysis()
    roots = (norm(root),)
    diagnostics.update(analysis, Snapshot(roots=roots), frozenset(), IndexMode.FULL)
    path = norm(root / "pipelines/p000.yaml")
    uri = (root / "pipelines/p000.yaml").as_uri()
    over = (root / "pipelines/p000.yaml").read_text().replace("3000", "7900")
    newer = [False]
    snap = Snapshot(overlay={path: over}, open_uris={path: uri}, versions={uri: 2},
                    roots=roots, superseded=lambda: newer[0] or True)
    held = diagnostics.update(analysis, snap, frozenset([path]))
    assert held.held and held.publish == {}
    assert analysis.shown.get(path) is None  # the client was not told: nothing "shown"
    # the next analysis (same text, nothing changed since) delivers the change it missed
    latest = Snapshot(overlay={path: over}, open_uris={path: uri}, versions={uri: 3},
                      roots=roots)
    results = diagnostics.update(analysis, latest, frozenset())
    assert not results.held
    assert "BL050" in [d.code for d in results.publish[path]]


# --- (b) memory over 200 edits -----------------------------------------------------------------

def test_200_edits_of_a_big_pipeline_do_not_grow_the_servers_state(tmp_path: Path) -> None:
    """The server's own state: the index, its reports and snapshot, the session's buffers,
    the diagnostics shown. The core's BudgetCache is emptied after each edit: its bound is
    the core's business (issue 12, speed-core) and tested there."""
    root = workspace(tmp_path / "ws", 1, steps=15)
    analysis = Analysis()
    path = norm(root / "pipelines/p000.yaml")
    uri = (root / "pipelines/p000.yaml").as_uri()
    text = (root / "pipelines/p000.yaml").read_text()
    session: Session[Any] = Session(lambda *a: None)
    session.roots = [norm(root)]
    session.open(uri, 1, text, "yaml")
    diagnostics.analyze(analysis, session.snapshot(), frozenset(), IndexMode.FULL, None)

    def edit(n: int) -> None:
        session.change(uri, n + 2, [types.TextDocumentContentChangeWholeDocument(
            text=text.replace("max_context_tokens: 3000", f"max_context_tokens: {3000 - n}"))])
        diagnostics.analyze(analysis, session.snapshot(), frozenset([path]),
                            IndexMode.INCREMENTAL, None)
        analysis.index.cache.clear()
    tracemalloc.start()
    try:
        for n in range(20):  # warm up: caches of the interpreter and the tokenizer
            edit(n)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for n in range(20, 220):
            edit(n)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        session.shutdown()
    assert analysis.index.reports[path].steps[0].window is not None
    # one version of the buffer is ~2.6 KB and its report far more: 200 kept reports are
    # ~9 MB; the bound allows noise of the interpreter's own tables and other threads
    assert after - before < 512 * 1024, f"grew by {after - before} bytes over 200 edits"


# --- (c) the open document before the background index -----------------------------------------

async def test_the_open_document_is_published_before_the_background_index_ends(
        tmp_path: Path) -> None:
    total = SMALL_RECHECK + 30
    root = workspace(tmp_path / "ws", total)
    opened = root / f"pipelines/p{total - 1:03d}.yaml"  # the last one in path order
    text = opened.read_text().replace("3000", "7900")  # over budget: BL050
    analysis = Analysis()
    session: Session[diagnostics.Batch] = Session(
        functools.partial(diagnostics.analyze, analysis))
    session.roots = [norm(root)]
    checked_when: list[tuple[int, list[str]]] = []

    async def on_results(batch: diagnostics.Batch) -> None:
        checked_when.append((len(analysis.index.reports), [p.uri for p in batch]))
    session.on_results = on_results
    session.open(opened.as_uri(), 1, text, "yaml")
    session.mark_dirty([], IndexMode.FULL)
    await session.flush()
    first = next(i for i, (_, uris) in enumerate(checked_when) if opened.as_uri() in uris)
    assert checked_when[first][0] == 1  # only the open pipeline was checked
    assert len(checked_when) > 1  # the rest came after, in the background
    assert len(analysis.index.reports) == total and not analysis.index.backlog
    assert "BL050" in [d.code for d in analysis.shown[norm(opened)]]
    session.shutdown()


def test_without_a_slice_an_update_checks_everything_at_once(tmp_path: Path) -> None:
    total = SMALL_RECHECK + 5
    root = workspace(tmp_path / "ws", total)
    analysis = Analysis()
    results = diagnostics.update(analysis, Snapshot(roots=(norm(root),)), frozenset(),
                                 IndexMode.FULL)
    assert not results.more and len(analysis.index.reports) == total


def test_background_slices_yield_to_a_newer_edit(tmp_path: Path) -> None:
    total = SMALL_RECHECK + 10
    root = workspace(tmp_path / "ws", total)
    analysis = Analysis()
    index = analysis.index
    roots = (norm(root),)
    edits = [0]  # a newer edit arrives after three checks of the background

    def superseded() -> bool:
        return len(index.reports) >= 3 and edits[0] == 0
    snap = Snapshot(roots=roots, superseded=superseded, background_slice=60.0)
    results = diagnostics.update(analysis, snap, frozenset(), IndexMode.FULL)
    assert results.more and len(index.reports) == 3  # stopped for the edit
    edits[0] = 1
    again = diagnostics.update(analysis, Snapshot(roots=roots, background_slice=60.0),
                               frozenset(), IndexMode.INCREMENTAL)
    assert not again.more and len(index.reports) == total


# --- (d) one converter per publish batch -------------------------------------------------------

def test_one_converter_per_batch_reads_each_file_once(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = workspace(tmp_path / "ws", 12, shared_by=10)
    analysis = Analysis()
    index = analysis.index
    roots = (norm(root),)
    diagnostics.update(analysis, Snapshot(roots=roots), frozenset(), IndexMode.FULL)
    prompt = norm(root / "prompts/shared.txt")
    huge = "word " * 9000 + "\n"  # every step using it goes over the 8,192 window
    built: list[Converter] = []
    reads: dict[str, int] = {}
    original: Callable[[], Converter] = index.converter

    def counting_converter() -> Converter:
        conv = original()
        text_of = conv._text_of

        def counting_text_of(path: str) -> str | None:
            reads[path] = reads.get(path, 0) + 1
            return text_of(path)
        conv._text_of = counting_text_of
        built.append(conv)
        return conv
    monkeypatch.setattr(index, "converter", counting_converter)
    params = diagnostics.analyze(analysis, Snapshot(overlay={prompt: huge}, roots=roots),
                                 frozenset([prompt]), IndexMode.INCREMENTAL, None)
    published = {p.uri for p in params}
    assert len(published) == 11  # the 10 dependents and the prompt itself
    assert len(built) == 1
    assert reads[prompt] == 1 and reads[norm(root / "config.json")] == 1
    assert max(reads.values()) == 1
