"""``budgetlens check`` timed as a process against a floor script, in interleaved rounds.

``bench_check.py`` (pipelines) and ``bench_formats.py`` (prompt files) share this module.
Each passes its own workspace generator and floor script, and prints its own titles.

One size is four commands in each round: the floor (one process), ``check -j 1`` with an
empty result cache (the first run), the same again (the second run), and a first run with
the default jobs (or ``-j N``). A figure is the best (least wall time) of the rounds. Other
work on a shared machine only ever slows a run, so the best round is the figure. Every round
is kept as well, with the steal of each run (``machine.py``).

Every child runs with bytecode, after one untimed run of each command (``warm_up``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from machine import cpu_times, fmt_steal, steal_percent

CLI = [sys.executable, "-m", "budgetlens_cli"]

#: The children's environment: bytecode written and read (``PYTHONDONTWRITEBYTECODE``
#: dropped), as an installed wheel has it; ``warm_up`` compiles it before anything is timed.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

#: The four commands of a size, in the order each round runs them.
SIDES = ("floor", "first", "second", "jobs")


def run_child(argv: list[str], cwd: Path, *, keep_output: bool = False
              ) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system, with its workers) of one child process, and the
    last line of its output (``""`` unless ``keep_output``: the output goes to /dev/null).
    It must succeed; a check's exit 1 is its findings."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, stderr=subprocess.PIPE, text=True, timeout=3600,
                          stdout=subprocess.PIPE if keep_output else subprocess.DEVNULL,
                          env=CHILD_ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = (proc.stdout or "").strip().splitlines()
    return wall, cpu, lines[-1] if lines else ""


def usable_cpus() -> int:
    from budgetlens_cli.workers import usable_cpus as cpus

    return cpus()


def warm_up(ws: Path, make: Callable[[Path], None], floor: Path) -> None:
    """One untimed floor and ``check`` (one process, and two workers) of a small workspace
    that ``make`` writes at ``ws``, so the timed runs read bytecode. This machine may set
    ``PYTHONDONTWRITEBYTECODE``: every start would compile our modules, 60-170 ms an
    installed wheel never pays."""
    make(ws)
    run_child([sys.executable, str(floor), "."], ws)
    run_child([*CLI, "check", ".", "--no-cache", "-j", "1"], ws)
    run_child([*CLI, "check", ".", "--no-cache", "-j", "2"], ws)
    shutil.rmtree(ws)


@dataclass
class Rounds:
    """Every round of one size: wall and CPU seconds, steal, and each side's first output."""

    runs: dict[str, list[tuple[float, float]]] = field(
        default_factory=lambda: {side: [] for side in SIDES})
    steal: dict[str, list[float | None]] = field(
        default_factory=lambda: {side: [] for side in SIDES})
    totals: dict[str, str] = field(default_factory=dict)


def measure_rounds(ws: Path, caches: Path, floor: Path, jobs: int | None, rounds: int,
                   *, keep_output: bool = False) -> Rounds:
    """The four sides on the workspace at ``ws``, ``rounds`` times, interleaved. Every
    round starts with empty result caches (``caches`` and ``caches``-jobs); the workspace
    and the caches are removed at the end."""
    jobs_caches = caches.with_name(caches.name + "-jobs")
    check = [*CLI, "check", ".", "--cache-dir", str(caches), "-j", "1"]
    argv = {"floor": [sys.executable, str(floor), "."], "first": check, "second": check,
            "jobs": [*CLI, "check", ".", "--cache-dir", str(jobs_caches),
                     *(["-j", str(jobs)] if jobs else [])]}
    out = Rounds()
    for _ in range(max(1, rounds)):
        shutil.rmtree(caches, ignore_errors=True)
        shutil.rmtree(jobs_caches, ignore_errors=True)
        for side in SIDES:
            before = cpu_times()
            wall, cpu, last = run_child(argv[side], ws, keep_output=keep_output)
            out.runs[side].append((wall, cpu))
            out.steal[side].append(steal_percent(before, cpu_times()))
            out.totals.setdefault(side, last)
    shutil.rmtree(ws)
    shutil.rmtree(caches, ignore_errors=True)
    shutil.rmtree(jobs_caches, ignore_errors=True)
    return out


def best_figures(measured: Rounds) -> dict[str, Any]:
    """Each side's best round, their ratios, and every round (wall, CPU, steal)."""
    runs, steal = measured.runs, measured.steal
    floor, first, second, many = (min(runs[side]) for side in SIDES)
    return {"floor_s": floor[0], "floor_cpu_s": floor[1],
            "first_s": first[0], "first_cpu_s": first[1],
            "second_s": second[0], "second_cpu_s": second[1],
            "jobs_s": many[0], "jobs_cpu_s": many[1],
            "first_over_floor": first[0] / floor[0],
            "first_over_floor_cpu": first[1] / floor[1],
            "jobs_over_floor": many[0] / floor[0],
            "jobs_over_floor_cpu": many[1] / floor[1],
            "second_over_first": second[0] / first[0],
            "second_over_first_cpu": second[1] / first[1],
            "rounds": [{side: {"wall_s": r[i][0], "cpu_s": r[i][1],
                               "steal_percent": steal[side][i]} for side, r in runs.items()}
                       for i in range(len(runs["floor"]))],
            "first_over_floor_per_round": [
                f[0] / fl[0] for f, fl in zip(runs["first"], runs["floor"], strict=True)]}


def add_growth(row: dict[str, Any], size: int, smallest: dict[str, Any] | None) -> None:
    """Seconds per 1,000 units (pipelines or files), and that over the smallest size's."""
    row["first_s_per_1000"] = row["first_s"] / size * 1000
    row["first_cpu_s_per_1000"] = row["first_cpu_s"] / size * 1000
    row["jobs_s_per_1000"] = row["jobs_s"] / size * 1000
    base = smallest or row
    row["growth_vs_smallest"] = row["first_s_per_1000"] / base["first_s_per_1000"]
    row["growth_vs_smallest_cpu"] = row["first_cpu_s_per_1000"] / base["first_cpu_s_per_1000"]
    row["jobs_growth_vs_smallest"] = row["jobs_s_per_1000"] / base["jobs_s_per_1000"]


def jobs_shown(jobs: int | None) -> str:
    return f"-j {jobs}" if jobs else f"default jobs (-j {usable_cpus()})"


def rounds_shown(rounds: int) -> str:
    return f"each figure the best of {rounds} interleaved round{'s' if rounds != 1 else ''}"


def header_text(unit: str, width: int) -> str:
    """The table's column heads; ``unit`` names the first column, ``width`` wide."""
    return (f"{unit:>{width}} {'floor':>13} {'-j 1 first':>13} {'-j 1 second':>13}"
            f" {'jobs first':>13} {'j1/floor':>14} {'jobs/floor':>14} {'second/first':>15}"
            f" {'s/1k -j 1':>11} {'growth':>11}")


def row_text(row: dict[str, Any], unit: str, width: int) -> str:
    """One size's row of the table (after ``add_growth``)."""
    return (f"{row[unit]:>{width}} {row['floor_s']:6.2f}/{row['floor_cpu_s']:<6.2f}"
            f" {row['first_s']:6.2f}/{row['first_cpu_s']:<6.2f}"
            f" {row['second_s']:6.2f}/{row['second_cpu_s']:<6.2f}"
            f" {row['jobs_s']:6.2f}/{row['jobs_cpu_s']:<6.2f}"
            f" {row['first_over_floor']:5.2f}x ({row['first_over_floor_cpu']:4.2f}x)"
            f" {row['jobs_over_floor']:5.2f}x ({row['jobs_over_floor_cpu']:4.2f}x)"
            f" {row['second_over_first'] * 100:5.1f}% ({row['second_over_first_cpu'] * 100:4.1f}%)"
            f" {row['first_s_per_1000']:5.2f}/{row['first_cpu_s_per_1000']:<5.2f}"
            f" {row['growth_vs_smallest']:5.2f}/{row['growth_vs_smallest_cpu']:<5.2f}")


def steal_text(row: dict[str, Any]) -> str:
    """The steal of the floor and of ``-j 1`` in every round."""
    return "; steal (floor/-j 1) by round: " + " ".join(
        f"{fmt_steal(r['floor']['steal_percent'])}/{fmt_steal(r['first']['steal_percent'])}"
        for r in row["rounds"])


def add_round_options(parser: argparse.ArgumentParser) -> None:
    """``--jobs`` and ``--rounds``, as both benches take them."""
    parser.add_argument("--jobs", type=int, help="the -j of the parallel runs (default: none"
                                                 " given, so budgetlens uses every usable CPU)")
    parser.add_argument("--rounds", type=int,
                        help="interleaved rounds per size; each figure is the best round"
                             " (default 3; --quick: 1)")


@contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    """A new temporary folder, removed at the end, whatever happened."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert not tmp.exists()


def write_figures(path: str | None, figures: dict[str, Any]) -> None:
    """Every figure as JSON to ``path`` (``--json``), if given."""
    if path:
        Path(path).write_text(json.dumps(figures, indent=2) + "\n", "utf-8")
        print(f"figures written to {path}")
