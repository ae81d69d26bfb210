"""What the model registry costs: start-up, the first load, lookups, suggestions.

    .venv/bin/python bench/bench_models.py [--runs 5]

Each start-up figure is the median of ``--runs`` fresh interpreters (``python -X importtime``
is not used: the figures are wall times of the whole statement). Printed:

- importing the language server (``budgetlens_lsp.server``) and whether that read the
  registry (it must not: the registry is read at the first lookup);
- the first ``load_registry()`` in a fresh process (read + parse ``registry.json``), and
  ``import budgetlens.models`` next to ``import budgetlens`` (the package it lives in);
- lookups per second (``Registry.get`` of a known and of a case-folded name) and the time of
  one "did you mean" (``Registry.suggest`` of a misspelled name);
- with ``--startup``, where the language server's start goes, in CPU time (median of
  ``--runs`` fresh interpreters, the collector off while loading as ``serve`` has it): the
  framework's imports (``lsprotocol.types``, ``pygls``: what the bare pygls floor pays too),
  budgetlens's own imports (and by group: budgetlens's subpackages, pydantic, PyYAML...,
  from ``-X importtime``, fastest run),
  building the server, preparing the default tokenizer as ``Session.warm_up`` does (its kept
  counts; its encoding when none are kept) and the first and second check of the example's
  over-budget pipeline; for a warm start (a private cache folder filled by an untimed start)
  and for one without the persistent count cache, with the number of encodings built before
  the first diagnostics.

    .venv/bin/python bench/bench_models.py --startup [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SNIPPETS = {
    "import budgetlens_lsp.server": (
        "import budgetlens_lsp.server", ""),
    "import budgetlens (the package, for comparison)": (
        "import budgetlens", ""),
    "import budgetlens.models (the package + registry code)": (
        "import budgetlens.models", ""),
    "first load_registry() (after the import)": (
        "from budgetlens.models import load_registry", "load_registry()"),
}
LOADED_AT_IMPORT = ("import budgetlens_lsp.server\n"
                    "from budgetlens.models.registry import load_registry\n"
                    "print(load_registry.cache_info().currsize)")


def _fresh(setup: str, statement: str) -> float:
    """Seconds of ``setup`` (statement empty) or of ``statement`` after ``setup``, in a new
    interpreter."""
    code = (f"import time\nt=time.perf_counter()\n{setup}\nt1=time.perf_counter()\n"
            f"{statement or 'pass'}\nt2=time.perf_counter()\n"
            f"print((t2-t1) if {bool(statement)} else (t1-t))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    return float(out.strip())


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: One fresh interpreter: the CPU milliseconds of each phase of a server's start, in order.
STARTUP_PHASES = """
import gc, time
gc.disable()
marks = [time.process_time()]
def mark():
    marks.append(time.process_time())
import lsprotocol.types, pygls.lsp.server
mark()
import budgetlens_lsp.server
mark()
server = budgetlens_lsp.server.BudgetLensServer()
mark()
gc.freeze(); gc.enable()
from budgetlens.tokens import core, counts
tokenizer = core.get_tokenizer(core.DEFAULT_TOKENIZER)
tokenizer.prepare()  # what Session.warm_up does: kept counts, else the encoding
mark()
from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import check_pipeline
cache = BudgetCache()
check_pipeline("pipelines/long_report.yaml", cache=cache)
mark()
built = core.encodings_built
check_pipeline("pipelines/long_report.yaml", cache=BudgetCache())
mark()
counts.flush()  # as the server does after its first diagnostics
print(" ".join(f"{(b - a) * 1000:.2f}" for a, b in zip(marks, marks[1:])), built)
"""
PHASES = ("lsprotocol.types + pygls (the floor's imports)", "budgetlens's imports",
          "BudgetLensServer()", "default tokenizer (warm_up: kept counts, or the encoding)",
          "first check of the example pipeline", "a second check (fresh BudgetCache)")


def _family(module: str) -> str:
    """The group a module's own import time is counted in: budgetlens by subpackage, other
    libraries by package (the standard library's modules as one group)."""
    parts = module.split(".")
    if parts[0] in ("budgetlens", "budgetlens_lsp"):
        return ".".join(parts[:2])
    if parts[0] in ("pydantic", "pydantic_core", "annotated_types", "typing_inspection",
                    "yaml", "attr", "attrs", "cattrs", "tiktoken", "regex"):
        return parts[0]
    return "standard library and others"


def _imports_by_group(root: Path, runs: int) -> list[tuple[str, float]]:
    """budgetlens's imports after the framework's, own time summed by :func:`_family`, of
    the fastest of ``runs`` interpreters (``-X importtime``), largest first."""
    best: dict[str, float] = {}
    best_total = float("inf")
    for _ in range(runs):
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-c",
             "import gc; gc.disable(); import lsprotocol.types, pygls.lsp.server;"
             " import budgetlens_lsp.server"],
            check=True, capture_output=True, text=True, cwd=root).stderr
        groups: dict[str, float] = {}
        after = False
        for line in err.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
            if not m:
                continue
            if after:
                family = _family(m.group(2))
                groups[family] = groups.get(family, 0.0) + int(m.group(1)) / 1000
            after = after or m.group(2) == "pygls.lsp.server"
        total = sum(groups.values())
        if total < best_total:
            best, best_total = groups, total
    return sorted(best.items(), key=lambda kv: -kv[1])


def _startup_runs(root: Path, runs: int, env: dict[str, str], counts_dir: Path | None
                  ) -> tuple[list[list[float]], list[int]]:
    """``runs`` fresh interpreters' phases, and the encodings each built before its first
    diagnostics; ``counts_dir`` (the count cache) is removed before each run when given."""
    phases: list[list[float]] = []
    built: list[int] = []
    for _ in range(runs):
        if counts_dir is not None:
            shutil.rmtree(counts_dir, ignore_errors=True)
        out = subprocess.run([sys.executable, "-c", STARTUP_PHASES], check=True,
                             capture_output=True, text=True, cwd=root, env=env).stdout
        *values, count = out.split()
        phases.append([float(x) for x in values])
        built.append(int(count))
    return phases, built


def _print_phases(title: str, phases: list[list[float]], built: list[int]) -> None:
    print(title)
    for i, label in enumerate(PHASES):
        print(f"  {label:<60} {statistics.median(p[i] for p in phases):8.1f} ms")
    own = [sum(p[1:5]) for p in phases]
    label = "budgetlens's share (imports to first check)"
    print(f"  {label:<60} {statistics.median(own):8.1f} ms")
    print(f"  encodings built before the first diagnostics: {sorted(set(built))}")


def startup(runs: int) -> None:
    """Print where the server's start goes (see the module docstring): a warm start (the
    per-user caches filled by an untimed start before) and one without the count cache."""
    with tempfile.TemporaryDirectory(prefix="budgetlens-bench-startup-") as work:
        root = Path(work) / "example"
        shutil.copytree(EXAMPLES, root)
        env = {**os.environ, "XDG_CACHE_HOME": str(Path(work) / "cache")}
        env.pop("BUDGETLENS_NO_CACHE", None)
        env.pop("BUDGETLENS_RANK_CACHE", None)
        _startup_runs(root, 1, env, None)  # untimed: fills the rank and count caches
        phases, built = _startup_runs(root, runs, env, None)
        _print_phases(f"server start, warm (caches filled), CPU ms, median of {runs} fresh"
                      " interpreters:", phases, built)
        phases, built = _startup_runs(root, runs, env, Path(work) / "cache" / "budgetlens"
                                      / "counts")
        _print_phases("server start, no count cache (rank cache filled), CPU ms, median of"
                      f" {runs}:", phases, built)
        groups = _imports_by_group(root, runs)
        print(f"  budgetlens's imports by group (own ms, -X importtime, fastest of {runs};"
              f" {sum(ms for _, ms in groups):.1f} ms in all):")
        for name, ms in groups:
            if ms >= 0.5:
                print(f"    {name:<54} {ms:8.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--startup", action="store_true",
                        help="only where the language server's start goes, in CPU time")
    args = parser.parse_args(argv)
    if args.startup:
        startup(args.runs)
        return 0
    print(f"start-up, median of {args.runs} fresh interpreters:")
    for label, (setup, statement) in SNIPPETS.items():
        times = [_fresh(setup, statement) for _ in range(args.runs)]
        print(f"  {label:<56} {statistics.median(times) * 1000:8.1f} ms")
    loaded = subprocess.run([sys.executable, "-c", LOADED_AT_IMPORT], check=True,
                            capture_output=True, text=True).stdout.strip()
    print(f"  {'registry read by importing the server':<56} {'yes' if loaded != '0' else 'no'}")

    from budgetlens.models import load_registry
    registry = load_registry()
    print(f"registry: {len(registry.models)} models, date {registry.date}")
    n = 200_000
    for name in ("gpt-4o", "LLAMA-3.1-8B-INSTRUCT"):
        start = time.perf_counter()
        for _ in range(n):
            registry.get(name)
        elapsed = time.perf_counter() - start
        print(f"  get({name!r}): {n / elapsed:,.0f} lookups/s")
    start = time.perf_counter()
    suggestion = registry.suggest("lama-3.1-8b-instruct")
    print(f"  suggest('lama-3.1-8b-instruct') -> {suggestion!r}:"
          f" {(time.perf_counter() - start) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
