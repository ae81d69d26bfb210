"""Time ``merge_with_overlap`` on large repetitive texts, against ``json.loads``.

    .venv/bin/python bench/bench_merge.py [--sizes 1M,5M] [--repeat 3] [--json FILE]

Repetitive text is the hard case of an overlap search: every position of the base's tail is
a candidate. For each size the base is a JSON document cut at its end, of that many
characters, in two shapes, each merged with two fragments:

- ``string``: ``{"text": "aaaa…`` (one long string of one character);
- ``objects``: ``[{"id": 1, "tag": "x"}, {"id": 1, "tag": "x"}, …`` (one object repeated);
- fragment ``long``: repeats the base's whole tail (as long as the base) and closes the
  document: the longest possible overlap search;
- fragment ``4K``: repeats the last 4,000 characters and closes the document (a typical reply);
- fragment ``late``: repeats only the last 1,000 characters, then goes on for as long again
  with the same repetitive text: every position of the tail looks like the start of an
  overlap but fails late (a search comparing the tail once per position is quadratic here).

Printed per row (best of ``--repeat``): milliseconds per merge, and the ratio to
``json.loads`` of the complete document of the same size (the C reference). ``--json FILE``
also writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bench_json import _size, best_of  # one timing helper for the JSON benchmarks

from budgetlens import merge_with_overlap

_OBJECT = '{"id": 1, "tag": "x"}, '
_SHORT_FRAGMENT = 4000


def make_cases(size: int) -> list[tuple[str, str, str, str]]:
    """(shape, fragment kind, base, fragment) of about ``size`` characters each."""
    out: list[tuple[str, str, str, str]] = []
    shapes = {
        "string": ('{"text": "' + "a" * (size - 12), '"}'),
        "objects": ("[" + _OBJECT * ((size - 2) // len(_OBJECT)), '{"id": 2, "tag": "y"}]'),
    }
    late = {
        "string": ('", "next": "' + "a" * size + '"}'),
        "objects": ('{"id": 2, "tag": "y"}, ' + _OBJECT * (size // len(_OBJECT)) + '{"id": 3}]'),
    }
    for shape, (base, close) in shapes.items():
        out.append((shape, "long", base, base[1:] + close))
        out.append((shape, "4K", base, base[-_SHORT_FRAGMENT:] + close))
        out.append((shape, "late", base, base[-1000:] + late[shape]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1M,5M")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args(argv)

    rows: list[dict[str, Any]] = []
    header = f"{'size':>6}  {'base':<8}{'fragment':<10}{'overlap':>10}{'ms/merge':>11}" \
             f"{'x json.loads':>14}"
    print(header)
    print("-" * len(header))
    for label in args.sizes.split(","):
        size = _size(label)
        for shape, kind, base, fragment in make_cases(size):
            result = merge_with_overlap(base, fragment)
            if not result.has_overlap or not _parses(result.merged):
                print(f"bench_merge: {shape}/{kind}: the merge did not give the whole document",
                      file=sys.stderr)
                return 1
            document = result.merged      # the complete document, for the reference
            ref = best_of(args.repeat, lambda d=document: json.loads(d))
            took = best_of(args.repeat, lambda b=base, f=fragment: merge_with_overlap(b, f))
            rows.append({"size": label, "base": shape, "fragment": kind,
                         "base_chars": len(base), "fragment_chars": len(fragment),
                         "overlap": result.overlap_length, "ms": round(took * 1000, 3),
                         "json_loads_ms": round(ref * 1000, 3),
                         "ratio_to_json_loads": round(took / ref, 2)})
            print(f"{label:>6}  {shape:<8}{kind:<10}{result.overlap_length:>10}"
                  f"{took * 1000:>11.2f}{took / ref:>13.2f}x")
        print()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"bench": "merge_with_overlap", "repeat": args.repeat, "rows": rows},
                      fh, indent=2)
            fh.write("\n")
    return 0


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())
