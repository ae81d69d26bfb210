"""``budgetlens serve`` starts a language server that answers over stdio and TCP."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import ANSWER_GUARD, HANG_GUARD, wait_until

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
        await _listening(proc, port)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
                b'{"processId":null,"rootUri":null,"capabilities":{}}}')
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        header = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), ANSWER_GUARD)
        length = int(header.split(b":")[1].split(b"\r\n")[0])
        payload = await reader.readexactly(length)
        assert b'"budgetlens"' in payload and b'"capabilities"' in payload
        writer.close()
    finally:
        proc.terminate()
        proc.wait(HANG_GUARD)


def test_serve_rejects_a_bad_tcp_address() -> None:
    out = subprocess.run([sys.executable, "-m", "budgetlens_lsp", "serve", "--tcp", "nope"],
                         capture_output=True, text=True, timeout=HANG_GUARD)
    assert out.returncode == 2
    assert "HOST:PORT" in out.stderr


def _listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, as the kernel prints them) of sockets listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError), open(table, encoding="ascii") as fh:
            for row in fh.readlines()[1:]:
                local, state = row.split()[1], row.split()[3]
                address, _, hex_port = local.partition(":")
                if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    found.add(address)
    return found


async def _listening(proc: subprocess.Popen[bytes], port: int) -> None:
    """Return once something listens on ``port`` (the server, still running): awaited,
    however long its start takes on a busy machine."""
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, wait_until, lambda: bool(
        _listening_addresses(port)) or proc.poll() is not None, "the server to listen")
    assert proc.poll() is None, "the server ended before it listened"


async def test_serve_tcp_with_a_bare_port_listens_on_loopback_only(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "budgetlens_lsp", "serve", "--tcp",
                             str(port)], stderr=subprocess.PIPE)
    try:
        await _listening(proc, port)
        # 127.0.0.1 as /proc/net/tcp writes it (little-endian hex); nothing on 0.0.0.0
        assert _listening_addresses(port) == {"0100007F"}
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.close()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=HANG_GUARD)
    assert b"not a loopback address" not in err


def test_tcp_addresses_default_to_loopback() -> None:
    from budgetlens_lsp.serve import AddressError, is_loopback, parse_address

    assert parse_address("2087") == ("127.0.0.1", 2087)
    assert parse_address("2087", "::1") == ("::1", 2087)
    assert parse_address("[::1]:2087") == ("::1", 2087)
    assert parse_address("0.0.0.0:2087") == ("0.0.0.0", 2087)
    assert parse_address("127.0.0.1:2087", "127.0.0.1") == ("127.0.0.1", 2087)
    for bad in (":2087", "host:", "99999"):
        with pytest.raises(AddressError):
            parse_address(bad)
    with pytest.raises(AddressError, match="different addresses"):
        parse_address("127.0.0.1:2087", "0.0.0.0")
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    assert not is_loopback("example.org")


def test_serve_host_needs_tcp() -> None:
    out = subprocess.run([sys.executable, "-m", "budgetlens_lsp", "serve", "--host",
                          "0.0.0.0"], capture_output=True, text=True, timeout=HANG_GUARD)
    assert out.returncode == 2
    assert "--host is an option of --tcp" in out.stderr
