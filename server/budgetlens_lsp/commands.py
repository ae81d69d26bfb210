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

Bad arguments raise :class:`json_documents.CommandError`, which the server turns into an
"invalid params" error response.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from budgetlens.clamp import clamp_plan
from budgetlens_lsp.cli.check_cmd import budget_table
from budgetlens_lsp.json_documents import COMMAND, CommandError, hierarchy_context

if TYPE_CHECKING:
    from budgetlens.clamp import ClampPlan
    from budgetlens_lsp.workspace_index import WorkspaceIndex

__all__ = ["ALL", "CLAMP_ALL", "SHOW_HIERARCHY", "SHOW_LOCATION", "SHOW_REPORT",
           "budget_report", "clamp_all_plan", "show_hierarchy", "single_object"]

SHOW_HIERARCHY = COMMAND  # "budgetlens.showHierarchyContext"
CLAMP_ALL = "budgetlens.clampAll"
SHOW_REPORT = "budgetlens.showBudgetReport"
SHOW_LOCATION = "budgetlens.showLocation"
#: Every command the server registers (``executeCommandProvider.commands``).
ALL = (SHOW_HIERARCHY, CLAMP_ALL, SHOW_REPORT, SHOW_LOCATION)


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
            "pipelines": [r.to_dict() for r in reports]}


def clamp_all_plan(index: WorkspaceIndex, path: str, uri: str,
                   arg: dict[str, Any]) -> ClampPlan:
    edit_parent = arg.get("editParent", False)
    if not isinstance(edit_parent, bool):
        raise CommandError("\"editParent\" must be true or false")
    report = index.report_for(path)
    if report is None:
        raise CommandError(f"{uri}: not a pipeline of the workspace")
    return clamp_plan(report, files=index.files_for(path), edit_parent=edit_parent)
