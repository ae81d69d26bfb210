"""The JSON-RPC life cycle of LSP 3.17, spoken raw over stdio to the real server process.

pytest-lsp initializes for us, so these sessions are scripted by hand: requests before
``initialize`` (ServerNotInitialized, -32002), ill-typed params (InvalidParams, -32602, with
a message naming the field), requests after ``shutdown`` and a second ``shutdown``
(InvalidRequest, -32600), and the exit code of ``exit`` with (0) and without (1)
``shutdown``. Every request must get exactly one response; silence fails the test.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.waiting import ANSWER_GUARD

from .harness import SERVER_COMMAND, find

TIMEOUT = ANSWER_GUARD  # a hang guard only (tests/waiting.py)
SERVER_NOT_INITIALIZED = -32002
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


class RawSession:
    """A server process and a reader thread collecting every message it writes."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(SERVER_COMMAND, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            assert length is not None
            self.messages.put(json.loads(out.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def request(self, msg_id: int, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request and return its response (server requests and notifications met
        on the way are answered with null / skipped)."""
        message: dict[str, Any] = {"id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        while True:
            got = self.messages.get(timeout=TIMEOUT)
            if "method" in got:
                if "id" in got:  # a request of the server (registerCapability, ...)
                    self.send({"id": got["id"], "result": None})
                continue
            assert got.get("id") == msg_id, f"a response to another request: {got}"
            return got

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"method": method, "params": params} if params is not None
                  else {"method": method})

    def wait(self) -> int:
        try:
            return self.proc.wait(timeout=TIMEOUT)
        finally:
            if self.proc.returncode is None:
                self.proc.kill()  # by its PID: the test failed before exit ended it
                self.proc.wait()

    def close(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def session() -> Any:
    s = RawSession()
    try:
        yield s
    finally:
        s.close()


def error_of(response: dict[str, Any]) -> tuple[int, str]:
    assert "error" in response, f"expected an error response, got {response}"
    assert "result" not in response, response
    return response["error"]["code"], response["error"]["message"]


def initialize(session: RawSession, root: Path, msg_id: int = 100) -> dict[str, Any]:
    response = session.request(msg_id, "initialize", {
        "processId": None, "rootUri": root.as_uri(), "capabilities": {},
        "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}]})
    assert "capabilities" in response["result"], response
    session.notify("initialized", {})
    return response


def hover_params(uri: str, line: int = 0, character: int = 0) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


def test_a_scripted_session_gets_the_responses_the_spec_prescribes(
        session: RawSession, workspace: Path) -> None:
    pipeline = (workspace / "pipelines" / "long_report.yaml").resolve().as_uri()
    # before initialize: every request is refused with ServerNotInitialized, one answer each
    code, message = error_of(session.request(1, "textDocument/hover", hover_params(pipeline)))
    assert code == SERVER_NOT_INITIALIZED and "initialize" in message
    code, _ = error_of(session.request(2, "shutdown"))
    assert code == SERVER_NOT_INITIALIZED
    code, _ = error_of(session.request(3, "workspace/executeCommand", {
        "command": "budgetlens.showBudgetReport", "arguments": [{"uri": pipeline}]}))
    assert code == SERVER_NOT_INITIALIZED
    # notifications before initialize are dropped (a didOpen must not be served later)
    session.notify("textDocument/didOpen", {"textDocument": {
        "uri": pipeline, "languageId": "yaml", "version": 1, "text": "x"}})

    initialize(session, workspace)
    code, message = error_of(session.request(4, "initialize", {"capabilities": {}}))
    assert code == INVALID_REQUEST and "once" in message

    # ill-typed params: InvalidParams naming the field, never silence
    code, message = error_of(session.request(5, "textDocument/hover", {
        "textDocument": {}, "position": {"line": 0, "character": 0}}))
    assert code == INVALID_PARAMS and "textDocument.uri" in message, message
    code, message = error_of(session.request(6, "textDocument/hover",
                                             hover_params(pipeline, line=-1)))
    assert code == INVALID_PARAMS and "position.line" in message, message
    code, message = error_of(session.request(7, "textDocument/codeAction", {
        "textDocument": {"uri": pipeline}, "context": {"diagnostics": []}}))
    assert code == INVALID_PARAMS and "range" in message, message
    code, message = error_of(session.request(8, "textDocument/hover", {
        "textDocument": {"uri": pipeline}, "position": {"line": 0}}))
    assert code == INVALID_PARAMS and "position.character" in message, message

    # the server goes on: a well-typed request is served, from the file on disk (the
    # didOpen of "x" sent before initialize was dropped, or there would be no hover)
    line, character = find((workspace / "pipelines" / "long_report.yaml").read_text("utf-8"),
                           "max_context_tokens")
    response = session.request(9, "textDocument/hover", hover_params(pipeline, line, character))
    assert "error" not in response, response
    assert "max_context_tokens" in json.dumps(response["result"]), response

    assert session.request(10, "shutdown") == {"jsonrpc": "2.0", "id": 10, "result": None}
    code, message = error_of(session.request(11, "textDocument/hover", hover_params(pipeline)))
    assert code == INVALID_REQUEST and "shutdown" in message
    code, _ = error_of(session.request(12, "shutdown"))
    assert code == INVALID_REQUEST
    code, _ = error_of(session.request(13, "workspace/executeCommand", {
        "command": "budgetlens.showBudgetReport", "arguments": [{"uri": pipeline}]}))
    assert code == INVALID_REQUEST
    session.notify("exit")
    assert session.wait() == 0


def test_exit_without_shutdown_exits_with_1(session: RawSession, workspace: Path) -> None:
    initialize(session, workspace)
    session.notify("exit")
    assert session.wait() == 1


def test_exit_before_initialize_exits_with_1(session: RawSession) -> None:
    session.notify("exit")
    assert session.wait() == 1


def test_exit_after_shutdown_exits_with_0(session: RawSession, workspace: Path) -> None:
    initialize(session, workspace)
    assert "error" not in session.request(2, "shutdown")
    session.notify("exit")
    assert session.wait() == 0
