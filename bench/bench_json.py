"""Time ``get_contexts`` on cut JSON documents, side by side with its peers.

    .venv/bin/python bench/bench_json.py [--sizes 10K,100K,1M,5M] [--cuts 20] [--repeat 3]

For each size a document shaped like an LLM answer (an object holding metadata and an
array of sections with strings, numbers, booleans, nulls, nested lists and unicode) is
generated deterministically and cut at ``--cuts`` evenly spread positions. Printed per size,
in the same run (best of ``--repeat``, mean per call in milliseconds):

- ``json.loads`` of the full document: the C reference (ratios are against it);
- ``get_contexts`` on each cut (mean), its slowest cut, and on the complete document;
- ``pydantic_core.from_json(allow_partial=True)`` and ``jiter.from_json(partial_mode=...)``
  on each cut: the Rust floor (they build the value only; no cut, no closing, no context);
- ``json_repair.loads`` and ``partial_json_parser.loads`` on each cut: the Python peers
  (above ``--peer-limit`` they run on ``--slow-peer-cuts`` of the cuts only, as they would
  take minutes; the table says so).

Peers come from the ``bench`` extra: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from budgetlens import get_contexts

_WORDS = ("budget", "token", "context", "window", "model", "pipeline", "prompt", "section",
          "summary", "überblick", "数据", "continuation", "merge", "overlap", "cut", "😀")


def make_document(size: int, seed: int = 7) -> str:
    """A pretty-printed JSON document of about ``size`` characters."""
    rng = random.Random(seed)

    def sentence(words: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(words))

    sections: list[dict[str, Any]] = []
    doc: dict[str, Any] = {"document": {
        "metadata": {"title": "Generated report", "author": "bench", "version": 3,
                     "tags": ["a", "b", "c"], "draft": False, "reviewer": None},
        "sections": sections}}
    length = 200
    i = 0
    while length < size:
        section = {
            "id": f"section{i}",
            "title": sentence(4).title(),
            "score": round(rng.uniform(-1000, 1000), 3),
            "count": rng.randint(0, 10**6),
            "published": rng.random() < 0.5,
            "editor": None,
            "tags": [sentence(1) for _ in range(rng.randint(0, 4))],
            "content": sentence(rng.randint(10, 60)) + ' "quoted" \\ end\n',
            "refs": [{"page": rng.randint(1, 400), "note": sentence(3)}
                     for _ in range(rng.randint(0, 2))],
        }
        sections.append(section)
        length += len(json.dumps(section, ensure_ascii=False, indent=2)) + 8
        i += 1
    return json.dumps(doc, ensure_ascii=False, indent=2)


def cuts_of(text: str, count: int) -> list[str]:
    step = len(text) / (count + 1)
    return [text[:int(step * (k + 1))] for k in range(count)]


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _size(label: str) -> int:
    label = label.strip().upper()
    factor = {"K": 1000, "M": 1000 * 1000}.get(label[-1:], 1)
    return int(float(label.rstrip("KM")) * factor)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10K,100K,1M,5M")
    parser.add_argument("--cuts", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--peer-limit", type=_size, default=_size("1M"),
                        help="above this size the slow Python peers run on fewer cuts "
                             "(default 1M)")
    parser.add_argument("--slow-peer-cuts", type=int, default=2,
                        help="how many cuts the slow peers run on above --peer-limit")
    args = parser.parse_args(argv)

    peers: dict[str, Callable[[str], object]] = {}
    try:
        import pydantic_core

        peers["pydantic_core partial"] = lambda s: pydantic_core.from_json(
            s, allow_partial="trailing-strings")
    except ImportError:
        pass
    try:
        import jiter

        peers["jiter partial"] = lambda s: jiter.from_json(
            s.encode(), partial_mode="trailing-strings")
    except ImportError:
        print("jiter not installed (pip install -e '.[bench]')", file=sys.stderr)
    try:
        import json_repair

        peers["json_repair"] = lambda s: json_repair.loads(s)
    except ImportError:
        print("json_repair not installed (pip install -e '.[bench]')", file=sys.stderr)
    try:
        import partial_json_parser

        peers["partial-json-parser"] = lambda s: partial_json_parser.loads(s)
    except ImportError:
        print("partial-json-parser not installed (pip install -e '.[bench]')", file=sys.stderr)
    slow = {"json_repair", "partial-json-parser"}

    header = f"{'size':>6}  {'what':<30}{'ms/call':>10}{'x json.loads':>14}"
    print(header)
    print("-" * len(header))
    for label in args.sizes.split(","):
        size = _size(label)
        doc = make_document(size)
        cuts = cuts_of(doc, args.cuts)
        # Rounds interleave every measurement, so a busy moment on a shared machine hits them
        # alike; each figure is the best round.
        fast = {name: fn for name, fn in peers.items() if name not in slow}
        ref_t = float("inf")
        cut_t = [float("inf")] * len(cuts)
        full_t = float("inf")
        peer_t = dict.fromkeys(fast, float("inf"))
        for _ in range(args.repeat):
            ref_t = min(ref_t, best_of(1, lambda d=doc: json.loads(d)))
            for k, c in enumerate(cuts):
                cut_t[k] = min(cut_t[k], best_of(1, lambda c=c: get_contexts(c)))
            full_t = min(full_t, best_of(1, lambda d=doc: get_contexts(d)))
            for name, fn in fast.items():
                peer_t[name] = min(peer_t[name], best_of(
                    1, lambda f=fn, cs=cuts: [f(c) for c in cs]) / len(cuts))
        ref = ref_t
        rows: list[tuple[str, float]] = [
            ("json.loads (full doc)", ref),
            ("get_contexts", sum(cut_t) / len(cut_t)),
            ("get_contexts (slowest cut)", max(cut_t)),
            ("get_contexts (complete doc)", full_t),
            *peer_t.items(),
        ]
        for name, fn in peers.items():
            if name in slow:
                few = cuts if size <= args.peer_limit else cuts[::max(
                    1, len(cuts) // max(args.slow_peer_cuts, 1))][:args.slow_peer_cuts]
                label_name = name if few is cuts else f"{name} ({len(few)} cuts)"
                rows.append((label_name, best_of(
                    1, lambda f=fn, cs=few: [f(c) for c in cs]) / len(few)))
        for name, value in rows:
            print(f"{label:>6}  {name:<30}{value * 1000:>10.2f}{value / ref:>13.2f}x")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
