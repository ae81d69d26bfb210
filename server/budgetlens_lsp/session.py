"""The server's state: open documents, settings, the negotiated position encoding, and the
scheduling of the analysis whose results every feature reads.

Threading: the message loop (asyncio) owns :class:`Session` — documents, versions, settings,
the set of changed paths. All analysis, and every request that reads analysis results, runs
on ONE worker thread (:meth:`Session.run`) in submission order, against a snapshot of the
buffers taken on the loop. So a request queued after an edit always sees that edit, the
index needs no locks, and the loop never waits on tokenizing or parsing.

Changes are debounced: each edit marks its path dirty and (re)arms a short timer; when it
fires, one analysis runs over every path changed since the last one, on the newest text.
Edits that arrive while an analysis runs are coalesced into the next one, which starts as
soon as the running one ends, on the newest text: a version already superseded when an
analysis starts is never analysed. A request that arrives while edits are pending flushes
them first, so answers are never stale and the last state is never lost.

Superseded work is dropped. Every edit bumps a generation counter; the snapshot an analysis
runs on carries :meth:`Snapshot.superseded`, true once newer edits exist. The analysis may
then stop early — between two pipelines, or inside one between two steps (the index passes
it to the core's ``check_pipeline`` as ``stop``) — and answer "held" (see
``features/diagnostics.py``): the session does not deliver it, and the next analysis, which
starts at once on the newest text, delivers everything that changed since the last delivery.
So publishes arrive in version order, and the last one is the last version's; as a last
guard, :attr:`Session.published_versions` lets the publisher drop a version older than one
it already sent.

Large re-checks run in the background: an analysis can answer "more" (work left, e.g. the
pipelines of a fresh workspace index that are not open), and the session runs it again, with
no changed paths, whenever no edit is pending (edits always go first). :meth:`flush` waits
for that background work too.

Memory: the server keeps one text per open document (here) and one snapshot and one report
per pipeline (the index); old versions are dropped as new ones arrive — freed once the
analysis that replaced them is published (a result's ``after``). :func:`configure_gc`
(called by ``serve.py``) raises the collector's thresholds, freezes the heap once after the
first workspace index, and keeps the collector out of analyses and their publishing (see
its docstring).

The session knows no feature: the analysis function (run on the worker thread with a
snapshot, the changed paths and an :class:`IndexMode`) and the callback that publishes its
result (on the loop) are given to it. The result is a ``scheduling.AnalysisResult``: the
pushes, ``held`` (superseded, nothing to deliver), ``more`` (background work left) and
``after``, a callable run on the worker once the result is delivered and no edit waits
(freeing what the analysis replaced, which would otherwise delay its results). When an
analysis is held or forced is ``scheduling``'s policy.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from lsprotocol import types

from budgetlens import get_tokenizer
from budgetlens.tokens.core import DEFAULT_TOKENIZER, TiktokenTokenizer
from budgetlens_lsp.convert import UTF16, apply_changes, path_from_uri
from budgetlens_lsp.scheduling import AnalysisResult
from budgetlens_lsp.settings import Settings
from budgetlens_lsp.workspace_index import IndexMode, ProgressHook, Snapshot, norm

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")
#: The analysis: ``(snapshot, changed paths, mode, progress hook) -> result``, on the worker.
Analyze = Callable[[Snapshot, frozenset[str], IndexMode, ProgressHook | None],
                   AnalysisResult[R]]


@dataclass
class OpenDocument:
    uri: str
    path: str  # the file's path; for a non-file URI (an untitled buffer), the URI itself
    version: int | None
    text: str
    language_id: str = ""


JSON_LANGUAGES = ("json", "jsonc")


#: Seconds of pipeline checks a background analysis runs before it delivers what it found
#: (it stops sooner when an edit arrives).
BACKGROUND_SLICE_S = 0.25
#: The collector's thresholds in the server (see :func:`configure_gc`): a young collection
#: every 20,000 net allocations instead of 700, so parsing a large pipeline is not
#: interrupted hundreds of times; the older generations as CPython's defaults.
GC_THRESHOLDS = (20_000, 10, 10)
#: Net allocations after which the collections held back during analyses run even while
#: edits wait (a bound on the garbage a long typing burst can leave uncollected).
GC_BACKLOG = 2_000_000
#: Seconds a thread holds the GIL while another waits for it, in the server (CPython's
#: default is 0.005): the message loop reads a keystroke within about 1 ms while the
#: analysis thread runs, so the analysis it overtakes stops sooner.
SWITCH_INTERVAL_S = 0.001


def configure_gc(session: Session[Any]) -> None:
    """Tune the cyclic garbage collector (and the threads' turns at the GIL) for the server
    process (never for the tests that make sessions in process).

    The analysis allocates many small objects (YAML nodes, positions, steps); with the
    default thresholds the collector runs hundreds of times per analysis of a large
    pipeline and each full collection walks the whole retained heap (every report of the
    workspace). Four measures, all here:

    - raise the thresholds (:data:`GC_THRESHOLDS`): far fewer young collections;
    - after the first workspace index has finished, collect once and ``gc.freeze()``: the
      objects alive then (imports, the tokenizer's tables, the first reports) move to the
      permanent generation, which later collections skip. Objects there are still freed by
      reference counting when they are dropped; only a reference cycle among them would be
      kept, and the server's reports and caches hold no such cycles;
    - no collection while an analysis runs and its results are published (about a sixth of
      the CPU time of a 500-step pipeline's analysis was young collections): the session
      runs the collections held back afterwards, on the analysis thread, when no edit waits
      (or once :data:`GC_BACKLOG` net allocations are pending), so they are never between
      a keystroke and its diagnostics (:meth:`Session._tidy`);
    - a shorter thread switch interval (:data:`SWITCH_INTERVAL_S`), so the message loop
      takes in a keystroke promptly while the analysis thread runs.
    """
    gc.set_threshold(*GC_THRESHOLDS)
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    session.freeze_after_index = True
    session.pause_gc = True


def _collect_held_back() -> None:
    """The collections the collector would have run meanwhile: the oldest generation whose
    count is over its threshold, with the younger ones."""
    counts, limits = gc.get_count(), gc.get_threshold()
    generation = 2 if counts[2] > limits[2] else 1 if counts[1] > limits[1] else 0
    if generation or counts[0] > limits[0]:
        gc.collect(generation)


def _freeze_heap() -> None:
    """Collect, then move every surviving object to the permanent generation."""
    gc.collect()
    gc.freeze()
    log.info("heap frozen after the workspace index: %d objects", gc.get_freeze_count())


class Session(Generic[R]):
    def __init__(self, analyze: Analyze[R]) -> None:
        self.settings = Settings()
        self.encoding: str = UTF16
        self.roots: list[str] = []
        self.documents: dict[str, OpenDocument] = {}  # by URI
        self._analyze = analyze  # runs only on the worker thread
        self._executor = ThreadPoolExecutor(max_workers=1,
                                            thread_name_prefix="budgetlens-analysis")
        self._dirty: set[str] = set()
        self._closed = False  # shut down: no analysis starts any more
        self._mode: IndexMode | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._last_change = float("-inf")
        self._running: asyncio.Task[None] | None = None
        self._generation = 0  # bumped by every edit; read by the analysis thread
        self._edited_at = float("-inf")  # time.monotonic() of the newest edit (the same)
        self._more = False  # the last analysis left background work
        self.on_results: Callable[[AnalysisResult[R]], Awaitable[None]] | None = None
        self.progress_hook: Callable[[], ProgressHook | None] | None = None
        #: the newest version published per open document's URI (the publisher's guard)
        self.published_versions: dict[str, int] = {}
        self.analyses = 0  # analyses run (each on the newest text when it started)
        self.freeze_after_index = False  # set by configure_gc
        self._frozen = False
        #: no collection during an analysis and its publish (set by configure_gc)
        self.pause_gc = False
        self.collections = 0  # held-back collections run (see _tidy)

    def warm_up(self) -> None:
        """Prepare the default tokenizer on the analysis thread while the client connects:
        read its kept counts (the persistent count cache, ``tokens.counts``) and, when it has
        none (a first start), build its encoding, so the first check does not pay for it. On
        a warm start the encoding is built only after the first diagnostics (the server's
        ``after_first_publish``)."""
        def load() -> None:
            try:
                tokenizer = get_tokenizer(DEFAULT_TOKENIZER)
                if isinstance(tokenizer, TiktokenTokenizer):
                    tokenizer.prepare()
            except Exception:  # a broken install shows up in the first check's diagnostics
                log.exception("loading the default tokenizer failed")
        self._executor.submit(load)

    # --- documents --------------------------------------------------------------------------
    def path_of(self, uri: str) -> str | None:
        """The key a document is known by: its path, or for an open untitled buffer its URI."""
        doc = self.documents.get(uri)
        if doc is not None:
            return doc.path
        path = path_from_uri(uri)
        return norm(path) if path is not None else None

    def open(self, uri: str, version: int | None, text: str, language_id: str) -> None:
        path = self.path_of(uri) or uri
        self.documents[uri] = OpenDocument(uri, path, version, text, language_id)
        self.published_versions.pop(uri, None)  # a reopened document counts afresh
        self.mark_dirty([path])

    def change(self, uri: str, version: int | None,
               changes: Sequence[types.TextDocumentContentChangeEvent]) -> None:
        """Apply a ``didChange``'s content changes to the buffer, with the LSP's line rules
        and the negotiated position encoding (``convert.apply_changes``): the server's copy
        is the editor's text, whatever characters it holds."""
        doc = self.documents.get(uri)
        if doc is None:
            # a change for a document never opened: usable only from a whole-document change
            whole = [i for i, c in enumerate(changes)
                     if not isinstance(c, types.TextDocumentContentChangePartial)]
            if not whole:
                log.warning("didChange for %s, which is not open: ignored (no text to"
                            " apply the change to)", uri)
                return
            text = apply_changes("", changes[whole[-1]:], self.encoding)
            self.open(uri, version, text, "")
            return
        doc.version = version
        doc.text = apply_changes(doc.text, changes, self.encoding)
        self.mark_dirty([doc.path])

    def close(self, uri: str) -> None:
        doc = self.documents.pop(uri, None)
        self.published_versions.pop(uri, None)
        if doc is not None:
            self.mark_dirty([doc.path])  # the disk text is the truth again

    def versions(self) -> dict[str, int | None]:
        return {uri: doc.version for uri, doc in self.documents.items()}

    def snapshot(self) -> Snapshot:
        generation = self._generation

        def superseded() -> bool:  # called on the analysis thread: reads one int
            return self._generation != generation

        def quiet_for() -> float:  # the same: seconds since the newest edit
            return time.monotonic() - self._edited_at
        return Snapshot(
            overlay={doc.path: doc.text for doc in self.documents.values()},
            open_uris={doc.path: doc.uri for doc in self.documents.values()},
            json_keys=frozenset(doc.path for doc in self.documents.values()
                                if doc.language_id in JSON_LANGUAGES
                                or doc.path.endswith(".json")),
            versions={doc.uri: doc.version for doc in self.documents.values()},
            settings=self.settings,
            roots=tuple(self.roots),
            encoding=self.encoding,
            superseded=superseded,
            quiet_for=quiet_for,
            background_slice=BACKGROUND_SLICE_S,
        )

    # --- scheduling -------------------------------------------------------------------------
    def mark_dirty(self, paths: Iterable[str], mode: IndexMode = IndexMode.INCREMENTAL
                   ) -> None:
        self._generation += 1
        self._edited_at = time.monotonic()
        self._dirty.update(paths)
        if self._mode is None or mode.rank > self._mode.rank:
            self._mode = mode
        self._arm()

    def _arm(self) -> None:
        """Schedule an analysis: at once after a quiet period (the first keystroke is not
        delayed), else ``debounce_ms`` after the last of a burst of edits."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._timer is not None:
            self._timer.cancel()
        delay = self.settings.debounce_ms / 1000
        now = loop.time()
        idle = (self._running is None or self._running.done()) and \
            now - self._last_change >= delay
        self._last_change = now
        if idle:  # the analysis task starts on the loop's next turn
            self._fire()
        else:
            self._timer = loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        if self._closed:  # shut down in the same turn as the edit: no analysis thread left
            return
        if self._running is None or self._running.done():
            self._running = asyncio.ensure_future(self._analyze_pending())

    def _pending(self) -> bool:
        return self._mode is not None or self._more

    async def _analyze_pending(self) -> None:
        """Analyse until nothing is pending: the edits first (all of them at once, on the
        newest text), then any background work the last analysis left."""
        paused = self.pause_gc and gc.isenabled()
        if paused:  # see configure_gc: the collections run between analyses, not in them
            gc.disable()
        try:
            while self._pending() and not self._closed:
                after = await self._analyze_next()
                await self._tidy(after, paused)
        finally:
            if paused:
                gc.enable()

    async def _analyze_next(self) -> Callable[[], None] | None:
        """One analysis of what is pending, and the delivery of its results; the work its
        result left for after (``after``)."""
        if self._mode is not None:
            changed, mode = self._dirty, self._mode
            self._dirty, self._mode = set(), None
        else:  # no edit pending: go on with the background work
            changed, mode = set(), IndexMode.INCREMENTAL
        background = mode is not IndexMode.INCREMENTAL or not changed
        self._more = False
        snapshot = self.snapshot()
        progress = self.progress_hook() if self.progress_hook and background else None
        self.analyses += 1
        number = self.analyses
        log.info("analysis %d: %d changed path(s), mode %s, versions %s", number,
                 len(changed), mode.value, snapshot.versions)
        try:
            results = await self.run(self._analyze, snapshot, frozenset(changed), mode,
                                     progress)
        except Exception:
            log.exception("analysis failed for %d changed file(s)", len(changed))
            return None
        self._more = results.more
        log.info("analysis %d %s", number, "held (superseded)" if results.held else
                 f"delivered: {len(results.publish)} push(es)")
        # superseded (held): the next analysis delivers
        if not results.held and self.on_results is not None:
            try:
                await self.on_results(results)
            except Exception:
                log.exception("publishing analysis results failed")
        await self._after_analysis(background)  # after the publish: it never waits on it
        return results.after

    async def _tidy(self, after: Callable[[], None] | None, paused: bool) -> None:
        """After an analysis was delivered (or held), on the analysis thread: the work its
        result left for after, and (``paused``) the collections it held back; unless an
        edit waits (the next analysis goes first) and, for the collections, less than
        :data:`GC_BACKLOG` net allocations are pending."""
        try:
            if self._mode is None and after is not None:
                await self.run(after)
            if paused and (self._mode is None or gc.get_count()[0] >= GC_BACKLOG):
                self.collections += 1
                await self.run(_collect_held_back)
        except Exception:  # never stops the analyses
            log.exception("tidying up after an analysis failed")

    async def _after_analysis(self, background: bool) -> None:
        """Once, when the first workspace index is complete and no edit waits: freeze the
        heap (if :func:`configure_gc` asked for it)."""
        if self.freeze_after_index and not self._frozen and background \
                and not self._pending():
            self._frozen = True
            await self.run(_freeze_heap)

    async def flush(self) -> None:
        """Analyze every pending change now, and the background work left; returns when
        the index is current."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while True:
            running = self._running
            if running is not None and not running.done():
                await asyncio.shield(running)
                continue
            if not self._pending() or self._closed:
                return
            self._running = asyncio.ensure_future(self._analyze_pending())

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the analysis thread, after everything queued before it."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(*args))

    async def query(self, fn: Callable[..., T], *args: Any) -> T:
        """A request that reads the index: flush pending edits first, then run ``fn``."""
        await self.flush()
        return await self.run(fn, *args)

    def shutdown(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)
