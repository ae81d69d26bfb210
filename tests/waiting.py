"""Waiting for events in tests, never for a length of time.

A test waits for what it needs (a process ended, a state reached); the only clock is a hang
guard, so generous that only a hang reaches it, whatever the load of the machine (the test
command must pass while ``scripts/cpu_hog.py`` keeps every core busy).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import time
from collections.abc import Callable

#: Seconds after which a wait is a hang: never a bound on how long the awaited work takes.
HANG_GUARD = 600.0
#: Seconds after which one answer (or push) of a running server is a hang. Apart from
#: ``HANG_GUARD`` so that a broken answer fails in two minutes, not ten; six times what a
#: server under a CPU hog on every core (``scripts/cpu_hog.py``) was seen to need at worst.
ANSWER_GUARD = 120.0
#: Seconds between two looks at a state that sends no event.
LOOK = 0.01


def wait_until(ready: Callable[[], bool], what: str, guard: float = HANG_GUARD) -> None:
    """Return once ``ready()`` is true; AssertionError naming ``what`` after ``guard`` s."""
    deadline = time.monotonic() + guard
    while not ready():
        assert time.monotonic() < deadline, f"hung: {what}"
        time.sleep(LOOK)


async def until(ready: Callable[[], bool], what: str, guard: float = ANSWER_GUARD) -> None:
    """``wait_until`` in a coroutine: the event loop runs meanwhile (a client's messages
    arrive)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + guard
    while not ready():
        assert loop.time() < deadline, f"hung: {what}"
        await asyncio.sleep(LOOK)


def ended(pid: int) -> bool:
    """Whether ``pid`` has ended (gone, or a zombie not yet reaped)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            return "State:\tZ" in fh.read()
    except OSError:
        return True


def wait_ended(pid: int, guard: float = HANG_GUARD) -> None:
    """Return once ``pid`` has ended (its pidfd says so; else ``/proc`` is watched)."""
    try:
        fd = os.pidfd_open(pid)  # type: ignore[attr-defined,unused-ignore]
    except ProcessLookupError:
        return
    except (AttributeError, OSError):
        wait_until(lambda: ended(pid), f"process {pid} to end", guard)
        return
    with contextlib.closing(os.fdopen(fd, "rb", buffering=0)):
        readable, _, _ = select.select([fd], [], [], guard)
    assert readable, f"hung: process {pid} to end"


class Lines:
    """The lines a child process writes to a pipe, one at a time as they come (``select`` on
    the pipe's descriptor: no thread, no buffer hiding a line that has arrived)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    def next(self, guard: float = HANG_GUARD) -> str:
        """The next line, with its newline; what is left without one at the end of the
        stream ("" once it is all read)."""
        deadline = time.monotonic() + guard
        while b"\n" not in self.buffer:
            readable, _, _ = select.select([self.fd], [], [],
                                           max(0.0, deadline - time.monotonic()))
            assert readable, "hung: waiting for a line"
            data = os.read(self.fd, 65536)
            if not data:
                rest, self.buffer = self.buffer, b""
                return rest.decode()
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode() + "\n"
