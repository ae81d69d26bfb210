"""What every feature works with: the pygls server (to talk to the client), the session
(documents, settings, scheduling), the analysis state (the index and the diagnostics each
file shows, touched only on the analysis thread) and what the client can do.

``server.py`` builds one :class:`ServerState` and hands it to the features' handlers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from budgetlens.source import Diagnostic
from budgetlens_lsp.scheduling import HoldState
from budgetlens_lsp.session import Session
from budgetlens_lsp.workspace_index import WorkspaceIndex

log = logging.getLogger(__name__)


class ClientFeatures:
    """What the client said it can do, read once at ``initialize``."""

    def __init__(self, caps: types.ClientCapabilities, init_options: Any = None) -> None:
        ws = caps.workspace
        td = caps.text_document
        win = caps.window
        self.pull = bool(td and td.diagnostic is not None)
        self.diagnostic_refresh = bool(ws and ws.diagnostics and ws.diagnostics.refresh_support)
        self.apply_edit = bool(ws and ws.apply_edit)
        self.document_changes = bool(ws and ws.workspace_edit
                                     and ws.workspace_edit.document_changes)
        self.configuration = bool(ws and ws.configuration)
        self.watch_registration = bool(ws and ws.did_change_watched_files
                                       and ws.did_change_watched_files.dynamic_registration)
        self.config_registration = bool(ws and ws.did_change_configuration
                                        and ws.did_change_configuration.dynamic_registration)
        self.lens_refresh = bool(ws and ws.code_lens and ws.code_lens.refresh_support)
        self.show_document = bool(win and win.show_document and win.show_document.support)
        self.progress = bool(win and win.work_done_progress)
        # LSP 3.17: what the client can show
        formats = (td.hover.content_format if td and td.hover else None) or []
        self.hover_markdown = not formats or formats[0] == types.MarkupKind.Markdown
        self.code_action_literals = bool(td and td.code_action
                                         and td.code_action.code_action_literal_support)
        self.related_information = bool(td and td.publish_diagnostics
                                        and td.publish_diagnostics.related_information)
        #: the client shows the results of showHierarchyContext / showBudgetReport itself
        #: (the initialization option DISPLAYS_RESULTS, set by the project's own clients)
        self.displays_results = displays_results(init_options)


#: The initialization option by which a client says it shows command results itself.
DISPLAYS_RESULTS = "displaysCommandResults"


def displays_results(init_options: Any) -> bool:
    """``initializationOptions.displaysCommandResults`` (also under a ``budgetlens`` key)
    is ``true``."""
    if not isinstance(init_options, dict):
        return False
    inner = init_options.get("budgetlens")
    if isinstance(inner, dict) and inner.get(DISPLAYS_RESULTS) is True:
        return True
    return init_options.get(DISPLAYS_RESULTS) is True


@dataclass
class Analysis(HoldState):
    """The analysis thread's state: the workspace index and what each file shows, with what
    the hold policy remembers (``scheduling.HoldState``: ``held_since``, ``forced_stopped``,
    ``counts``)."""

    index: WorkspaceIndex = field(default_factory=WorkspaceIndex)
    shown: dict[str, list[Diagnostic]] = field(default_factory=dict)  # by path, non-empty
    #: buffers to publish whatever their diagnostics, from analyses not delivered
    republish: set[str] = field(default_factory=set)


@dataclass
class ServerState:
    server: LanguageServer
    session: Session[types.PublishDiagnosticsParams]
    analysis: Analysis
    client: ClientFeatures = field(
        default_factory=lambda: ClientFeatures(types.ClientCapabilities()))
    init_settings: Any = None  # the initializationOptions, as sent
    pushed: set[str] = field(default_factory=set)  # URIs whose last push was not empty

    @property
    def index(self) -> WorkspaceIndex:
        return self.analysis.index

    def message(self, text: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        try:
            self.server.window_show_message(types.ShowMessageParams(type=kind, message=text))
        except Exception:  # no client attached (tests, shutdown)
            log.warning("%s", text)
