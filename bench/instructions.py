"""Instruction counts with valgrind's callgrind, shared by the benchmarks that count instead
of timing (bench_json.py --instructions, bench_tricks.py).

Instruction counts do not depend on what else the machine is doing: they are the steady
measure on a shared machine. Two ways to count:

- ``calls``: a child process marks each measured call with :func:`counted`; callgrind counts
  only inside those calls and writes one dump after each (``--toggle-collect=ffi_call``,
  ``--dump-after=ffi_call``). The child must make no other ``ffi_call``; the exact number of
  dumps checks that.
- ``process``: the whole run of a command (start-up, work, exit);
- a running process between two points: ``callgrind_control -z`` zeroes its counters and
  ``-d`` dumps them (bench_lsp_counted.py; :func:`dump_total` reads the dump).
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Sequence

#: The same hash seed in every run: the same dict layouts, so the same counts run after run.
ENV = {"PYTHONHASHSEED": "0"}


def counted(fn: Callable[[], object]) -> None:
    """``fn()`` alone inside one call of libffi's ``ffi_call`` (ctypes calling a C function
    pointer that calls back into Python), which callgrind is told to collect and to dump
    after. ``ffi_call`` is an exported symbol, so callgrind finds it in a stripped Python
    (Debian's) as well; nothing else in the measured process calls it, which the exact
    number of dumps checks."""
    import ctypes

    def run() -> int:
        fn()
        return 0
    ctypes.CFUNCTYPE(ctypes.c_int)(run)()


def _totals(text: str) -> int:
    m = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
    return int(m.group(1)) if m else 0


def dump_total(path: str) -> int:
    """The instructions of one callgrind dump (``callgrind_control -d`` writes one)."""
    with open(path, encoding="utf-8") as f:
        total = _totals(f.read())
    if total <= 0:
        raise RuntimeError(f"no instruction count in {path}")
    return total


def call_counts(argv: Sequence[str], need: int, env: dict[str, str] | None = None,
                timeout: float = 3600) -> list[int]:
    """The instructions of each call the child ``argv`` (a Python command line) measured
    with :func:`counted`, in order; the child prints ``measured {need} calls`` at its end."""
    with tempfile.TemporaryDirectory(prefix="bench-cg-") as folder:
        out = os.path.join(folder, "cg")
        command = ["valgrind", "--tool=callgrind", "--collect-atstart=no",
                   "--toggle-collect=ffi_call", "--dump-after=ffi_call",
                   f"--callgrind-out-file={out}", *argv]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **ENV, **(env or {})})
        if proc.returncode != 0 or f"measured {need} calls" not in proc.stdout:
            raise RuntimeError(f"callgrind run failed ({proc.returncode}): "
                               f"{proc.stdout[-500:]}{proc.stderr[-2000:]}")
        dumps = sorted(glob.glob(out + ".*"), key=lambda f: int(f.rsplit(".", 1)[1]))
        if len(dumps) != need:  # one dump per measured call, or the counts mean nothing
            raise RuntimeError(f"expected {need} callgrind dumps (one per measured call), "
                               f"got {len(dumps)}: something else called ffi_call")
        totals = []
        for name in dumps:
            with open(name, encoding="utf-8") as f:
                totals.append(_totals(f.read()))
    if min(totals, default=0) <= 0:
        raise RuntimeError(f"expected {need} callgrind dumps with counts, got {totals}")
    return totals


def process_count(argv: Sequence[str], env: dict[str, str] | None = None,
                  cwd: str | None = None, timeout: float = 3600) -> int:
    """The instructions of the whole run of ``argv`` (exit status 0 or 1 expected)."""
    with tempfile.TemporaryDirectory(prefix="bench-cg-") as folder:
        out = os.path.join(folder, "cg")
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **ENV, **(env or {})}, cwd=cwd)
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"callgrind run failed ({proc.returncode}): "
                               f"{proc.stdout[-500:]}{proc.stderr[-2000:]}")
        with open(out, encoding="utf-8") as f:
            total = _totals(f.read())
    if total <= 0:
        raise RuntimeError(f"no instruction count for {argv}")
    return total
