"""``budgetlens serve`` starts a language server that answers over stdio and TCP."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

from .harness import caps, running_server


async def test_server_initializes_over_stdio_and_negotiates_utf16_by_default(
        tmp_path: Path) -> None:
    async with running_server(tmp_path, capabilities=caps()) as editor:
        assert editor.encoding == "utf-16"
        assert editor.server_info is not None and editor.server_info.name == "budgetlens"


async def test_server_prefers_a_client_offered_utf8_encoding(tmp_path: Path) -> None:
    async with running_server(tmp_path, capabilities=caps(encodings=["utf-8", "utf-16"])) as ed:
        assert ed.encoding == "utf-8"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_serve_tcp_listens_and_answers_initialize(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "budgetlens_lsp", "serve", "--tcp",
                             f"127.0.0.1:{port}"], stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.1)
        else:
            raise AssertionError("server never listened")
        body = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
                b'{"processId":null,"rootUri":null,"capabilities":{}}}')
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        header = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
        length = int(header.split(b":")[1].split(b"\r\n")[0])
        payload = await reader.readexactly(length)
        assert b'"budgetlens"' in payload and b'"capabilities"' in payload
        writer.close()
    finally:
        proc.terminate()
        proc.wait(10)


def test_serve_rejects_a_bad_tcp_address() -> None:
    out = subprocess.run([sys.executable, "-m", "budgetlens_lsp", "serve", "--tcp", "nope"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert "HOST:PORT" in out.stderr
