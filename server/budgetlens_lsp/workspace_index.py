"""The workspace index: what the server knows about every pipeline, prompt and JSON buffer.

Only the analysis thread touches an index (see ``session.py``). :meth:`WorkspaceIndex.update`
takes a snapshot of the open buffers and the set of changed paths, re-checks every pipeline
that depends on them (the dependency graph is each report's ``inputs``: the pipeline, its
``extends`` chain, its prompt files and config.json), and returns the diagnostics whose
content changed, per file, open or not.

Re-checking goes through the core's ``BudgetCache``: a report whose inputs all have the same
fingerprint is reused, and a prompt is re-tokenized only when its own text changed.

Silence means "checked and fine", never "could not check": when checking a pipeline or
analysing a JSON buffer raises, the file gets a BL009 error diagnostic (the exception in one
line; the traceback goes to the log), its old report is dropped (no stale lens), it is
retried on every later update, and one ``window/showMessage`` per kind of failure is queued
(:meth:`WorkspaceIndex.take_messages`).
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from budgetlens import (
    BudgetCache,
    CheckOptions,
    Diagnostic,
    DiskFiles,
    JsonContexts,
    PipelineReport,
    check_pipeline,
    codes,
)
from budgetlens.contract.check import StepBudget, find_pipelines
from budgetlens.files import FileSource, OverlayFiles
from budgetlens_lsp.convert import UTF16, Converter
from budgetlens_lsp.settings import Settings

log = logging.getLogger(__name__)

MAX_READ_BYTES = 16 * 1024 * 1024
PIPELINE_SUFFIXES = (".yaml", ".yml")
ANALYZED_SUFFIXES = (*PIPELINE_SUFFIXES, ".txt", ".json")

# what changed: only these paths / the set of files may have changed / everything
INCREMENTAL, REDISCOVER, FULL = "incremental", "rediscover", "full"

#: A test hook, documented in docs/language-server.md and read here only: with
#: ``BUDGETLENS_TEST_FAULT=check`` every pipeline check raises, with ``=json`` every analysis
#: of a JSON buffer does, so tests can show what a user sees when budgetlens itself fails.
TEST_FAULT_VARIABLE = "BUDGETLENS_TEST_FAULT"


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
    stage: str
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

    def is_json(self, key: str) -> bool:
        return key in self.json_keys or key.endswith(".json")


@dataclass
class Results:
    """What one analysis produced: diagnostics to publish, per path (open or closed)."""

    publish: dict[str, list[Diagnostic]] = field(default_factory=dict)
    checked: int = 0


def norm(path: str | Path) -> str:
    return os.path.normpath(os.path.abspath(str(path)))


def is_pipeline_path(path: str) -> bool:
    return path.endswith(PIPELINE_SUFFIXES) and os.path.basename(os.path.dirname(path)) \
        == "pipelines"


class WorkspaceIndex:
    def __init__(self) -> None:
        self.snapshot = Snapshot()
        self.cache = BudgetCache()
        self.pipelines: set[str] = set()
        self.reports: dict[str, PipelineReport] = {}
        self.dependents: dict[str, set[str]] = {}  # input file -> pipelines reading it
        self.json_docs: dict[str, JsonContexts] = {}  # open .json buffers with a cut
        self.diagnostics: dict[str, list[Diagnostic]] = {}  # what is shown, per file
        self.failures: dict[str, Failure] = {}  # files budgetlens failed on (shown as BL009)
        self.json_too_large: dict[str, int] = {}  # open JSON buffers not analysed: length
        self._settings_key: tuple[object, ...] | None = None
        self._notified: set[tuple[str, str]] = set()  # (stage, exception type) told once
        self._messages: deque[str] = deque()  # for window/showMessage, taken by the server
        self._retry_all = False

    # --- reading ---------------------------------------------------------------------------
    def text_of(self, path: str) -> str | None:
        """The buffer text of ``path`` if open, else its disk text; None if unreadable."""
        text = self.snapshot.overlay.get(path)
        if text is not None:
            return text
        try:
            p = Path(path)
            if not p.is_file() or p.stat().st_size > MAX_READ_BYTES:
                return None
            return p.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def converter(self) -> Converter:
        return Converter(self.snapshot.encoding, self.text_of)

    def root_for(self, path: str) -> str | None:
        best: str | None = None
        for root in self.snapshot.roots:
            if (path == root or path.startswith(root.rstrip(os.sep) + os.sep)) and (
                    best is None or len(root) > len(best)):
                best = root
        return best

    def files_for(self, path: str) -> FileSource:
        root = self.root_for(path)
        base = DiskFiles(root) if root else DiskFiles()
        overlay = {p: t for p, t in self.snapshot.overlay.items()
                   if p.endswith(ANALYZED_SUFFIXES)}
        return OverlayFiles(base, overlay) if overlay else base

    def options_for(self, path: str) -> CheckOptions:
        s = self.snapshot.settings
        root = self.root_for(path)
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

    def _fail(self, path: str, stage: str, exc: BaseException) -> None:
        self.failures[path] = Failure(path, stage, one_line(exc))
        self.notify_failure(path, stage, exc)

    def notify_failure(self, path: str, stage: str, exc: BaseException) -> None:
        """Queue the message of a failure, once per kind (stage and exception type), not
        once per keystroke."""
        kind = (stage, type(exc).__name__)
        if kind not in self._notified:
            self._notified.add(kind)
            self._messages.append(
                f"budgetlens could not check {os.path.basename(path) or path}: "
                f"{one_line(exc)}. Files it cannot check show a {codes.INTERNAL_ERROR} error"
                " instead of their diagnostics; details in the server log.")

    # --- updating --------------------------------------------------------------------------
    def update(self, snapshot: Snapshot, changed: frozenset[str], mode: str = INCREMENTAL,
               progress: Callable[[int, int], None] | None = None) -> Results:
        """Re-check what ``changed`` affects; never raises (a failure becomes a BL009
        diagnostic on the edited files)."""
        if self._retry_all:
            mode = FULL
        try:
            results = self._update(snapshot, changed, mode, progress)
        except Exception as exc:
            log.exception("analysis failed for %d changed file(s)", len(changed))
            return self._update_failed(snapshot, changed, exc)
        self._retry_all = False
        return results

    def _update_failed(self, snapshot: Snapshot, changed: frozenset[str],
                       exc: Exception) -> Results:
        """The analysis itself raised: every edited buffer shows the failure; the next
        update re-checks everything."""
        from budgetlens_lsp.features.diagnostics import failure_diagnostic

        self.snapshot = snapshot
        self._retry_all = True
        results = Results()
        for path in sorted(changed):
            if path in snapshot.overlay and (path.endswith(ANALYZED_SUFFIXES)
                                             or snapshot.is_json(path)):
                self._fail(path, "analysis", exc)
                diags = [failure_diagnostic(self, self.failures[path])]
                self.diagnostics[path] = diags
                results.publish[path] = diags
        return results

    def _update(self, snapshot: Snapshot, changed: frozenset[str], mode: str,
                progress: Callable[[int, int], None] | None) -> Results:
        old_overlay = self.snapshot.overlay
        # a failure of the analysis itself is shown until the next analysis
        for path in [p for p, f in self.failures.items() if f.stage == "analysis"]:
            del self.failures[path]
        self.snapshot = snapshot
        settings_key = (snapshot.settings.policy, snapshot.settings.tokenizer,
                        snapshot.settings.config_path, snapshot.roots)
        if settings_key != self._settings_key:
            self._settings_key = settings_key
            mode = FULL
        if mode in (FULL, REDISCOVER):
            self.discover()
        closed = set(old_overlay) - set(snapshot.overlay)
        for path in closed:  # an unsaved new pipeline that was closed is gone
            if path in self.pipelines and not os.path.isfile(path):
                self.pipelines.discard(path)
        # open pipeline files count even before discovery sees them on disk
        for path in snapshot.overlay:
            if is_pipeline_path(path):
                self.pipelines.add(path)
        affected: set[str] = set()
        if mode in (FULL, REDISCOVER):
            # files appeared or vanished (a config.json where none was, a prompt created):
            # check everything; the BudgetCache answers for pipelines whose inputs are as
            # they were
            affected = set(self.pipelines)
        else:
            for path in changed:
                affected.update(self.dependents.get(path, ()))
                if path in self.pipelines:
                    affected.add(path)
        # a pipeline budgetlens failed on is retried on every change (whatever it was: the
        # fix may be in any file, and it has no report to say what it reads)
        affected.update(p for p, f in self.failures.items() if f.stage == "check")
        gone = {p for p in self.reports if p not in self.pipelines}
        for path in gone:
            self._forget(path)
        for path in [p for p, f in self.failures.items()
                     if f.stage == "check" and p not in self.pipelines]:
            del self.failures[path]
        results = Results()
        total = len(affected)
        for n, path in enumerate(sorted(affected & self.pipelines), 1):
            try:
                _test_fault("check")
                report = check_pipeline(path, files=self.files_for(path),
                                        options=self.options_for(path), cache=self.cache)
            except Exception as exc:  # the core never raises for bad input: a real bug
                log.exception("checking %s failed", path)
                self._forget(path)  # no stale report, lens or hover
                self._fail(path, "check", exc)
            else:
                self.failures.pop(path, None)
                self._store(path, report)
                results.checked += 1
            if progress is not None and (n % 25 == 0 or n == total):
                progress(n, total)
        json_changed = set(changed) | closed
        if mode == FULL:  # the marker, budget or the toggle may have changed
            json_changed |= {p for p in snapshot.overlay if snapshot.is_json(p)}
        self._update_json(snapshot, json_changed)
        # edited buffers, and buffers just closed (a pulling client forgets their diagnostics)
        always = [p for p in changed if p in snapshot.overlay]
        always += [p for p in old_overlay if p not in snapshot.overlay]
        always = [p for p in always if p.endswith(ANALYZED_SUFFIXES) or snapshot.is_json(p)]
        results.publish = self._refresh_diagnostics(always=always)
        return results

    def discover(self) -> None:
        found: set[str] = set()
        for root in self.snapshot.roots:
            try:
                found.update(norm(p) for p in find_pipelines(root) if p.is_file())
            except OSError:
                log.warning("cannot list pipelines under %s", root)
        self.pipelines = found

    def _store(self, path: str, report: PipelineReport) -> None:
        old = self.reports.get(path)
        if old is not None:
            for dep in old.inputs:
                self.dependents.get(norm(dep), set()).discard(path)
        self.reports[path] = report
        for dep in report.inputs | {path}:
            self.dependents.setdefault(norm(dep), set()).add(path)

    def _forget(self, path: str) -> None:
        old = self.reports.pop(path, None)
        if old is not None:
            for dep in old.inputs:
                self.dependents.get(norm(dep), set()).discard(path)

    def _update_json(self, snapshot: Snapshot, changed: Iterable[str]) -> None:
        from budgetlens_lsp.features.json_documents import MAX_JSON_CHARS, analyze_json

        for path in changed:
            if not (snapshot.is_json(path) or path in self.json_docs
                    or path in self.json_too_large or path in self.failures):
                continue
            self.json_docs.pop(path, None)
            self.json_too_large.pop(path, None)
            failure = self.failures.get(path)
            if failure is not None and failure.stage == "json":
                del self.failures[path]
            text = snapshot.overlay.get(path) if snapshot.is_json(path) else None
            if text is None or not snapshot.settings.diagnostics.truncated_json:
                continue
            if len(text) > MAX_JSON_CHARS:
                self.json_too_large[path] = len(text)
                continue
            try:
                _test_fault("json")
                contexts = analyze_json(text, snapshot.settings)
            except Exception as exc:
                log.exception("analysing the JSON buffer %s failed", path)
                self._fail(path, "json", exc)
                continue
            if contexts is not None:
                self.json_docs[path] = contexts
        if not snapshot.settings.diagnostics.truncated_json:
            self.json_docs.clear()
            self.json_too_large.clear()
            for path in [p for p, f in self.failures.items() if f.stage == "json"]:
                del self.failures[path]

    def _refresh_diagnostics(self, always: Iterable[str] = ()) -> dict[str, list[Diagnostic]]:
        """Diagnostics of every file whose set changed, plus the edited buffers ``always``
        (their text moved, so the same code-point ranges may be other LSP columns)."""
        from budgetlens_lsp.features.diagnostics import collect

        current = collect(self)
        changed: dict[str, list[Diagnostic]] = {p: current.get(p, []) for p in always}
        for path in set(current) | set(self.diagnostics):
            new = current.get(path, [])
            if new != self.diagnostics.get(path, []):
                changed[path] = new
        self.diagnostics = {p: d for p, d in current.items() if d}
        return changed
