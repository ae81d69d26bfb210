"""``workspace/executeCommand`` commands. Each takes one object argument.

- ``budgetlens.showHierarchyContext`` ``{"uri", "budget"?}`` -> ``{"text", "cut",
  "overlapContext", "completePart", "jsonParsingSuccess", "budget", ...}`` (see
  ``json_documents.hierarchy_context``);
- ``budgetlens.clampAll`` ``{"uri", "editParent"?}`` -> ``{"applied", "changes", "message"}``:
  applies the pipeline's whole clamp plan with ``workspace/applyEdit``; refuses politely
  (``applied: false`` and a message) when the client cannot apply edits;
- ``budgetlens.showBudgetReport`` ``{"uri"}`` -> ``{"text", "pipelines"}``: the step table of
  every pipeline that reads the document;
- ``budgetlens.showLocation`` ``{"uri", "range"}`` -> ``{"shown"}``: asks the client to open a
  place (``window/showDocument``); lenses use it.

Bad arguments raise :class:`shared.CommandError`; the ``on_*`` handlers turn it
into an "invalid params" error response.

What a command may read (:func:`shared.command_target`, the one check every command's URI goes
through): an open document (the editor's buffer), or a file inside a workspace folder, both
as written and with symlinks resolved. Anything else — a ``..`` segment (also written
``%2e%2e``), an absolute path elsewhere, a symlink that leads out, a non-``file:`` URI that
is not open — is refused with an error that names this rule, before anything is read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcInvalidParams

from budgetlens.contract.report_text import budget_table
from budgetlens.serialize import to_jsonable
from budgetlens_lsp.features import views
from budgetlens_lsp.features.edits import EditContext, workspace_edit
from budgetlens_lsp.features.json_documents import hierarchy_context
from budgetlens_lsp.features.shared import (
    ALL,
    APPLY_FIX,
    CLAMP_ALL,
    READ_RULE,
    SHOW_HIERARCHY,
    SHOW_LOCATION,
    SHOW_REPORT,
    CommandError,
    check_target,
    command_target,
    outside_reason,
    readable,
)
from budgetlens_lsp.features.state import ServerState
from budgetlens_lsp.workspace_index import WorkspaceIndex, norm

if TYPE_CHECKING:  # an annotation only; the plans load with the first clamp (start-up speed)
    from budgetlens.contract.plan import ClampPlan

__all__ = ["ALL", "APPLY_FIX", "CLAMP_ALL", "READ_RULE", "SHOW_HIERARCHY", "SHOW_LOCATION",
           "SHOW_REPORT", "budget_report", "check_target", "clamp_all_plan", "command_target",
           "on_apply_fix", "on_clamp_all", "on_show_hierarchy", "on_show_location",
           "on_show_report", "outside_reason", "readable", "show_hierarchy", "single_object"]

T = TypeVar("T")


def single_object(args: tuple[Any, ...] | list[Any]) -> dict[str, Any]:
    """The one ``{...}`` argument of a command (a bare URI string is accepted too)."""
    if len(args) != 1:
        raise CommandError(f"expected one argument object like {{\"uri\": ...}}, got"
                           f" {len(args)} arguments")
    arg = args[0]
    if isinstance(arg, str):
        arg = {"uri": arg}
    if not isinstance(arg, dict):
        raise CommandError(f"expected an object like {{\"uri\": ...}}, got {type(arg).__name__}")
    uri = arg.get("uri")
    if not isinstance(uri, str) or not uri:
        raise CommandError("the argument needs \"uri\": the document's URI")
    return arg


def show_hierarchy(index: WorkspaceIndex, path: str, uri: str, arg: dict[str, Any]
                   ) -> dict[str, Any]:
    return hierarchy_context(index, path, uri, arg.get("budget"))


def budget_report(index: WorkspaceIndex, path: str, uri: str) -> dict[str, Any]:
    reports = index.reports_using(path)
    if not reports:
        raise CommandError(f"{uri}: not a pipeline, prompt or config file of the workspace")
    lines: list[str] = []
    for r in reports:
        window = r.window.value if r.window is not None else "?"
        lines.append(f"{os.path.basename(r.pipeline)}: window {window}, policy"
                     f" {r.policy.value}, tokenizer {r.tokenizer}")
        table = budget_table(r)
        lines.extend(table or ["  (no call_model steps)"])
        for d in r.diagnostics:
            if d.severity.value in ("error", "warning"):
                lines.append(f"  {d.severity.value}[{d.code}] {d.message}")
        lines.append("")
    return {"text": "\n".join(lines).rstrip() + "\n",
            "pipelines": [to_jsonable(r.summary) for r in reports]}


def clamp_all_plan(index: WorkspaceIndex, path: str, uri: str,
                   arg: dict[str, Any]) -> ClampPlan:
    edit_parent = arg.get("editParent", False)
    if not isinstance(edit_parent, bool):
        raise CommandError("\"editParent\" must be true or false")
    report = index.report_for(path)
    if report is None:
        raise CommandError(f"{uri}: not a pipeline of the workspace")
    from budgetlens.contract.plan import clamp_plan  # start-up speed (see the top)

    return clamp_plan(report, files=index.files_for(path), edit_parent=edit_parent)


# --- the handlers (on the loop) ------------------------------------------------------------------

def _invalid(exc: Exception) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=str(exc))


def _target(ctx: ServerState, args: tuple[Any, ...]) -> tuple[dict[str, Any], str, str]:
    try:
        arg = single_object(args)
        uri: str = arg["uri"]
        return arg, uri, check_target(ctx, uri)
    except CommandError as exc:
        raise _invalid(exc) from None


async def _query(ctx: ServerState, fn: Callable[..., T], *args: Any) -> T:
    try:
        return await ctx.session.query(fn, *args)
    except CommandError as exc:
        raise _invalid(exc) from None


async def on_show_hierarchy(ctx: ServerState, args: tuple[Any, ...]) -> dict[str, Any]:
    arg, uri, path = _target(ctx, args)
    result = await _query(ctx, show_hierarchy, ctx.index, path, uri, arg)
    views.show(ctx, views.hierarchy_view(path, result))
    return result


async def on_show_report(ctx: ServerState, args: tuple[Any, ...]) -> dict[str, Any]:
    _, uri, path = _target(ctx, args)
    result = await _query(ctx, budget_report, ctx.index, path, uri)
    views.show(ctx, views.report_view(path, result))
    return result


def _refuse_outside(ctx: ServerState, plan: ClampPlan) -> None:
    """The edits obey the same rule as the reads."""
    open_paths = {d.path for d in ctx.session.documents.values()}
    for file in plan.files:
        reason = None if norm(file) in open_paths else outside_reason(
            norm(file), ctx.session.roots)
        if reason is not None:
            raise _invalid(CommandError(
                f"the clamp plan edits {file}, which {reason}; {READ_RULE}"
                "; nothing was applied"))


async def on_clamp_all(ctx: ServerState, args: tuple[Any, ...]) -> dict[str, Any]:
    arg, uri, path = _target(ctx, args)
    plan = await _query(ctx, clamp_all_plan, ctx.index, path, uri, arg)
    _refuse_outside(ctx, plan)
    changes = [to_jsonable(c) for c in plan.changes]
    if plan.empty and plan.notes:  # something to lower that the core refused to edit
        message = f"budgetlens: nothing clamped: {'; '.join(plan.notes)}"
        ctx.message(message)
        return {"applied": False, "changes": [], "message": message}
    if plan.empty:
        return {"applied": False, "changes": [], "message": "nothing to clamp: every step fits"}
    if not ctx.client.apply_edit:
        message = ("budgetlens: this editor cannot apply workspace edits"
                   " (workspace.applyEdit); use the quick-fixes or `budgetlens clamp"
                   " --write` instead")
        ctx.message(message, types.MessageType.Info)
        return {"applied": False, "changes": changes, "message": message}
    edit = await ctx.session.run(workspace_edit, ctx.index, plan, EditContext.of(ctx))
    result = await ctx.server.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(
        edit=edit, label=f"budgetlens: clamp {plan.pipeline}"))
    message = "clamped" if result.applied else (
        f"the editor did not apply the edit: {result.failure_reason or 'no reason given'}")
    return {"applied": bool(result.applied), "changes": changes, "message": message}


async def on_apply_fix(ctx: ServerState, args: tuple[Any, ...]) -> dict[str, Any]:
    """``budgetlens.applyFix`` ``{"uri", "edit", "title"?}``: send a quick-fix's
    ``WorkspaceEdit`` with ``workspace/applyEdit`` (the ``Command`` form of a code action,
    for clients without code-action literals). Every file it edits obeys the read rule."""
    arg, _, _ = _target(ctx, args)
    try:
        edit = get_converter().structure(arg.get("edit"), types.WorkspaceEdit)
    except Exception:
        raise _invalid(CommandError("\"edit\" must be an LSP WorkspaceEdit")) from None
    targets = set((edit.changes or {}).keys())
    for change in edit.document_changes or []:
        if not isinstance(change, types.TextDocumentEdit):
            raise _invalid(CommandError("\"edit\" may only change text (no file operations)"))
        targets.add(change.text_document.uri)
    for target in sorted(targets):
        _target(ctx, ({"uri": target},))
    title = arg.get("title") if isinstance(arg.get("title"), str) else "budgetlens quick-fix"
    if not ctx.client.apply_edit:
        message = ("budgetlens: this editor cannot apply workspace edits"
                   " (workspace.applyEdit); use `budgetlens clamp --write` instead")
        ctx.message(message, types.MessageType.Info)
        return {"applied": False, "message": message}
    result = await ctx.server.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(
        edit=edit, label=title))
    message = "applied" if result.applied else (
        f"the editor did not apply the edit: {result.failure_reason or 'no reason given'}")
    return {"applied": bool(result.applied), "message": message}


def lsp_range(raw: Any) -> types.Range:
    """An LSP range from its JSON form; ``ValueError``, ``KeyError`` or ``TypeError`` if it
    is not one."""
    def pos(p: Any) -> types.Position:
        line, character = p["line"], p["character"]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                   for v in (line, character)):
            raise ValueError("positions are non-negative integers")
        return types.Position(line=line, character=character)
    return types.Range(start=pos(raw["start"]), end=pos(raw["end"]))


async def on_show_location(ctx: ServerState, args: tuple[Any, ...]) -> dict[str, Any]:
    arg, uri, _ = _target(ctx, args)
    try:
        rng = lsp_range(arg["range"]) if arg.get("range") is not None else None
    except (KeyError, TypeError, ValueError):
        raise _invalid(CommandError("\"range\" must be an LSP range")) from None
    if not ctx.client.show_document:
        return {"shown": False, "uri": uri, "range": arg.get("range")}
    result = await ctx.server.window_show_document_async(types.ShowDocumentParams(
        uri=uri, take_focus=True, selection=rng))
    return {"shown": bool(result.success), "uri": uri, "range": arg.get("range")}
