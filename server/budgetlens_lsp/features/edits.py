"""Turning the core's text edits into one ``WorkspaceEdit`` (code actions, ``clampAll``):
versioned for open documents when the client supports ``documentChanges``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from lsprotocol import types

from budgetlens.source import TextEdit
from budgetlens_lsp.features.state import ServerState
from budgetlens_lsp.workspace_index import WorkspaceIndex

if TYPE_CHECKING:  # an annotation only: the plans' module loads with the first fix
    from budgetlens.contract.plan import ClampPlan


class EditContext:
    """What turning edits into a ``WorkspaceEdit`` needs from the session (taken on the
    loop, used on the analysis thread)."""

    def __init__(self, versions: dict[str, int | None], document_changes: bool) -> None:
        self.versions = versions
        self.document_changes = document_changes

    @classmethod
    def of(cls, ctx: ServerState) -> EditContext:
        return cls(ctx.session.versions(), ctx.client.document_changes)


def text_edits(index: WorkspaceIndex, edits: Iterable[TextEdit],
               ctx: EditContext) -> types.WorkspaceEdit:
    return index.converter().workspace_edit(edits, versions=ctx.versions,
                                            document_changes=ctx.document_changes)


def workspace_edit(index: WorkspaceIndex, plan: ClampPlan,
                   ctx: EditContext) -> types.WorkspaceEdit:
    return text_edits(index, plan.edits, ctx)
