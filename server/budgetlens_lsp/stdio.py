"""Standard input read by the event loop, not by a thread pool.

pygls reads standard input with blocking reads on its thread pool: three thread hops per
message (the ``Content-Length`` line, the blank line, the body). Each hop wakes a worker
thread, then wakes the loop again through its self-pipe. On a 2-core machine that is about
an eighth of the CPU an edit of a small pipeline costs (``bench/bench_lsp.py``, example
row, with and without ``--pygls-stdin``).

Over TCP pygls already reads in the loop (an ``asyncio.StreamReader``). This module does
the same for standard input when the loop can watch it: a pipe or a socket on POSIX, which
is what editors give a language server. Anything else (a regular file, a terminal, Windows)
keeps pygls's own reader. Messages are parsed and handled by pygls's ``run_async`` either
way, so framing, errors and the end of input behave the same.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import threading
from typing import IO, Any, BinaryIO

from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async

log = logging.getLogger(__name__)

#: The longest header line kept whole (a longer one is not a header pygls knows). It is
#: also the read buffer's high-water mark: the loop stops reading ahead beyond twice this.
LINE_LIMIT = 1 << 20
#: What a header line over :data:`LINE_LIMIT` reads as: not blank, not ``Content-Length``,
#: so pygls skips it as it skips any other unknown header.
_SKIPPED_LINE = b"X-Budgetlens-Skipped: line too long\r\n"


def loop_readable(stdin: IO[bytes], stdout: IO[bytes]) -> bool:
    """Whether the event loop can watch ``stdin``: a pipe or a socket on POSIX, not the
    same one as ``stdout``. (The loop makes ``stdin`` non-blocking. Writes to ``stdout``
    block, so the two must not share a file, as one socket serving both would.)"""
    if os.name != "posix":
        return False
    try:
        source = os.fstat(stdin.fileno())
        sink = os.fstat(stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no descriptor (a test's BytesIO)
        return False
    if (source.st_dev, source.st_ino) == (sink.st_dev, sink.st_ino):
        return False
    return stat.S_ISFIFO(source.st_mode) or stat.S_ISSOCK(source.st_mode)


class LoopReader:
    """pygls's asynchronous reader interface over an ``asyncio.StreamReader``: the end of
    input reads as ``b""`` (a partial body as its bytes), as pygls's own reader returns."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def readline(self) -> bytes:
        try:
            return await self._reader.readline()
        except ValueError:  # over LINE_LIMIT: the line is dropped from the buffer
            log.warning("a header line longer than %d bytes was skipped", LINE_LIMIT)
            return _SKIPPED_LINE

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self._reader.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


async def _serve(server: Any, stop: threading.Event, stdin: BinaryIO) -> None:
    loop = asyncio.get_running_loop()
    buffer = asyncio.StreamReader(limit=LINE_LIMIT)
    transport: asyncio.BaseTransport | None = None
    reader: LoopReader | StdinAsyncReader
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(buffer), stdin)
        reader = LoopReader(buffer)
    except (OSError, ValueError) as exc:  # the loop cannot watch it after all
        log.warning("standard input is read by pygls's threads: the event loop cannot"
                    " watch it (%s)", exc)
        reader = StdinAsyncReader(stdin, server.thread_pool)
    try:
        await run_async(stop_event=stop, reader=reader, protocol=server.protocol,
                        logger=log, error_handler=server.report_server_error)
    finally:
        if transport is not None:
            transport.close()


def serve(server: Any, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """pygls's ``start_io`` with ``stdin`` read by the loop (``loop_readable``):
    the same writer, the same message loop, the same ends (the input closed, ``exit``,
    a lost client)."""
    log.info("Starting async IO server (standard input read by the event loop)")
    server._stop_event = stop = threading.Event()  # what pygls's shutdown sets
    server.protocol.set_writer(StdoutWriter(stdout))
    try:
        asyncio.run(_serve(server, stop, stdin))
    except BrokenPipeError:
        log.error("Connection to the client is lost! Shutting down the server.")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
