"""What the model registry costs: start-up, the first load, lookups, suggestions.

    .venv/bin/python bench/bench_models.py [--runs 5]

Each start-up figure is the median of ``--runs`` fresh interpreters (``python -X importtime``
is not used: the figures are wall times of the whole statement). Printed:

- importing the language server (``budgetlens_lsp.server``) and whether that read the
  registry (it must not: the registry is read at the first lookup);
- the first ``load_registry()`` in a fresh process (read + parse ``registry.json``), and
  ``import budgetlens.models`` next to ``import budgetlens`` (the package it lives in);
- lookups per second (``Registry.get`` of a known and of a case-folded name) and the time of
  one "did you mean" (``Registry.suggest`` of a misspelled name).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
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
