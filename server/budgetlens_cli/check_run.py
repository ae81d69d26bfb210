"""How ``budgetlens check`` checks its pipelines: in this process or in worker processes.

``check_results`` is the entry point. It takes every pipeline's result from the result cache
when none of its inputs changed. It checks the others with one ``_Checker``: one
``BudgetCache`` and one ``RunFiles`` for the whole run. With 64 or more pipelines to check
and ``--jobs`` above 1, it hands chunks of pipelines to worker processes (``workers``).
Each result is a ``PipelineResult``: diagnostics, step counts and the rendered pieces of the
output formats. Printing them is :mod:`budgetlens_cli.check_formats`'s job.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.policy import DEVELOPMENT_ENV, POLICY_ENV
from budgetlens.files import DiskFiles, FileSource, RunFiles
from budgetlens.serialize import dumps
from budgetlens.tokens.core import SHIPPED_ENCODINGS
from budgetlens_cli import cache as result_cache
from budgetlens_cli import ci_formats
from budgetlens_cli.check_formats import step_json
from budgetlens_cli.check_result import PipelineResult
from budgetlens_cli.check_text import table_text
from budgetlens_cli.main import RunStats

if TYPE_CHECKING:

    from budgetlens.contract.results import CheckOptions, PipelineReport
    from budgetlens.contract.targets import TargetMatrix

T = TypeVar("T")


def policy_environ() -> dict[str, str]:
    """The policy variables of the environment, read once for the run (the core reads its
    ``environ`` for every pipeline: the process environment's misses cost more than the
    rest of the policy)."""
    return {name: os.environ[name] for name in (POLICY_ENV, DEVELOPMENT_ENV, *USER_MODELS_ENV)
            if name in os.environ}


#: Where the user's models.json is (``contract.models_file.user_models_path``).
USER_MODELS_ENV = ("XDG_CONFIG_HOME", "HOME")



def check_pipeline(path: Path | str, *, files: FileSource, options: CheckOptions,
                   cache: BudgetCache) -> PipelineReport:
    """The core's ``check_pipeline``, imported on first use: a run whose results all come
    from the result cache never loads the checker (PyYAML, the pipeline models)."""
    from budgetlens.contract.check import check_pipeline as check  # lazy: start-up speed

    return check(path, files=files, options=options, cache=cache)


def pipeline_result(report: PipelineReport, piece: str | None) -> PipelineResult:
    result = PipelineResult(report.pipeline, tuple(report.diagnostics), len(report.steps),
                            sum(not s.fits for s in report.steps))
    if piece == "tables":
        result.fragments[piece] = table_text(report)
    elif piece == "steps":
        result.fragments[piece] = [dumps(step_json(report, i))
                                   for i in range(len(report.steps))]
    elif piece == "junit":
        result.fragments[piece] = ci_formats.junit_steps(report)
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


def _deps_of(report: PipelineReport, files: FileSource) -> dict[str, str] | None:
    """The inputs (path -> stat fingerprint) the result cache keys ``report`` by (the core's
    ``input_fingerprints``, and a tokenizer.json); None for a report without them."""
    if report.input_fingerprints is None:
        return None
    deps = dict(report.input_fingerprints)
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


#: Token counts passed between the processes of a parallel run: tokenizer name ->
#: ``(text key, count)`` (``BudgetCache.fresh_counts``, ``TokenCounter.take_fresh``).
SharedCounts = dict[str, list[tuple[str, int]]]
#: A pipeline checked: its result, whether the core recorded its inputs, and their
#: fingerprints for the result cache (None: without the cache, or one changed while read).
Checked = tuple["PipelineResult", bool, "dict[str, tuple[str, str]] | None"]


class _Checker:
    """Checks pipelines for one run, in this process or in one worker: one ``BudgetCache``
    and one ``RunFiles`` over the disk for all of them (the files are one unchanging state
    for a run, so each path is stat'ed and resolved once), and the options made once.

    The cache keeps no results (``keep_results=False``): a run checks each pipeline once per
    options (each target's are others), so a report or a plan would never be asked for
    again. It keeps what another pipeline can use: parsed files (an ``extends`` parent,
    config.json), token counts and templates. The parse of the pipeline being checked is
    dropped when its check (with its targets') is done, unless an earlier pipeline kept it
    as its parent (one that a later pipeline extends is parsed again then, and kept). So
    what is not kept is freed as the run goes, rather than held to its end."""

    def __init__(self, make_options: Callable[[], CheckOptions], piece: str | None,
                 targets: list[str] | None,
                 hashes: result_cache.ContentHashes | None,
                 note: Callable[[str, str], None] | None = None) -> None:
        self.make_options = make_options
        self.piece = piece
        self.targets = targets
        self.hashes = hashes
        self.files = _NotingFiles(result_cache.HashingFiles(hashes) if hashes is not None
                                  else DiskFiles(), note)
        if hashes is not None:  # a file is resolved once, for the check and its hash
            hashes.resolve_with(self.files.abspath, self.files.realpath)
        self.cache = BudgetCache(keep_results=False)
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
        name = os.path.normpath(str(path))
        # its parse goes once it is checked, unless an earlier pipeline kept it as its parent
        own_parse = not self.cache.has_parsed("pipeline", name)
        options = self.options()
        try:
            report = check_pipeline(path, files=self.files, options=options, cache=self.cache)
            got = pipeline_result(report, self.piece)
            got.matrix = self.matrix(path, options)
        finally:
            if own_parse:
                self.cache.forget_parsed("pipeline", name)
        deps = _deps_of(report, self.files)
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


class _NotingFiles(RunFiles):
    """The run's ``RunFiles`` (folders resolved once), which also tells ``note`` the path
    and text of each file the check reads: the lint pass then need not read a file again
    to know it has no suppression comment (``lint_options.Uncommented``)."""

    def __init__(self, base: FileSource, note: Callable[[str, str], None] | None) -> None:
        super().__init__(base, resolve_by_folder=True)
        self.note = note

    def read_text(self, path: Path) -> str:
        text = super().read_text(path)
        if self.note is not None:
            self.note(str(path), text)
        return text

    def read_text_utf8(self, path: Path) -> tuple[str, bytes | None]:
        got = super().read_text_utf8(path)
        if self.note is not None:
            self.note(str(path), got[0])
        return got


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
                  spec: CheckSpec | None = None,
                  note: Callable[[str, str], None] | None = None,
                  ) -> tuple[list[PipelineResult], RunStats]:
    """The result of every pipeline: from ``store`` when none of its inputs changed, else
    checked and put in ``store`` (by this process: workers only send results). With
    ``jobs`` > 1 (None: the usable CPUs) and a ``spec``, when at least ``MIN_PARALLEL``
    pipelines need checking they are checked in worker processes, the first one here (it
    warms the caches that forked workers start with). Also returns what the run did.
    ``note`` is told the path and text of each file this process reads
    (``_NotingFiles``)."""
    run = _Run(pipelines, piece, store)
    checker = _Checker(make_options, piece, targets, store.hashes if store else None, note)
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
    stats = RunStats(len(pipelines), len(run.todo), frozenset(run.pids), method,
                     run.worker_stderr)
    return [r for r in run.results if r is not None], stats


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



def _stat_fingerprint(path: str) -> str:
    return DiskFiles().fingerprint(Path(path))

