"""``budgetlens diff BASE [HEAD] [--format text|json|markdown] [--max-headroom-drop N|N%]``.

Each side is a folder (a workspace on disk) or a git revision of the repository holding the
current folder, read with ``git ls-tree``/``git cat-file`` and no worktree (a shallow
checkout works once the revision is fetched); HEAD defaults to ``.``, the working tree. A
name that starts with ``./``, ``../`` or ``/`` (or is ``.`` or ``..``) is a folder, one that
ends with ``^{commit}`` a revision; any other name that is both is refused as ambiguous. A
symbolic link is never a side. A revision is read at the current folder's place in the
repository. For every ``call_model`` step of every pipeline: fixed tokens, total, headroom
and fits before and after, the changed inputs that caused it and the check's errors.
Exit status: 1 when HEAD has an error (new or not: ``check`` fails on it), a step newly
fails or its headroom drops by more than the threshold, 0 otherwise, 2 on bad usage (an
unknown revision, an ambiguous name, a folder that is not a workspace).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import sys
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any, TextIO

from budgetlens import BudgetCache, CheckOptions, DiskFiles, check_pipeline
from budgetlens.contract import escape
from budgetlens.contract.diff import (
    BudgetDiff,
    DiffSide,
    HeadroomThreshold,
    InputChange,
    SideError,
    StepDiff,
    StepNumbers,
    StepStatus,
    budget_diff,
)
from budgetlens.contract.discovery import (
    PIPELINE_GLOBS,
    PROMPT_SUFFIXES,
    SKIP_DIRS,
    find_pipelines,
)
from budgetlens.files import FileSource
from budgetlens.serialize import to_jsonable
from budgetlens_cli.check_cmd import options_from
from budgetlens_cli.git_source import (
    GitRevisionFiles,
    repository_top,
    resolve_revision,
    revision_commit,
)
from budgetlens_cli.main import EXIT_FINDINGS, EXIT_OK, UsageError

JSON_SCHEMA_VERSION = 1
#: What makes a side's name a revision whatever files exist (git's own way to say "this
#: names a commit").
REVISION_SUFFIX = "^{commit}"


def threshold_arg(value: str) -> HeadroomThreshold:
    """``--max-headroom-drop``: a whole number of tokens, or a percentage (``10%``)."""
    text = value.strip()
    try:
        if text.endswith("%"):
            percent = float(text[:-1])
            if not 0 <= percent < float("inf"):
                raise ValueError
            return HeadroomThreshold(percent=percent)
        tokens = int(text)
        if tokens < 0:
            raise ValueError
        return HeadroomThreshold(tokens=tokens)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected tokens (500) or a percentage (10%) >= 0, got {value!r}") from None


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "diff", help="the budget diff of a change: every step before and after",
        description="Compare the budget of every call_model step between two sides, each a"
                    " folder or a git revision (read without a worktree). HEAD defaults to"
                    " the working tree (.).")
    p.add_argument("base", metavar="BASE",
                   help="a git revision or a workspace folder (./NAME: always a folder,"
                        " NAME^{commit}: always a revision)")
    p.add_argument("head", metavar="HEAD", nargs="?", default=".",
                   help="a git revision or a workspace folder (default: .)")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                   help="output format (default text; markdown: a pull-request comment)")
    p.add_argument("--max-headroom-drop", type=threshold_arg, metavar="N|N%",
                   help="also exit 1 when a step's headroom drops by more than N tokens or"
                        " N%% of its base headroom")
    p.add_argument("--tokenizer", help="override the tokenizer of config.json")
    p.set_defaults(run=run, policy=None, config=None)


# ------------------------------------------------------------------------------ sides
def _in_revision(rel: str, prefix: str) -> bool:
    """Whether the file ``rel`` (relative to the repository top) is a pipeline under
    ``prefix``, as ``find_pipelines`` would find it in a checkout."""
    path = PurePosixPath(rel)
    scope = PurePosixPath(prefix) if prefix not in ("", ".") else None
    if scope is not None and scope not in path.parents:
        return False
    inner = path.relative_to(scope) if scope is not None else path
    if path.name.endswith(PROMPT_SUFFIXES):  # a prompt file in its own format, anywhere
        return not (path.name.startswith("_") and path.name.endswith(".prompt")) and not any(
            f.startswith(".") or f in SKIP_DIRS for f in inner.parts[:-1])
    if not any(path.match(g) for g in PIPELINE_GLOBS):
        return False
    if str(inner.parent) == "." and scope is not None and scope.name == "pipelines":
        return True
    folders = inner.parts[:-1]
    return bool(folders) and folders[-1] == "pipelines" and not any(
        f.startswith(".") or f in SKIP_DIRS for f in folders)


def _revision_side(rev: str, commit: str, options: CheckOptions,
                   closing: contextlib.ExitStack) -> DiffSide:
    top = repository_top(".")
    root = os.path.abspath(".")
    prefix = PurePosixPath(os.path.relpath(os.path.realpath(root),
                                           os.path.realpath(top))).as_posix()
    if prefix.startswith(".."):
        raise UsageError(f"{root} is not inside the repository {top}")
    # the revision is read as if checked out in a folder that does not exist on disk (its
    # name unguessable), so nothing of the working tree (a file, a symlink) is read or
    # resolved for it
    mount = os.path.join(os.path.realpath(top),
                         f".budgetlens-revision-{commit[:12]}-{secrets.token_hex(8)}")
    files = closing.enter_context(GitRevisionFiles(commit, top, mount))
    root = os.path.normpath(os.path.join(mount, prefix))
    pipelines = [os.path.join(mount, p) for p in files.file_names() if _in_revision(p, prefix)]
    if not pipelines:
        where = "" if prefix == "." else f" under {prefix}"
        raise UsageError(f"{rev}: not a workspace at this revision (no pipelines/*.yaml"
                         f"{where})")
    scope = "" if prefix == "." else prefix + "/"
    notes = tuple(f"{rev}: {path[len(scope):]} is a submodule (commit {sha[:12]}): not read,"
                  " a pipeline or prompt in it is not checked"
                  for path, sha in files.submodules() if path.startswith(scope))
    return _checked(root, pipelines, files, options, notes)


def _checked(root: str, pipelines: Iterable[str], files: FileSource,
             options: CheckOptions, notes: tuple[str, ...] = ()) -> DiffSide:
    cache = BudgetCache()
    reports = [check_pipeline(p, files=files, options=options, cache=cache) for p in pipelines]
    return DiffSide(root, reports, files, notes)


def _folder_side(arg: str, options: CheckOptions) -> DiffSide:
    """The workspace in the folder ``arg``: a folder itself, not a symbolic link to one."""
    if os.path.islink(arg.rstrip("/" + os.sep) or arg):
        raise UsageError(f"{arg}: a symbolic link; a side must be a folder itself (give the"
                         " folder it leads to, or a revision)")
    if not os.path.isdir(arg):
        if os.path.exists(arg):
            raise UsageError(f"{arg}: a file; expected a workspace folder or a git revision")
        raise UsageError(f"{arg}: no such folder")
    root = os.path.abspath(arg)
    pipelines = find_pipelines(root)
    if not pipelines:
        raise UsageError(f"{arg}: not a workspace (no pipelines/*.yaml under this folder)")
    return _checked(root, (str(p) for p in pipelines), DiskFiles(), options)


def names_a_folder(arg: str) -> bool:
    """Whether ``arg`` is written as a path: ``.``, ``..``, or starting with ``./``,
    ``../`` or ``/`` (or the platform's own separator)."""
    seps = tuple({"/", os.sep})
    return arg in (os.curdir, os.pardir) or os.path.isabs(arg) \
        or arg.startswith(tuple(d + s for d in (os.curdir, os.pardir) for s in seps))


def side(arg: str, options: CheckOptions, closing: contextlib.ExitStack) -> DiffSide:
    """A side of the diff (see the module docstring); UsageError when ``arg`` names none,
    or both a revision and a file."""
    if names_a_folder(arg):
        return _folder_side(arg, options)
    if arg.endswith(REVISION_SUFFIX):
        return _revision_side(arg, resolve_revision(arg, "."), options, closing)
    commit = revision_commit(arg, ".")
    if commit is not None and os.path.lexists(arg):
        raise UsageError(f"{arg}: both a revision and a file of this folder; write"
                         f" ./{arg} for the folder or {arg}{REVISION_SUFFIX} for the revision")
    if commit is None and os.path.lexists(arg):
        return _folder_side(arg, options)
    return _revision_side(arg, commit or resolve_revision(arg, "."), options, closing)


def _refused(label: str, diff_side: DiffSide) -> None:
    """UsageError when a revision's reads passed the total cap."""
    files = diff_side.files
    if isinstance(files, GitRevisionFiles) and files.refused is not None:
        raise UsageError(f"{label}: the files the check needs pass {files.max_total:,} bytes"
                         " in total, the cap for a revision; compare two checked-out folders"
                         " instead")


def run(args: argparse.Namespace) -> int:
    options = options_from(args)
    with contextlib.ExitStack() as closing:
        base = side(args.base, options, closing)
        head = side(args.head, options, closing)
        diff = budget_diff(base, head)
        _refused(args.base, base)
        _refused(args.head, head)
    out = sys.stdout
    if args.format == "json":
        out.write(escape.json_text(json.dumps(json_output(diff, args), indent=2,
                                              ensure_ascii=False)) + "\n")
    elif args.format == "markdown":
        write_markdown(out, diff, args.base, args.head)
    else:
        write_text(out, diff, args.base, args.head)
    failing = diff.newly_failing or diff.errors_at_head \
        or diff.over_threshold(args.max_headroom_drop)
    return EXIT_FINDINGS if failing else EXIT_OK


# ------------------------------------------------------------------------------- output
def json_output(diff: BudgetDiff, args: argparse.Namespace) -> dict[str, Any]:
    over = diff.over_threshold(args.max_headroom_drop)
    return {"version": JSON_SCHEMA_VERSION, "base": args.base, "head": args.head,
            "newly_failing": len(diff.newly_failing),
            "over_threshold": [{"pipeline": s.pipeline, "step": s.step,
                                "headroom_drop": s.headroom_drop} for s in over],
            "errors_at_head": len(diff.errors_at_head),
            "new_errors_at_head": len(diff.new_errors_at_head),
            "added_pipelines": list(diff.added_pipelines),
            "removed_pipelines": list(diff.removed_pipelines),
            "steps": to_jsonable(diff.steps),
            "pipeline_errors": to_jsonable(diff.pipeline_errors),
            "notes": list(diff.notes)}


def _count(diff: BudgetDiff, status: StepStatus) -> int:
    return sum(s.status is status for s in diff.steps)


def summary(diff: BudgetDiff) -> str:
    parts = [f"{_count(diff, s)} {s.value.replace('_', ' ')}" for s in StepStatus]
    errors = len(diff.errors_at_head)
    if errors:
        parts.append(f"{errors} error{'s' if errors > 1 else ''} at HEAD"
                     f" ({len(diff.new_errors_at_head)} new)")
    return ", ".join(parts)


def _pair(before: int | None, after: int | None) -> str:
    if before is None:
        return f"{after:,}" if after is not None else ""
    if after is None:
        return f"{before:,}"
    if before == after:
        return f"{after:,}"
    return f"{before:,} → {after:,} ({after - before:+,})"


def _fits(n: StepNumbers | None) -> str | None:
    return None if n is None else ("yes" if n.fits else "no")


def _fits_pair(step: StepDiff) -> str:
    before, after = _fits(step.before), _fits(step.after)
    if step.unknown_before or step.unknown_after:  # a side that failed has no numbers
        return f"{before or '?'} → {after or '?'}"
    if before is None or after is None:
        return before or after or ""
    return after if before == after else f"{before} → {after}"


def _field(step: StepDiff, name: str) -> str:
    before = getattr(step.before, name) if step.before is not None else None
    after = getattr(step.after, name) if step.after is not None else None
    if step.unknown_before or step.unknown_after:  # a side that failed has no numbers
        return f"{'?' if before is None else f'{before:,}'} →" \
               f" {'?' if after is None else f'{after:,}'}"
    return _pair(before, after)


def cause_text(change: InputChange) -> str:
    unit = " tokens" if change.kind.value != "setting" else ""
    return f"{escape.text(change.name)} {_pair(change.before, change.after)}{unit}"


def status_text(step: StepDiff) -> str:
    text = step.status.value.replace("_", " ")
    if step.pipeline_added:
        text += " (new pipeline)"
    elif step.pipeline_removed:
        text += " (pipeline removed)"
    return text


def _shown(s: StepDiff) -> bool:
    """Whether a step gets a line or a row: it changed, or it has errors to list."""
    return s.status is not StepStatus.UNCHANGED or bool(s.errors_before or s.errors_after)


def error_lines(before: tuple[SideError, ...],
                after: tuple[SideError, ...]) -> list[tuple[str, SideError]]:
    """Each error of HEAD (``error``, or ``new error`` when BASE lacks it), then each one of
    BASE that HEAD no longer has (``fixed``)."""
    old = {e.key for e in before}
    new = {e.key for e in after}
    return [("error" if e.key in old else "new error", e) for e in after] + \
        [("fixed", e) for e in before if e.key not in new]


def error_text(label: str, e: SideError) -> str:
    return f"{label} {escape.text(e.code)} {escape.text(e.file)}:{e.line}: {escape.text(e.message)}"


def write_text(out: TextIO, diff: BudgetDiff, base: str, head: str) -> None:
    # every name from a file (or the command line) shown by escape.text: on one line, inert
    out.write(f"budget diff {escape.text(base)} -> {escape.text(head)}: {summary(diff)}\n")
    for s in diff.steps:
        if not _shown(s):
            continue
        out.write(f"{status_text(s)}: {escape.text(s.pipeline)} {escape.text(s.step)}:"
                  f" fixed {_field(s, 'fixed')},"
                  f" total {_field(s, 'total')}, headroom {_field(s, 'headroom')},"
                  f" fits {_fits_pair(s)}\n")
        for c in s.causes:
            out.write(f"    caused by {c.kind.value} {cause_text(c)}\n")
        for label, e in error_lines(s.errors_before, s.errors_after):
            out.write(f"    {error_text(label, e)}\n")
    for p in diff.pipeline_errors:
        out.write(f"pipeline {escape.text(p.pipeline)} (every step):\n")
        for label, e in error_lines(p.before, p.after):
            out.write(f"    {error_text(label, e)}\n")
    for note in diff.notes:
        out.write(f"note: {escape.text(note)}\n")


def _md_row(s: StepDiff) -> str:
    status = status_text(s)
    if s.status is StepStatus.NEWLY_FAILING:
        status = f"**{status}**"
    # every name from a file as escape.markdown_code writes it: one cell, no markup
    causes = "<br>".join(f"{escape.markdown_code(c.name)} {_pair(c.before, c.after)}"
                         f"{' tokens' if c.kind.value != 'setting' else ''}" for c in s.causes)
    cells = [status, escape.markdown_code(s.pipeline), escape.markdown_code(s.step),
             _field(s, "fixed"), _field(s, "total"), _field(s, "headroom"), _fits_pair(s),
             causes]
    return "| " + " | ".join(cells) + " |"


def write_markdown(out: TextIO, diff: BudgetDiff, base: str, head: str) -> None:
    out.write(f"### budgetlens: budget diff {escape.markdown_code(base)} →"
              f" {escape.markdown_code(head)}\n\n")
    out.write(f"{summary(diff)}.\n")
    rows = [s for s in diff.steps if _shown(s)]
    if rows:
        out.write("\n| status | pipeline | step | fixed | total | headroom | fits | caused by |\n")
        out.write("|---|---|---|---:|---:|---:|---|---|\n")
        for s in rows:
            out.write(_md_row(s) + "\n")
    for name in diff.added_pipelines:
        out.write(f"\nAdded pipeline: {escape.markdown_code(name)}\n")
    for name in diff.removed_pipelines:
        out.write(f"\nRemoved pipeline: {escape.markdown_code(name)}\n")
    _markdown_errors(out, diff)
    for note in diff.notes:
        out.write(f"\nNote: {escape.markdown(note)}\n")


def _markdown_errors(out: TextIO, diff: BudgetDiff) -> None:
    """The errors of each side, one list item each (``check`` fails on each of HEAD's)."""
    md = escape.markdown_code
    items = [(f"{md(s.pipeline)} step {md(s.step)}", label, e) for s in diff.steps
             for label, e in error_lines(s.errors_before, s.errors_after)]
    items += [(f"{md(p.pipeline)} (every step)", label, e) for p in diff.pipeline_errors
              for label, e in error_lines(p.before, p.after)]
    if not items:
        return
    out.write("\nErrors:\n\n")
    for where, label, e in items:
        label = f"**{label}**" if label == "new error" else label
        out.write(f"- {label} {where}: {md(e.code)} {md(f'{e.file}:{e.line}')}"
                  f" {escape.markdown(e.message)}\n")

