"""Entry point of the ``budgetlens`` console script.

Exit status: 0 when nothing is wrong, 1 when the input has errors (a diagnostic of severity
error, an unparseable file), 2 on bad usage or an internal failure. An internal failure is
one line on standard error (``budgetlens: internal error: <type>: <message> ...``); with
``BUDGETLENS_TRACEBACK=1`` the traceback follows it. When standard output is closed before
the output is written whole (``budgetlens check | head -1``), 141, as a process ended by
SIGPIPE: never 0, so a pipeline with ``pipefail`` never passes on output nobody read.
Standard output closed from the start (``>&-``) is one line on standard error, exit status 2.
"""

from __future__ import annotations

import gc
import importlib
import io as _io  # loaded at start-up by the interpreter
import os
import sys
import time
from types import MappingProxyType  # loaded at start-up by the interpreter

from budgetlens import __version__

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (a cached ``check`` imports neither
#: it nor argparse: ``cache.replay``).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, TypeVar

    T = TypeVar("T")

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
#: Standard output was closed by its reader: 128 + SIGPIPE, as a shell reports a process
#: that SIGPIPE ended (git, coreutils).
EXIT_BROKEN_PIPE = 141
#: Set to 1 to print the traceback of an internal failure after its one-line message.
TRACEBACK_VARIABLE = "BUDGETLENS_TRACEBACK"

# Each name is a module of this package (``<name>_cmd``) defining ``register(subparsers)``; the
# parser it adds sets ``run`` (a callable taking the parsed args and returning an exit status).
# The one-line help of each is repeated here so that ``budgetlens --help`` and a run of one
# subcommand import only the module they need (start-up speed; tests/cli/test_startup.py
# checks that this table says what each module registers).
SUBCOMMAND_HELP: Mapping[str, str] = MappingProxyType({
    "check": "check pipelines against the token budget contract",
    "clamp": "show or apply the clamp plan of pipelines",
    "diff": "the budget diff of a change: every step before and after",
    "tokens": "count the tokens of files",
    "contexts": "show where a JSON text was cut off and how to continue it",
    "merge": "append a continuation fragment to a cut text, removing the overlap",
    "inject": "plan a unified injection of knowledge cards and bucket content",
    "pack": "prioritize, trim and cap documents into a context for an intent",
    "serve": "run the language server (stdio by default)",
    "schema": "print the JSON Schema of pipeline files or of config.json",
    "models": "list the model registry's models, or check it (--doctor)",
    "rule": "explain a diagnostic code (meaning and fix), or list them all",
    "mcp": "run the MCP server for coding agents (stdio; needs budgetlens[mcp])",
    "init": "create a small workspace (or one prompt file) that check passes",
})
SUBCOMMANDS: tuple[str, ...] = tuple(SUBCOMMAND_HELP)


class RunStats:
    """What a ``check`` did: its pipelines, how many it checked, and where (tests read it:
    mechanisms, not times). ``run`` returns it; nothing keeps it. A plain class, not a
    dataclass: a replayed answer imports no more than it needs."""

    __slots__ = ("checked", "method", "pipelines", "worker_pids", "worker_stderr")

    def __init__(self, pipelines: int, checked: int, worker_pids: frozenset[int] = frozenset(),
                 method: str | None = None, worker_stderr: bool = False) -> None:
        self.pipelines = pipelines
        self.checked = checked
        self.worker_pids = worker_pids
        """The worker processes that checked pipelines (empty: all checked in this process)."""
        self.method = method
        """``fork`` or ``spawn`` when workers ran."""
        self.worker_stderr = worker_stderr
        """A worker wrote to its ``sys.stderr`` (the run's answer is not recorded)."""

    def _fields(self) -> tuple[int, int, frozenset[int], str | None, bool]:
        return self.pipelines, self.checked, self.worker_pids, self.method, self.worker_stderr

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunStats) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"RunStats{self._fields()!r}"


class UsageError(Exception):
    """Bad arguments or unreadable input named on the command line (exit status 2)."""


def non_negative_int(value: str) -> int:
    """The ``type=`` of an option taking a count (characters, tokens): a whole number >= 0."""
    import argparse

    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(
            f"expected a number >= 0, got {number} (a count must be >= 0)")
    return number


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand; with ``only``, that subcommand's module is imported and
    registered and the others are listed by name and help alone (``main`` parses with it)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="budgetlens",
        description="Token budgets of LLM pipelines: check, clamp, count, and read cut JSON.")
    parser.add_argument("--version", action="version", version=f"budgetlens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, summary in SUBCOMMAND_HELP.items():
        if only is None or name == only:
            importlib.import_module(f"budgetlens_cli.{name}_cmd").register(sub)
        else:
            sub.add_parser(name, help=summary)
    return parser


def chosen_subcommand(argv: Sequence[str]) -> str:
    """The subcommand ``argv`` names (its first word that is not an option), else ``""``:
    the top-level parser has options without values only (``--help``, ``--version``)."""
    for arg in argv:
        if arg == "--":
            break
        if not arg.startswith("-"):
            return arg if arg in SUBCOMMAND_HELP else ""
    return ""


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: the exit status of the command line ``argv``."""
    return run(argv)[0]


def run(argv: Sequence[str] | None = None) -> tuple[int, RunStats | None]:
    """The exit status of the command line ``argv`` and, for a ``check`` that ended normally,
    what it did (None for the other commands)."""
    args = list(sys.argv[1:] if argv is None else argv)
    paused = argv is None and _start_paused(args)
    if sys.stdout is None and _writes_stdout(args):
        # descriptor 1 closed when the process started (``budgetlens check >&-``): the
        # output has nowhere to go
        print("budgetlens: error: standard output is closed: nothing can be written",
              file=sys.stderr)
        return EXIT_USAGE, None
    given = _whole_writes()
    try:
        code, stats = _main(args, paused)
        try:  # here, not at the interpreter's exit, where a broken pipe is exit status 120
            sys.stdout.flush()
        except BrokenPipeError:
            _discard_stdout()
            return EXIT_BROKEN_PIPE, stats
        except (AttributeError, OSError, ValueError):  # no usable standard output
            pass
        return code, stats
    finally:
        _notes_logged()
        if given is not None:  # the caller's stream back (it shares the descriptor)
            sys.stdout = given
        if argv is None:  # the process's own command line: it ends when this returns
            _before_exit()


def _start_paused(argv: list[str]) -> bool:
    """A ``check`` that is the process's own command line loads its modules with the cyclic
    garbage collector off (True: it was turned off). Loading makes no cyclic garbage to
    speak of, yet starts about twenty collections; ``_resume_frozen`` ends the pause."""
    if chosen_subcommand(argv) != "check" or not gc.isenabled():
        return False
    gc.disable()
    return True


def _resume_frozen() -> None:
    """The end of ``_start_paused``'s pause, before the check runs: what is alive (the
    modules just loaded) is frozen, as the server freezes what it loaded, so the next
    collection does not walk it; the collector is back on. About 2 ms of a one-pipeline
    check (docs/performance.md)."""
    gc.freeze()
    gc.enable()


def _writes_stdout(argv: list[str]) -> bool:
    """Whether the command line writes to standard output: all do but ``serve`` (stdio is
    checked by serve itself; ``--tcp`` needs none) and ``schema`` with ``-o/--output``."""
    command = chosen_subcommand(argv)
    if command == "serve":
        return False
    if command == "schema":
        rest = argv[argv.index("schema") + 1:]
        return not any(a in ("-o", "--output") or a.startswith(("--output=", "-o"))
                       for a in rest)
    return True


def _before_exit() -> None:
    """The process ends now (``main`` of its own command line: the console script, ``python
    -m budgetlens_cli``): what is alive is frozen (``gc.freeze``), out of the sight of the
    full collections the interpreter's finalisation runs, whether the collector is on or
    not (several, each walking the whole heap: after a ``check`` of 5,000 pipelines, its
    caches and modules, about a tenth of a second); the objects are still freed as the
    modules are cleared, and the memory goes back with the process. Nothing is collected
    that reference counting would not free anyway: a command makes no cyclic garbage to
    speak of (``check_cmd.collector_paused``)."""
    kept = _kept_tokenizers()  # reachable from here until frozen: no collection takes it
    gc.freeze()
    del kept


#: The modules whose memos hold the tokenizers a process made (``_kept_tokenizers``).
_TOKENIZER_MODULES = ("budgetlens.tokens.core", "budgetlens.tokens.families")


def _kept_tokenizers() -> list[object]:
    """The tokenizers this process made stay alive through the interpreter's exit: a copy
    of their modules' globals (the memos that hold them) goes into a cycle that nothing
    reaches, which ``gc.freeze`` then hides from every collection. Else clearing the
    modules frees a built encoding's ranks one by one: 100,000 entries for cl100k_base,
    73 M instructions, about 19 ms of a one-pipeline ``check`` (docs/performance.md).
    The memory goes back with the process; a tokenizer needs no clean-up."""
    keep: list[object] = []
    for name in _TOKENIZER_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            keep.extend(vars(module).values())
    keep.append(keep)
    return keep


def _note(message: str) -> None:
    print(f"budgetlens: note: {message}", file=sys.stderr)


def _notes_logged() -> None:
    """The command is done: the cache's notes go to the log again (``usercache.NOTE``), as
    for any other caller in this process."""
    usercache = sys.modules.get("budgetlens.usercache")
    if usercache is not None:
        usercache.NOTE = None  # type: ignore[attr-defined]


def _main(argv: list[str], paused: bool = False) -> tuple[int, RunStats | None]:
    command = chosen_subcommand(argv)
    if command != "serve":  # the server logs its notes
        from budgetlens import usercache  # light (os): a replayed answer loads it anyway

        usercache.NOTE = _note  # a cache file ignored, the caches off: one line each
        usercache.forget_notes()  # once per command (a test runs many in one process)
    if command == "check":  # an unchanged workspace: the recorded answer, nothing imported
        from budgetlens_cli import cache  # lazy: start-up speed (--version, --help)

        cache.begin_run()
        replayed = _guarded(lambda: cache.replay(argv, os.environ, sys.stdout))
        if isinstance(replayed, int):  # it failed
            return replayed, None
        if replayed is not None:  # (exit status, pipelines): none checked
            return replayed[0], RunStats(replayed[1], 0)
    parser = build_parser(only=command)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad usage, 0 on --help
        return int(exc.code or 0), None
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE, None
    if paused:
        _resume_frozen()
    got = _guarded(lambda: _check_recording(argv, args) if command == "check"
                   else (int(args.run(args)), None))
    return (got, None) if isinstance(got, int) else got


def _guarded(call: Callable[[], T]) -> T | int:
    """``call()``, its failures turned into an exit status: a ``UsageError`` or an internal
    failure is one line on standard error."""
    try:
        return call()
    except UsageError as exc:
        print(f"budgetlens: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # an internal failure: one line, never a bare traceback
        print(internal_error_line(exc), file=sys.stderr)
        if os.environ.get(TRACEBACK_VARIABLE) == "1":
            import traceback

            traceback.print_exc(file=sys.stderr)
        return EXIT_USAGE


def _whole_writes() -> Any:
    """Standard output writes whole or fails: unbuffered (``python -u``,
    ``PYTHONUNBUFFERED=1``, as many CI images set) it is a raw file whose write may be cut
    short when the reader goes away, and the text stream takes that for success. A buffered
    writer over its descriptor (never closing it) writes on until all is written or the pipe
    is broken (``BrokenPipeError``: exit status 141); each line still goes out as it is
    written. Only the process's own standard output (descriptor 1; a test's capture file is
    left alone). Returns the stream it stood in for (``main`` puts it back), else None."""
    out = sys.stdout
    raw = getattr(out, "buffer", None)
    if out is None or type(raw) is not _io.FileIO or raw.closed or raw.fileno() != 1:
        return None
    own = _io.FileIO(1, "wb", closefd=False)
    sys.stdout = _io.TextIOWrapper(_io.BufferedWriter(own), encoding=out.encoding,
                                   errors=out.errors, line_buffering=True)
    return out


def _discard_stdout() -> None:
    """Standard output's reader is gone: what is still buffered, and anything written later,
    goes nowhere (else the interpreter's last flush reports the broken pipe again). Only the
    process's own standard output (descriptor 1), never a file put in its place."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture)
        return
    if fd != 1:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class _Tee:
    """A text stream that also keeps what is written to it (``check``'s answer)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        written = self.stream.write(text)
        self.parts.append(text)
        return len(text) if written is None else int(written)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _check_recording(argv: list[str], args: argparse.Namespace) -> tuple[int, RunStats]:
    """Run ``check`` and record its output as the answer of ``argv`` (``cache.record_answer``)
    when it ended normally, with nothing on standard error (its workers' included). The
    cyclic garbage collector is off until both are done (as ``check_cmd.collector_paused``
    has it for the run itself): the result cache the answer is recorded from holds every
    result of the run, which are freed (``cache.forget_opened``) before it is back on, so
    the collection that follows does not walk them."""
    from budgetlens_cli import cache  # lazy: start-up speed (as in main)

    enabled = gc.isenabled()
    gc.disable()
    try:
        return _record_check(argv, args, cache)
    finally:
        cache.forget_opened()
        if enabled:
            gc.enable()


def _record_check(argv: list[str], args: argparse.Namespace,
                  cache: Any) -> tuple[int, RunStats]:
    """``_check_recording``'s work, the collector off."""
    started = time.time_ns()
    out, err = sys.stdout, sys.stderr
    # a search told to enter hidden folders (--exclude) sees more than the listings show
    before = None if getattr(args, "exclude", None) is not None \
        else cache.listings_before(argv, os.environ, out, args.paths)
    sys.stdout, sys.stderr = tee, watch = _Tee(out), _Tee(err)
    try:
        code, stats = _command_module("check").run_counted(args)
    finally:
        sys.stdout, sys.stderr = out, err
    if code in (EXIT_OK, EXIT_FINDINGS) and not any(watch.parts) and not stats.worker_stderr:
        try:
            cache.record_answer(argv, os.environ, out, args, code, "".join(tee.parts),
                                stats.pipelines, stats.checked, started, before)
        except (OSError, cache.CacheDirError) as exc:
            print(f"budgetlens: warning: result cache not written ({exc}); --no-cache"
                  " skips it", file=sys.stderr)
    return code, stats


def _command_module(name: str) -> Any:
    """The module of subcommand ``name`` (``<name>_cmd``), by name as ``build_parser`` loads
    it: each imports this module for its exit statuses and errors."""
    return importlib.import_module(f"budgetlens_cli.{name}_cmd")


def internal_error_line(exc: BaseException, limit: int = 300) -> str:
    """The one line an internal failure prints."""
    lines = str(exc).strip().splitlines()
    what = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    if len(what) > limit:
        what = what[:limit - 1] + "…"
    return (f"budgetlens: internal error: {what} (a bug: please report it;"
            f" {TRACEBACK_VARIABLE}=1 prints the details)")
