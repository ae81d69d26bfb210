"""``budgetlens diff BASE [HEAD] [--format text|json|markdown] [--max-headroom-drop N|N%]``.

Each side is a folder (a workspace on disk) or a git revision of the repository holding the
current folder, read with ``git ls-tree``/``git cat-file`` and no worktree (a shallow
checkout works once the revision is fetched); HEAD defaults to ``.``, the working tree. An
existing folder wins over a revision of the same name. A revision is read at the current
folder's place in the repository. For every ``call_model`` step of every pipeline: fixed
tokens, total, headroom and fits before and after, and the changed inputs that caused it.
Exit status: 1 when a step newly fails or its headroom drops by more than the threshold,
0 otherwise, 2 on bad usage (an unknown revision, a folder that is not a workspace).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any, TextIO

from budgetlens import BudgetCache, CheckOptions, DiskFiles, check_pipeline
from budgetlens.contract.diff import (
    BudgetDiff,
    DiffSide,
    HeadroomThreshold,
    InputChange,
    StepDiff,
    StepNumbers,
    StepStatus,
    budget_diff,
)
from budgetlens.contract.discovery import PIPELINE_GLOBS, SKIP_DIRS, find_pipelines
from budgetlens.files import FileSource
from budgetlens.serialize import to_jsonable
from budgetlens_cli.check_cmd import options_from
from budgetlens_cli.git_source import GitRevisionFiles, repository_top, resolve_revision
from budgetlens_cli.main import EXIT_FINDINGS, EXIT_OK, UsageError

JSON_SCHEMA_VERSION = 1
_TEXT_SUFFIXES = (".yaml", ".yml", ".json", ".txt")


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
    p.add_argument("base", metavar="BASE", help="a git revision or a workspace folder")
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
    if not any(path.match(g) for g in PIPELINE_GLOBS):
        return False
    if str(inner.parent) == "." and scope is not None and scope.name == "pipelines":
        return True
    folders = inner.parts[:-1]
    return bool(folders) and folders[-1] == "pipelines" and not any(
        f.startswith(".") or f in SKIP_DIRS for f in folders)


def _revision_side(rev: str, options: CheckOptions) -> DiffSide:
    commit = resolve_revision(rev, ".")
    top = repository_top(".")
    root = os.path.abspath(".")
    prefix = PurePosixPath(os.path.relpath(os.path.realpath(root),
                                           os.path.realpath(top))).as_posix()
    if prefix.startswith(".."):
        raise UsageError(f"{root} is not inside the repository {top}")
    # the revision is read as if checked out in a folder that does not exist on disk, so
    # nothing of the working tree (a file, a symlink) is read or resolved for it
    mount = os.path.join(os.path.realpath(top), f".budgetlens-revision-{commit}")
    files = GitRevisionFiles(commit, top, mount)
    root = os.path.normpath(os.path.join(mount, prefix))
    pipelines = [os.path.join(mount, p) for p in files.paths() if _in_revision(p, prefix)]
    scope = "" if prefix == "." else prefix + "/"
    files.prefetch([p for p in files.paths()
                    if p.startswith(scope) and p.endswith(_TEXT_SUFFIXES)])
    if not pipelines:
        where = "" if prefix == "." else f" under {prefix}"
        raise UsageError(f"{rev}: not a workspace at this revision (no pipelines/*.yaml"
                         f"{where})")
    return _checked(root, pipelines, files, options)


def _checked(root: str, pipelines: Iterable[str], files: FileSource,
             options: CheckOptions) -> DiffSide:
    cache = BudgetCache()
    reports = [check_pipeline(p, files=files, options=options, cache=cache) for p in pipelines]
    return DiffSide(root, reports, files)


def side(arg: str, options: CheckOptions) -> DiffSide:
    """A side of the diff: an existing folder, else a git revision; UsageError if neither."""
    if os.path.isdir(arg):
        root = os.path.abspath(arg)
        pipelines = find_pipelines(root)
        if not pipelines:
            raise UsageError(f"{arg}: not a workspace (no pipelines/*.yaml under this folder)")
        return _checked(root, (str(p) for p in pipelines), DiskFiles(), options)
    if os.path.exists(arg):
        raise UsageError(f"{arg}: a file; expected a workspace folder or a git revision")
    return _revision_side(arg, options)


def run(args: argparse.Namespace) -> int:
    options = options_from(args)
    diff = budget_diff(side(args.base, options), side(args.head, options))
    out = sys.stdout
    if args.format == "json":
        json.dump(json_output(diff, args), out, indent=2, ensure_ascii=False)
        out.write("\n")
    elif args.format == "markdown":
        write_markdown(out, diff, args.base, args.head)
    else:
        write_text(out, diff, args.base, args.head)
    failing = diff.newly_failing or diff.over_threshold(args.max_headroom_drop)
    return EXIT_FINDINGS if failing else EXIT_OK


# ------------------------------------------------------------------------------- output
def json_output(diff: BudgetDiff, args: argparse.Namespace) -> dict[str, Any]:
    over = diff.over_threshold(args.max_headroom_drop)
    return {"version": JSON_SCHEMA_VERSION, "base": args.base, "head": args.head,
            "newly_failing": len(diff.newly_failing),
            "over_threshold": [{"pipeline": s.pipeline, "step": s.step,
                                "headroom_drop": s.headroom_drop} for s in over],
            "added_pipelines": list(diff.added_pipelines),
            "removed_pipelines": list(diff.removed_pipelines),
            "steps": [dict(to_jsonable(s), headroom_drop=s.headroom_drop) for s in diff.steps]}


def _count(diff: BudgetDiff, status: StepStatus) -> int:
    return sum(s.status is status for s in diff.steps)


def summary(diff: BudgetDiff) -> str:
    parts = [f"{_count(diff, s)} {s.value.replace('_', ' ')}" for s in StepStatus]
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
    if before is None or after is None:
        return before or after or ""
    return after if before == after else f"{before} → {after}"


def _field(step: StepDiff, name: str) -> str:
    before = getattr(step.before, name) if step.before is not None else None
    after = getattr(step.after, name) if step.after is not None else None
    return _pair(before, after)


def cause_text(change: InputChange) -> str:
    unit = " tokens" if change.kind.value != "setting" else ""
    return f"{change.name} {_pair(change.before, change.after)}{unit}"


def status_text(step: StepDiff) -> str:
    text = step.status.value.replace("_", " ")
    if step.pipeline_added:
        text += " (new pipeline)"
    elif step.pipeline_removed:
        text += " (pipeline removed)"
    return text


def write_text(out: TextIO, diff: BudgetDiff, base: str, head: str) -> None:
    out.write(f"budget diff {base} -> {head}: {summary(diff)}\n")
    for s in diff.steps:
        if s.status is StepStatus.UNCHANGED:
            continue
        out.write(f"{status_text(s)}: {s.pipeline} {s.step}: fixed {_field(s, 'fixed')},"
                  f" total {_field(s, 'total')}, headroom {_field(s, 'headroom')},"
                  f" fits {_fits_pair(s)}\n")
        for c in s.causes:
            out.write(f"    caused by {c.kind.value} {cause_text(c)}\n")


def _md_row(s: StepDiff) -> str:
    status = status_text(s)
    if s.status is StepStatus.NEWLY_FAILING:
        status = f"**{status}**"
    causes = "<br>".join(f"`{c.name}` {_pair(c.before, c.after)}"
                         f"{' tokens' if c.kind.value != 'setting' else ''}" for c in s.causes)
    cells = [status, f"`{s.pipeline}`", f"`{s.step}`", _field(s, "fixed"), _field(s, "total"),
             _field(s, "headroom"), _fits_pair(s), causes]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def write_markdown(out: TextIO, diff: BudgetDiff, base: str, head: str) -> None:
    out.write(f"### budgetlens: budget diff `{base}` → `{head}`\n\n")
    out.write(f"{summary(diff)}.\n")
    rows = [s for s in diff.steps if s.status is not StepStatus.UNCHANGED]
    if rows:
        out.write("\n| status | pipeline | step | fixed | total | headroom | fits | caused by |\n")
        out.write("|---|---|---|---:|---:|---:|---|---|\n")
        for s in rows:
            out.write(_md_row(s) + "\n")
    for name in diff.added_pipelines:
        out.write(f"\nAdded pipeline: `{name}`\n")
    for name in diff.removed_pipelines:
        out.write(f"\nRemoved pipeline: `{name}`\n")

