"""Time the core budget engine in process, the way the language server drives it.

    .venv/bin/python bench/bench_engine.py [--steps 500] [--levels 5] [--pipelines 1000]
                                           [--dependents 200] [--edits 20] [--json out.json]

Two generated workspaces (the shapes of bench/bench_lsp.py), in a temporary folder removed
at the end; every check goes through one ``BudgetCache`` and, like the server, a new
``OverlayFiles`` (the edited buffer over ``DiskFiles(root)``) per pipeline:

1. **big**: a ``--steps``-step pipeline at the end of a ``--levels``-level extends chain; each
   of ``--edits`` edits changes one character of the pipeline buffer (a digit of a step's
   ``max_output_tokens``) and checks it again. Printed: median and p95 per edit, and the
   Python heap kept (tracemalloc, after a full collection) over the edits, so a cache that
   keeps every version shows.
2. **dependents**: ``--pipelines`` pipelines, ``--dependents`` of them using
   ``prompts/shared.txt``; each of ``--edits`` edits changes that prompt's buffer and checks
   its dependents again. Printed: median and p95 per round (all dependents), per pipeline.

Then the work one edit does, counted (a separate pass, so the counting does not slow the
timings): YAML parses, template parses and tokenizer encodes per round; and, for the big
pipeline, the line/character positions computed (two per range; the diagnostics' ranges read
as a client reads them) and the step plans made by a one-character edit.

To compare with another checkout, run the same script with that checkout's core first on
the path and keep its figures, then pass them as ``--baseline``: the ratios are printed::

    PYTHONPATH=/path/to/checkout/shared_core .venv/bin/python bench/bench_engine.py \
        --json before.json
    .venv/bin/python bench/bench_engine.py --baseline before.json

On a shared machine the CPU times (this process only) are steadier than the wall times.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from workspaces import make_big, make_many

import budgetlens
from budgetlens import BudgetCache, CheckOptions, DiskFiles, check_pipeline
from budgetlens import files as files_module
from budgetlens.contract import cache as cache_module
from budgetlens.contract import check as check_module
from budgetlens.contract import config as config_module
from budgetlens.contract import pipeline as pipeline_module
from budgetlens.contract import template as template_module
from budgetlens.files import OverlayFiles
from budgetlens.source import LineIndex
from budgetlens.tokens.core import TiktokenTokenizer, get_tokenizer

OPTIONS = CheckOptions(environ={})












def check(root: Path, path: Path, overlay: dict[Path, str], cache: BudgetCache) -> Any:
    files = OverlayFiles(DiskFiles(root), overlay) if overlay else DiskFiles(root)
    return check_pipeline(path, files=files, cache=cache,
                          options=CheckOptions(environ={}, workspace_root=root))


def big_edit(text: str, i: int) -> str:
    """One character changed: the last digit of the first step's max_output_tokens."""
    at = text.index("max_output_tokens: ") + len("max_output_tokens: ") + 2
    return text[:at] + str(i % 10) + text[at + 1:]


def prompt_text(base: str, i: int) -> str:
    return base.replace("revision 0000", f"revision {i + 1:04d}")


def stats(values: list[tuple[float, float]]) -> dict[str, float]:
    """Median and p95 of wall and CPU (this process) times, in ms."""
    out = {}
    for label, column in (("", 0), ("cpu_", 1)):
        ordered = sorted(v[column] for v in values)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        out[f"{label}median_ms"] = statistics.median(ordered) * 1e3
        out[f"{label}p95_ms"] = p95 * 1e3
    return out


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU seconds of ``fn()``; the CPU time of this process does not count the
    other processes of a shared machine."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def bench_big(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    big = make_big(root, args.steps, args.levels)
    text = big.read_text()
    cache = BudgetCache()
    cold = timed(lambda: check(root, big, {}, cache))
    times = []
    for i in range(args.edits):
        edited = big_edit(text, i + 1)
        times.append(timed(lambda e=edited: check(root, big, {big: e}, cache)))  # type: ignore[misc]
    tracemalloc.start()
    for i in range(3):  # the first traced versions replace untraced ones: not growth
        check(root, big, {big: big_edit(text, i) + "# warm\n" * (i + 1)}, cache)
    gc.collect()  # count what is kept, not garbage waiting for the collector
    start, _ = tracemalloc.get_traced_memory()
    for i in range(args.edits):
        check(root, big, {big: big_edit(text, i + 1) + f"# {i}\n"}, cache)
    gc.collect()
    end, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    counts = count_work(lambda: check(root, big, {big: big_edit(text, 7) + "#x\n"}, cache))
    positions = count_positions(lambda: check(root, big, {big: big_edit(text, 8)}, cache))
    return {"cold_ms": cold[0] * 1e3, **stats(times),
            "heap_growth_mb_over_edits": (end - start) / 1e6, "work_per_edit": counts,
            "positions_per_edit": positions}


def bench_dependents(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    shared, users = make_many(root, args.pipelines, args.dependents)
    paths = sorted((root / "pipelines").glob("p*.yaml"))
    base = shared.read_text()
    cache = BudgetCache()
    cold = timed(lambda: [check(root, p, {}, cache) for p in paths])
    times = []
    for i in range(args.edits):
        overlay = {shared: prompt_text(base, i)}
        times.append(timed(lambda o=overlay: [check(root, p, o, cache)  # type: ignore[misc]
                                              for p in users]))
    overlay = {shared: prompt_text(base, args.edits + 1)}
    counts = count_work(lambda: [check(root, p, overlay, cache) for p in users])
    out = {"cold_all_ms": cold[0] * 1e3, "dependents": len(users), **stats(times),
           "work_per_round": counts}
    run_files = getattr(files_module, "RunFiles", None)
    if run_files is not None:  # one memo of file-system facts for the whole round
        batch = []
        options = CheckOptions(environ={}, workspace_root=root)
        for i in range(args.edits):
            files = run_files(OverlayFiles(DiskFiles(root), {shared: prompt_text(base, 100 + i)}))
            batch.append(timed(lambda f=files: [  # type: ignore[misc]
                check_pipeline(p, files=f, options=options, cache=cache) for p in users]))
        out["one_run_files"] = stats(batch)
    return out


@contextmanager
def counting(module: Any, name: str, tally: dict[str, int], label: str) -> Iterator[None]:
    """Count the calls of ``module.name`` into ``tally[label]`` (nothing when it has none)."""
    original = getattr(module, name, None)
    if original is None:
        yield
        return

    def wrapper(*a: Any, **k: Any) -> Any:
        tally[label] = tally.get(label, 0) + 1
        return original(*a, **k)

    setattr(module, name, wrapper)
    try:
        yield
    finally:
        setattr(module, name, original)


def count_work(fn: Callable[[], Any]) -> dict[str, int]:
    """YAML parses, template parses and tokenizer encodes that ``fn`` does."""
    tally = {"yaml_parses": 0, "template_parses": 0, "encodes": 0}
    with ExitStack() as stack:
        for module in (pipeline_module, config_module):
            stack.enter_context(counting(module, "parse_yaml", tally, "yaml_parses"))
        for module in (check_module, cache_module, template_module):
            stack.enter_context(counting(module, "parse_template", tally, "template_parses"))
        stack.enter_context(counting(TiktokenTokenizer, "count", tally, "encodes"))
        fn()
    return tally


def count_positions(fn: Callable[[], Any]) -> dict[str, int]:
    """Line/character positions computed (``LineIndex.position``: two per range) and step
    plans made (``_Planner.step_plan``) by ``fn``, a check whose diagnostics' ranges are
    then read as a client reads them."""
    tally = {"positions": 0, "step_plans": 0}
    with ExitStack() as stack:
        stack.enter_context(counting(LineIndex, "position", tally, "positions"))
        planner = getattr(check_module, "_Planner", None)
        if planner is not None:
            stack.enter_context(counting(planner, "step_plan", tally, "step_plans"))
        report = fn()
        for d in report.diagnostics:
            _ = [d.range, *(r.location.range for r in d.related)]
    return tally


def print_ratios(out: dict[str, Any], base: dict[str, Any]) -> None:
    """This run's figures next to the baseline's, with the ratio (below 1: faster now)."""
    print(f"against {base['core']} (ratio = this run / baseline):")
    for section, title in (("big", "one-character edit"), ("dependents", "dependents")):
        for key in ("median_ms", "p95_ms", "cpu_median_ms", "cpu_p95_ms"):
            now, then = out[section][key], base[section][key]
            print(f"  {title:>18} {key:>14}: {then:8.1f} -> {now:8.1f}  ({now / then:.2f}x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--levels", type=int, default=5)
    parser.add_argument("--pipelines", type=int, default=1000)
    parser.add_argument("--dependents", type=int, default=200)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="figures of an earlier run (--json) to print ratios against")
    args = parser.parse_args()
    get_tokenizer("cl100k_base").count("warm up")  # load the encoding outside every timing
    tmp = Path(tempfile.mkdtemp(prefix="budgetlens-bench-engine-"))
    try:
        big = bench_big(tmp / "big", args)
        deps = bench_dependents(tmp / "many", args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    settings = {k: v for k, v in vars(args).items() if k not in ("json", "baseline")}
    out = {"core": str(Path(budgetlens.__file__).parent), "args": settings, "big": big,
           "dependents": deps}
    print(f"core under test: {out['core']}")
    print(f"{args.steps}-step pipeline, {args.levels}-level extends, one-character edit"
          f" ({args.edits} edits): median {big['median_ms']:.1f} ms, p95"
          f" {big['p95_ms']:.1f} ms; CPU median {big['cpu_median_ms']:.1f} ms, p95"
          f" {big['cpu_p95_ms']:.1f} ms (cold {big['cold_ms']:.0f} ms); heap kept over the"
          f" edits {big['heap_growth_mb_over_edits']:+.2f} MB; per edit {big['work_per_edit']}"
          f" {big['positions_per_edit']}")
    n = deps["dependents"]
    print(f"prompt used by {n} of {args.pipelines} pipelines edited ({args.edits} edits):"
          f" re-check of the {n} dependents median {deps['median_ms']:.1f} ms, p95"
          f" {deps['p95_ms']:.1f} ms; CPU median {deps['cpu_median_ms']:.1f} ms"
          f" ({deps['cpu_median_ms'] / max(n, 1):.3f} ms/pipeline), p95"
          f" {deps['cpu_p95_ms']:.1f} ms; per round {deps['work_per_round']}")
    if "one_run_files" in deps:
        one = deps["one_run_files"]
        print(f"  the same with one RunFiles for the round (as a server may pass per update):"
              f" median {one['median_ms']:.1f} ms, p95 {one['p95_ms']:.1f} ms; CPU median"
              f" {one['cpu_median_ms']:.1f} ms, p95 {one['cpu_p95_ms']:.1f} ms")
    if args.baseline is not None:
        print_ratios(out, json.loads(args.baseline.read_text()))
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
