"""``budgetlens clamp [PATH...] [--diff | --write] [--edit-parent]``: the clamp plan.

Without ``--diff`` or ``--write`` the plan is listed (one line per clamped value); ``--diff``
prints it as a unified diff; ``--write`` applies it to the files, all of them or none
(``budgetlens.writes``: through temporary files, only files unchanged since the plan read
them and inside their workspace root; otherwise one line and exit status 2). Pipelines are
planned one after the other over the edits of the ones before, so two children of one parent
never get conflicting edits. Exit status: 0 when no contract violation remains after the
plan, 1 when errors remain (a step that cannot fit, or other errors in the input), 2 on bad
usage or a plan that could not be written. With ``--diff``, as ``ruff format --diff``: also 1
when the diff is not empty (changes are pending), so CI fails until the plan is applied.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from pathlib import Path
from typing import Any

from budgetlens import (
    BudgetCache,
    ClampPlan,
    Diagnostic,
    DiskFiles,
    PipelineReport,
    check_pipeline,
    codes,
)
from budgetlens.contract.clamp import shared_floors, with_floors
from budgetlens.contract.plan import ClampChange
from budgetlens.contract.prompt_edit import clamp_plan_for
from budgetlens.files import OverlayFiles, SourceError
from budgetlens.serialize import to_jsonable
from budgetlens.source import Severity, apply_text_edits, unique_diagnostics
from budgetlens.writes import PlannedWrite, SnapshotFiles, WriteError, write_plan
from budgetlens_cli import lint_options
from budgetlens_cli.check_cmd import add_common_arguments, collect_pipelines, options_from
from budgetlens_cli.check_text import file_text, full_places, parent_pointer, place
from budgetlens_cli.main import EXIT_FINDINGS, EXIT_OK, UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "clamp", help="show or apply the clamp plan of pipelines",
        description="Lower max_context_tokens, then per-step output limits, until every"
                    " call_model step fits the window. Only the numbers change; inherited"
                    " values are overridden in the child unless --edit-parent.")
    add_common_arguments(p)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true",
                      help="print the plan as a unified diff; exit status 1 when it is not"
                           " empty (changes pending)")
    mode.add_argument("--write", action="store_true", help="apply the plan to the files")
    p.add_argument("--edit-parent", action="store_true",
                   help="change an inherited value in the file that sets it, not in the child")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="format of the plan listing (default text)")
    lint_options.register_exclusion(p)
    p.set_defaults(run=run)


def plan_all(args: argparse.Namespace, disk: DiskFiles | None = None,
             ) -> tuple[list[ClampPlan], list[PipelineReport], dict[str, str], dict[str, str]]:
    """Plan every pipeline over the edits of the previous ones, reading files from ``disk``
    (a ``SnapshotFiles`` keeps the bytes every plan was computed from).

    The floors (and a context value several pipelines share) come from the original files,
    checked before any edit, and parents are planned before children, so the result does not
    depend on the order or the names of the files. Returns the plans, the reports after all
    edits, the original and the new text of every edited file.
    """
    disk = disk if disk is not None else DiskFiles()
    options = options_from(args)
    pipelines = collect_pipelines(args.paths, lint_options.Exclusion(args))
    originals: dict[str, str] = {}
    edited: dict[str, str] = {}
    plans: list[ClampPlan] = []
    cache = BudgetCache()
    first = [check_pipeline(p, files=disk, options=options, cache=cache) for p in pipelines]
    floors = shared_floors(first, edit_parent=args.edit_parent)
    for i in sorted(range(len(pipelines)), key=lambda i: len(first[i].chain)):  # parents first
        files = OverlayFiles(disk, {Path(k): v for k, v in edited.items()})
        report = with_floors(check_pipeline(pipelines[i], files=files, options=options,
                                            cache=cache), floors[i])
        plan = clamp_plan_for(report, files=files, edit_parent=args.edit_parent)
        plans.append(plan)
        for file in plan.files:
            try:
                text = files.read_text(Path(file))
            except SourceError as exc:  # pragma: no cover - the plan was just read from it
                raise UsageError(str(exc)) from None
            originals.setdefault(file, disk.read_text(Path(file)))
            edited[file] = apply_text_edits(text, plan.edits_for(file))
    files = OverlayFiles(disk, {Path(k): v for k, v in edited.items()})
    after = [check_pipeline(p, files=files, options=options, cache=cache) for p in pipelines]
    return plans, after, originals, edited


def workspace_roots(plans: list[ClampPlan], reports: list[PipelineReport]) -> dict[str, str]:
    """The workspace root of every file a plan edits: the folder holding the config.json of
    the pipeline whose plan edits it (the root its check used for extends and prompts), or
    the pipeline's own folder without one; also that folder when the pipeline is not below
    its config (``--config`` elsewhere: their common folder). A file edited by the plans of
    pipelines with different roots gets the folder common to them."""
    pipeline_root: dict[str, str] = {}
    for r in reports:
        own = os.path.dirname(os.path.abspath(r.pipeline))
        config = os.path.dirname(os.path.abspath(r.config)) if r.config else own
        pipeline_root[r.pipeline] = os.path.commonpath([config, own])
    roots: dict[str, str] = {}
    for plan in plans:
        root = pipeline_root.get(plan.pipeline,
                                 os.path.dirname(os.path.abspath(plan.pipeline)))
        for file in plan.files:
            roots[file] = os.path.commonpath([roots[file], root]) if file in roots else root
    return roots


def write_all(edited: dict[str, str], disk: SnapshotFiles, roots: dict[str, str]) -> None:
    """Write the plan: every file or none, only files unchanged since the plan read them,
    only inside their workspace root (``budgetlens.writes``); UsageError (one line, exit 2)
    when it cannot."""
    plan: dict[str, PlannedWrite] = {}
    for file, text in edited.items():
        original = disk.snapshot(file)
        if original is None:  # pragma: no cover - every edited file was read by its plan
            raise UsageError(f"{file}: was not read by the plan; nothing was written")
        plan[file] = PlannedWrite(original, text, roots[file])
    try:
        write_plan(plan)
    except WriteError as exc:
        raise UsageError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    disk = SnapshotFiles()
    plans, after, originals, edited = plan_all(args, disk)
    if args.write:  # before any output: a refused or failed write prints one line only
        write_all(edited, disk, workspace_roots(plans, after))
    out = sys.stdout
    changes = [c for p in plans for c in p.changes]
    listing = not args.diff and args.format == "text"
    if args.diff:
        for file in sorted(edited):
            out.writelines(difflib.unified_diff(
                originals[file].splitlines(keepends=True), edited[file].splitlines(keepends=True),
                fromfile=f"a/{file}", tofile=f"b/{file}"))
    elif args.format == "json":
        json.dump({"version": 1, "plans": [to_jsonable(p) for p in plans if p.changes or p.notes]},
                  out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        out.writelines(file_text(change_line(c)) + "\n" for c in changes)
    for note in (n for p in plans for n in p.notes):
        print(f"budgetlens: note: {note}", file=sys.stderr)
    if listing:
        out.write(count_line(len(changes), len(edited), written=args.write) + "\n")
    remaining = any(unfixable(d) for r in after for d in r.diagnostics)
    violations = any(not s.fits for r in after for s in r.steps)
    if remaining or violations:
        _why_not(after, out if listing else sys.stderr)
    pending = args.diff and any(edited[f] != originals[f] for f in edited)  # a diff fails
    return EXIT_FINDINGS if remaining or violations or pending else EXIT_OK


def change_line(c: ClampChange) -> str:
    """One changed value of the plan listing: where, which key, before -> after, and why."""
    where = place(c.file, c.range)
    before = "unset" if c.before is None else str(c.before)
    step = f" (step {c.step!r})" if c.step else ""
    return f"{where}: {c.key}{step} {before} -> {c.after}: {c.reason}"


def count_line(changes: int, files: int, *, written: bool) -> str:
    """The last line of the listing: how many changes, in how many files."""
    verb = "applied" if written else "planned"
    hint = "" if written or not changes else "; --write applies them, --diff shows them"
    return (f"{changes} change{'s' if changes != 1 else ''} {verb} in {files}"
            f" file{'s' if files != 1 else ''}{hint}")


def unfixable(d: Diagnostic) -> bool:
    """An error the clamp cannot fix: any error but a step that does not fit."""
    return d.severity is Severity.ERROR and d.code != codes.CONTRACT_VIOLATION


def _why_not(after: list[PipelineReport], out: Any) -> None:
    """Say what the plan cannot fix: the errors left, and the steps that still do not fit."""
    errors = [d for d in unique_diagnostics(d for r in after for d in r.diagnostics)
              if unfixable(d)]
    shown = full_places(errors)
    children = [d for d in errors if parent_pointer(d, shown) is not None]
    errors = [d for d in errors if d not in children]
    unfit = [(r.pipeline, s.step) for r in after for s in r.steps if not s.fits
             and "missing" not in (s.window.source, s.context.source, s.output_source)]
    if errors:
        out.write(f"{len(errors)} error{'s' if len(errors) != 1 else ''} the clamp cannot fix"
                  " (it only lowers budget numbers):\n")
        for d in errors:
            out.write(f"  {place(d.file, d.range)}: error[{d.code}] {file_text(d.message)}\n")
    if children:
        out.write(f"  (and {len(children)} pipeline{'s' if len(children) != 1 else ''}"
                  f" extending a parent with these errors: "
                  + ", ".join(file_text(d.file) for d in children) + ")\n")
    if unfit:
        out.write("still not fitting after the plan: "
                  + ", ".join(f"{file_text(p)} step {name!r}" for p, name in unfit) + "\n")
