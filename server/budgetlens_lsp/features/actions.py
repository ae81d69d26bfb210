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
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from budgetlens import ClampPlan, clamp_plan, codes
from budgetlens.contract.plan import context_clamp_plan, output_clamp_plan
from budgetlens.source import Range, TextEdit
from budgetlens_lsp.features import json_documents

if TYPE_CHECKING:
    from budgetlens_lsp.workspace_index import WorkspaceIndex

FIX_ALL = "source.fixAll.budgetlens"
FIXABLE = (codes.CONTRACT_VIOLATION, codes.OUTPUT_ABOVE_CEILING)


class EditContext:
    """What turning a plan into a ``WorkspaceEdit`` needs from the session."""

    def __init__(self, versions: dict[str, int | None], document_changes: bool) -> None:
        self.versions = versions
        self.document_changes = document_changes


def workspace_edit(index: WorkspaceIndex, plan: ClampPlan,
                   ctx: EditContext) -> types.WorkspaceEdit:
    return index.converter().workspace_edit(plan.edits, versions=ctx.versions,
                                            document_changes=ctx.document_changes)


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
                            data={"changes": [c.to_dict() for c in plan.changes]})


def quick_fixes(index: WorkspaceIndex, path: str, diag: types.Diagnostic,
                ctx: EditContext) -> list[types.CodeAction]:
    data: Any = diag.data
    if diag.source != "budgetlens" or diag.code not in FIXABLE or not isinstance(data, dict):
        return []
    pipeline, step_name = data.get("pipeline"), data.get("step")
    report = index.report_for(os.path.normpath(pipeline)) if isinstance(pipeline, str) else None
    if report is None or report.context is None or report.window is None:
        return []
    files = index.files_for(report.pipeline)
    here = report.pipeline
    out: list[types.CodeAction] = []
    seen: set[tuple[object, ...]] = set()

    def add(title: str, plan: ClampPlan, preferred: bool = False) -> None:
        key = tuple((e.file, e.range, e.new_text) for e in plan.edits)
        if plan.empty or key in seen:
            return
        seen.add(key)
        out.append(_action(index, title, types.CodeActionKind.QuickFix, plan, [diag], ctx,
                           preferred))

    if diag.code == codes.CONTRACT_VIOLATION and report.clamp.context_after is not None:
        override = context_clamp_plan(report, files=files, edit_parent=False)
        inherited = report.context.inherited
        add(f"Clamp {_describe(override, here)}"
            + (" (override here)" if inherited else ""), override, preferred=True)
        if inherited:
            parent = context_clamp_plan(report, files=files, edit_parent=True)
            add(f"Clamp {_describe(parent, here)}", parent)
    for i, s in enumerate(report.steps):
        if s.step != step_name:
            continue
        plan = output_clamp_plan(report, i, files=files, edit_parent=False)
        if plan.empty:
            continue
        add(f"Clamp {_describe(plan, here)}"
            + (" (copy the inherited steps here)" if s.inherited else ""), plan,
            preferred=diag.code == codes.OUTPUT_ABOVE_CEILING)
        if s.inherited:
            parent = output_clamp_plan(report, i, files=files, edit_parent=True)
            add(f"Clamp {_describe(parent, here)}", parent)
    return out


def fix_all(index: WorkspaceIndex, path: str, ctx: EditContext) -> list[types.CodeAction]:
    report = index.report_for(path)
    if report is None:
        return []
    plan = clamp_plan(report, files=index.files_for(path))
    if plan.empty:
        return []
    return [_action(index, f"Clamp every budget of {os.path.basename(path)}: "
                           f"{_describe(plan, path)}", FIX_ALL, plan, [], ctx)]


def _overlaps(a: Range, b: Range) -> bool:
    return a.start <= b.end and b.start <= a.end


def rename_fixes(index: WorkspaceIndex, path: str, params: types.CodeActionParams,
                 ctx: EditContext) -> list[types.CodeAction]:
    """*Rename 'k' to 's'* for each near-miss key (BL008) the server reports in the range.

    Computed from the server's own diagnostics of ``path`` (a client need not echo a
    diagnostic's ``data`` back); the edit replaces exactly the key's characters.
    """
    own = [d for d in index.diagnostics.get(path, [])
           if d.code == codes.NEAR_MISS_KEY and isinstance(d.data, dict)
           and isinstance(d.data.get("rename"), dict)
           and os.path.normpath(d.file) == path]
    if not own:
        return []
    conv = index.converter()
    wanted = conv.core_range(path, params.range)
    sent = [d for d in params.context.diagnostics
            if d.source == "budgetlens" and d.code == codes.NEAR_MISS_KEY]
    out: list[types.CodeAction] = []
    for d in own:
        if not _overlaps(d.range, wanted):
            continue
        rename: dict[str, Any] = d.data["rename"] if d.data else {}
        new_text, rng = rename.get("new_text"), rename.get("range")
        if not isinstance(new_text, str) or not isinstance(rng, Range):
            continue
        shown = conv.diagnostic(d)
        echoed = [c for c in sent if c.range == shown.range]
        edit = TextEdit(d.file, rng, new_text)
        out.append(types.CodeAction(
            title=f"Rename {rename['from']!r} to {rename['to']!r}",
            kind=types.CodeActionKind.QuickFix, diagnostics=echoed[:1] or [shown],
            edit=conv.workspace_edit([edit], versions=ctx.versions,
                                     document_changes=ctx.document_changes),
            is_preferred=True))
    return out


def _wants(only: list[str] | None, kind: str) -> bool:
    if not only:
        return True
    return any(kind == k or kind.startswith(k + ".") for k in only)


def code_actions(index: WorkspaceIndex, path: str | None, uri: str,
                 params: types.CodeActionParams, ctx: EditContext) -> list[types.CodeAction]:
    if path is None:
        return []
    only = [str(k) for k in params.context.only] if params.context.only else None
    out: list[types.CodeAction] = []
    if _wants(only, types.CodeActionKind.QuickFix):
        for diag in params.context.diagnostics:
            out.extend(quick_fixes(index, path, diag, ctx))
        out.extend(rename_fixes(index, path, params, ctx))
        out.extend(json_documents.code_actions(uri, list(params.context.diagnostics)))
    if path.endswith((".yaml", ".yml")) and _wants(only, FIX_ALL):
        out.extend(fix_all(index, path, ctx))
    return out
