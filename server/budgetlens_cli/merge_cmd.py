"""``budgetlens merge BASE FRAGMENT [--format text|json]``.

Append a continuation FRAGMENT to the cut text BASE without repeating their overlap.
Text format prints the merged text (and a newline when it does not end with one); without an
overlap that is BASE followed by FRAGMENT exactly as read, nothing trimmed. Exit status 0
when an overlap was found (or the fragment restarts the document and replaces the base), 1
when none was, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from budgetlens import merge_with_overlap
from budgetlens.continuation.merge import MIN_OVERLAP
from budgetlens.serialize import to_jsonable
from budgetlens_cli.io import read_cut_text
from budgetlens_cli.main import EXIT_FINDINGS, EXIT_OK, UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "merge", help="append a continuation fragment to a cut text, removing the overlap",
        description="Merge FRAGMENT onto BASE: FRAGMENT starts by repeating the end of BASE "
                    "(the longest such overlap is removed once). '-' reads standard input "
                    "(for one of the two).")
    p.add_argument("base", metavar="BASE")
    p.add_argument("fragment", metavar="FRAGMENT")
    p.add_argument("--min-overlap", type=int, default=MIN_OVERLAP,
                   help=f"shortest overlap accepted (default {MIN_OVERLAP})")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.base == "-" and args.fragment == "-":
        raise UsageError("only one of BASE and FRAGMENT can be '-' (standard input)")
    if args.min_overlap < 1:
        raise UsageError(f"--min-overlap must be >= 1, got {args.min_overlap}")
    base, _ = read_cut_text(args.base)
    fragment, _ = read_cut_text(args.fragment)
    result = merge_with_overlap(base, fragment, min_overlap=args.min_overlap)
    ok = result.has_overlap or result.restarted
    if args.format == "json":
        print(json.dumps(to_jsonable(result), indent=2, ensure_ascii=False))
        return EXIT_OK if ok else EXIT_FINDINGS
    sys.stdout.write(result.merged)
    if not result.merged.endswith("\n"):
        sys.stdout.write("\n")
    if result.restarted:
        print("budgetlens: the fragment restarts the document from the top; it replaces the "
              "base", file=sys.stderr)
    elif not result.has_overlap:
        print("budgetlens: no overlap found: the fragment does not start by repeating the end "
              "of the base (printed base + fragment as is)", file=sys.stderr)
    return EXIT_OK if ok else EXIT_FINDINGS
