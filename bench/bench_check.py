"""Time ``budgetlens check`` against its floor, and ``check_pipeline`` in process.

    .venv/bin/python bench/bench_check.py [--sizes 500,1000,2000,5000] [--quick]
        [--json out.json] [--pipelines 1000] [--prompts 2000] [--bases 10] [--jobs N]
        [--rounds 3] [--no-in-process]

**The command, as a process** (one per measure; wall and CPU seconds of the child and its
workers), on generated workspaces of each of ``--sizes`` pipelines (half as many prompts,
``--bases`` bases): the floor (``bench/floor_check.py``: the same file reads, libyaml
``CSafeLoader`` and tiktoken counting of the prompts, nothing else; one process),
``budgetlens check -j 1`` with an empty result cache (the first run: one process, like the
floor), the same again (the second run: the cache of ``budgetlens_cli.cache``), and a first
run with the default jobs (``--jobs N``: ``-j N``), which checks in worker processes. Printed:
their ratios to the floor both ways (``-j 1`` / floor, jobs / floor: wall, and CPU in
brackets; the jobs' CPU is summed over its processes, so its CPU ratio is the work done and
its wall ratio the wait), second / first, and the growth per size (seconds per 1,000
pipelines for ``-j 1`` and the jobs, and that over the smallest size's: about 1.0 is linear;
wall and CPU: on a busy machine the CPU figures are the steadier ones). Each figure is the
best (least wall time) of ``--rounds`` (3) rounds, interleaved (floor, first, second, jobs;
then again), every first run with an empty cache: other work on a shared machine only ever
slows a run, so one sample of each side can move their ratio by a fifth either way (seen:
the same floor took 2.3 s and 3.3 s within minutes). A ratio is of the two sides' best
rounds, which may be different rounds; the ratio within every round is printed and written
too, with the share of the machine's CPU time the hypervisor gave to other guests during
each run (steal, ``bench/machine.py``). A CPU figure is that of the round with the least
wall time.
Start-up: ``python -c pass``, ``python -c "import budgetlens"`` and ``budgetlens --version``
(best of 5). Every child runs with bytecode (``PYTHONDONTWRITEBYTECODE`` dropped from its
environment, as an installed wheel has it), after one untimed run of each command.
``--quick``: sizes 100,200,400 (unless ``--sizes``), one round (unless ``--rounds``).
``--json FILE`` writes every figure. With an explicit ``--pipelines N`` (and no ``--sizes``)
the command is timed at that size only.
``--no-in-process`` skips the in-process figures below.

**In process** (``--pipelines``, ``--prompts``, ``--bases``):

The workspace is generated deterministically (seeded) in a temporary folder that is removed
at the end: a config.json, ``--bases`` base pipelines, ``--pipelines`` pipelines each
extending a base and overriding a few settings, with two ``call_model`` steps over two of
the ``--prompts`` prompt files (every prompt is used; 50-1,500 words of English prose with
some CJK and emoji). Printed:

- ``check`` of every pipeline with a cold cache (a new ``BudgetCache``: every file is read,
  parsed and counted), with a warm cache (nothing changed: fingerprints only), and warm
  after one prompt file changed; wall time, per pipeline;
- peak memory of the cold run (Python heap via tracemalloc, in a separate run so the
  timings are not slowed by it) and the process's peak RSS;
- token counting on the 2,000 prompt texts: raw tiktoken ``encode_ordinary`` with the
  shipped encoding (the floor), ``TokenCounter.count`` cold and warm, and their ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from machine import CpuTimes, cpu_times, fmt_steal, steal_percent

from budgetlens import BudgetCache, CheckOptions, DiskFiles, TokenCounter, check_pipeline
from budgetlens.contract.discovery import find_pipelines
from budgetlens.tokens.core import get_tokenizer

_PROSE = ("the budget of every step must fit the context window so retrieval history and"
          " output share what is left after the system prompt template overhead and safety"
          " margin customer order refund shipping parcel tracking invoice policy answer question")
WORDS = _PROSE.split(" ")
T = TypeVar("T")

EXTRA = ["予算", "トークン", "上下文", "🚀", "📦", "café", "naïve", "Größe"]


def _prose(rng: random.Random, words: int) -> str:
    out = []
    for i in range(words):
        out.append(rng.choice(EXTRA) if rng.random() < 0.03 else rng.choice(WORDS))
        if i % 17 == 16:
            out.append(".\n")
    return " ".join(out) + "\n"


def generate(root: Path, pipelines: int, prompts: int, bases: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    (root / "pipelines").mkdir(parents=True)
    (root / "prompts").mkdir()
    (root / "config.json").write_text(json.dumps({
        "model_context_window": 16384, "model_max_tokens": 1024, "development": False,
        "format_overhead_tokens": 32}))
    for i in range(prompts):
        (root / "prompts" / f"p{i:04d}.txt").write_text(_prose(rng, rng.randint(50, 1500)),
                                                         "utf-8")
    for b in range(bases):
        (root / "pipelines" / f"base{b:02d}.yaml").write_text(
            "# shared settings\n"
            "settings:\n"
            f"  max_context_tokens: {rng.randint(6000, 9000)}\n"
            f"  max_history_tokens: {rng.randint(500, 2000)}\n"
            "  budget_safety_margin_tokens: 128\n"
            "steps:\n"
            "  - id: route\n"
            "    type: call_model\n"
            f"    prompt_key: p{b:04d}\n"
            "    user_parts:\n"
            "      template: \"Question: {question}\"\n"
            "    max_output_tokens: 32\n", "utf-8")
    for i in range(pipelines):
        a, b = (2 * i) % prompts, (2 * i + 1) % prompts
        (root / "pipelines" / f"flow{i:04d}.yaml").write_text(
            f"extends: base{i % bases:02d}.yaml\n"
            "settings:\n"
            f"  max_context_tokens: {rng.randint(4000, 12000)}\n"
            f"owner: team-{i % 13}\n"
            "steps:\n"
            "  - id: retrieve\n"
            "    type: retrieve\n"
            "  - id: draft\n"
            "    type: call_model\n"
            f"    prompt_key: p{a:04d}\n"
            "    user_parts:\n"
            "      template: |\n"
            "        Context:\n"
            "        {context}\n"
            "        Question: {question}\n"
            f"    max_output_tokens: {rng.randint(256, 3000)}\n"
            "  - id: polish\n"
            "    type: call_model\n"
            f"    prompt_key: p{b:04d}\n"
            f"    use_history: {'true' if i % 3 == 0 else 'false'}\n"
            "    user_parts:\n"
            "      template: \"Polish this: {draft}\"\n"
            f"    max_tokens: {rng.randint(128, 2048)}\n", "utf-8")


def check_all(paths: list[Path], cache: BudgetCache) -> tuple[int, int, int]:
    files = DiskFiles()
    options = CheckOptions(environ={})
    steps = diags = unfit = 0
    for p in paths:
        report = check_pipeline(p, files=files, options=options, cache=cache)
        steps += len(report.steps)
        diags += len(report.diagnostics)
        unfit += sum(not s.fits for s in report.steps)
    return steps, diags, unfit


def timed(fn: Callable[..., T], *args: Any) -> tuple[float, T]:
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


FLOOR = Path(__file__).resolve().parent / "floor_check.py"
CLI = [sys.executable, "-m", "budgetlens_cli"]


#: The children's environment: bytecode written and read (``PYTHONDONTWRITEBYTECODE``
#: dropped), as an installed wheel has it; ``warm_up`` compiles it before anything is timed.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_child(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one child process; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=3600, env=CHILD_ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure_size(root: Path, size: int, bases: int, jobs: int | None,
                 rounds: int = 1) -> dict[str, Any]:
    """The floor, a first and a second ``budgetlens check -j 1`` of a new workspace of
    ``size``, and a first run with the default jobs (``jobs``: that ``-j`` instead); each the
    best (least wall time) of ``rounds`` rounds, the rounds interleaved (floor, first, second,
    jobs; again), every first run with an empty cache. Noise from other work on the machine
    only ever slows a run, so the best round is the figure; every round is kept as well."""
    ws = root / f"ws{size}"
    generate(ws, size, max(2, size // 2), bases)
    cache, jobs_cache = root / f"cache{size}", root / f"cache{size}-jobs"
    check = [*CLI, "check", ".", "--cache-dir", str(cache), "-j", "1"]
    parallel = [*CLI, "check", ".", "--cache-dir", str(jobs_cache),
                *(["-j", str(jobs)] if jobs else [])]
    runs: dict[str, list[tuple[float, float]]] = {"floor": [], "first": [], "second": [],
                                                  "jobs": []}
    steal: dict[str, list[float | None]] = {name: [] for name in runs}
    for _ in range(max(1, rounds)):
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(jobs_cache, ignore_errors=True)
        for name, command in (("floor", [sys.executable, str(FLOOR), "."]), ("first", check),
                              ("second", check), ("jobs", parallel)):
            before: CpuTimes | None = cpu_times()
            runs[name].append(run_child(command, ws))
            steal[name].append(steal_percent(before, cpu_times()))
    shutil.rmtree(ws)
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(jobs_cache, ignore_errors=True)
    floor, first, second, many = (min(runs[k]) for k in ("floor", "first", "second", "jobs"))
    return {"pipelines": size, "floor_s": floor[0], "floor_cpu_s": floor[1],
            "first_s": first[0], "first_cpu_s": first[1],
            "second_s": second[0], "second_cpu_s": second[1],
            "jobs_s": many[0], "jobs_cpu_s": many[1],
            "first_over_floor": first[0] / floor[0],
            "first_over_floor_cpu": first[1] / floor[1],
            "jobs_over_floor": many[0] / floor[0],
            "jobs_over_floor_cpu": many[1] / floor[1],
            "second_over_first": second[0] / first[0],
            "second_over_first_cpu": second[1] / first[1],
            "rounds": [{name: {"wall_s": r[i][0], "cpu_s": r[i][1],
                               "steal_percent": steal[name][i]} for name, r in runs.items()}
                       for i in range(len(runs["floor"]))],
            "first_over_floor_per_round": [
                f[0] / fl[0] for f, fl in zip(runs["first"], runs["floor"], strict=True)]}


def warm_up(root: Path, bases: int) -> None:
    """One untimed floor and ``check`` (one process, and workers) of a small workspace, so
    the timed runs read bytecode (this machine may set ``PYTHONDONTWRITEBYTECODE``: every
    start would compile our modules, 60-170 ms an installed wheel never pays)."""
    ws = root / "warm-up"
    generate(ws, 2 * 64, 64, bases)
    run_child([sys.executable, str(FLOOR), "."], ws)
    run_child([*CLI, "check", ".", "--no-cache", "-j", "1"], ws)
    run_child([*CLI, "check", ".", "--no-cache", "-j", "2"], ws)
    shutil.rmtree(ws)


def measure_startup(repeat: int = 5) -> dict[str, float]:
    """Best of ``repeat`` wall seconds of three start-ups."""
    cases = {"python -c pass": [sys.executable, "-c", "pass"],
             "import budgetlens": [sys.executable, "-c", "import budgetlens"],
             "budgetlens --version": [*CLI, "--version"]}
    return {name: min(run_child(argv, Path.cwd())[0] for _ in range(repeat))
            for name, argv in cases.items()}


def command_figures(root: Path, sizes: list[int], bases: int,
                    jobs: int | None = None, rounds: int = 1) -> dict[str, Any]:
    shown = f"-j {jobs}" if jobs else f"default jobs (-j {usable_cpus()})"
    print("budgetlens check as a process (wall s / CPU s; ratios on wall, CPU in brackets;"
          f" each figure the best of {rounds} interleaved round{'s' if rounds != 1 else ''}):")
    print(f"  floor: bench/floor_check.py, one process; -j 1: in one process; {shown}:"
          " worker processes (its CPU is the sum over them, so its CPU ratio is the work done,"
          " its wall ratio the wait)")
    print(f"{'pipelines':>9} {'floor':>13} {'-j 1 first':>13} {'-j 1 second':>13}"
          f" {'jobs first':>13} {'j1/floor':>14} {'jobs/floor':>14} {'second/first':>15}"
          f" {'s/1k -j 1':>11} {'growth':>11}")
    rows = []
    warm_up(root, bases)
    for size in sizes:
        row = measure_size(root, size, bases, jobs, rounds)
        row["first_s_per_1000"] = row["first_s"] / size * 1000
        row["first_cpu_s_per_1000"] = row["first_cpu_s"] / size * 1000
        row["jobs_s_per_1000"] = row["jobs_s"] / size * 1000
        base = rows[0] if rows else row
        row["growth_vs_smallest"] = row["first_s_per_1000"] / base["first_s_per_1000"]
        row["growth_vs_smallest_cpu"] = (row["first_cpu_s_per_1000"]
                                         / base["first_cpu_s_per_1000"])
        row["jobs_growth_vs_smallest"] = row["jobs_s_per_1000"] / base["jobs_s_per_1000"]
        rows.append(row)
        print(f"{size:>9} {row['floor_s']:6.2f}/{row['floor_cpu_s']:<6.2f}"
              f" {row['first_s']:6.2f}/{row['first_cpu_s']:<6.2f}"
              f" {row['second_s']:6.2f}/{row['second_cpu_s']:<6.2f}"
              f" {row['jobs_s']:6.2f}/{row['jobs_cpu_s']:<6.2f}"
              f" {row['first_over_floor']:5.2f}x ({row['first_over_floor_cpu']:4.2f}x)"
              f" {row['jobs_over_floor']:5.2f}x ({row['jobs_over_floor_cpu']:4.2f}x)"
              f" {row['second_over_first'] * 100:5.1f}%"
              f" ({row['second_over_first_cpu'] * 100:4.1f}%)"
              f" {row['first_s_per_1000']:5.2f}/{row['first_cpu_s_per_1000']:<5.2f}"
              f" {row['growth_vs_smallest']:5.2f}/{row['growth_vs_smallest_cpu']:<5.2f}")
        if rounds > 1:
            print(f"{'':>9} -j 1 / floor by round (wall): "
                  + " ".join(f"{r:.2f}x" for r in row["first_over_floor_per_round"])
                  + "; steal (floor/-j 1) by round: "
                  + " ".join(f"{fmt_steal(r['floor']['steal_percent'])}/"
                             f"{fmt_steal(r['first']['steal_percent'])}"
                             for r in row["rounds"]))
    print("seconds per 1,000 pipelines (wall), -j 1 and jobs: "
          + ", ".join(f"{r['pipelines']}: {r['first_s_per_1000']:.2f} / {r['jobs_s_per_1000']:.2f}"
                      for r in rows))
    startup = measure_startup()
    print("start-up, best of 5 (wall):")
    for name, seconds in startup.items():
        extra = seconds - startup["python -c pass"]
        print(f"  {name:<22} {seconds * 1e3:7.1f} ms  (+{extra * 1e3:.1f} ms over python -c pass)")
    return {"sizes": rows, "startup_s": startup, "jobs": jobs or usable_cpus(), "rounds": rounds,
            "load_average": os.getloadavg()}


def usable_cpus() -> int:
    from budgetlens_cli.workers import usable_cpus as cpus

    return cpus()


def in_process(tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    """``check_pipeline`` in this process: cold, warm, one prompt changed; memory; tokens."""
    generate(tmp, args.pipelines, args.prompts, args.bases)
    paths = [p for p in find_pipelines(tmp) if p.name.startswith("flow")]
    texts = [p.read_text("utf-8") for p in sorted((tmp / "prompts").iterdir())]
    size = sum(len(t.encode()) for t in texts)
    print(f"workspace: {len(paths)} pipelines, {len(texts)} prompt files"
          f" ({size / 1e6:.1f} MB of prompts)")
    get_tokenizer("cl100k_base")  # load the encoding outside every timing

    cache = BudgetCache()
    cold, (steps, diags, unfit) = timed(check_all, paths, cache)
    warm, _ = timed(check_all, paths, cache)
    target = tmp / "prompts" / "p0000.txt"
    target.write_text(target.read_text("utf-8") + "One more sentence.\n", "utf-8")
    one, _ = timed(check_all, paths, cache)
    n = len(paths)
    print(f"check, cold cache:          {cold:7.2f} s  ({cold / n * 1e3:6.2f} ms/pipeline;"
          f" {steps} call_model steps, {unfit} not fitting, {diags} diagnostics)")
    print(f"check, warm cache:          {warm:7.2f} s  ({warm / n * 1e3:6.2f} ms/pipeline;"
          f" {cold / warm:.0f}x faster than cold)")
    print(f"check, one prompt changed:  {one:7.2f} s  ({one / n * 1e3:6.2f} ms/pipeline)")

    tracemalloc.start()
    check_all(paths, BudgetCache())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss_mb = rss / 1024 if sys.platform != "darwin" else rss / 1024 / 1024
    print(f"peak memory, cold check:    {peak / 1e6:7.1f} MB Python heap (tracemalloc);"
          f" process peak RSS {rss_mb:.0f} MB")

    encoding = get_tokenizer("cl100k_base")._encoding  # type: ignore[attr-defined]
    raw, raw_total = timed(lambda: sum(len(encoding.encode_ordinary(t)) for t in texts))
    counter = TokenCounter(get_tokenizer("cl100k_base"))
    ours_cold, ours_total = timed(lambda: sum(counter.count(t) for t in texts))
    ours_warm, _ = timed(lambda: sum(counter.count(t) for t in texts))
    assert ours_total == raw_total, (ours_total, raw_total)
    print(f"tokens of {len(texts)} prompts: {raw_total} tokens")
    print(f"  raw tiktoken encode_ordinary: {raw * 1e3:8.1f} ms  (1.00x)")
    print(f"  TokenCounter.count, cold:     {ours_cold * 1e3:8.1f} ms"
          f"  ({ours_cold / raw:.2f}x raw)")
    print(f"  TokenCounter.count, warm:     {ours_warm * 1e3:8.1f} ms"
          f"  ({ours_warm / raw:.3f}x raw)")
    return {"pipelines": n, "cold_s": cold, "warm_s": warm, "one_prompt_changed_s": one,
            "peak_heap_mb": peak / 1e6, "peak_rss_mb": rss_mb,
            "tiktoken_ms": raw * 1e3, "counter_cold_ms": ours_cold * 1e3,
            "counter_warm_ms": ours_warm * 1e3}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", help="pipelines per workspace, comma-separated"
                                        " (default 500,1000,2000,5000)")
    parser.add_argument("--quick", action="store_true",
                        help="sizes 100,200,400 and one round, unless given")
    parser.add_argument("--json", metavar="FILE", help="write every figure to FILE")
    parser.add_argument("--pipelines", type=int)
    parser.add_argument("--prompts", type=int, default=2000)
    parser.add_argument("--bases", type=int, default=10)
    parser.add_argument("--jobs", type=int, help="the -j of the parallel runs (default: none"
                                                 " given, so budgetlens uses every usable CPU)")
    parser.add_argument("--rounds", type=int,
                        help="interleaved rounds per size; each figure is the best round"
                             " (default 3; --quick: 1)")
    parser.add_argument("--no-in-process", action="store_true",
                        help="time the command only (skip the in-process figures)")
    args = parser.parse_args()
    if args.sizes:
        sizes = [int(x) for x in args.sizes.split(",")]
    elif args.quick:
        sizes = [100, 200, 400]
    elif args.pipelines is not None:
        sizes = [args.pipelines]
    else:
        sizes = [500, 1000, 2000, 5000]
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    if args.pipelines is None:
        args.pipelines = 200 if args.quick else 1000
        args.prompts = min(args.prompts, 2 * args.pipelines)
    tmp = Path(tempfile.mkdtemp(prefix="budgetlens-bench-"))
    figures: dict[str, Any] = {}
    try:
        if not args.no_in_process:
            figures["in_process"] = in_process(tmp / "in-process", args)
        figures["command"] = command_figures(tmp, sizes, args.bases, args.jobs, args.rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert not os.path.exists(tmp)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", "utf-8")
        print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
