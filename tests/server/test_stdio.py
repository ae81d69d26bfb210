"""Standard input read by the event loop (``budgetlens_lsp.stdio``).

pygls reads standard input on its thread pool, three thread hops per message. When standard
input is a pipe or a socket, the server reads it in the event loop instead, as pygls does
over TCP: pygls's thread pool is then never made. Anything else keeps pygls's reader. The
messages, their answers and the exit code are the same either way."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

import pytest

from budgetlens_lsp import stdio
from budgetlens_lsp.server import create_server
from tests.waiting import HANG_GUARD


def _framed(body: dict[str, Any]) -> bytes:
    data = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def _request(msg_id: int, method: str, params: Any) -> bytes:
    return _framed({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})


def _notification(method: str, params: Any) -> bytes:
    return _framed({"jsonrpc": "2.0", "method": method, "params": params})


INITIALIZE = {"processId": None, "rootUri": None, "capabilities": {}}
AFTER_INITIALIZE = (_notification("initialized", {})
                    + _request(2, "shutdown", None)
                    + _notification("exit", None))
SESSION = _request(1, "initialize", INITIALIZE) + AFTER_INITIALIZE


def _bodies(data: bytes) -> list[dict[str, Any]]:
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


class Served:
    """``create_server().start_io(stdin, stdout)`` on a thread: its exit code (None if it
    returned without ``exit``) and pygls's thread pool at the end."""

    def __init__(self, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.server = create_server()
        self.code: object = "running"
        self.thread = threading.Thread(target=self._run, args=(stdin, stdout), daemon=True)
        self.thread.start()

    def _run(self, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        try:
            self.server.start_io(stdin, stdout)
            self.code = None
        except SystemExit as exc:
            self.code = exc.code
        finally:
            stdout.close()

    def join(self) -> None:
        self.thread.join(HANG_GUARD)
        assert not self.thread.is_alive(), "hung: the server did not end"

    @property
    def pool_made(self) -> bool:
        return self.server._thread_pool is not None


def _read_to_end(stream: IO[bytes]) -> bytes:
    """All of ``stream`` up to its end (the server closed it), or a failed test if it
    never ends."""
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(stream.read()), daemon=True)
    reader.start()
    reader.join(HANG_GUARD)
    assert not reader.is_alive(), "hung: the server's output never ended"
    return got[0]


def _pipes() -> tuple[IO[bytes], IO[bytes], IO[bytes], IO[bytes]]:
    """(server's stdin, client's end of it, server's stdout, client's end of it)."""
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    return (os.fdopen(r_in, "rb", buffering=0), os.fdopen(w_in, "wb", buffering=0),
            os.fdopen(w_out, "wb"), os.fdopen(r_out, "rb"))


def _serve_over_pipes(data: bytes) -> tuple[Served, list[dict[str, Any]]]:
    stdin, to_server, stdout, from_server = _pipes()
    served = Served(stdin, stdout)
    writer = threading.Thread(target=lambda: (to_server.write(data), to_server.close()))
    writer.start()  # a large write fills the pipe: the server reads while it is written
    answer = _read_to_end(from_server)
    writer.join(HANG_GUARD)
    served.join()
    from_server.close()
    stdin.close()  # pygls's reader leaves it open; the loop's closed it already
    return served, _bodies(answer)


def test_a_pipe_is_read_by_the_loop_without_pygls_threads() -> None:
    served, bodies = _serve_over_pipes(SESSION)
    assert [b.get("id") for b in bodies] == [1, 2]
    assert bodies[0]["result"]["serverInfo"]["name"] == "budgetlens"
    assert served.code == 0  # exit after shutdown, as LSP prescribes
    assert not served.pool_made  # pygls's reader would have made its pool


def test_a_body_larger_than_the_read_buffer_is_read_whole() -> None:
    big = {**INITIALIZE, "initializationOptions": {"padding": "x" * (3 * stdio.LINE_LIMIT)}}
    served, bodies = _serve_over_pipes(_request(1, "initialize", big) + AFTER_INITIALIZE)
    assert [b.get("id") for b in bodies] == [1, 2]
    assert served.code == 0


def test_a_pipe_the_loop_cannot_watch_falls_back_to_pygls_reader(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError("not watchable")
    monkeypatch.setattr(asyncio.SelectorEventLoop, "connect_read_pipe", refuse)
    served, bodies = _serve_over_pipes(SESSION)
    assert [b.get("id") for b in bodies] == [1, 2]
    assert served.code == 0
    assert served.pool_made


def test_a_regular_file_keeps_pygls_reader() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in"
        path.write_bytes(SESSION)
        r_out, w_out = os.pipe()
        with open(path, "rb") as stdin, os.fdopen(r_out, "rb") as from_server:
            served = Served(stdin, os.fdopen(w_out, "wb"))
            answer = _read_to_end(from_server)
            served.join()
    assert [b.get("id") for b in _bodies(answer)] == [1, 2]
    assert served.code == 0
    assert served.pool_made  # pygls's own reader: its thread pool


def test_a_header_line_over_the_limit_is_skipped() -> None:
    long_line = b"X-Padding: " + b"a" * (stdio.LINE_LIMIT + 10) + b"\r\n"
    served, bodies = _serve_over_pipes(long_line + SESSION)
    assert [b.get("id") for b in bodies] == [1, 2]
    assert served.code == 0


def test_input_ending_inside_a_body_ends_the_server() -> None:
    cut = _request(1, "initialize", {"processId": None, "capabilities": {}})[:-5]
    served, bodies = _serve_over_pipes(cut)
    assert bodies == []
    assert served.code is None  # the input ended: no exit, no exit code


@pytest.mark.parametrize("kind", ["pipe", "socket"])
def test_pipes_and_sockets_are_loop_readable(kind: str) -> None:
    if kind == "pipe":
        r, w = os.pipe()
        ends = [os.fdopen(r, "rb"), os.fdopen(w, "wb")]
    else:
        a, b = socket.socketpair()
        ends = [a.makefile("rb"), b.makefile("wb")]
        a.close(), b.close()
    r_out, w_out = os.pipe()
    with ends[0], ends[1], os.fdopen(r_out, "rb"), os.fdopen(w_out, "wb") as out:
        assert stdio.loop_readable(ends[0], out)


def test_other_inputs_are_not_loop_readable() -> None:
    r_out, w_out = os.pipe()
    with tempfile.TemporaryFile() as regular, open(os.devnull, "rb") as null, \
            os.fdopen(r_out, "rb"), os.fdopen(w_out, "wb") as out:
        assert not stdio.loop_readable(regular, out)  # epoll cannot watch a file
        assert not stdio.loop_readable(null, out)  # a character device: neither
    one, other = socket.socketpair()
    with one, other, one.makefile("rb") as reading, one.makefile("wb") as writing:
        # one socket as both stdin and stdout: non-blocking reads would make writes fail
        assert not stdio.loop_readable(reading, writing)
