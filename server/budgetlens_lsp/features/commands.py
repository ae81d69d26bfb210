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

What a command may read (:func:`command_target`, the one check every command's URI goes
through): an open document (the editor's buffer), or a file inside a workspace folder, both
as written and with symlinks resolved. Anything else — a ``..`` segment (also written
``%2e%2e``), an absolute path elsewhere, a symlink that leads out, a non-``file:`` URI that
is not open — is refused with an error that names this rule, before anything is read.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from budgetlens import clamp_plan
from budgetlens.contract.report_text import budget_table
from budgetlens.files import is_inside
from budgetlens_lsp.convert import path_from_uri
from budgetlens_lsp.features.json_documents import COMMAND, CommandError, hierarchy_context

if TYPE_CHECKING:
    from budgetlens.contract.plan import ClampPlan
    from budgetlens_lsp.workspace_index import WorkspaceIndex

__all__ = ["ALL", "CLAMP_ALL", "READ_RULE", "SHOW_HIERARCHY", "SHOW_LOCATION", "SHOW_REPORT",
           "budget_report", "clamp_all_plan", "command_target", "outside_reason",
           "show_hierarchy", "single_object"]

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


#: The rule every refusal names.
READ_RULE = "budgetlens reads only open documents and files inside the workspace folders"


def outside_reason(path: str, roots: Sequence[str]) -> str | None:
    """Why the file ``path`` (absolute, normalised) may not be read, or None if it may: it
    must lie inside one of ``roots`` as written and after resolving symlinks."""
    if "\0" in path:
        return "is not a valid path"
    if not roots:
        return "is outside the workspace folders (the client opened none)"
    if any(is_inside(path, root) for root in roots):
        return None
    if any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots):
        return "leads outside the workspace folders through a symlink"
    return "is outside the workspace folders"


def command_target(uri: str, documents: Mapping[str, str], roots: Sequence[str],
                   open_paths: Collection[str] = ()) -> str:
    """The path (the index's key) a command may read for ``uri``; ``CommandError`` naming
    :data:`READ_RULE` otherwise.

    ``documents`` maps the URI of each open document to its key, ``open_paths`` holds those
    keys; ``roots`` are the workspace folders (absolute, normalised).
    """
    key = documents.get(uri)
    if key is not None:
        return key
    if not uri.startswith("file:"):
        raise CommandError(f"{uri} is not an open document and not a file: URI; {READ_RULE}")
    if ".." in unquote(urlsplit(uri).path).split("/"):  # "..", "%2e%2e", "a%2f..%2fb"
        raise CommandError(f"{uri} has a '..' segment; {READ_RULE}")
    path = path_from_uri(uri)
    if path is None:
        raise CommandError(f"{uri} is not a file path; {READ_RULE}")
    key = os.path.normpath(os.path.abspath(str(path)))
    if key in open_paths:
        return key
    reason = outside_reason(key, roots)
    if reason is not None:
        raise CommandError(f"{uri} {reason}; {READ_RULE}")
    return key


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
