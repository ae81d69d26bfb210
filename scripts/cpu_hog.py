"""Keep every core busy, to run the tests the way a busy machine runs them.

    python scripts/cpu_hog.py --seconds 3600 & bash scripts/run_tests.sh; kill $!

One busy process per core (``os.cpu_count()``; ``--processes N`` to choose). The first line
printed names every PID: ``cpu_hog: pid M keeps N processes busy (pids A B ...) for S s``.
It stops, busy processes included:

- after ``--seconds`` (default 3600);
- when it is sent SIGTERM, SIGINT or SIGHUP (``kill M``);
- when its parent ends (the shell or the test that started it);
- a busy process also stops when its own parent, the hog, ends (even by SIGKILL).

Linux and other POSIX systems (``os.fork``); the standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import time
from types import FrameType

#: Iterations of the busy loop between two looks at the clock and the parent.
SPIN = 200_000
#: Seconds between two looks at the parent, while the hog waits.
LOOK = 0.5
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Ask Linux to kill this process when its parent ends (a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _busy(parent: int, until: float) -> None:
    """Spin until ``until`` (monotonic) or until ``parent`` is no longer the parent."""
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while os.getppid() == parent and time.monotonic() < until:
        for _ in range(SPIN):
            pass
    os._exit(0)


def _stop(pids: list[int]) -> None:
    """End the busy processes and reap them."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


class _Stopped(Exception):
    """A signal asked the hog to stop."""


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Stopped(signum)


def run(seconds: float, processes: int) -> int:
    """Start ``processes`` busy processes for ``seconds``; 0 when it ends as asked."""
    start = time.monotonic()
    until = start + seconds
    parent = os.getppid()
    me = os.getpid()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    pids: list[int] = []
    try:
        for _ in range(processes):
            pid = os.fork()
            if pid == 0:
                _busy(me, until)
            pids.append(pid)
        print(f"cpu_hog: pid {me} keeps {processes} processes busy "
              f"(pids {' '.join(map(str, pids))}) for {seconds:g} s", flush=True)
        while os.getppid() == parent:
            left = until - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(LOOK, left))
    except _Stopped:
        pass
    finally:
        _stop(pids)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=3600.0,
                        help="stop after this many seconds (default 3600)")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1,
                        help="busy processes (default: one per core, os.cpu_count())")
    args = parser.parse_args(argv)
    if args.processes < 1 or args.seconds < 0:
        parser.error("--processes must be at least 1 and --seconds at least 0")
    return run(args.seconds, args.processes)


if __name__ == "__main__":
    sys.exit(main())
