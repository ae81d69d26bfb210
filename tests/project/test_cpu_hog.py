"""``scripts/cpu_hog.py``: the busy machine the test command must pass on.

Mechanisms, never wall-clock: the busy processes are found in ``/proc`` (their parent is the
hog, their CPU time grows); the hog's end is awaited as an event (``tests/waiting.py``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.waiting import HANG_GUARD, ended, wait_ended, wait_until

HOG = Path(__file__).resolve().parents[2] / "scripts" / "cpu_hog.py"
FIRST_LINE = re.compile(r"cpu_hog: pid (\d+) keeps (\d+) processes busy \(pids ([\d ]+)\) for ")


def _stat(pid: int) -> tuple[str, int, int]:
    """State, parent PID and user CPU time (clock ticks) of ``pid``, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return fields[0], int(fields[1]), int(fields[11])


def _start(*args: str, parent: list[str] | None = None) -> tuple[subprocess.Popen[str], int,
                                                                  list[int]]:
    """The hog (or ``parent``, which runs it), its PID and its busy processes' PIDs."""
    command = [sys.executable, str(HOG), *args]
    proc = subprocess.Popen(parent + command if parent else command, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = FIRST_LINE.match(line)
    assert match, line
    busy = [int(p) for p in match.group(3).split()]
    assert len(busy) == int(match.group(2))
    return proc, int(match.group(1)), busy


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    """Every process a test starts, killed at its end if the test failed before."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _burns_cpu(pid: int, hog: int) -> None:
    """``pid`` is the hog's child, running, and its CPU time grows (awaited: no bound)."""
    state, ppid, first = _stat(pid)
    assert ppid == hog and state not in "ZXT", state  # alive (D: a page fault after fork)
    wait_until(lambda: _stat(pid)[2] > first + 1, f"busy process {pid} to use CPU")


def test_one_busy_process_per_core_until_killed(started: list[subprocess.Popen[str]]) -> None:
    proc, hog, busy = _start("--seconds", "600")
    started.append(proc)
    assert hog == proc.pid
    assert len(busy) == os.cpu_count() and len(set(busy)) == len(busy)
    for pid in busy:
        _burns_cpu(pid, hog)
    os.kill(hog, signal.SIGTERM)  # `kill $!`
    assert proc.wait(HANG_GUARD) == 0
    for pid in busy:
        assert ended(pid)


def test_it_stops_when_the_time_is_up(started: list[subprocess.Popen[str]]) -> None:
    proc, hog, busy = _start("--seconds", "2", "--processes", "1")
    started.append(proc)
    _burns_cpu(busy[0], hog)
    assert proc.wait(HANG_GUARD) == 0  # no signal: it ends by itself
    assert ended(busy[0])


def test_it_stops_when_its_parent_dies(started: list[subprocess.Popen[str]]) -> None:
    """The shell that started it is gone (a closed terminal, a killed test run)."""
    parent = [sys.executable, "-c",
              "import signal, subprocess, sys; subprocess.Popen(sys.argv[1:]); signal.pause()"]
    shell, hog, busy = _start("--seconds", "600", "--processes", "1", parent=parent)
    started.append(shell)
    _burns_cpu(busy[0], hog)
    shell.kill()
    shell.wait()
    wait_ended(hog)
    wait_ended(busy[0])


def test_a_busy_process_stops_when_the_hog_is_killed_outright(
        started: list[subprocess.Popen[str]]) -> None:
    proc, hog, busy = _start("--seconds", "600", "--processes", "1")
    started.append(proc)
    _burns_cpu(busy[0], hog)
    proc.kill()  # SIGKILL: the hog cannot stop its busy process itself
    proc.wait()
    wait_ended(busy[0])
