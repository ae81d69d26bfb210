"""A small, honest LSP client over stdio for the benchmarks (asyncio, no framework).

It frames JSON-RPC by Content-Length, answers the server's requests the way an editor would
(workspace/configuration, client/registerCapability, window/workDoneProgress/create, refresh
requests), timestamps every publishDiagnostics on arrival, drains stderr so a chatty server
never blocks, and kills its process by PID when it does not exit after shutdown/exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Published:
    uri: str
    version: int | None
    diagnostics: list[dict[str, Any]]
    at: float  # time.perf_counter() on arrival


@dataclass
class LspProcess:
    """One language server process and the client state that talks to it."""

    command: Sequence[str]
    cwd: Path
    env: dict[str, str] | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    stderr_path: Path | None = None
    proc: asyncio.subprocess.Process | None = None
    started_at: float = 0.0
    published: list[Published] = field(default_factory=list)
    _next_id: int = 0
    _pending: dict[int, asyncio.Future[Any]] = field(default_factory=dict)
    _changed: asyncio.Event | None = None
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start(self) -> None:
        self._changed = asyncio.Event()
        self.started_at = time.perf_counter()
        self.proc = await asyncio.create_subprocess_exec(
            *self.command, cwd=self.cwd, env=self.env,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, limit=2**26,
        )
        self._tasks.append(asyncio.create_task(self._read_stdout()))
        self._tasks.append(asyncio.create_task(self._drain_stderr()))

    # -- wire -------------------------------------------------------------------------------

    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def _read_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        reader = self.proc.stdout
        while True:
            length = None
            while True:
                line = await reader.readline()
                if not line:
                    self._fail_pending("the server closed its output")
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            if length is None:
                continue
            body = await reader.readexactly(length)
            self._dispatch(json.loads(body))

    async def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        # unbuffered: a benchmark reads the log while the server runs (counts before a burst)
        sink = self.stderr_path.open("ab", buffering=0) if self.stderr_path else None
        try:
            while chunk := await self.proc.stderr.read(65536):
                if sink:
                    sink.write(chunk)
        finally:
            if sink:
                sink.close()

    def _fail_pending(self, reason: str) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(RuntimeError(reason))

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "id" in message and "method" not in message:
            future = self._pending.pop(message["id"], None)
            if future and not future.done():
                if "error" in message:
                    future.set_exception(RuntimeError(json.dumps(message["error"])))
                else:
                    future.set_result(message.get("result"))
            return
        method = message.get("method")
        params = message.get("params") or {}
        if "id" in message:
            self._write({"jsonrpc": "2.0", "id": message["id"],
                         "result": self._answer(method, params)})
            return
        if method == "textDocument/publishDiagnostics":
            self.published.append(Published(params["uri"], params.get("version"),
                                            params.get("diagnostics", []), time.perf_counter()))
            assert self._changed is not None
            self._changed.set()

    def _answer(self, method: str | None, params: dict[str, Any]) -> Any:
        if method == "workspace/configuration":
            return [self.settings.get(item.get("section") or "", None)
                    for item in params.get("items", [])]
        if method == "workspace/applyEdit":
            return {"applied": False, "failureReason": "the benchmark client does not edit"}
        return None  # registerCapability, workDoneProgress/create, */refresh, ...

    # -- requests ---------------------------------------------------------------------------

    async def request(self, method: str, params: Any, timeout: float = 60.0) -> Any:
        self._next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[self._next_id] = future
        self._write({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return await asyncio.wait_for(future, timeout)

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def initialize(self, root: Path, initialization_options: Any = None,
                         timeout: float = 60.0) -> Any:
        result = await self.request("initialize", {
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "initializationOptions": initialization_options,
            "capabilities": {
                "textDocument": {
                    "synchronization": {"didSave": True, "dynamicRegistration": False},
                    "publishDiagnostics": {"relatedInformation": True, "versionSupport": True},
                    "codeLens": {},
                    "hover": {"contentFormat": ["markdown", "plaintext"]},
                },
                "workspace": {"configuration": True, "workspaceFolders": True,
                              "applyEdit": False},
                "window": {"workDoneProgress": True},
                "general": {"positionEncodings": ["utf-16"]},
            },
        }, timeout)
        self.notify("initialized", {})
        return result

    def did_open(self, path: Path, language_id: str, text: str, version: int = 1) -> str:
        uri = path.as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": language_id, "version": version, "text": text}})
        return uri

    def did_change(self, uri: str, version: int, changes: list[dict[str, Any]]) -> None:
        self.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": changes})

    # -- waiting ----------------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate()`` holds; False on timeout."""
        assert self._changed is not None
        deadline = time.perf_counter() + timeout
        while not predicate():
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return False
            self._changed.clear()
            if predicate():
                return True
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)
        return True

    def published_since(self, index: int, uri: str | None = None,
                        min_version: int | None = None) -> list[Published]:
        return [p for p in self.published[index:]
                if (uri is None or p.uri == uri)
                and (min_version is None or p.version is None or p.version >= min_version)]

    # -- resources and shutdown ------------------------------------------------------------

    def peak_rss_kib(self) -> int | None:
        """VmHWM (peak resident set) of the server process and its children, in KiB."""
        if self.proc is None:
            return None
        total = 0
        for pid in [self.proc.pid, *_children(self.proc.pid)]:
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
        return total or None

    async def close(self, timeout: float = 5.0) -> None:
        """shutdown + exit; kill by PID (with any children) if the process lingers."""
        if self.proc is None:
            return
        children = _children(self.proc.pid)
        if self.proc.returncode is None:
            with contextlib.suppress(Exception):
                await self.request("shutdown", None, timeout=timeout)
            with contextlib.suppress(Exception):
                self.notify("exit", None)
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), timeout)
            except asyncio.TimeoutError:
                _kill(self.proc.pid)
                await self.proc.wait()
        for pid in children:
            _kill(pid)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _children(pid: int) -> list[int]:
    """Direct and indirect child PIDs of ``pid`` (from /proc)."""
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        path = Path(f"/proc/{parent}/task/{parent}/children")
        with contextlib.suppress(OSError):
            kids = [int(x) for x in path.read_text().split()]
            found.extend(kids)
            frontier.extend(kids)
    return found


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
