"""``budgetlens contexts FILE [--budget N] [--marker TEXT] [--format text|json]``.

Where a JSON text (an LLM reply) was cut off, its closed version, and the budgeted context
a continuation prompt needs. Exit status 0 when the text is JSON or a cut-off prefix of JSON,
1 when it is not (the message says what is wrong), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from budgetlens import DEFAULT_BUDGET, DEFAULT_MARKER, get_contexts
from budgetlens.continuation.contexts import DEFAULT_OVERLAP_CHARS
from budgetlens.serialize import to_jsonable
from budgetlens_cli.io import read_cut_text
from budgetlens_cli.main import EXIT_FINDINGS, EXIT_OK, UsageError


def _non_negative(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {number}")
    return number


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "contexts", help="show where a JSON text was cut off and how to continue it",
        description="Find the cut in FILE (a JSON reply that may stop mid-way; '-' reads "
                    "standard input): the cut position and path, the closed JSON, the overlap "
                    "a continuation must repeat, and the budgeted hierarchy context with the "
                    "cut marked.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--budget", type=_non_negative, default=DEFAULT_BUDGET,
                   help=f"characters of values shown in full (default {DEFAULT_BUDGET})")
    p.add_argument("--marker", default=DEFAULT_MARKER,
                   help=f"text marking the cut (default {DEFAULT_MARKER})")
    p.add_argument("--overlap-chars", type=_non_negative, default=DEFAULT_OVERLAP_CHARS,
                   help=f"length of the overlap context (default {DEFAULT_OVERLAP_CHARS})")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not args.marker:
        raise UsageError("--marker must not be empty")
    text, dropped = read_cut_text(args.file)
    ctx = get_contexts(text, budget=args.budget, marker=args.marker,
                       overlap_chars=args.overlap_chars)
    status = EXIT_OK if ctx.json_parsing_success else EXIT_FINDINGS
    if args.format == "json":
        data = to_jsonable(ctx)
        data["dropped_incomplete_bytes"] = dropped
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return status
    if dropped:
        print(f"{args.file}: dropped {dropped} byte(s) of an incomplete UTF-8 character at "
              f"the end", file=sys.stderr)
    print(ctx.description)
    if ctx.cut is not None:
        print(f"position: line {ctx.cut.line + 1}, column {ctx.cut.character + 1} "
              f"(offset {ctx.cut.offset})")
    elif ctx.error is not None:
        print(f"position: line {ctx.error.line + 1}, column {ctx.error.character + 1} "
              f"(offset {ctx.error.offset})")
    print(f"json_parsing_success: {str(ctx.json_parsing_success).lower()}")
    if ctx.skipped_prefix.strip():
        print(f"skipped before the JSON: {len(ctx.skipped_prefix)} characters")
    if ctx.skipped_suffix:
        print(f"skipped after the JSON: {len(ctx.skipped_suffix)} characters")
    if ctx.hierarchy_context_for_prompt:
        print(f"\n--- hierarchy context for the prompt (budget {ctx.budget}) ---")
        print(ctx.hierarchy_context_for_prompt)
    if ctx.overlap_context:
        print("\n--- overlap context ---")
        print(ctx.overlap_context)
    if ctx.complete_part:
        print("\n--- complete part ---")
        print(ctx.complete_part)
    return status
