"""The JSON-RPC life cycle as LSP 3.17 prescribes it, in one place: pygls's protocol class
with the few overrides that make every request get an answer.

- A request before ``initialize`` gets ``ServerNotInitialized`` (-32002); a notification
  before it is dropped, except ``exit``. A second ``initialize`` gets ``InvalidRequest``.
- A request after ``shutdown`` (a second ``shutdown`` included) gets ``InvalidRequest``
  (-32600); a notification after it is dropped, except ``exit``.
- A request whose params do not have the method's types (``textDocument: {}``, a
  ``position.line`` of -1, a ``codeAction`` without ``range``) gets ``InvalidParams``
  (-32602) with a message naming the field; pygls raised while reading such a message and
  the client never heard back. An ill-typed notification is logged and dropped (it has no
  one to answer).
- ``exit`` records the process's exit code: 0 after ``shutdown``, 1 without
  (:attr:`BudgetLensProtocol.exit_code`; ``BudgetLensServer.start_io`` exits with it, since
  pygls swallows the ``SystemExit``).

It also keeps pygls from keeping its own copy of changed buffers (see
:meth:`BudgetLensProtocol.lsp_text_document__did_change`), and from keeping every
notification's future (see :meth:`BudgetLensProtocol._execute_handler`).
"""

from __future__ import annotations

import functools
import logging
import re
from collections import deque
from collections.abc import Generator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import cattrs
from cattrs.errors import ClassValidationError
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from budgetlens_lsp.convert import publish_json

log = logging.getLogger(__name__)

__all__ = ["BadRequest", "BudgetLensProtocol", "describe_structure_error"]

_FIELD_IN_MESSAGE = re.compile(r"^\w+\.(\w+) should ")


def _json_name(attr: str) -> str:
    """lsprotocol's attribute name as the LSP spells it: ``text_document`` -> ``textDocument``."""
    head, *rest = attr.rstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _problems(exc: BaseException, path: str) -> list[tuple[str, str]]:
    """(field path, problem) for every leaf of a cattrs error tree."""
    if isinstance(exc, cattrs.BaseValidationError):
        with_notes, without = exc.group_exceptions()
        out: list[tuple[str, str]] = []
        for sub, note in with_notes:
            name = getattr(note, "name", None)
            index = getattr(note, "index", None)
            step = f".{_json_name(name)}" if isinstance(name, str) else (
                f"[{index!r}]" if index is not None else "")
            out.extend(_problems(sub, path + step))
        for sub in without:
            out.extend(_problems(sub, path))
        return out
    if isinstance(exc, KeyError):
        return [(path, "required field missing")]
    text = str(exc)
    found = _FIELD_IN_MESSAGE.match(text)
    if found:  # "Position.line should be in range [0:2147483647], but was -1."
        path += "." + found.group(1)
    return [(path, text or type(exc).__name__)]


def describe_structure_error(method: str, exc: BaseException) -> str:
    """A one-line message naming each ill-typed field, e.g. ``invalid params of
    textDocument/hover: params.position.line: Position.line should be in range ...``."""
    parts = [f"{where.lstrip('.')}: {what}" for where, what in _problems(exc, "")]
    return f"invalid params of {method}: " + "; ".join(parts or [str(exc)])


@dataclass(frozen=True)
class BadRequest:
    """A request pygls could not read into its types; answered with ``error``."""

    id: int | str
    method: str
    error: JsonRpcException
    jsonrpc: str = "2.0"


class BudgetLensProtocol(LanguageServerProtocol):
    """pygls's protocol with the life cycle of LSP 3.17 (module docstring), and no copy of
    changed buffers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initialize_received = False
        #: None until ``exit``; then 0 after ``shutdown``, else 1.
        self.exit_code: int | None = None
        #: ids of notifications whose handler is done, forgotten at the next message
        self._finished: deque[Any] = deque()

    # --- writing --------------------------------------------------------------------------
    def _serialize_message(self, data: Any) -> Any:
        """pygls's writing (lsprotocol's converter), except for ``publishDiagnostics``,
        whose JSON is built directly (``convert.publish_json``: the same JSON, several
        times faster; a shared prompt's edit pushes hundreds)."""
        if type(data) is types.PublishDiagnosticsNotification:
            params = publish_json(data.params)
            if params is not None:
                return {"params": params, "method": data.method, "jsonrpc": data.jsonrpc}
        return super()._serialize_message(data)

    # --- reading --------------------------------------------------------------------------
    def structure_message(self, data: dict[str, Any]) -> Any:
        """pygls's reading, except that a request it cannot read becomes a
        :class:`BadRequest` (answered) instead of an exception (silence)."""
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "jsonrpc" not in data or "id" not in data or "method" not in data:
                raise  # a response or notification: no one to answer; pygls logs it
            method = str(data.get("method"))
            cause = exc.__cause__
            if isinstance(cause, ClassValidationError):
                error: JsonRpcException = JsonRpcInvalidParams(
                    message=describe_structure_error(method, cause))
            else:
                error = JsonRpcInternalError(message=f"cannot read the {method} request: "
                                                     f"{cause or exc}")
            return BadRequest(id=data["id"], method=method, error=error)

    # --- dispatching ----------------------------------------------------------------------
    def handle_message(self, message: Any) -> None:
        while self._finished:  # see _execute_handler
            self._request_futures.pop(self._finished.popleft(), None)
        method = getattr(message, "method", "")
        is_request = getattr(message, "id", None) is not None and bool(method)
        refusal = self._refusal(method, is_request)
        if refusal is not None:
            if is_request:
                self._send_response(message.id, None, refusal.to_response_error())
            else:
                log.warning("dropped %s: %s", method, refusal.message)
            return
        if isinstance(message, BadRequest):
            log.warning("%s", message.error.message)
            self._send_response(message.id, None, message.error.to_response_error())
            return
        if method == types.INITIALIZE:
            self.initialize_received = True
        super().handle_message(message)

    def _refusal(self, method: str, is_request: bool) -> JsonRpcException | None:
        """Why a message may not be handled in the current state; None if it may."""
        if not method or method == types.EXIT:
            return None  # responses, and exit, always go through
        if self._shutdown:
            return JsonRpcInvalidRequest(
                message=f"{method} after shutdown: the server is shutting down; only"
                        " 'exit' is accepted")
        if not self.initialize_received and method != types.INITIALIZE:
            return JsonRpcServerNotInitialized(
                message=f"{method} before initialize: send 'initialize' first")
        if self.initialize_received and method == types.INITIALIZE and is_request:
            return JsonRpcInvalidRequest(message="initialize may be sent only once")
        return None

    def _execute_handler(self, msg_id: Any, handler: Any, callback: Any,
                         args: tuple[Any, ...] | None = None,
                         kwargs: dict[str, Any] | None = None) -> None:
        """pygls's, except that a notification's future is forgotten once it is done.

        pygls 2.1.1 keeps the future of every handler it runs in ``_request_futures``, by
        message id, and takes it out when it answers a request. A notification gets a made-up
        id and no answer, so its future stayed: about 1.8 KiB for every ``didChange``,
        without end (bench_lsp's RSS row). Its id is forgotten at the next message, not at
        once: pygls's ``shutdown`` cancels the futures while it walks through them, and a
        cancelled future calls back at once (on a worker thread for threaded handlers)."""
        if callback == self._check_handler_result:  # the callback of a notification
            callback = functools.partial(self._notification_done, msg_id)
        super()._execute_handler(msg_id, handler, callback, args, kwargs)

    def _notification_done(self, msg_id: Any, future: Future[Any]) -> None:
        self._finished.append(msg_id)
        self._check_handler_result(future)

    # --- life cycle -----------------------------------------------------------------------
    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """Record the exit code (0 after shutdown, else 1), then pygls's exit."""
        self.exit_code = 0 if self._shutdown else 1
        yield from super().lsp_exit(*args)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams
                                      ) -> Generator[Any, Any, None]:
        """Only the registered handler; pygls keeps no copy of the changed buffer.

        pygls applies incremental changes to lines cut by ``str.splitlines``, which also
        splits at U+2028, U+2029, U+0085 and other characters the LSP does not count as
        line ends, so its copy drifts from the editor's. The session applies the changes
        itself (``Session.change`` with ``convert.apply_changes``); ``ls.workspace``'s
        documents are not kept current and nothing reads them.
        """
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None
