"""Counting throughput of each tokenizer family, against its reference implementation.

    .venv/bin/python bench/bench_tokenizers.py [--kb 512] [--repeat 3] [--json FILE]

For each family budgetlens counts exactly (``budgetlens.tokens.families`` and the two shipped
OpenAI encodings), the same text (the test corpus of tests/core/tokens, repeated to about
``--kb`` kilobytes, counted string by string) is counted by budgetlens and by the family's
reference implementation (tests/core/tokens/references.py) in the same run. Printed per family
(best of ``--repeat``): MB/s for each and the ratio budgetlens / reference (above 1: faster),
plus the one-off load time of the tokenizer (first use in a process). ``--json FILE`` also
writes the figures as JSON. Both sides must count the same number of tokens, or the run fails.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.core.tokens.corpus import corpus  # noqa: E402
from tests.core.tokens.references import reference  # noqa: E402

from budgetlens.tokens.core import get_tokenizer  # noqa: E402

FAMILIES = ["cl100k_base", "o200k_base", "llama3", "qwen2", "deepseek", "mistral_tekken"]


def texts_of(kb: int) -> list[str]:
    base = [t for t in corpus() if t]
    out: list[str] = []
    size = 0
    while size < kb * 1024:
        for t in base:
            out.append(t)
            size += len(t.encode("utf-8"))
    return out


def best_of(repeat: int, fn: Callable[[], int]) -> tuple[float, int]:
    best, total = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        total = fn()
        best = min(best, time.perf_counter() - start)
    return best, total


def timed_load(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def run(kb: int, repeat: int) -> list[dict[str, Any]]:
    texts = texts_of(kb)
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    rows = []
    for family in FAMILIES:
        ours, ours_load = timed_load(lambda f=family: get_tokenizer(f))
        ref, ref_load = timed_load(lambda f=family: reference(f))
        t_ours, n_ours = best_of(repeat, lambda o=ours: sum(o.count(t) for t in texts))
        t_ref, n_ref = best_of(repeat, lambda r=ref: sum(len(r(t)) for t in texts))
        if n_ours != n_ref:
            raise SystemExit(f"{family}: budgetlens counted {n_ours} tokens, reference {n_ref}")
        rows.append({"family": family, "tokens": n_ours, "mb": round(mb, 3),
                     "budgetlens_mb_s": round(mb / t_ours, 2),
                     "reference_mb_s": round(mb / t_ref, 2),
                     "ratio": round(t_ref / t_ours, 2),
                     "budgetlens_load_ms": round(ours_load * 1e3, 1),
                     "reference_load_ms": round(ref_load * 1e3, 1)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = run(args.kb, args.repeat)
    print(f"{'family':<16}{'tokens':>10}{'ours MB/s':>11}{'ref MB/s':>10}{'ours/ref':>10}"
          f"{'load ms':>9}{'ref load':>10}")
    for r in rows:
        print(f"{r['family']:<16}{r['tokens']:>10}{r['budgetlens_mb_s']:>11}"
              f"{r['reference_mb_s']:>10}{r['ratio']:>9}x{r['budgetlens_load_ms']:>9}"
              f"{r['reference_load_ms']:>10}")
    if args.json:
        args.json.write_text(json.dumps({"kb": args.kb, "rows": rows}, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
