"""Code actions: quick-fixes from the core's clamp plan, and ``source.fixAll.budgetlens``.

For a budget diagnostic (BL050 over budget, BL051 output above the model's ceiling) of step
S in pipeline P, with P's report:

- *clamp max_context_tokens* — the plan's context change alone; where the value is
  inherited, two variants: override it in P, or edit the parent that sets it;
- *clamp S's output* — the core's ``output_clamp_plan``: the clamp computed with the
  context held where it is, keeping only S's change;
  for an inherited step also the variant that edits the parent.

A near-miss key (BL008) gets *Rename 'max_context_token' to 'max_context_tokens'*: one
text edit over the key's own characters, taken from the server's diagnostics for the range.

``source.fixAll.budgetlens`` applies P's whole plan. Each action is a ``WorkspaceEdit``
across files, versioned for open documents when the client supports ``documentChanges``.
All numbers and edits come from ``clamp_plan``; the text edits change only the numbers (or
insert the override).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from lsprotocol import types
from lsprotocol.converters import get_converter

from budgetlens import codes
from budgetlens.contract.discovery import PROMPT_SUFFIXES
from budgetlens.contract.results import PipelineReport
from budgetlens.files import FileSource
from budgetlens.serialize import to_jsonable
from budgetlens.source import Diagnostic, RenameKey, TextEdit
from budgetlens_lsp.convert import SOURCE, DiagnosticData
from budgetlens_lsp.features import json_documents
from budgetlens_lsp.features.edits import EditContext, text_edits, workspace_edit
from budgetlens_lsp.features.shared import APPLY_FIX, readable
from budgetlens_lsp.features.state import Analysis, ServerState
from budgetlens_lsp.workspace_index import WorkspaceIndex

if TYPE_CHECKING:  # an annotation only; the plans load with the first fix (start-up speed)
    from budgetlens.contract.plan import ClampPlan

FIX_ALL = "source.fixAll.budgetlens"
FIXABLE = (codes.CONTRACT_VIOLATION, codes.OUTPUT_ABOVE_CEILING, codes.PROMPT_OUTPUT_UNSET)


def _describe(plan: ClampPlan, here: str) -> str:
    parts = []
    for c in plan.changes:
        key = c.key.split(".")[-1]
        what = f"{key} of step {c.step!r}" if c.step else key
        where = "" if os.path.normpath(c.file) == here else f" in {os.path.basename(c.file)}"
        before = "unset" if c.before is None else str(c.before)
        parts.append(f"{what} {before} → {c.after}{where}")
    return "; ".join(parts)


def _action(index: WorkspaceIndex, title: str, kind: str, plan: ClampPlan,
            diags: list[types.Diagnostic], ctx: EditContext,
            preferred: bool = False) -> types.CodeAction:
    return types.CodeAction(title=title, kind=kind, diagnostics=diags or None,
                            edit=workspace_edit(index, plan, ctx),
                            is_preferred=preferred or None,
                            data={"changes": [to_jsonable(c) for c in plan.changes]})


def _report_of(index: WorkspaceIndex, pipeline: str | None) -> PipelineReport | None:
    report = index.report_for(os.path.normpath(pipeline)) if pipeline else None
    if report is None or report.context is None or report.window is None:
        return None
    return report


def _fixable_report(index: WorkspaceIndex, diag: types.Diagnostic
                    ) -> tuple[PipelineReport, str | None] | None:
    """The report and step a budget diagnostic is about, from its payload; None when it is
    not ours, not fixable, or the client sent no (or foreign) data."""
    data = DiagnosticData.from_json(diag.data)
    if diag.source != "budgetlens" or diag.code not in FIXABLE or data is None:
        return None
    report = _report_of(index, data.pipeline)
    return None if report is None else (report, data.step)


Seen = set[tuple[object, ...]]


def quick_fixes(index: WorkspaceIndex, path: str, diag: types.Diagnostic,
                ctx: EditContext, seen: Seen | None = None) -> list[types.CodeAction]:
    """The clamp quick-fixes of a budget diagnostic as the client sent it (its payload)."""
    found = _fixable_report(index, diag)
    if found is None:
        return []
    return _clamp_fixes(index, found[0], found[1], diag, ctx, set() if seen is None else seen)


def _clamp_fixes(index: WorkspaceIndex, report: PipelineReport, step_name: str | None,
                 diag: types.Diagnostic, ctx: EditContext, seen: Seen
                 ) -> list[types.CodeAction]:
    """The clamp quick-fixes for ``diag`` (BL050/BL051 of ``step_name`` in ``report``);
    a plan whose edits are in ``seen`` already is not offered twice."""
    from budgetlens.contract.plan import context_clamp_plan  # start-up speed (see the top)

    files = index.files_for(report.pipeline)
    here = report.pipeline
    out: list[types.CodeAction] = []
    if report.pipeline.endswith(PROMPT_SUFFIXES):  # the output limit in the format's key
        from budgetlens.contract.prompt_edit import prompt_clamp_plan  # start-up speed

        plan = prompt_clamp_plan(report, files=files)
        if not plan.empty:
            out.append(_action(index, f"Set {_describe(plan, here)}",
                               types.CodeActionKind.QuickFix, plan, [diag], ctx, True))
        return out

    def add(title: str, plan: ClampPlan, preferred: bool = False) -> None:
        key = tuple((e.file, e.range, e.new_text) for e in plan.edits)
        if plan.empty or key in seen:
            return
        seen.add(key)
        out.append(_action(index, title, types.CodeActionKind.QuickFix, plan, [diag], ctx,
                           preferred))

    if diag.code == codes.CONTRACT_VIOLATION and report.clamp.context_after is not None:
        override = context_clamp_plan(report, files=files, edit_parent=False)
        inherited = report.context is not None and report.context.inherited
        add(f"Clamp {_describe(override, here)}"
            + (" (override here)" if inherited else ""), override, preferred=True)
        if inherited:
            parent = context_clamp_plan(report, files=files, edit_parent=True)
            add(f"Clamp {_describe(parent, here)}", parent)
    _output_fixes(report, files, step_name, diag, add)
    return out


def _output_fixes(report: PipelineReport, files: FileSource, step_name: str | None,
                  diag: types.Diagnostic, add: Callable[[str, ClampPlan, bool], None]) -> None:
    """*Clamp S's output* for step ``step_name`` (and the parent variant if inherited)."""
    from budgetlens.contract.plan import output_clamp_plan  # start-up speed (see the top)

    here = report.pipeline
    for i, s in enumerate(report.steps):
        if s.step != step_name:
            continue
        plan = output_clamp_plan(report, i, files=files, edit_parent=False)
        if plan.empty:
            continue
        add(f"Clamp {_describe(plan, here)}"
            + (" (copy the inherited steps here)" if s.inherited else ""), plan,
            diag.code == codes.OUTPUT_ABOVE_CEILING)
        if s.inherited:
            parent = output_clamp_plan(report, i, files=files, edit_parent=True)
            add(f"Clamp {_describe(parent, here)}", parent, False)


def fix_all(index: WorkspaceIndex, path: str, ctx: EditContext) -> list[types.CodeAction]:
    report = index.report_for(path)
    if report is None:
        return []
    from budgetlens.contract.prompt_edit import clamp_plan_for  # start-up speed (the top)

    plan = clamp_plan_for(report, files=index.files_for(path))
    if plan.empty:
        return []
    return [_action(index, f"Clamp every budget of {os.path.basename(path)}: "
                           f"{_describe(plan, path)}", FIX_ALL, plan, [], ctx)]


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return p.line, p.character
    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def own_diagnostics(analysis: Analysis, path: str, params: types.CodeActionParams
                    ) -> list[tuple[Diagnostic, types.Diagnostic]]:
    """The server's own current diagnostics of ``path`` that the request is about: those
    overlapping its range, and those the client sent back (same code and range). Each comes
    with the LSP diagnostic to name in an action: the client's copy when it sent one.

    So a client that sends no ``data``, or no diagnostics at all, gets the same quick-fixes.
    """
    conv = analysis.index.converter()
    sent = [d for d in params.context.diagnostics if d.source == SOURCE]
    out: list[tuple[Diagnostic, types.Diagnostic]] = []
    for d in analysis.shown.get(path, []):
        if os.path.normpath(d.file) != path:
            continue
        shown = conv.diagnostic(d)
        echoed = [c for c in sent if c.range == shown.range and str(c.code) == d.code]
        if echoed or _overlaps(shown.range, params.range):
            out.append((d, echoed[0] if echoed else shown))
    return out


def rename_fixes(analysis: Analysis, own: list[tuple[Diagnostic, types.Diagnostic]],
                 ctx: EditContext) -> list[types.CodeAction]:
    """*Rename 'k' to 's'* for each near-miss key (BL008) among ``own``; the edit replaces
    exactly the key's characters."""
    out: list[types.CodeAction] = []
    for d, shown in own:
        rename = d.data
        if not isinstance(rename, RenameKey) or rename.new_text is None:
            continue
        edit = TextEdit(d.file, rename.range, rename.new_text)
        out.append(types.CodeAction(
            title=f"Rename {rename.key!r} to {rename.suggestion!r}",
            kind=types.CodeActionKind.QuickFix, diagnostics=[shown],
            edit=text_edits(analysis.index, [edit], ctx), is_preferred=True))
    return out


def budget_fixes(analysis: Analysis, own: list[tuple[Diagnostic, types.Diagnostic]],
                 ctx: EditContext) -> list[types.CodeAction]:
    """The clamp quick-fixes of every budget diagnostic (BL050/BL051) among ``own``, each
    plan offered once."""
    seen: Seen = set()
    out: list[types.CodeAction] = []
    for d, shown in own:
        report = _report_of(analysis.index, d.pipeline) if d.code in FIXABLE else None
        if report is not None:
            out.extend(_clamp_fixes(analysis.index, report, d.step, shown, ctx, seen))
    return out


def _wants(only: list[str] | None, kind: str) -> bool:
    if not only:
        return True
    return any(kind == k or kind.startswith(k + ".") for k in only)


def code_actions(analysis: Analysis, path: str | None, uri: str,
                 params: types.CodeActionParams, ctx: EditContext) -> list[types.CodeAction]:
    if path is None:
        return []
    index = analysis.index
    only = [str(k) for k in params.context.only] if params.context.only else None
    out: list[types.CodeAction] = []
    if _wants(only, types.CodeActionKind.QuickFix):
        own = own_diagnostics(analysis, path, params)
        out.extend(budget_fixes(analysis, own, ctx))
        out.extend(rename_fixes(analysis, own, ctx))
        out.extend(json_documents.code_actions(uri, [shown for _, shown in own]))
    if path.endswith((".yaml", ".yml", *PROMPT_SUFFIXES)) and _wants(only, FIX_ALL):
        out.extend(fix_all(index, path, ctx))
    return out


def as_command(action: types.CodeAction, uri: str) -> types.Command:
    """The ``Command`` form of a code action, for a client without code-action literals:
    its own command, or ``budgetlens.applyFix`` with its edit."""
    if action.edit is None and action.command is not None:
        return types.Command(title=action.title, command=action.command.command,
                             arguments=action.command.arguments)
    edit = get_converter().unstructure(action.edit, types.WorkspaceEdit)
    return types.Command(title=action.title, command=APPLY_FIX,
                         arguments=[{"uri": uri, "edit": edit, "title": action.title}])


async def on_code_action(ctx: ServerState, params: types.CodeActionParams
                         ) -> list[types.CodeAction | types.Command]:
    uri = params.text_document.uri
    found = await ctx.session.query(code_actions, ctx.analysis, readable(ctx, uri), uri, params,
                                    EditContext.of(ctx))
    if ctx.client.code_action_literals:
        return list(found)
    return [as_command(a, uri) for a in found]
