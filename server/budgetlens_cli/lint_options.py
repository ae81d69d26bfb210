"""The ruff-style options of ``budgetlens check``: which diagnostics count, which files are
searched, and how the output looks.

- ``--select``, ``--extend-select``, ``--ignore`` (codes, prefixes, ``ALL``; comma-separated
  or repeated) over config.json's ``lint`` block, and the suppression comments of
  ``budgetlens.contract.lint``: ``apply`` filters a run's diagnostics with them.
- ``--fail-on error|warning`` and ``--exit-zero``: ``exit_status``.
- ``--exclude`` / ``--extend-exclude`` (globs) and ``.gitignore`` files (``pathspec``):
  ``Exclusion`` decides which folders and pipeline files the search skips.
- ``--color auto|always|never`` (``NO_COLOR``, ``FORCE_COLOR``), ``--quiet``, ``--silent``,
  ``--statistics``: ``colour_wanted``, ``statistics_text``.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from budgetlens import codes
from budgetlens.contract.discovery import FolderExcluded, GitIgnored
from budgetlens.contract.lint import (
    ConfigLint,
    Layer,
    LintError,
    apply_lint,
    check_selectors,
    reads_comments,
    split_codes,
)
from budgetlens.source import Diagnostic, Severity
from budgetlens_cli.main import UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from budgetlens_cli.check_result import PipelineResult

#: The folders the search skips by default (``--exclude`` replaces them): hidden ones and
#: dependency folders.
DEFAULT_EXCLUDE = (".*", "node_modules", "__pycache__", "site-packages")
#: Options of this module: none changes a pipeline's own result (the result cache's key).
NOT_IN_KEY = frozenset({"select", "extend_select", "ignore", "fail_on", "exit_zero",
                        "exclude", "extend_exclude", "respect_gitignore", "color", "quiet",
                        "silent", "statistics"})


def register(p: argparse.ArgumentParser) -> None:
    """Add the options to ``check``'s parser."""
    p.add_argument("--select", action="append", metavar="CODES",
                   help="only these codes or prefixes (BL050, BL05, ALL; comma-separated,"
                        " repeatable); replaces config.json's lint.select")
    p.add_argument("--extend-select", action="append", metavar="CODES",
                   help="these codes or prefixes too, on top of the selection")
    p.add_argument("--ignore", action="append", metavar="CODES",
                   help="leave out these codes or prefixes")
    p.add_argument("--fail-on", choices=("error", "warning"), default="error",
                   help="exit 1 on an error (default), or on a warning too")
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 even when diagnostics are found (2 still means bad usage)")
    register_exclusion(p)
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour the text output (auto: on a terminal, unless NO_COLOR is set;"
                        " FORCE_COLOR turns it on)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print the diagnostics only (no tables, no summary line)")
    p.add_argument("-s", "--silent", action="store_true",
                   help="print nothing; the exit status says it all")
    p.add_argument("--statistics", action="store_true",
                   help="print the number of diagnostics per code instead of them")


def register_exclusion(p: argparse.ArgumentParser) -> None:
    """Add the options of ``Exclusion`` (``check`` and ``clamp`` search alike)."""
    p.add_argument("--exclude", action="append", metavar="GLOB",
                   help="folders and pipeline files the search skips (replaces the defaults:"
                        f" {', '.join(DEFAULT_EXCLUDE)})")
    p.add_argument("--extend-exclude", action="append", metavar="GLOB",
                   help="more folders and pipeline files the search skips")
    p.add_argument("--respect-gitignore", action=argparse.BooleanOptionalAction, default=True,
                   help="skip what .gitignore files and .git/info/exclude ignore"
                        " (default: on)")


# ---------------------------------------------------------------------------- selection
def cli_layer(args: argparse.Namespace) -> Layer:
    """The command line's selection layer; bad usage for an unknown code."""
    try:
        select = getattr(args, "select", None)
        return Layer(
            None if select is None else check_selectors(split_codes(select), "--select"),
            check_selectors(split_codes(getattr(args, "extend_select", None) or []),
                            "--extend-select"),
            check_selectors(split_codes(getattr(args, "ignore", None) or []), "--ignore"))
    except LintError as exc:
        raise UsageError(str(exc)) from None


#: The largest YAML file read for its comments (as the check reads a pipeline: 8 MiB).
MAX_COMMENTED_BYTES = 8 * 1024 * 1024


def text_of(path: str) -> str | None:
    """A YAML file's text for its suppression comments; None when it is not a regular file
    (a FIFO is never waited on), larger than ``MAX_COMMENTED_BYTES`` or not UTF-8."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_COMMENTED_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


class Uncommented:
    """The files the check read whose text holds no suppression comment (``note``, told
    each text the check read): ``apply`` gives each no comment without reading it again."""

    def __init__(self) -> None:
        self.paths: set[str] = set()

    def note(self, path: str, text: str) -> None:
        if reads_comments(path) and "budgetlens:" not in text:
            self.paths.add(path)


def apply(args: argparse.Namespace, results: Sequence[PipelineResult],
          diagnostics: Sequence[Diagnostic],
          uncommented: set[str] | None = None) -> list[Diagnostic]:
    """The run's diagnostics as shown: selection, per-file ignores and suppression comments
    applied, then the BL080 warnings of the comments that suppressed nothing. A file in
    ``uncommented`` (the check read it, with no ``budgetlens:`` in it) is not read again:
    it has no comment."""
    settings = ConfigLint(text_of, getattr(args, "config", None), cli_layer(args))

    def comments_text(path: str) -> str | None:
        if uncommented and path in uncommented:
            return ""
        return text_of(path)
    try:
        return apply_lint(diagnostics, settings, comments_text, [r.pipeline for r in results])
    except LintError as exc:
        raise UsageError(str(exc)) from None


def fail_level(args: argparse.Namespace) -> Severity:
    return Severity.WARNING if getattr(args, "fail_on", "error") == "warning" \
        else Severity.ERROR


def exit_status(args: argparse.Namespace, diagnostics: Iterable[Diagnostic]) -> int:
    """0 or 1: 1 when a diagnostic is at ``--fail-on``'s level or worse (never with
    ``--exit-zero``)."""
    if getattr(args, "exit_zero", False):
        return 0
    failing = {Severity.ERROR} | ({Severity.WARNING} if fail_level(args) is Severity.WARNING
                                  else set())
    return int(any(d.severity in failing for d in diagnostics))


# ---------------------------------------------------------------------------- exclusion
class Exclusion(FolderExcluded):
    """What the search for pipelines skips: the ``--exclude`` globs (else the defaults), the
    ``--extend-exclude`` ones, and, unless ``--no-respect-gitignore``, what the
    ``.gitignore`` files of the folder and its parents (up to the repository's root, the
    folder holding ``.git``) ignore. A glob matches a folder's or file's name, or its path
    relative to the current folder. git is not run: the files (and ``.git/info/exclude``)
    are read with ``pathspec`` (``discovery.GitIgnored``; the global excludes file is not
    read)."""

    def __init__(self, args: argparse.Namespace) -> None:
        excluded = getattr(args, "exclude", None)
        extended = split_globs(getattr(args, "extend_exclude", None) or [])
        given = None if excluded is None else split_globs(excluded)
        self.globs = (*(DEFAULT_EXCLUDE if given is None else given), *extended)
        # the defaults name folders only (a hidden pipeline file was always checked)
        self.file_globs = (*(given or ()), *extended)
        self.gitignore = bool(getattr(args, "respect_gitignore", True))
        self._ignored = GitIgnored()

    def __call__(self, path: str, is_dir: bool) -> bool:
        if any(glob_matches(g, path) for g in (self.globs if is_dir else self.file_globs)):
            return True
        return self.gitignore and self._ignored(path, is_dir)

    def keep_files(self, folder: str, paths: list[Path]) -> list[Path]:
        """The files of ``paths`` (each directly in ``folder``) it keeps: the globs judge
        each file, git's rules are found once for the folder."""
        if self.file_globs:
            paths = [p for p in paths
                     if not any(glob_matches(g, str(p)) for g in self.file_globs)]
        return self._ignored.keep_files(folder, paths) if self.gitignore else paths


def glob_matches(glob: str, path: str) -> bool:
    """A glob without ``/`` matches the name; one with ``/`` the path relative to the
    current folder, or the absolute path."""
    if "/" not in glob:
        return fnmatch.fnmatchcase(os.path.basename(os.path.normpath(path)), glob)
    rel = os.path.normpath(path).replace(os.sep, "/")
    return fnmatch.fnmatchcase(rel, glob) or fnmatch.fnmatchcase(
        os.path.abspath(path).replace(os.sep, "/"), glob)


def split_globs(values: Iterable[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


# ---------------------------------------------------------------------------- output
def colour_wanted(args: argparse.Namespace, out: TextIO, environ: Mapping[str, str]) -> bool:
    """``--color always|never``; else off when ``NO_COLOR`` is set (not empty), on when
    ``FORCE_COLOR`` is, else on a terminal (``TERM=dumb`` is none)."""
    choice = getattr(args, "color", "auto")
    if choice != "auto":
        return choice == "always"
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    isatty: Callable[[], bool] | None = getattr(out, "isatty", None)
    return bool(isatty and isatty()) and environ.get("TERM") != "dumb"


def statistics(diagnostics: Iterable[Diagnostic]) -> list[tuple[str, int]]:
    """(code, count) pairs, the most frequent first, then by code."""
    counts: dict[str, int] = {}
    for d in diagnostics:
        counts[d.code] = counts.get(d.code, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def statistics_text(diagnostics: Iterable[Diagnostic], fmt: str) -> str:
    """``--statistics``: one line per code (count, code, summary), or a JSON list with
    ``--format json``."""
    rows = statistics(diagnostics)
    if fmt == "json":
        return json.dumps([{"code": code, "count": count, "summary": _summary(code)}
                           for code, count in rows], indent=2) + "\n"
    width = max((len(str(count)) for _, count in rows), default=1)
    return "".join(f"{count:>{width}}\t{code}\t{_summary(code)}\n" for code, count in rows)


def _summary(code: str) -> str:
    info = codes.CODES.get(code)
    return info.summary if info else ""
