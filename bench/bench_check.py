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
The rounds, the figures and the table rows are ``bench/process_timing.py``'s, shared
with ``bench/bench_formats.py``.
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
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from process_timing import (
    CLI,
    add_growth,
    add_round_options,
    best_figures,
    header_text,
    jobs_shown,
    measure_rounds,
    rounds_shown,
    row_text,
    run_child,
    scratch_folder,
    steal_text,
    usable_cpus,
    warm_up,
    write_figures,
)
from workspaces import prose

from budgetlens import BudgetCache, CheckOptions, DiskFiles, TokenCounter, check_pipeline
from budgetlens.contract.discovery import find_pipelines
from budgetlens.tokens.core import get_tokenizer

T = TypeVar("T")


def generate(root: Path, pipelines: int, prompts: int, bases: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    (root / "pipelines").mkdir(parents=True)
    (root / "prompts").mkdir()
    (root / "config.json").write_text(json.dumps({
        "model_context_window": 16384, "model_max_tokens": 1024, "development": False,
        "format_overhead_tokens": 32}))
    for i in range(prompts):
        (root / "prompts" / f"p{i:04d}.txt").write_text(prose(rng, rng.randint(50, 1500)),
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


def measure_size(root: Path, size: int, bases: int, jobs: int | None,
                 rounds: int = 1) -> dict[str, Any]:
    """The floor, a first and a second ``budgetlens check -j 1`` of a new workspace of
    ``size`` pipelines, and a first run with the default jobs (``jobs``: that ``-j``
    instead); each the best of ``rounds`` interleaved rounds (``process_timing``)."""
    ws = root / f"ws{size}"
    generate(ws, size, max(2, size // 2), bases)
    measured = measure_rounds(ws, root / f"cache{size}", FLOOR, jobs, rounds)
    return {"pipelines": size, **best_figures(measured)}


def measure_startup(repeat: int = 5) -> dict[str, float]:
    """Best of ``repeat`` wall seconds of three start-ups."""
    cases = {"python -c pass": [sys.executable, "-c", "pass"],
             "import budgetlens": [sys.executable, "-c", "import budgetlens"],
             "budgetlens --version": [*CLI, "--version"]}
    return {name: min(run_child(argv, Path.cwd())[0] for _ in range(repeat))
            for name, argv in cases.items()}


def command_figures(root: Path, sizes: list[int], bases: int,
                    jobs: int | None = None, rounds: int = 1) -> dict[str, Any]:
    print("budgetlens check as a process (wall s / CPU s; ratios on wall, CPU in brackets;"
          f" {rounds_shown(rounds)}):")
    print(f"  floor: bench/floor_check.py, one process; -j 1: in one process; {jobs_shown(jobs)}:"
          " worker processes (its CPU is the sum over them, so its CPU ratio is the work done,"
          " its wall ratio the wait)")
    print(header_text("pipelines", 9))
    rows: list[dict[str, Any]] = []
    warm_up(root / "warm-up", lambda ws: generate(ws, 2 * 64, 64, bases), FLOOR)
    for size in sizes:
        row = measure_size(root, size, bases, jobs, rounds)
        add_growth(row, size, rows[0] if rows else None)
        rows.append(row)
        print(row_text(row, "pipelines", 9))
        if rounds > 1:
            print(f"{'':>9} -j 1 / floor by round (wall): "
                  + " ".join(f"{r:.2f}x" for r in row["first_over_floor_per_round"])
                  + steal_text(row))
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
    add_round_options(parser)
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
    figures: dict[str, Any] = {}
    with scratch_folder("budgetlens-bench-") as tmp:
        if not args.no_in_process:
            figures["in_process"] = in_process(tmp / "in-process", args)
        figures["command"] = command_figures(tmp, sizes, args.bases, args.jobs, args.rounds)
    write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
