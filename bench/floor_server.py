"""The framework floor: a bare pygls server that publishes one diagnostic per open/change.

bench_lsp.py starts it next to `budgetlens serve` so the report can show how much of the
start-to-first-diagnostics time is pygls itself (interpreter start, imports, JSON-RPC) and how
much is budgetlens's own work.
"""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("bench-floor", "0.0.1")


def _publish(uri: str, version: int | None) -> None:
    diagnostic = types.Diagnostic(
        range=types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=0, character=1)
        ),
        message="floor",
        severity=types.DiagnosticSeverity.Information,
        source="floor",
    )
    server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, diagnostics=[diagnostic], version=version)
    )


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(params: types.DidOpenTextDocumentParams) -> None:
    _publish(params.text_document.uri, params.text_document.version)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(params: types.DidChangeTextDocumentParams) -> None:
    _publish(params.text_document.uri, params.text_document.version)


if __name__ == "__main__":
    server.start_io()
