"""``budgetlens check [PATH...] [--format text|json|sarif|github|gitlab|junit] [--policy P]``.

PATH (default ``.``) is a pipeline file or a folder searched for ``pipelines/*.yaml``; a
``pipelines`` folder itself gives its own files. Text output reads like a compiler's
(``file:line:col: severity[CODE] message``, the source line (a window of 120 columns around
the diagnostic when it is wider), a caret, and where each term of a budget comes from)
followed by a per-step budget table; ``--format json`` prints one
object ``{"version": 1, "diagnostics": [...], "steps": [...]}`` with each term's value and
location; ``--format sarif`` prints SARIF 2.1.0 with the terms as related locations;
``github``, ``gitlab`` and ``junit`` are the CI formats of :mod:`budgetlens_cli.ci_formats`. Exit
status: 0 without errors, 1 with at least one error, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from budgetlens import __version__, codes
from budgetlens.contract import escape
from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.discovery import find_pipelines
from budgetlens.contract.policy import DEVELOPMENT_ENV, POLICY_ENV, Policy
from budgetlens.files import DiskFiles, FileSource, RunFiles, SourceError
from budgetlens.serialize import to_jsonable
from budgetlens.source import (
    ClampFix,
    Diagnostic,
    LineIndex,
    Range,
    Related,
    Severity,
    unique_diagnostics,
)
from budgetlens.tokens.core import (
    SHIPPED_ENCODINGS,
    TokenizerError,
    get_tokenizer,
    tokenizer_file,
    tokenizer_path,
)
from budgetlens_cli import cache as result_cache
from budgetlens_cli import ci_formats
from budgetlens_cli.main import EXIT_FINDINGS, EXIT_OK, UsageError

if TYPE_CHECKING:
    from budgetlens.contract.results import CheckOptions, PipelineReport, StepBudget
    from budgetlens.contract.targets import TargetMatrix

JSON_SCHEMA_VERSION = 1
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FORMATS = ("text", "json", "sarif", "github", "gitlab", "junit")
T = TypeVar("T")


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "check", help="check pipelines against the token budget contract",
        description="Check every call_model step of the pipelines against the model's"
                    " context window. PATH (default .) is a pipeline file or a folder"
                    " searched for pipelines/*.yaml.")
    add_common_arguments(p)
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="output format (default text)")
    p.add_argument("--no-table", action="store_true",
                   help="text format: print the diagnostics only, not the budget tables")
    p.add_argument("--target", action="append", metavar="MODEL", dest="targets",
                   help="also check every step against this registry model (repeatable;"
                        " default: config.json's targets)")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the result cache (also: BUDGETLENS_NO_CACHE=1)")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="the result cache folder (default: the BUDGETLENS_CACHE_DIR environment"
                        f" variable, else {result_cache.CACHE_DIR_NAME} in the current folder)")
    p.add_argument("-j", "--jobs", type=positive_int, metavar="N",
                   help="check in N worker processes when at least"
                        f" {MIN_PARALLEL} pipelines need checking (default: the number of"
                        " usable CPUs; 1: in this process); the output is the same")
    p.set_defaults(run=run)


def positive_int(value: str) -> int:
    """The ``type=`` of ``--jobs``: a whole number >= 1."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {number}")
    return number


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", default=["."], metavar="PATH",
                   help="pipeline files or folders (default: the current folder)")
    p.add_argument("--policy", choices=[x.value for x in Policy],
                   help="override the policy (default: the PIPELINE_LIMITS_POLICY environment"
                        " variable, else development in config.json: true = fail_fast)")
    p.add_argument("--tokenizer", help="override the tokenizer of config.json")
    p.add_argument("--config", metavar="FILE", help="use this config.json for every pipeline")


def check_usage(args: argparse.Namespace) -> None:
    """A bad --tokenizer or --config is bad usage (UsageError). A --tokenizer that names a
    tokenizer.json by a relative path names it from the current folder, as every path on the
    command line does: it is made absolute here, so the file this check reads is the one
    the pipelines are counted with (config.json's own ``tokenizer`` is relative to its
    folder; the option was too, while this check read it from the current folder)."""
    named = [*getattr(args, "paths", ()), *([args.config] if args.config else [])]
    spec = tokenizer_path(args.tokenizer) if args.tokenizer is not None else None
    _current_folder_exists([*named, *([str(spec)] if spec is not None else [])])
    if args.tokenizer is not None:
        args.tokenizer = tokenizer_file(args.tokenizer) or args.tokenizer
        try:
            get_tokenizer(args.tokenizer)
        except TokenizerError as exc:
            raise UsageError(f"--tokenizer: {exc}") from None
    if args.config is not None:
        _config_file(args.config)


def _current_folder_exists(names: list[str]) -> None:
    """UsageError when a relative path is given (``.`` by default) and the current folder
    was deleted: it names nothing (every later step would fail on it)."""
    if all(os.path.isabs(name) for name in names):
        return
    try:
        os.getcwd()
    except OSError:
        raise UsageError("the current folder no longer exists (deleted or moved): cd to a"
                         " folder that exists, or give absolute paths") from None


def _config_file(name: str) -> None:
    """UsageError unless ``--config`` names a regular file (saying what it names instead)."""
    try:
        mode = os.stat(name).st_mode
    except FileNotFoundError:
        raise UsageError(f"--config {name}: no such file") from None
    except OSError as exc:
        raise UsageError(f"--config {name}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"--config {name}: is a directory, expected a config.json file")
    if not stat.S_ISREG(mode):
        raise UsageError(f"--config {name}: not a regular file")


def options_from(args: argparse.Namespace) -> CheckOptions:
    """The check options of the command line; a bad --tokenizer or --config is bad usage."""
    check_usage(args)
    # lazy for start-up speed: a check whose results all come from the result cache never
    # loads the contract's models (pydantic)
    from budgetlens.contract.results import CheckOptions

    return CheckOptions(policy=args.policy, tokenizer=args.tokenizer,
                        config_path=args.config, environ=policy_environ())


def policy_environ() -> dict[str, str]:
    """The policy variables of the environment, read once for the run (the core reads its
    ``environ`` for every pipeline: the process environment's misses cost more than the
    rest of the policy)."""
    return {name: os.environ[name] for name in (POLICY_ENV, DEVELOPMENT_ENV, *USER_MODELS_ENV)
            if name in os.environ}


#: Where the user's models.json is (``contract.models_file.user_models_path``).
USER_MODELS_ENV = ("XDG_CONFIG_HOME", "HOME")


def collect_pipelines(paths: Iterable[str]) -> list[Path]:
    """Every pipeline named or found under the PATH arguments; UsageError when none."""
    found: list[Path] = []
    seen: set[Path] = set()
    for name in paths:
        path = Path(name)
        if not path.exists() and not path.is_symlink():
            raise UsageError(f"{name}: no such file or folder")
        pipelines = find_pipelines(path)
        if not pipelines:
            raise UsageError(f"{name}: no pipelines/*.yaml found under this folder"
                             + _workspace_hint(path))
        for p in pipelines:  # in order, each once (a set: 5,000 pipelines stay linear)
            if p not in seen:
                seen.add(p)
                found.append(p)
    return found


def _workspace_hint(folder: Path) -> str:
    """Where the pipelines are when ``folder`` is inside a workspace (a config.json above)."""
    current = os.path.abspath(folder)
    for _ in range(64):
        parent = os.path.dirname(current)
        if parent == current:
            return ""
        current = parent
        pipelines = os.path.join(current, "pipelines")
        if os.path.isfile(os.path.join(current, "config.json")) and os.path.isdir(pipelines) \
                and find_pipelines(pipelines):
            shown = os.path.relpath(current)
            return f"; its workspace is {shown}: run `budgetlens check {shown}`"
    return ""


def check_pipeline(path: Path | str, *, files: FileSource, options: CheckOptions,
                   cache: BudgetCache) -> PipelineReport:
    """The core's ``check_pipeline``, imported on first use: a run whose results all come
    from the result cache never loads the checker (PyYAML, the pipeline models)."""
    from budgetlens.contract.check import check_pipeline as check  # lazy: start-up speed

    return check(path, files=files, options=options, cache=cache)


class _DepsCache(BudgetCache):
    """The run's ``BudgetCache``, which also keeps the inputs (path -> stat fingerprint) of
    the last report the core stored: what the result cache keys an entry by.

    It keeps only what another pipeline of the run can use: parsed files (an ``extends``
    parent, config.json), token counts and templates. A run checks each pipeline once per
    options (each target's are others), so a report or a plan would never be asked for
    again, and the parse of the pipeline being checked is dropped when its check (with its
    targets') is done (``done``), unless an earlier pipeline kept it as its parent (one that
    a later pipeline extends is parsed again then, and kept). What is not kept is freed as
    the run goes, rather than held to its end."""

    last_deps: dict[str, str] | None = None
    checking: str | None = None
    """The pipeline (normalised path) being checked, whose parse ``done`` drops."""

    #: no report is looked up again (the result cache keys where the files lie its own way:
    #: ``cache_store.ContentHashes._located``)
    places = False

    def store_report(self, key: Any, deps: Mapping[str, str], report: Any) -> None:
        self.last_deps = dict(deps)

    def store_structure(self, key: Any, deps: Mapping[str, str], value: Any) -> None:
        pass

    def begin(self, pipeline: str) -> None:
        """``pipeline`` is checked next (with its targets)."""
        self.last_deps = None
        self.checking = None if self.has_parsed("pipeline", pipeline) else pipeline

    def done(self) -> None:
        """The check of ``begin``'s pipeline is done: its parse is dropped (if it was not
        kept before, as an earlier pipeline's parent)."""
        if self.checking is not None:
            self.forget_parsed("pipeline", self.checking)
        self.checking = None


@dataclass
class PipelineResult:
    """What the output needs of one pipeline: its diagnostics, step counts and the rendered
    pieces of the formats used so far (``FRAGMENT``). The CLI cache keeps it between runs;
    both a fresh and a cached run print from it, so their outputs are the same bytes."""

    pipeline: str
    diagnostics: tuple[Diagnostic, ...]
    steps: int
    unfit: int
    fragments: dict[str, Any] = field(default_factory=dict)
    matrix: TargetMatrix | None = None
    """The pipeline against every target (``--target`` or config.json's ``targets``), when it
    has targets; kept in the result cache with the rest (the targets are part of its key,
    config.json is one of the pipeline's inputs)."""


#: The piece of a pipeline's output each format needs (the others need only diagnostics).
FRAGMENT = {"text": "tables", "json": "steps", "junit": "junit"}


def fragment_of(args: argparse.Namespace) -> str | None:
    if args.format == "text" and getattr(args, "no_table", False):
        return None
    return FRAGMENT.get(args.format)


def pipeline_result(report: PipelineReport, piece: str | None) -> PipelineResult:
    result = PipelineResult(report.pipeline, tuple(report.diagnostics), len(report.steps),
                            sum(not s.fits for s in report.steps))
    if piece == "tables":
        result.fragments[piece] = table_text(report)
    elif piece == "steps":
        result.fragments[piece] = [json.dumps(_step_json(report, i), indent=2,
                                              ensure_ascii=False)
                                   for i in range(len(report.steps))]
    elif piece == "junit":
        result.fragments[piece] = ci_formats.junit_suite(report)
    return result


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a run (checking and printing), back as it was at
    the end. A check makes no cyclic garbage to speak of (the young collections this replaced
    found none in 1,000 pipelines; the results are freed by reference counting), while every
    collection walks the objects kept since the one before: the results, ever more of them.
    ``run`` drops its results before the collector is back on, so the collection that follows
    walks only what outlives the run."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def one_reading_per_file(checking: bool) -> Iterator[None]:
    """The YAML reader's re-reading of recent texts (``yamldoc.incremental``: an editor's
    buffer edited inside one value between two reads) off while ``checking``, back as it was
    at the end: a run reads each file once, so the search for an earlier reading only costs.
    Not imported when nothing is checked (a run answered by the result cache loads no YAML).
    """
    if not checking:
        yield
        return
    from budgetlens.yamldoc import incremental  # lazy: start-up speed (PyYAML)

    enabled = incremental.ENABLED
    incremental.ENABLED = False
    try:
        yield
    finally:
        incremental.ENABLED = enabled


def _deps_of(cache: _DepsCache, report: PipelineReport, files: FileSource) -> dict[str, str] | None:
    """The inputs (path -> stat fingerprint) the result cache keys ``report`` by; None when
    the check was stopped."""
    deps = cache.last_deps
    if deps is None:
        return None
    tokenizer = report.tokenizer
    if tokenizer and tokenizer not in SHIPPED_ENCODINGS and os.path.isabs(tokenizer):
        deps[tokenizer] = files.fingerprint(Path(tokenizer))  # a tokenizer.json is an input
    return deps


def _tokenizer_bytes(tokenizer: str | None, deps: Mapping[str, str],
                     hashes: result_cache.ContentHashes) -> None:
    """Tell ``hashes`` the bytes a tokenizer.json the counts came from had (its library was
    given them: ``tokens.core.loaded_digest``), for it and for each link to it among
    ``deps`` read at the same stat, so the entry is keyed by those bytes, not by a later
    read of the file (saved again in the same clock tick, it would key the old counts by
    the new bytes)."""
    version = deps.get(tokenizer) if tokenizer else None
    if version is None or tokenizer is None:
        return
    # lazy: start-up speed (tiktoken)
    from budgetlens.tokens.core import loaded_digest

    got = loaded_digest(tokenizer)
    if got is None or got[0] != version:
        return
    for path, seen in deps.items():
        if seen == version and (path == tokenizer or os.path.realpath(path) == tokenizer):
            hashes.record_digest(path, version, got[1], got[2])


#: Fewer pipelines to check than this are checked in this process (starting workers and
#: warming their caches would cost more than it saves).
MIN_PARALLEL = 64
#: Pipelines per chunk handed to a worker: about ``CHUNKS_PER_JOB`` chunks per worker (the
#: last ones balance the load), within these bounds.
CHUNK_MIN, CHUNK_MAX, CHUNKS_PER_JOB = 8, 64, 8


@dataclass(frozen=True)
class CheckSpec:
    """How this run checks a pipeline, for a worker process to do the same (picklable)."""

    policy: str | None = None
    tokenizer: str | None = None
    config: str | None = None
    piece: str | None = None
    targets: list[str] | None = None
    hash_inputs: bool = False
    """The result cache is on: fingerprint the inputs of each pipeline checked."""

    def options(self) -> CheckOptions:
        from budgetlens.contract.results import CheckOptions  # lazy: start-up speed

        return CheckOptions(policy=self.policy, tokenizer=self.tokenizer,
                            config_path=self.config, environ=policy_environ())


@dataclass(frozen=True)
class RunStats:
    """What the last ``check_results`` of this process did (read by the tests: mechanisms,
    not times)."""

    pipelines: int
    checked: int
    worker_pids: frozenset[int] = frozenset()
    """The worker processes that checked pipelines (empty: all checked in this process)."""
    method: str | None = None
    """``fork`` or ``spawn`` when workers ran."""
    worker_stderr: bool = False
    """A worker wrote to its ``sys.stderr`` (the run's answer is not recorded)."""


LAST_RUN: RunStats | None = None
#: Token counts passed between the processes of a parallel run: tokenizer name ->
#: ``(text key, count)`` (``BudgetCache.fresh_counts``, ``TokenCounter.take_fresh``).
SharedCounts = dict[str, list[tuple[str, int]]]
#: A pipeline checked: its result, whether the core recorded its inputs, and their
#: fingerprints for the result cache (None: without the cache, or one changed while read).
Checked = tuple["PipelineResult", bool, "dict[str, tuple[str, str]] | None"]


class _Checker:
    """Checks pipelines for one run, in this process or in one worker: one ``BudgetCache``
    and one ``RunFiles`` over the disk for all of them (the files are one unchanging state
    for a run, so each path is stat'ed and resolved once), and the options made once."""

    def __init__(self, make_options: Callable[[], CheckOptions], piece: str | None,
                 targets: list[str] | None,
                 hashes: result_cache.ContentHashes | None) -> None:
        self.make_options = make_options
        self.piece = piece
        self.targets = targets
        self.hashes = hashes
        self.files = RunFiles(result_cache.HashingFiles(hashes) if hashes is not None
                              else DiskFiles(), resolve_by_folder=True)
        if hashes is not None:  # a file is resolved once, for the check and its hash
            hashes.resolve_with(self.files.abspath, self.files.realpath)
        self.cache = _DepsCache()
        self._options: CheckOptions | None = None
        self._no_targets: set[str] = set()  # folders whose config.json names no targets

    @classmethod
    def of_spec(cls, spec: CheckSpec) -> _Checker:
        hashes = (result_cache.ContentHashes(_stat_fingerprint, result_cache.is_racy,
                                             result_cache.location_of)
                  if spec.hash_inputs else None)
        return cls(spec.options, spec.piece, spec.targets, hashes)

    def options(self) -> CheckOptions:
        if self._options is None:
            self._options = self.make_options()
        return self._options

    def check(self, path: Path) -> Checked:
        """The result of ``path``, whether the core recorded its inputs and, with the result
        cache on, their fingerprints (None: one changed while it was read: not cacheable)."""
        self.cache.begin(os.path.normpath(str(path)))
        options = self.options()
        try:
            report = check_pipeline(path, files=self.files, options=options, cache=self.cache)
            got = pipeline_result(report, self.piece)
            deps = _deps_of(self.cache, report, self.files)  # before the targets store theirs
            got.matrix = self.matrix(path, options)
        finally:
            self.cache.done()
        fps = None
        if deps is not None and self.hashes is not None:
            _tokenizer_bytes(report.tokenizer, deps, self.hashes)
            fps = result_cache.entry_fingerprints(deps, self.hashes)
        return got, deps is not None, fps

    def matrix(self, path: Path, options: CheckOptions) -> TargetMatrix | None:
        """The pipeline's target matrix; without ``--target``, skipped for a folder whose
        config.json names no targets (the config is found from the folder alone)."""
        folder = os.path.dirname(os.path.normpath(str(path)))
        if self.targets is None and folder in self._no_targets:
            return None
        found = target_matrix(path, self.targets, self.files, options, self.cache)
        if found is None and self.targets is None:
            self._no_targets.add(folder)
        return found

    def check_chunk(self, paths: list[Path]) -> list[Checked]:
        return [self.check(path) for path in paths]

    def check_shared(self, message: tuple[list[Path], SharedCounts]) -> tuple[list[Checked],
                                                                              SharedCounts]:
        """A worker's chunk: the counts the other processes made (``_Run.outgoing``) are
        learned first, and the ones made here while checking go back with the results."""
        paths, counts = message
        self.cache.learn_counts(counts)
        return self.check_chunk(paths), self.cache.fresh_counts()


#: The checker a forked worker starts from (set in the parent just before the workers start:
#: its caches are warm; a spawned worker makes its own from the ``CheckSpec``).
_FORK_CHECKER: _Checker | None = None


def _worker(conn: Any, spec: CheckSpec) -> None:
    """The body of a worker process: checks chunks of pipelines until told to stop."""
    from budgetlens_cli import workers  # lazy: only a parallel run needs it

    gc.disable()  # for the worker's life, as in ``collector_paused`` (forked: it is off)
    from budgetlens.yamldoc import incremental  # lazy: only a parallel run needs it

    incremental.ENABLED = False  # as in ``one_reading_per_file`` (forked: it is off)
    checker = _FORK_CHECKER if _FORK_CHECKER is not None else _Checker.of_spec(spec)
    checker.cache.share_counts()
    workers.serve(conn, checker.check_shared)


def jobs_default() -> int:
    from budgetlens_cli import workers  # lazy: start-up speed

    return workers.usable_cpus()


def chunked(items: Sequence[T], jobs: int) -> list[list[T]]:
    """``items`` cut into consecutive chunks (neighbours share parents and config.json)."""
    size = max(CHUNK_MIN, min(CHUNK_MAX, -(-len(items) // (jobs * CHUNKS_PER_JOB))))
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def check_results(pipelines: Sequence[Path], make_options: Callable[[], CheckOptions],
                  piece: str | None,
                  store: result_cache.ResultCache | None = None,
                  targets: list[str] | None = None, *, jobs: int | None = 1,
                  spec: CheckSpec | None = None) -> list[PipelineResult]:
    """The result of every pipeline: from ``store`` when none of its inputs changed, else
    checked and put in ``store`` (by this process: workers only send results). With
    ``jobs`` > 1 (None: the usable CPUs) and a ``spec``, when at least ``MIN_PARALLEL``
    pipelines need checking they are checked in worker processes, the first one here (it
    warms the caches that forked workers start with)."""
    global LAST_RUN
    run = _Run(pipelines, piece, store)
    checker = _Checker(make_options, piece, targets, store.hashes if store else None)
    if jobs is None and spec is not None and len(run.todo) >= MIN_PARALLEL:
        jobs = jobs_default()  # not before: a cached run loads no multiprocessing
    parallel = jobs is not None and jobs > 1 and spec is not None \
        and len(run.todo) >= MIN_PARALLEL
    method = None
    with collector_paused(), one_reading_per_file(bool(run.todo)):
        if parallel:
            checker.cache.share_counts()  # the first pipeline's, for spawned workers
        for i in run.todo[:1] if parallel else run.todo:
            run.keep(i, *checker.check(pipelines[i]))
        if parallel and spec is not None and jobs is not None:
            method = run.in_workers(run.todo[1:], checker, spec, jobs)
    LAST_RUN = RunStats(len(pipelines), len(run.todo), frozenset(run.pids), method,
                        run.worker_stderr)
    return [r for r in run.results if r is not None]


class _Run:
    """The results of one ``check_results`` as they come in, and the result cache's
    entries of the pipelines checked (written by this process only)."""

    def __init__(self, pipelines: Sequence[Path], piece: str | None,
                 store: result_cache.ResultCache | None) -> None:
        self.pipelines = pipelines
        self.store = store
        self.names = [os.path.normpath(str(path)) for path in pipelines]
        self.results: list[PipelineResult | None] = [None] * len(pipelines)
        self.kept: dict[int, Any] = {}
        self.todo: list[int] = []
        self.pids: set[int] = set()
        self.worker_stderr = False  # a worker wrote to its standard error
        for i, name in enumerate(self.names):
            kept = store.get(name) if store is not None else None
            if isinstance(kept, PipelineResult) and (piece is None or piece in kept.fragments):
                self.results[i] = kept
            else:
                self.kept[i] = kept
                self.todo.append(i)

    def keep(self, i: int, got: PipelineResult, recorded: bool,
             fps: dict[str, tuple[str, str]] | None) -> None:
        kept = self.kept.pop(i, None)
        if isinstance(kept, PipelineResult):  # still valid: the other formats' pieces
            got.fragments = {**kept.fragments, **got.fragments}
        if self.store is not None and recorded:
            self.store.put_entry(self.names[i], fps, got)
        self.results[i] = got

    def in_workers(self, todo: list[int], checker: _Checker, spec: CheckSpec,
                   jobs: int) -> str:
        """Check ``todo`` in ``jobs`` worker processes; the start method used."""
        global _FORK_CHECKER
        from budgetlens_cli import workers  # lazy: only a parallel run needs it

        chunks = chunked(todo, jobs)
        method = workers.start_method()
        # every process's new token counts, in the order they came, with who made them
        # (0: this one); each worker is sent the others' it has not had yet, so a prompt
        # that pipelines far apart share is encoded in one process, not in each
        counts: list[tuple[int, SharedCounts]] = [(0, checker.cache.fresh_counts())]
        sent: dict[int, int] = {}

        def handle(index: int, pid: int, payload: tuple[list[Checked], SharedCounts]) -> None:
            self.pids.add(pid)
            checked, fresh = payload
            for i, one in zip(chunks[index], checked, strict=True):
                self.keep(i, *one)
            if fresh:
                counts.append((pid, fresh))

        def outgoing(pid: int, paths: list[Path]) -> tuple[list[Path], SharedCounts]:
            news: SharedCounts = {}
            for origin, fresh in counts[sent.get(pid, 0):]:
                if origin != pid:
                    for name, pairs in fresh.items():
                        news.setdefault(name, []).extend(pairs)
            sent[pid] = len(counts)
            return paths, news

        _FORK_CHECKER = checker if method == "fork" else None
        try:
            self.worker_stderr = bool(workers.run_chunks(
                _worker, spec, [[self.pipelines[i] for i in c] for c in chunks], jobs, handle,
                method, outgoing))
        finally:
            _FORK_CHECKER = None
        return method


def target_matrix(path: Path, targets: list[str] | None, files: FileSource,
                  options: CheckOptions, cache: BudgetCache) -> TargetMatrix | None:
    """The target matrix of a pipeline (``targets``, else its config.json's); None when it
    has no targets."""
    from budgetlens_cli import targets_out  # lazy: start-up speed (the registry, the checker)

    return targets_out.matrix(path, targets, files, options, cache)


#: Arguments of ``check`` that do not change a pipeline's result (every other one is part of
#: the result cache's key, so an option added later is in it without a word here).
NOT_IN_KEY = frozenset({"paths", "format", "no_table", "no_cache", "cache_dir", "run",
                        "command", "jobs"})


def options_key(args: argparse.Namespace, environ: Mapping[str, str]) -> tuple[str, ...]:
    """What the check options of ``args`` are made of: the options that change a result and
    the policy variables of the environment (as ``CheckOptions.key``)."""
    chosen = sorted((k, repr(v)) for k, v in vars(args).items() if k not in NOT_IN_KEY)
    return (repr(chosen), environ.get(POLICY_ENV, ""), environ.get(DEVELOPMENT_ENV, ""),
            *(environ.get(name, "") for name in USER_MODELS_ENV))


def open_store(args: argparse.Namespace) -> result_cache.ResultCache | None:
    """The result cache of this run (None with ``--no-cache``), loaded."""
    if result_cache.cache_disabled(args.no_cache, os.environ):
        return None
    if not result_cache.key_usable():  # no usable per-user key: the cache is off (noted)
        return None
    folder, explicit = result_cache.cache_dir(args.cache_dir, os.environ)
    try:
        key = result_cache.run_key(options_key(args, os.environ))
    except OSError:  # no current folder (removed): run without the cache
        return None
    hashes = result_cache.ContentHashes(_stat_fingerprint, result_cache.is_racy,
                                        result_cache.location_of)
    store = result_cache.ResultCache(folder, key, explicit, hashes)
    store.load()
    return store


def _stat_fingerprint(path: str) -> str:
    return DiskFiles().fingerprint(Path(path))


def save_store(store: result_cache.ResultCache | None) -> None:
    """Write the result cache; a failure is one warning line, never a failed run."""
    if store is None:
        return
    try:
        store.save()
    except (OSError, result_cache.CacheDirError) as exc:
        print(f"budgetlens: warning: result cache not written ({exc}); --no-cache skips it",
              file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    with collector_paused():  # its results are dropped before it is back on
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    check_usage(args)  # before anything is read
    targets = validate_targets(args)
    pipelines = collect_pipelines(args.paths)
    store = open_store(args)
    piece = fragment_of(args)
    spec = CheckSpec(args.policy, args.tokenizer, args.config, piece, targets, store is not None)
    results = check_results(pipelines, lambda: options_from(args), piece, store, targets,
                            jobs=getattr(args, "jobs", None), spec=spec)
    diagnostics = unique_diagnostics([*(d for r in results for d in r.diagnostics),
                                      *(d for r in results if r.matrix is not None
                                        for d in r.matrix.diagnostics)])
    write_output(sys.stdout, args, results, diagnostics)
    save_store(store)
    has_error = any(d.severity is Severity.ERROR for d in diagnostics)
    return EXIT_FINDINGS if has_error else EXIT_OK


def validate_targets(args: argparse.Namespace) -> list[str] | None:
    """The --target names as the registry spells them (bad usage for an unknown one)."""
    if not getattr(args, "targets", None):
        return None
    from budgetlens_cli import targets_out  # lazy: start-up speed (the registry)

    return targets_out.validate(args)


def write_output(out: TextIO, args: argparse.Namespace, results: list[PipelineResult],
                 diagnostics: list[Diagnostic]) -> None:
    """Print the result in ``args.format``."""
    matrices = [r.matrix for r in results if r.matrix is not None]
    if args.format == "text":
        write_text(out, results, diagnostics, tables=not args.no_table, matrices=matrices)
    elif args.format == "github":
        out.write(ci_formats.github_output(diagnostics))
    elif args.format == "junit":
        out.write(ci_formats.junit_document(
            [(r.fragments["junit"], r.steps + 1) for r in results]))
    elif args.format == "json":  # (the names of non-UTF-8 files as escape.json_text shows)
        out.write(escape.json_text(json_text(results, diagnostics, matrices)) + "\n")
    else:
        document = _json_document(args.format, diagnostics)
        if matrices and args.format == "sarif":  # the matrix as the run's properties
            document["runs"][0].setdefault("properties", {})["targets"] = to_jsonable(matrices)
        out.write(escape.json_text(json.dumps(document, indent=2, ensure_ascii=False)) + "\n")


def _json_document(fmt: str, diagnostics: list[Diagnostic]) -> Any:
    """The document of a JSON-based format of diagnostics only: ``sarif`` or ``gitlab``."""
    if fmt == "sarif":
        return sarif_output(diagnostics)
    return ci_formats.gitlab_output(diagnostics)


# ---------------------------------------------------------------------------- JSON
def json_output(reports: list[PipelineReport], diagnostics: list[Diagnostic]) -> dict[str, Any]:
    return {"version": JSON_SCHEMA_VERSION,
            "diagnostics": [_diagnostic_json(d) for d in diagnostics],
            "steps": [_step_json(r, i) for r in reports for i in range(len(r.steps))]}


def json_text(results: list[PipelineResult], diagnostics: list[Diagnostic],
              matrices: Sequence[TargetMatrix] = ()) -> str:
    """``json.dumps(json_output(...), indent=2, ensure_ascii=False)``, its steps put together
    from each pipeline's rendered steps (indented one level deeper: the same bytes), and the
    target matrices last (``targets``) when there are any."""
    head = json.dumps({"version": JSON_SCHEMA_VERSION,
                       "diagnostics": [_diagnostic_json(d) for d in diagnostics]},
                      indent=2, ensure_ascii=False)
    steps = [text.replace("\n", "\n    ") for r in results for text in r.fragments["steps"]]
    listed = "[\n    " + ",\n    ".join(steps) + "\n  ]" if steps else "[]"
    tail = ""
    if matrices:
        tail = ',\n  "targets": ' + json.dumps(to_jsonable(list(matrices)), indent=2,
                                               ensure_ascii=False).replace("\n", "\n  ")
    return head[:-2] + ',\n  "steps": ' + listed + tail + "\n}"


def _diagnostic_json(d: Diagnostic) -> dict[str, Any]:
    """A diagnostic with its related places (for a violation: where each term comes from)."""
    out = d.to_dict()
    out["related"] = [{"message": r.message, "location": r.location.to_dict()}
                      for r in d.related]
    return out


def _step_json(report: PipelineReport, index: int) -> dict[str, Any]:
    """A step of the JSON output: its budget, each term's value and provenance, and
    ``injection`` when the pipeline has a policy."""
    step = report.steps[index]
    out: dict[str, Any] = to_jsonable(step.summary)
    out["terms"] = {label: to_jsonable(term) for label, term in step.terms().items()}
    out.update(step_model_json(step))  # a step's own model, approximate counts
    split = report.injection.step(index) if report.injection else None
    if split is not None:
        out["injection"] = to_jsonable(split)
    return out


# ---------------------------------------------------------------------------- SARIF
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning",
                Severity.INFORMATION: "note", Severity.HINT: "note"}


def _sarif_rule(code: str) -> dict[str, Any]:
    """A rule with its help inline (budgetlens has no published documentation site, so no
    ``helpUri``)."""
    info = codes.CODES[code]
    help_text = codes.HELP.get(code, info.summary)
    full = f"{info.summary}. {help_text}" if code in codes.HELP else info.summary
    return {"id": code, "shortDescription": {"text": info.summary},
            "fullDescription": {"text": full},
            "help": {"text": help_text},
            "defaultConfiguration": {"level": _SARIF_LEVEL[info.severity]}}


def _sarif_location(file: str, rng: Range) -> dict[str, Any]:
    return {"physicalLocation": {
        "artifactLocation": {"uri": Path(file).as_posix()},
        "region": {"startLine": rng.start.line + 1, "startColumn": rng.start.character + 1,
                   "endLine": rng.end.line + 1, "endColumn": rng.end.character + 1}}}


def sarif_output(diagnostics: list[Diagnostic]) -> dict[str, Any]:
    used = sorted({d.code for d in diagnostics})
    rules = [_sarif_rule(c) for c in used if c in codes.CODES]
    results = []
    # the GitLab fingerprint, stable when lines move or numbers change
    fingerprints = [issue["fingerprint"] for issue in ci_formats.gitlab_output(diagnostics)]
    for d, fingerprint in zip(diagnostics, fingerprints, strict=True):
        result: dict[str, Any] = {
            "ruleId": d.code,
            "level": _SARIF_LEVEL[d.severity],
            "message": {"text": d.message},
            "locations": [_sarif_location(d.file, d.range)],
            "partialFingerprints": {"budgetlens/v1": fingerprint},
            "properties": {"pipeline": d.pipeline, "step": d.step},
        }
        if d.related:
            result["relatedLocations"] = [
                {"id": n, "message": {"text": r.message},
                 **_sarif_location(r.location.file, r.location.range)}
                for n, r in enumerate(d.related, start=1)]
        results.append(result)
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "budgetlens", "version": __version__, "rules": rules}},
        "columnKind": "unicodeCodePoints",
        "results": results}]}


# ---------------------------------------------------------------------------- text
#: An ASCII character is one column: a blank for each, tabs kept.
_ASCII_BLANKS = {c: " " for c in range(128) if c != ord("\t")}


def _pad(prefix: str) -> str:
    """Blanks as wide on screen as ``prefix`` (tabs kept, wide characters doubled). An ASCII
    prefix in one ``translate`` (a diagnostic's line may be long and carry many diagnostics,
    each padded to its column)."""
    if prefix.isascii():
        return prefix.translate(_ASCII_BLANKS)
    return "".join("\t" if ch == "\t" else " " * display_width(ch) for ch in prefix)


def display_width(text: str) -> int:
    """``report_text.display_width``, imported when a diagnostic is printed."""
    from budgetlens.contract.report_text import display_width as width  # lazy: start-up speed

    return width(text)


#: The most columns (as ``display_width`` counts them: wide characters two, a tab one) of a
#: source line printed under a diagnostic. A longer line (a minified or flow-style pipeline, a
#: config.json or a prompt on one line) is cut to a window of this many around the diagnostic,
#: ``CUT`` marking the text left out on either side, as rustc and ruff print one.
SOURCE_COLUMNS = 120
#: The mark of source text left out of a cut line (and, on the caret line, carets under the
#: right one: the range goes on past the cut).
CUT = "..."
#: Columns of text kept before a range too wide for the window, which then shows its start.
_LEAD = 20


def _columns(ch: str) -> int:
    return 1 if ch < "\x80" else display_width(ch)


def _reach_left(text: str, end: int, columns: int) -> tuple[int, int]:
    """The first index of the longest text ending at ``end`` at most ``columns`` wide, and
    its width."""
    i, used = end, 0
    while i > 0 and used + (w := _columns(text[i - 1])) <= columns:
        i, used = i - 1, used + w
    return i, used


def _reach_right(text: str, start: int, columns: int, end: int | None = None) -> tuple[int, int]:
    """The end of the longest text starting at ``start`` (and ending by ``end``, default the
    end of ``text``) at most ``columns`` wide, and its width."""
    i, used, end = start, 0, len(text) if end is None else end
    while i < end and used + (w := _columns(text[i])) <= columns:
        i, used = i + 1, used + w
    return i, used


def _cut_line(text: str, start: int, end: int) -> tuple[str, str]:
    """A window of ``text``, a line wider than ``SOURCE_COLUMNS``, around the range
    ``start:end`` (``start < end``, or both ``len(text)``), and its caret line: ``CUT`` where
    text is left out, at most ``SOURCE_COLUMNS`` columns in all. A range that fits is shown
    whole with as much text on either side as fits (centred where the line allows); a wider one
    shows ``_LEAD`` columns before it and as much of it as fits, the carets going on under the
    right ``CUT``. Each call looks at no more than the window's characters (a line of hundreds
    of KB may carry many diagnostics)."""
    inner = SOURCE_COLUMNS - 2 * len(CUT)
    reach, span = _reach_right(text, start, inner, end)
    need = max(1, span) if reach >= end else inner + 1  # the columns of the range's carets
    if need <= inner - _LEAD:  # the range fits, with text around it
        room = inner - need
        _, before = _reach_left(text, start, room)
        _, after = _reach_right(text, end, room)
        first, used = _reach_left(text, start, min(before, max(room // 2, room - after)))
        stop, _ = _reach_right(text, end, room - used)
    else:  # wider than the window: its start, after a little text before it
        first, used = _reach_left(text, start, _LEAD)
        stop, _ = _reach_right(text, start, inner - used)
    # a side that reaches the line's end needs no mark: its columns go to the text (the line
    # is wider than the window, so the other side is cut)
    if first == 0:
        stop, _ = _reach_right(text, stop, len(CUT))
    elif stop == len(text):
        first, _ = _reach_left(text, first, len(CUT))
    left = CUT if first > 0 else ""
    right = CUT if stop < len(text) else ""
    caret = (_pad(left + text[first:start])
             + "^" * max(1, display_width(text[start:min(end, stop)]))
             + ("^" * len(CUT) if end > stop else ""))
    return left + text[first:stop] + right, caret


class SourceLines:
    """The text of the files diagnostics point into, read once each."""

    def __init__(self, files: FileSource | None = None) -> None:
        self.files = files or DiskFiles()
        self._index: dict[str, LineIndex | None] = {}

    def line(self, file: str, line: int) -> str | None:
        if file not in self._index:
            try:
                self._index[file] = LineIndex(self.files.read_text(Path(file)))
            except (SourceError, OSError):
                self._index[file] = None
        index = self._index[file]
        if index is None or line >= index.line_count:
            return None
        return index.line_text(line)


def place(file: str, rng: Range) -> str:
    """``file:line:col`` of the start of ``rng`` (1-based, as compilers print it), the name
    shown by ``file_text``."""
    return f"{file_text(file)}:{rng.start.line + 1}:{rng.start.character + 1}"


def file_text(value: str, keep: str = "") -> str:
    """``budgetlens.contract.escape.text``: a string from a file, for a line of text output."""
    return escape.text(value, keep)


def head_line(d: Diagnostic) -> str:
    """``file:line:col: severity[CODE] message``."""
    return f"{place(d.file, d.range)}: {d.severity.value}[{d.code}] {file_text(d.message)}"


def _notes(d: Diagnostic) -> list[str]:
    """The ``= ...`` lines: where each term comes from (a defaulted one says so), else the
    related places; for a violation, how to see the clamp plan."""
    terms = d.data.terms if isinstance(d.data, ClampFix) else None
    notes: list[str] = []
    if isinstance(terms, dict):
        for label, term in terms.items():
            loc = term.get("location")
            inherited = " (inherited)" if term.get("inherited") else ""
            inherited += term_origin(term)  # `from model gpt-4o (registry ...)`
            if loc is not None and term.get("value"):
                start = loc["range"]["start"]
                notes.append(f"{label}: {term['value']}{inherited} at {loc['file']}:"
                             f"{start['line'] + 1}:{start['character'] + 1}")
            elif term.get("source") == "default":
                notes.append(f"{label}: {term['value']} (default)")
    else:
        notes = [f"{r.message} at {place(r.location.file, r.location.range)}" for r in d.related]
    if d.code == codes.CONTRACT_VIOLATION:
        notes.append(f"help: `budgetlens clamp --diff {d.pipeline or d.file}` shows the clamp"
                     " plan, `--write` applies it")
    return notes


def format_diagnostic(d: Diagnostic, lines: SourceLines) -> str:
    start, end = d.range.start, d.range.end
    head = head_line(d)
    # a pipeline the check could not read is not quoted either (it may resolve outside
    # the workspace, a file the check refused to read)
    text = None if d.code == codes.PIPELINE_UNREADABLE else lines.line(d.file, start.line)
    if text is None:
        return head + "".join(f"\n      = {file_text(n)}" for n in _notes(d))
    last = end.character if end.line == start.line else len(text)
    last = max(min(last, len(text)), start.character + 1)
    text, start_at, last = _source_shown(text, start.character, last)
    if len(text) <= SOURCE_COLUMNS and display_width(text) <= SOURCE_COLUMNS:
        line = text
        caret = _pad(line[:start_at]) + "^" * max(1, display_width(line[start_at:last]))
    else:
        line, caret = _cut_line(text, min(start_at, len(text)), min(last, len(text)))
    gutter = f"{start.line + 1:>5} | "
    blank = " " * (len(gutter) - 2)
    notes = "".join(f"\n{blank}= {file_text(n)}" for n in _notes(d))
    return f"{head}\n{gutter}{line}\n{blank}| {caret}{notes}"


def _source_shown(text: str, start: int, last: int) -> tuple[str, int, int]:
    """A quoted source line as ``file_text`` writes it (tabs kept), and where ``start`` and
    ``last`` are in it (a ``##[`` cut at either moves the carets by at most two columns)."""
    line = file_text(text, "\t")
    if line == text:
        return text, start, last
    return line, len(file_text(text[:start], "\t")), len(file_text(text[:last], "\t"))


def full_places(diagnostics: Iterable[Diagnostic]) -> set[tuple[str, Range]]:
    """Where the diagnostics printed in full are: all but the BL023 of a child (which only
    points at its parent's error when that error is printed too: ``parent_pointer``)."""
    return {(d.file, d.range) for d in diagnostics if d.code != codes.EXTENDS_PARENT_BROKEN}


def parent_pointer(d: Diagnostic, shown: set[tuple[str, Range]]) -> Related | None:
    """For a BL023 whose parent error is printed too: that error (the child gets one line)."""
    if d.code != codes.EXTENDS_PARENT_BROKEN or not d.related:
        return None
    first = d.related[0]
    return first if (first.location.file, first.location.range) in shown else None


def write_text(out: TextIO, results: list[PipelineResult], diagnostics: list[Diagnostic],
               *, tables: bool = True, matrices: Sequence[TargetMatrix] = ()) -> None:
    lines = SourceLines()
    shown = full_places(diagnostics)
    pointers = 0
    for d in diagnostics:
        parent_error = parent_pointer(d, shown)
        if parent_error is not None:  # reported once, at the parent; one line here
            pointers += 1
            where = parent_error.location
            out.write(f"{head_line(d)} (see {place(where.file, where.range)})\n")
            continue
        out.write(format_diagnostic(d, lines) + "\n")
    if diagnostics:
        out.write("\n")
    if tables:
        out.write("".join(r.fragments["tables"] for r in results))
    if matrices:
        from budgetlens_cli import targets_out  # lazy: start-up speed

        targets_out.write_text(out, matrices)
    out.write(summary_line(results, diagnostics, pointers) + "\n")


def term_origin(term: dict[str, Any]) -> str:
    """`` from model gpt-4o (registry 2026-11-23)`` for a term the registry or the server
    set (the place alone does not say it); empty for the others."""
    source = str(term.get("source", ""))
    return f" from {source}" if source.startswith(("model ", "config.json serving.")) else ""


def model_note(report: PipelineReport) -> str:
    """``, model gpt-4o`` (``≈`` counts approximate) for a pipeline that names a model."""
    if report.model is None:
        return ""
    return f", model {report.model}" + (" (≈ approximate counts)" if report.approximate
                                         else "")


def step_model_json(step: StepBudget) -> dict[str, Any]:
    """``model`` (a step's own) and ``approximate: true`` for a step's JSON, when they
    apply (absent otherwise, so the output without models is unchanged)."""
    out: dict[str, Any] = {}
    if step.model is not None:
        out["model"] = step.model
    if step.approximate:
        out["approximate"] = True
    return out


def table_text(r: PipelineReport) -> str:
    """The budget table of a pipeline with steps, and its injection split if any."""
    if not r.steps:
        return ""
    # lazy for start-up speed: needed only when a pipeline was checked in this run
    from budgetlens.contract.report_text import budget_table

    window = r.window.value if r.window else "?"
    rows = [file_text(f"{r.pipeline}: window {window}, policy {r.policy.value}"
                      f" ({r.policy_source}), tokenizer {r.tokenizer}{model_note(r)}"),
            *budget_table(r)]
    rows.extend(f"  {file_text(split.step)}: {file_text(split.label)}"
                for split in (r.injection.steps if r.injection else ()))
    return "\n".join(rows) + "\n\n"


def summary_line(results: list[PipelineResult], diagnostics: list[Diagnostic],
                 pointers: int) -> str:
    """The last line: pipelines, steps, errors (a child pointing at its parent's error is not
    counted again) and warnings."""
    errors = sum(d.severity is Severity.ERROR for d in diagnostics) - pointers
    warnings = sum(d.severity is Severity.WARNING for d in diagnostics)
    steps = sum(r.steps for r in results)
    unfit = sum(r.unfit for r in results)
    blocked = (f"; {pointers} pipeline{'s' if pointers != 1 else ''} extend"
               f"{'s' if pointers == 1 else ''} a parent with errors" if pointers else "")
    return (f"{len(results)} pipeline{'s' if len(results) != 1 else ''}, {steps} call_model"
            f" step{'s' if steps != 1 else ''} ({unfit} not fitting):"
            f" {errors} error{'s' if errors != 1 else ''},"
            f" {warnings} warning{'s' if warnings != 1 else ''}{blocked}")
