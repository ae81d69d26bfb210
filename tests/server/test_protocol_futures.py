"""Notifications leave nothing behind in the protocol.

pygls 2.1.1 keeps each handler's future by message id and forgets it only when it answers a
request. A notification has no answer, so every ``didChange`` left a future behind (about
1.8 KiB each, found through bench_lsp's RSS row). ``BudgetLensProtocol`` forgets a
notification's future once it is done, whatever the kind of handler, at the next message."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from lsprotocol import types

from budgetlens_lsp.server import BudgetLensServer
from tests.waiting import until

EDITS = 50


def _message(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


async def test_notifications_leave_no_future_behind() -> None:
    server = BudgetLensServer()
    protocol = server.protocol
    protocol.initialize_received = True
    changes: list[int] = []
    settings: list[Any] = []

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        changes.append(params.text_document.version)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        settings.append(params.settings)

    for version in range(EDITS):
        _send(protocol, _change(version))
        _send(protocol, _message(types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                                 {"settings": {"n": version}}))
    await until(lambda: len(settings) == EDITS, "the async handlers")
    await asyncio.gather(*[f for f in protocol._request_futures.values()
                           if isinstance(f, asyncio.Future)])
    assert changes == list(range(EDITS))  # the generator handler ran for each
    _send(protocol, _change(EDITS))  # the done ones are forgotten at the next message
    assert changes[-1] == EDITS and len(protocol._request_futures) == 1  # its own


class Written:
    """The protocol's writer: the JSON bodies it wrote."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.bodies.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))


async def test_shutdown_cancels_a_running_notification_and_answers() -> None:
    """pygls's shutdown cancels the futures while it walks through them; a cancelled
    notification's future must not change what it walks (the answer would be an error)."""
    server = BudgetLensServer()
    protocol = server.protocol
    protocol.initialize_received = True
    written = Written()
    protocol.set_writer(written)
    started = asyncio.Event()

    @server.feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        started.set()
        await asyncio.Event().wait()  # still running at shutdown

    _send(protocol, _message(types.INITIALIZED, {}))
    await started.wait()
    _send(protocol, {"jsonrpc": "2.0", "id": 7, "method": types.SHUTDOWN})
    await until(lambda: any(b.get("id") == 7 for b in written.bodies), "the answer")
    [answer] = [b for b in written.bodies if b.get("id") == 7]
    assert answer == {"jsonrpc": "2.0", "id": 7, "result": None}


def _send(protocol: Any, message: dict[str, Any]) -> None:
    protocol.handle_message(protocol.structure_message(message))


def _change(version: int) -> dict[str, Any]:
    return _message(types.TEXT_DOCUMENT_DID_CHANGE,
                    {"textDocument": {"uri": "file:///w/a.yaml", "version": version},
                     "contentChanges": [{"text": f"v{version}"}]})
