"""Truncated JSON buffers: an information diagnostic at the cut point, a code action that
runs ``budgetlens.showHierarchyContext``, and that command's result. A buffer too large to
analyse as you type gets an information diagnostic saying so (never silence).

The analysis is the core's ``get_contexts`` on the buffer's current text (unsaved edits
included), run by the workspace index (``workspace_index.analyze_json``); nothing here
parses JSON.
"""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from budgetlens import codes
from budgetlens.source import Diagnostic, JsonCut, JsonTooLarge, Range, Severity
from budgetlens_lsp.features.shared import SHOW_HIERARCHY, CommandError
from budgetlens_lsp.workspace_index import MAX_JSON_CHARS, WorkspaceIndex

if TYPE_CHECKING:  # get_contexts loads with the first JSON buffer (start-up speed)
    from budgetlens.continuation.contexts import JsonContexts

CODE = codes.JSON_TRUNCATED
TOO_LARGE_CODE = codes.JSON_TOO_LARGE
COMMAND = SHOW_HIERARCHY


def json_diagnostic(path: str, contexts: JsonContexts) -> Diagnostic | None:
    cut = contexts.cut
    if cut is None:
        return None
    at = Range.at(cut.line, cut.character)
    message = (f"truncated JSON: {contexts.description}; run the budgetlens \"show hierarchy"
               " context\" command (the quick fix) to see what a continuation needs")
    return Diagnostic(path, at, Severity.INFORMATION, CODE, message,
                      data=JsonCut(cut.path_text, cut.kind.value))


def too_large_diagnostic(path: str, length: int) -> Diagnostic:
    """BL201 at the top of a JSON buffer of ``length`` characters, above MAX_JSON_CHARS."""
    name = os.path.basename(path) if os.path.isabs(path) else "FILE"
    message = (f"JSON buffer of {length:,} characters, above the {MAX_JSON_CHARS:,} analysed"
               " as you type: a cut in it is not shown; to analyse it, save it and run"
               f" `budgetlens contexts {shlex.quote(name)}` in a terminal")
    return Diagnostic(path, Range.at(0, 0), Severity.INFORMATION, TOO_LARGE_CODE, message,
                      data=JsonTooLarge(length))


def code_actions(uri: str, diagnostics: list[types.Diagnostic]) -> list[types.CodeAction]:
    mine = [d for d in diagnostics if d.code == CODE]
    if not mine:
        return []
    return [types.CodeAction(
        title="Show hierarchy context (budgetlens)",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=mine,
        command=types.Command(title="Show hierarchy context", command=COMMAND,
                              arguments=[{"uri": uri}]))]


def hierarchy_context(index: WorkspaceIndex, path: str, uri: str,
                      budget: Any = None) -> dict[str, Any]:
    """The result of ``budgetlens.showHierarchyContext`` for the buffer at ``path``."""
    settings = index.snapshot.settings
    if budget is None:
        budget = settings.hierarchy_budget
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise CommandError(f"budget must be an integer >= 0, got {budget!r}")
    text = index.text_of(path)
    if text is None:
        raise CommandError(f"{uri}: no such document (not open and not readable on disk)")
    if len(text) > MAX_JSON_CHARS:
        raise CommandError(f"{uri}: {len(text)} characters, above the {MAX_JSON_CHARS}"
                           " character limit of this command")
    from budgetlens.continuation.contexts import get_contexts  # start-up speed, see the top

    ctx = get_contexts(text, budget=budget, marker=settings.cut_marker)
    cut: dict[str, Any] | None = None
    if ctx.cut is not None:
        pos = index.converter().position(path, Range.at(ctx.cut.line, ctx.cut.character).start)
        cut = {"line": pos.line, "character": pos.character, "path": ctx.cut.path_text,
               "kind": ctx.cut.kind.value, "offset": ctx.cut.offset}
    error: dict[str, Any] | None = None
    if ctx.error is not None:
        pos = index.converter().position(path, Range.at(ctx.error.line,
                                                         ctx.error.character).start)
        error = {"line": pos.line, "character": pos.character, "message": ctx.error.message,
                 "path": ctx.error.path_text}
    return {
        "text": ctx.hierarchy_context_for_prompt,
        "cut": cut,
        "overlapContext": ctx.overlap_context,
        "completePart": ctx.complete_part,
        "jsonParsingSuccess": ctx.json_parsing_success,
        "budget": budget,
        "marker": ctx.marker,
        "description": ctx.description,
        "error": error,
    }
