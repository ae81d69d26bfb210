"""The one place that registers pygls handlers and fans events out to the feature modules.

A feature's failure in a notification is logged (and never stops the server); a request
handler's failure becomes an LSP error response (pygls turns the exception into one).
"""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from budgetlens_lsp import __version__
from budgetlens_lsp.session import Session
from budgetlens_lsp.settings import parse_settings

log = logging.getLogger(__name__)


class BudgetLensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("budgetlens", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.session = Session()

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Out-of-band errors are logged, not shown in a popup on every keystroke.
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)


def create_server() -> BudgetLensServer:
    server = BudgetLensServer()
    session = server.session

    @server.feature(types.INITIALIZE)
    def initialize(ls: BudgetLensServer, params: types.InitializeParams) -> None:
        session.encoding = str(ls.workspace.position_encoding or types.PositionEncodingKind.Utf16)
        settings, problems = parse_settings(params.initialization_options)
        session.settings = settings
        for problem in problems:
            log.warning("%s", problem)
        roots = [f.uri for f in params.workspace_folders or []]
        if not roots and params.root_uri:
            roots = [params.root_uri]
        session.roots = [p for p in (session.path_of(uri) for uri in roots) if p]

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: BudgetLensServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        session.open(doc.uri, doc.version, doc.text, doc.language_id)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: BudgetLensServer, params: types.DidChangeTextDocumentParams) -> None:
        doc = ls.workspace.get_text_document(params.text_document.uri)
        session.change(doc.uri, params.text_document.version, doc.source)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: BudgetLensServer, params: types.DidCloseTextDocumentParams) -> None:
        session.close(params.text_document.uri)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: BudgetLensServer, params: Any) -> None:
        session.shutdown()

    return server
