"""The workspace index: what the server knows about every pipeline, prompt and JSON buffer.

Only the analysis thread touches an index (see ``session.py``). :meth:`WorkspaceIndex.update`
takes a snapshot of the open buffers and the set of changed paths, re-checks every pipeline
that depends on them (the dependency graph is each report's ``inputs``: the pipeline, its
``extends`` chain, its prompt files and config.json), and returns the diagnostics whose
content changed, per file, open or not.

Re-checking goes through the core's ``BudgetCache``: a report whose inputs all have the same
fingerprint is reused, and a prompt is re-tokenized only when its own text changed.

Urgent work first. The pipelines an update must check are split in two: the *urgent* ones
(every pipeline an edit affects; for a whole re-check of more than :data:`SMALL_RECHECK`
pipelines, the open pipelines and the known dependents of the open and changed files) and
the rest. With a snapshot that asks for it
(``Snapshot.background_slice``, as the session's do), the rest goes to :attr:`backlog` and
is checked by later updates with nothing changed, a slice of at most that many seconds at a
time, and the update says so (``Changes.more``). Any check loop stops between two pipelines
once ``Snapshot.superseded()`` is true (newer edits wait): urgent pipelines not reached are
carried into the next update's urgent set, the backlog waits; and the check of one pipeline
is abandoned midway when ``superseded()`` turns true while it runs (the core asks between
steps: ``check_pipeline(stop=...)``), so a large pipeline does not finish a check of text
already replaced. Such an update is superseded, so it is held, never published (see
``features/diagnostics.py``). Without a slice (tests, a direct caller) an update checks
everything at once, as before.

The open pipelines come first at start too. The first update, when every open file is a
pipeline, checks only those and leaves the search of the roots to the next update
(:meth:`WorkspaceIndex._open_first`), so the first diagnostics wait for no walk.

Silence means "checked and fine", never "could not check": when checking a pipeline or
analysing a JSON buffer raises, the file is recorded in :attr:`WorkspaceIndex.failures`
(shown by the diagnostics feature as a BL009 error: the exception in one line; the
traceback goes to the log), its old report is dropped (no stale lens), it is retried on
every later update, and one ``window/showMessage`` per kind of failure is queued
(:meth:`WorkspaceIndex.take_messages`).

:meth:`WorkspaceIndex.update` returns plain data (:class:`Changes`: what was re-checked,
which JSON buffers were re-analysed, which buffers were closed or edited); turning that into
diagnostics is the diagnostics feature's work. This module imports no feature.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from budgetlens import codes
from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import CheckStopped, check_pipeline
from budgetlens.contract.discovery import (
    PROMPT_SUFFIXES,
    default_excluded,
    find_pipelines,
    project_root,
)
from budgetlens.contract.lint import LintMemo
from budgetlens.contract.results import CheckOptions, PipelineReport, StepBudget
from budgetlens.files import DiskFiles, FileSource, OverlayFiles, RunFiles
from budgetlens_lsp.convert import UTF16, Converter, RangeMemo
from budgetlens_lsp.links import Links, LinkTracker, real_path
from budgetlens_lsp.settings import Settings

if TYPE_CHECKING:  # get_contexts loads with the first JSON buffer (start-up speed)
    from budgetlens.continuation.contexts import JsonContexts

log = logging.getLogger(__name__)

MAX_READ_BYTES = 16 * 1024 * 1024
PIPELINE_SUFFIXES = (".yaml", ".yml")
ANALYZED_SUFFIXES = (*PIPELINE_SUFFIXES, ".txt", ".json", *PROMPT_SUFFIXES)

#: A whole re-check of at most this many pipelines runs at once, in path order; a larger one
#: checks the open documents' pipelines first and the rest in the background.
SMALL_RECHECK = 50

#: Buffers above this many characters are not analysed as you type (the command still
#: refuses them with a clear error): a reply of 4 million characters is not a reply.
MAX_JSON_CHARS = 4_000_000

#: Files whose disk text and converted ranges are kept between updates (emptied when full).
MAX_KEPT_TEXTS = 4096


class IndexMode(str, Enum):
    """What changed: only the given paths / the set of files may have changed / everything."""

    INCREMENTAL = "incremental"
    REDISCOVER = "rediscover"
    FULL = "full"

    @property
    def rank(self) -> int:
        return _MODE_RANK[self]


_MODE_RANK = {IndexMode.INCREMENTAL: 0, IndexMode.REDISCOVER: 1, IndexMode.FULL: 2}


class Stage(str, Enum):
    """Where budgetlens failed on a file."""

    CHECK = "check"  # checking a pipeline
    JSON = "json"  # analysing a JSON buffer
    ANALYSIS = "analysis"  # the analysis around the checks
    CONVERT = "convert"  # converting a file's diagnostics to LSP

#: A test hook, documented in docs/language-server.md and read here only: with
#: ``BUDGETLENS_TEST_FAULT=check`` every pipeline check raises, with ``=json`` every analysis
#: of a JSON buffer does, so tests can show what a user sees when budgetlens itself fails.
TEST_FAULT_VARIABLE = "BUDGETLENS_TEST_FAULT"
#: Called with (pipelines checked, pipelines to check) while a large update runs.
ProgressHook = Callable[[int, int], None]


def never() -> bool:
    """A snapshot that is never superseded (the default)."""
    return False


def long_ago() -> float:
    """Seconds since the newest edit, for a snapshot with no editor behind it (the default):
    infinitely many."""
    return float("inf")


def _test_fault(stage: str) -> None:
    if os.environ.get(TEST_FAULT_VARIABLE) == stage:
        raise RuntimeError(f"fault injected by {TEST_FAULT_VARIABLE}={stage}")


def one_line(exc: BaseException, limit: int = 200) -> str:
    """``Type: first line of the message``, at most ``limit`` characters."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return line if len(line) <= limit else line[:limit - 1] + "…"


@dataclass(frozen=True)
class Failure:
    """budgetlens itself failed on ``path``: checking it (``check``), analysing it as JSON
    (``json``), or in the analysis around it (``analysis``)."""

    path: str
    stage: Stage
    error: str  # one line: exception type and message


@dataclass(frozen=True)
class Snapshot:
    """The editor state an analysis runs on (buffers beat disk)."""

    overlay: Mapping[str, str] = field(default_factory=dict)
    open_uris: Mapping[str, str] = field(default_factory=dict)  # path -> uri
    versions: Mapping[str, int | None] = field(default_factory=dict)  # uri -> version
    settings: Settings = field(default_factory=Settings)
    roots: tuple[str, ...] = ()
    encoding: str = UTF16
    json_keys: frozenset[str] = frozenset()  # open buffers that hold JSON (by language id)
    #: true once newer edits exist than this snapshot (the session's; read on the worker)
    superseded: Callable[[], bool] = field(default=never, compare=False, repr=False)
    #: seconds since the newest edit the session received (read on the worker): how long
    #: the editor has been quiet
    quiet_for: Callable[[], float] = field(default=long_ago, compare=False, repr=False)
    #: seconds of background checks per update; None: check everything at once
    background_slice: float | None = None

    def is_json(self, key: str) -> bool:
        return key in self.json_keys or key.endswith(".json")


@dataclass(frozen=True)
class Changes:
    """What one :meth:`WorkspaceIndex.update` did, as plain data."""

    checked: int = 0  # pipelines checked
    reports: frozenset[str] = frozenset()  # pipelines re-checked, failed or forgotten
    json: frozenset[str] = frozenset()  # JSON buffers re-analysed
    closed: frozenset[str] = frozenset()  # buffers closed since the last update
    #: analysed buffers whose diagnostics are sent whatever they are: the edited ones (their
    #: text moved, so the same ranges may be other LSP columns) and the ones just closed
    republish: tuple[str, ...] = ()
    #: the analysis itself raised: ``republish`` lists the edited buffers now marked failed
    failed: bool = False
    #: pipelines are left to check (the backlog, or urgent ones a newer edit interrupted)
    more: bool = False


def analyze_json(text: str, settings: Settings) -> JsonContexts | None:
    """The contexts of a cut-off JSON buffer, None when it is complete, not JSON, or huge."""
    if len(text) > MAX_JSON_CHARS or not text.strip():
        return None
    from budgetlens.continuation.contexts import get_contexts  # start-up speed, see the top

    contexts = get_contexts(text, budget=settings.hierarchy_budget, marker=settings.cut_marker)
    return contexts if contexts.cut is not None else None


def norm(path: str | Path) -> str:
    return os.path.normpath(os.path.abspath(str(path)))


def is_pipeline_path(path: str) -> bool:
    """A pipeline (``pipelines/*.yaml``) or a prompt file in its own format."""
    return (path.endswith(PIPELINE_SUFFIXES) and os.path.basename(os.path.dirname(path))
            == "pipelines") or path.endswith(PROMPT_SUFFIXES)


class WorkspaceIndex:
    def __init__(self) -> None:
        self.snapshot = Snapshot()
        self.cache = BudgetCache()
        self.pipelines: set[str] = set()
        self.reports: dict[str, PipelineReport] = {}
        #: input file -> pipelines reading it, by the name they read it by and by its real
        #: path (a link's target edited on disk, or open in a buffer, is that input too)
        self.dependents: dict[str, set[str]] = {}
        self._edges: dict[str, frozenset[str]] = {}  # pipeline -> its keys in dependents
        #: the symbolic links reports read and the open buffers' other names (links.py)
        self.links = LinkTracker(ANALYZED_SUFFIXES)
        self.json_docs: dict[str, JsonContexts] = {}  # open .json buffers with a cut
        self.failures: dict[str, Failure] = {}  # files budgetlens failed on (shown as BL009)
        self.json_too_large: dict[str, int] = {}  # open JSON buffers not analysed: length
        self._settings_key: tuple[object, ...] | None = None
        self._notified: set[tuple[str, str]] = set()  # (stage, exception type) told once
        self._messages: deque[str] = deque()  # for window/showMessage, taken by the server
        #: messages of failures met before the first search, by kind (``notify_failure``)
        self._held_messages: dict[tuple[str, str], str] = {}
        self._retry_all = False
        self.backlog: set[str] = set()  # pipelines to check in the background
        self._carry: set[str] = set()  # urgent pipelines an interrupted update did not reach
        self._round: set[str] = set()  # pipelines of the running whole re-check left to check
        self._round_total = 0
        #: the open pipelines were checked before the first search of the roots: the next
        #: update searches them (``_open_first``)
        self._search_due = False
        self._searched = False
        self._sources: dict[str | None, FileSource] = {}  # one per root, for one update
        #: the project root of each folder of pipelines, for one update (as ``_sources``)
        self._project_roots: dict[str, str | None] = {}
        #: what updates replaced (reports, diagnostics shown), freed by :meth:`release`
        self.retired: list[object] = []
        #: disk texts by path, with their stat fingerprint (see :meth:`_disk_text`)
        self._disk_texts: dict[str, tuple[tuple[int, ...], str]] = {}
        #: LSP ranges converted by earlier converters, per file and text
        self._ranges = RangeMemo(MAX_KEPT_TEXTS)
        #: the suppression comments and lint blocks the last lint pass read
        self.lint_memo = LintMemo()
        #: each checked pipeline's text as the lint pass last read it, with the report it
        #: read it for: read again only once the pipeline is checked again
        self._lint_texts: dict[str, tuple[PipelineReport, str | None]] = {}

    # --- reading ---------------------------------------------------------------------------
    def text_of(self, path: str) -> str | None:
        """The buffer text of ``path`` if open, else its disk text; None if unreadable."""
        text = self.snapshot.overlay.get(path)
        if text is None:
            text = self.links.aliased.get(path)  # a link to an open buffer: what was read
        if text is not None:
            return text
        return self._disk_text(path)

    def lint_text(self, path: str) -> str | None:
        """:meth:`text_of` for the lint pass, which reads every checked pipeline after each
        analysis: a pipeline not open is read (stat'ed) again only once it was checked
        again (a new report), since a change on disk is what has it checked again."""
        report = self.reports.get(path)
        if report is None or path in self.snapshot.overlay or path in self.links.aliased:
            return self.text_of(path)
        kept = self._lint_texts.get(path)
        if kept is not None and kept[0] is report:
            return kept[1]
        text = self.text_of(path)
        self._lint_texts[path] = (report, text)
        if len(self._lint_texts) > 2 * len(self.reports) + 64:  # pipelines gone
            self._lint_texts = {p: k for p, k in self._lint_texts.items() if p in self.reports}
        return text

    def _disk_text(self, path: str) -> str | None:
        """The text of a file on disk, kept while its stat fingerprint (the one the core's
        ``DiskFiles.fingerprint`` uses) is the same: the dependents a shared prompt's edit
        re-publishes are stat'ed, not read again, at every keystroke."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_READ_BYTES:
            return None
        key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)
        kept = self._disk_texts.get(path)
        if kept is not None and kept[0] == key:
            return kept[1]
        try:
            text = Path(path).read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        if len(self._disk_texts) >= MAX_KEPT_TEXTS:
            self._disk_texts.clear()
        self._disk_texts[path] = (key, text)
        return text

    def converter(self) -> Converter:
        return Converter(self.snapshot.encoding, self.text_of, self._ranges)

    def root_for(self, path: str) -> str | None:
        best: str | None = None
        for root in self.snapshot.roots:
            if (path == root or path.startswith(root.rstrip(os.sep) + os.sep)) and (
                    best is None or len(root) > len(best)):
                best = root
        return best

    def project_root_for(self, path: str) -> str | None:
        """The workspace folder of ``path``, or the folder of the config.json above it that
        ``budgetlens check`` would use (``discovery.project_root``); the folder itself when
        the settings name a config.json."""
        root = self.root_for(path)
        if self.snapshot.settings.config_path or root is None:
            return root
        folder = os.path.dirname(path)
        key = f"{root}\0{folder}"
        if key not in self._project_roots:  # looked up once per folder and update
            self._project_roots[key] = project_root(path, root)
        return self._project_roots[key]

    def files_for(self, path: str) -> FileSource:
        """The files a check of ``path`` reads: its project root's, with the open buffers over
        them; one source per root for the whole of an update (so the core's per-source facts
        are shared by the pipelines of one update, never kept across updates)."""
        root = self.project_root_for(path)
        source = self._sources.get(root)
        if source is None:
            base = DiskFiles(root) if root else DiskFiles()
            overlay = {p: t for p, t in self.snapshot.overlay.items()
                       if p.endswith(ANALYZED_SUFFIXES)}
            overlay.update(self.links.aliased)
            # one RunFiles per root and update: each path is stat'ed and resolved once for
            # all the pipelines the update checks
            source = self._sources[root] = RunFiles(OverlayFiles(base, overlay) if overlay
                                                    else base, resolve_by_folder=True)
        return source

    def options_for(self, path: str) -> CheckOptions:
        s = self.snapshot.settings
        root = self.project_root_for(path)
        config = s.config_path
        if config and not os.path.isabs(config) and root:
            config = os.path.join(root, config)
        return CheckOptions(policy=s.policy, tokenizer=s.tokenizer,
                            config_path=norm(config) if config else None,
                            workspace_root=root)

    def report_for(self, path: str) -> PipelineReport | None:
        return self.reports.get(path)

    def reports_using(self, path: str) -> list[PipelineReport]:
        """Reports of every pipeline that reads ``path`` (itself included), sorted."""
        return [self.reports[p] for p in sorted(self.dependents.get(path, ()))
                if p in self.reports]

    def steps_using_prompt(self, path: str) -> list[StepBudget]:
        return [s for r in self.reports_using(path) for s in r.steps if s.prompt_file == path]

    # --- failures --------------------------------------------------------------------------
    def take_messages(self) -> list[str]:
        """The failure messages queued since the last call (thread-safe; the server shows
        each one with ``window/showMessage``)."""
        out: list[str] = []
        while self._messages:
            out.append(self._messages.popleft())
        return out

    def _fail(self, path: str, stage: Stage, exc: BaseException) -> None:
        self.failures[path] = Failure(path, stage, one_line(exc))
        self.notify_failure(path, stage, exc)

    def notify_failure(self, path: str, stage: Stage, exc: BaseException) -> None:
        """Queue the message of a failure, once per kind (stage and exception type), not
        once per keystroke. It names the first file of that kind the checks met. Until the
        first search is done (``_open_first``) the message waits: the search's round checks
        in path order, so which file it names does not depend on which was open."""
        kind = (stage.value, type(exc).__name__)
        if kind in self._notified:
            return
        text = (f"budgetlens could not check {os.path.basename(path) or path}: "
                f"{one_line(exc)}. Files it cannot check show a {codes.INTERNAL_ERROR} error"
                " instead of their diagnostics; details in the server log.")
        if self._search_due:
            self._held_messages.setdefault(kind, text)
            return
        self._notified.add(kind)
        self._messages.append(text)

    def _release_messages(self) -> None:
        """Queue the held messages of kinds the search's round did not meet again."""
        held, self._held_messages = self._held_messages, {}
        for kind, text in held.items():
            if kind not in self._notified:
                self._notified.add(kind)
                self._messages.append(text)

    # --- updating --------------------------------------------------------------------------
    def update(self, snapshot: Snapshot, changed: frozenset[str],
               mode: IndexMode = IndexMode.INCREMENTAL,
               progress: ProgressHook | None = None) -> Changes:
        """Re-check what ``changed`` affects; never raises (a failure of the analysis marks
        the edited buffers failed: :meth:`analysis_failed`)."""
        if self._retry_all:
            mode = IndexMode.FULL
        try:
            changes = self._update(snapshot, changed, mode, progress)
        except Exception as exc:
            self._sources.clear()
            self._project_roots.clear()
            log.exception("analysis failed for %d changed file(s)", len(changed))
            self.snapshot = snapshot
            return Changes(republish=self.analysis_failed(changed, exc), failed=True)
        self._retry_all = False
        return changes

    def analysis_failed(self, changed: Iterable[str], exc: BaseException) -> tuple[str, ...]:
        """The analysis around the checks raised: every edited buffer among ``changed`` is
        marked failed (and returned); the next update re-checks everything."""
        self._retry_all = True
        snap = self.snapshot
        failed = tuple(p for p in sorted(changed) if p in snap.overlay
                       and (p.endswith(ANALYZED_SUFFIXES) or snap.is_json(p)))
        for path in failed:
            self._fail(path, Stage.ANALYSIS, exc)
        return failed

    def release(self) -> None:
        """Free what the last updates replaced. Freeing a large pipeline's report takes a
        few milliseconds, so the session does it once the results are out (and the next
        update does it first, if the session did not)."""
        self.retired.clear()

    def _update(self, snapshot: Snapshot, changed: frozenset[str], mode: IndexMode,
                progress: ProgressHook | None) -> Changes:
        self.release()
        old_overlay = self.snapshot.overlay
        self._drop_failures(Stage.ANALYSIS)  # shown until the next analysis
        self.snapshot = snapshot
        self._sources = {}
        self._project_roots = {}
        requested, mode = mode, self._settings_mode(snapshot, mode)
        # the search the last update left (``_open_first``): the pipelines that update
        # checked are current, unless something changed since
        fresh = set(self.reports) if self._search_due and mode is IndexMode.INCREMENTAL \
            and not changed else set()
        if self._search_due:
            mode = IndexMode.FULL
        closed = frozenset(old_overlay) - frozenset(snapshot.overlay)
        changed = changed | self.links.start_update(snapshot.overlay, changed, closed,
                                                    mode is not IndexMode.INCREMENTAL)
        self._track_pipelines(mode, closed, requested)
        affected = self._affected(changed, mode) - fresh
        gone = self._forget_gone()
        urgent = self._plan(affected, changed, mode, len(fresh))
        if progress is not None and mode is not IndexMode.INCREMENTAL:
            # a round begins: how many it checks (the fresh ones count as checked)
            progress(self._round_total - len(self._round), self._round_total)
        checked = self._run_checks(urgent, progress)
        if self._held_messages and not self._search_due:
            self._release_messages()
        self._sources = {}  # per update: no file facts kept across updates
        self.links.end_checks()
        self._project_roots = {}
        json_changed = set(changed) | closed
        if mode is IndexMode.FULL:  # the marker, budget or the toggle may have changed
            json_changed |= {p for p in snapshot.overlay if snapshot.is_json(p)}
        self._update_json(snapshot, json_changed)
        # edited buffers, and buffers just closed (a pulling client forgets their diagnostics)
        always = {p for p in changed if p in snapshot.overlay} | closed
        ok = sum(1 for p in checked if p not in self.failures)
        return Changes(checked=ok, reports=frozenset(checked | gone),
                       json=frozenset(json_changed), closed=closed,
                       republish=tuple(sorted(p for p in always if p.endswith(ANALYZED_SUFFIXES)
                                              or snapshot.is_json(p))),
                       more=bool(self.backlog or self._carry or self._search_due))

    def _plan(self, affected: set[str], changed: frozenset[str], mode: IndexMode,
              fresh: int = 0) -> set[str]:
        """The urgent pipelines of this update; the rest of a whole re-check goes to the
        backlog (a new whole re-check replaces the old backlog). ``fresh``: pipelines of
        the round that are current already (``_open_first``)."""
        urgent = set(affected)
        if mode is not IndexMode.INCREMENTAL:
            self._round = set(affected)
            self._round_total = len(affected) + fresh
            self.backlog = set()
            if len(affected) > SMALL_RECHECK:
                urgent = affected & self._priority(changed)
                self.backlog = affected - urgent
        urgent |= self._carry
        self._carry = set()
        if self.snapshot.background_slice is None:  # no background: everything now
            urgent |= self.backlog
            self.backlog = set()
        self.backlog -= urgent
        return urgent

    def _priority(self, changed: frozenset[str]) -> set[str]:
        """The open and changed pipelines and the known dependents of open and changed files:
        what a whole re-check checks before the rest."""
        files = set(self.snapshot.overlay) | changed
        first = {p for p in files if p in self.pipelines}
        for path in files:
            first.update(self.dependents.get(path, ()))
        return first

    def _run_checks(self, urgent: set[str], progress: ProgressHook | None) -> set[str]:
        """Check the urgent pipelines (what a newer edit interrupts is carried to the next
        update); when there were none, a slice of the backlog."""
        snap = self.snapshot
        todo = sorted(urgent & self.pipelines)
        if todo:
            done = self._check(todo, progress, snap.superseded)
            self._carry = set(todo[len(done):])
            return set(done)
        if not self.backlog or snap.background_slice is None:
            return set()
        deadline = time.monotonic() + snap.background_slice
        order = sorted(self.backlog & self.pipelines)
        self.backlog = set()

        def stop() -> bool:
            return time.monotonic() >= deadline or snap.superseded()
        done = self._check(order, progress, stop)
        self.backlog = set(order[len(done):])
        return set(done)

    def _drop_failures(self, stage: Stage, keep: Iterable[str] = ()) -> None:
        kept = set(keep)
        for path in [p for p, f in self.failures.items() if f.stage is stage and p not in kept]:
            del self.failures[path]

    def _settings_mode(self, snapshot: Snapshot, mode: IndexMode) -> IndexMode:
        """``FULL`` when the settings or the folders changed since the last update."""
        settings_key = (snapshot.settings.policy, snapshot.settings.tokenizer,
                        snapshot.settings.config_path, snapshot.roots)
        if settings_key != self._settings_key:
            self._settings_key = settings_key
            return IndexMode.FULL
        return mode

    def _track_pipelines(self, mode: IndexMode, closed: frozenset[str],
                         requested: IndexMode) -> None:
        if mode is not IndexMode.INCREMENTAL:
            if self._open_first(requested):
                self._search_due = True
            else:
                self.discover()
                self._search_due = False
        for path in closed:  # an unsaved new pipeline that was closed is gone
            if path in self.pipelines and not os.path.isfile(path):
                self.pipelines.discard(path)
        # open pipeline files count even before discovery sees them on disk
        self.pipelines.update(p for p in self.snapshot.overlay if is_pipeline_path(p))

    def _open_first(self, requested: IndexMode) -> bool:
        """Whether this first whole check checks only the open pipelines, and leaves the
        search of the roots to the next update. The first diagnostics then wait for no walk
        of the workspace (nor for reading its .gitignore files). Only for the first update,
        with background work allowed and no whole re-check asked for, and only when every
        open file is a pipeline: an open prompt's diagnostics come from the pipelines that
        read it."""
        snap = self.snapshot
        if self._searched or self._search_due or snap.background_slice is None \
                or requested is IndexMode.FULL:
            return False
        analyzed = [p for p in snap.overlay if p.endswith(ANALYZED_SUFFIXES) or snap.is_json(p)]
        return bool(analyzed) and all(is_pipeline_path(p) for p in analyzed)

    def _affected(self, changed: frozenset[str], mode: IndexMode) -> set[str]:
        """The pipelines to check again."""
        if mode is not IndexMode.INCREMENTAL:
            # files appeared or vanished (a config.json where none was, a prompt created):
            # check everything; the BudgetCache answers for pipelines whose inputs are as
            # they were
            affected = set(self.pipelines)
        else:
            affected = {p for p in changed if p in self.pipelines}
            for path in changed:
                affected.update(self._readers(path))
        # a pipeline budgetlens failed on is retried on every change (whatever it was: the
        # fix may be in any file, and it has no report to say what it reads); an update
        # that only goes on with the background work changes nothing
        if changed or mode is not IndexMode.INCREMENTAL:
            affected.update(p for p, f in self.failures.items() if f.stage is Stage.CHECK)
        return affected

    def _readers(self, path: str) -> set[str]:
        """The pipelines reading the changed file ``path``: by this name and, when reports
        read it as a symbolic link, by the name of the file it leads to. For a file no report
        reads by this name (a watcher event under a link, or under a linked folder), the
        readers of its real path (an open buffer's real path is ``links``')."""
        readers = self.dependents.get(path)
        if readers is None:
            if path in self.snapshot.overlay or path in self.pipelines \
                    or self.links.is_open_real(path):  # (a buffer's real path, resolved)
                return set()
            return set(self.dependents.get(real_path(path), ()))
        found = set(readers)
        for real in self.links.real_names_of(path, readers):
            found.update(self.dependents.get(real, ()))
        return found

    def _forget_gone(self) -> set[str]:
        """Drop the reports and failures of pipelines that no longer exist; their paths."""
        gone = {p for p in self.reports if p not in self.pipelines}
        for path in gone:
            self._forget(path)
        self._drop_failures(Stage.CHECK, keep=self.pipelines)
        return gone

    def _check(self, paths: list[str], progress: ProgressHook | None,
               stop: Callable[[], bool]) -> list[str]:
        """Check ``paths`` in order until ``stop()`` holds (asked before each one but the
        first); the ones checked. A check that a newer edit overtakes
        (``Snapshot.superseded``, asked by the core between steps) is abandoned midway: it
        and the rest are not checked, and nothing of it is kept."""
        done: list[str] = []
        superseded = self.snapshot.superseded
        for path in paths:
            if done and stop():
                break
            try:
                _test_fault("check")
                report = self._check_one(path, superseded)
                edges = self._edges_of(path, report)
                if self.links.learn(edges[1], self.snapshot.overlay):
                    self._sources.clear()  # a source takes the aliases when it is made
                    report = self._check_one(path, superseded)
                    edges = self._edges_of(path, report)
            except CheckStopped:
                break  # superseded: the next update checks it on the newer text
            except Exception as exc:  # the core never raises for bad input: a real bug
                log.exception("checking %s failed", path)
                self._forget(path)  # no stale report, lens or hover
                self._fail(path, Stage.CHECK, exc)
            else:
                self.failures.pop(path, None)
                self._store(path, report, edges)
            done.append(path)
            self._progress(path, progress)
        return done

    def _check_one(self, path: str, superseded: Callable[[], bool]) -> PipelineReport:
        return check_pipeline(path, files=self.files_for(path), options=self.options_for(path),
                              cache=self.cache, stop=None if superseded is never else superseded)

    def _progress(self, path: str, progress: ProgressHook | None) -> None:
        """Report (checked, to check) of the running whole re-check, every 25 and at the end
        (and (0, to check) when it is planned)."""
        if path not in self._round:
            return
        self._round.discard(path)
        checked = self._round_total - len(self._round)
        if progress is not None and (checked % 25 == 0 or not self._round):
            progress(checked, self._round_total)

    def discover(self) -> None:
        """The pipelines of the roots, found as ``budgetlens check`` finds them with its
        defaults: hidden and dependency folders skipped, and what git ignores (.gitignore,
        .git/info/exclude). An open file counts whatever they say (``_track_pipelines``)."""
        found: set[str] = set()
        excluded = default_excluded()
        for root in self.snapshot.roots:
            try:
                found.update(norm(p) for p in find_pipelines(root, excluded) if p.is_file())
            except OSError:
                log.warning("cannot list pipelines under %s", root)
        self.pipelines = found
        self._searched = True

    def _store(self, path: str, report: PipelineReport,
               edges_and_links: tuple[frozenset[str], Links]) -> None:
        """Keep ``report`` and its edges (``_edges_of``)."""
        old = self.reports.get(path)
        edges, links = edges_and_links
        if old is not None and self._edges.get(path) == edges \
                and self.links.same(path, links):  # the same files: the same edges
            self.retired.append(old)
            self.reports[path] = report
            return
        self._forget(path)
        self.reports[path] = report
        self._edges[path] = edges
        self.links.store(path, links)
        for key in edges:
            self.dependents.setdefault(key, set()).add(path)

    def _edges_of(self, path: str, report: PipelineReport
                  ) -> tuple[frozenset[str], Links]:
        """The keys of ``path`` in ``dependents``: each file its report read (itself too),
        by name and, for a link, by its real path (from this update's ``RunFiles``, which
        the check resolved it with) and by the links it leads through to it (a chain's
        middle link retargeted is reported under its own name); and the (name, real path)
        of those links."""
        files = self.files_for(path)
        place = files.place if isinstance(files, RunFiles) else None
        edges: set[str] = set()
        links: list[tuple[str, str]] = []
        for dep in report.inputs | {path}:
            name = norm(dep)
            edges.add(name)
            real = place(name) if place is not None else name
            if real != name:
                edges.add(real)
                links.append((name, real))
                edges.update(self.links.chain(name))
        return frozenset(edges), tuple(links)

    def _forget(self, path: str) -> None:
        old = self.reports.pop(path, None)
        if old is not None:
            self.retired.append(old)
        self.links.forget(path)
        for key in self._edges.pop(path, ()):
            readers = self.dependents.get(key)
            if readers is not None:
                readers.discard(path)
                if not readers:
                    del self.dependents[key]

    def _update_json(self, snapshot: Snapshot, changed: Iterable[str]) -> None:
        enabled = snapshot.settings.diagnostics.truncated_json
        for path in changed:
            if snapshot.is_json(path) or path in self.json_docs \
                    or path in self.json_too_large or path in self.failures:
                self._analyse_json(snapshot, path, enabled)
        if not enabled:
            self.json_docs.clear()
            self.json_too_large.clear()
            self._drop_failures(Stage.JSON)

    def _analyse_json(self, snapshot: Snapshot, path: str, enabled: bool) -> None:
        self.json_docs.pop(path, None)
        self.json_too_large.pop(path, None)
        failure = self.failures.get(path)
        if failure is not None and failure.stage is Stage.JSON:
            del self.failures[path]
        text = snapshot.overlay.get(path) if snapshot.is_json(path) else None
        if text is None or not enabled:
            return
        if len(text) > MAX_JSON_CHARS:
            self.json_too_large[path] = len(text)
            return
        try:
            _test_fault("json")
            contexts = analyze_json(text, snapshot.settings)
        except Exception as exc:
            log.exception("analysing the JSON buffer %s failed", path)
            self._fail(path, Stage.JSON, exc)
            return
        if contexts is not None:
            self.json_docs[path] = contexts
