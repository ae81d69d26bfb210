"""``budgetlens check [PATH...] [--format text|json|sarif|github|gitlab|junit] [--policy P]``:
its arguments, and ``run``, which checks (``check_run``) and prints (``check_formats``).

PATH (default ``.``) is a pipeline or prompt file, or a folder searched for
``pipelines/*.yaml`` and prompt files (docs/prompt-formats.md); a ``pipelines`` folder
itself gives its own files. Text output reads like a compiler's
(``file:line:col: severity[CODE] message``, the source line (a window of 120 columns around
the diagnostic when it is wider), a caret, and where each term of a budget comes from)
followed by a per-step budget table; ``--format json`` prints one
object ``{"version": 1, "diagnostics": [...], "steps": [...]}`` with each term's value and
location; ``--format sarif`` prints SARIF 2.1.0 with the terms as related locations;
``github``, ``gitlab`` and ``junit`` are the CI formats of :mod:`budgetlens_cli.ci_formats`. Exit
status: 0 without errors, 1 with at least one error (or warning, ``--fail-on warning``), 2 on
bad usage. The ruff-style options (selection, suppression comments, ``--exclude``, colour,
``--statistics``) are :mod:`budgetlens_cli.lint_options`'s.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from budgetlens.contract.discovery import find_pipelines
from budgetlens.contract.policy import DEVELOPMENT_ENV, POLICY_ENV, Policy
from budgetlens.source import unique_diagnostics
from budgetlens.tokens.core import TokenizerError, get_tokenizer, tokenizer_file, tokenizer_path
from budgetlens_cli import cache as result_cache
from budgetlens_cli import check_run, lint_options
from budgetlens_cli.check_formats import write_output
from budgetlens_cli.check_result import fragment_of
from budgetlens_cli.check_run import (
    MIN_PARALLEL,
    USER_MODELS_ENV,
    CheckSpec,
    _stat_fingerprint,
    check_results,
    collector_paused,
)
from budgetlens_cli.main import EXIT_FINDINGS, EXIT_OK, RunStats, UsageError

if TYPE_CHECKING:
    from budgetlens.contract.results import CheckOptions

FORMATS = ("text", "json", "sarif", "github", "gitlab", "junit")


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "check", help="check pipelines against the token budget contract",
        description="Check every call_model step of the pipelines, and every prompt file,"
                    " against the model's context window. PATH (default .) is a pipeline or"
                    " prompt file, or a folder searched for pipelines/*.yaml and for prompt"
                    " files (*.prompt.yml, *.prompt.yaml, *.prompty, and *.prompt with"
                    " Dotprompt front matter).")
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
    lint_options.register(p)
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
                   help="pipeline or prompt files, or folders (default: the current"
                        " folder)")
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
                        config_path=args.config, environ=check_run.policy_environ())



def collect_pipelines(paths: Iterable[str],
                      excluded: Callable[[str, bool], bool] | None = None) -> list[Path]:
    """Every pipeline named or found under the PATH arguments (a file named is checked
    whatever ``excluded`` says, as ruff does); UsageError when none."""
    found: list[Path] = []
    seen: set[Path] = set()
    for name in paths:
        path = Path(name)
        if not path.exists() and not path.is_symlink():
            raise UsageError(f"{name}: no such file or folder")
        pipelines = find_pipelines(path, excluded)
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


#: Arguments of ``check`` that do not change a pipeline's result (every other one is part of
#: the result cache's key, so an option added later is in it without a word here).
NOT_IN_KEY = frozenset({"paths", "format", "no_table", "no_cache", "cache_dir", "run",
                        "command", "jobs", *lint_options.NOT_IN_KEY})


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
    """The exit status of ``check`` (``run_counted`` also says what the run did)."""
    return run_counted(args)[0]


def run_counted(args: argparse.Namespace) -> tuple[int, RunStats]:
    """The exit status of ``check`` and what the run did (``main`` records the answer)."""
    with collector_paused():  # its results are dropped before it is back on
        return _run(args)


def _run(args: argparse.Namespace) -> tuple[int, RunStats]:
    check_usage(args)  # before anything is read
    lint_options.cli_layer(args)  # an unknown code is bad usage before the check
    targets = validate_targets(args)
    pipelines = collect_pipelines(args.paths, lint_options.Exclusion(args))
    store = open_store(args)
    piece = fragment_of(args)
    spec = CheckSpec(args.policy, args.tokenizer, args.config, piece, targets, store is not None)
    uncommented = lint_options.Uncommented()  # what the lint pass need not read again
    results, stats = check_results(pipelines, lambda: options_from(args), piece, store, targets,
                            jobs=getattr(args, "jobs", None), spec=spec,
                            note=uncommented.note)
    diagnostics = unique_diagnostics([*(d for r in results for d in r.diagnostics),
                                      *(d for r in results if r.matrix is not None
                                        for d in r.matrix.diagnostics)])
    diagnostics = lint_options.apply(args, results, diagnostics, uncommented.paths)
    write_output(sys.stdout, args, results, diagnostics)
    save_store(store)
    failed = lint_options.exit_status(args, diagnostics)
    return (EXIT_FINDINGS if failed else EXIT_OK), stats


def validate_targets(args: argparse.Namespace) -> list[str] | None:
    """The --target names as the registry spells them (bad usage for an unknown one)."""
    if not getattr(args, "targets", None):
        return None
    from budgetlens_cli import targets_out  # lazy: start-up speed (the registry)

    return targets_out.validate(args)


