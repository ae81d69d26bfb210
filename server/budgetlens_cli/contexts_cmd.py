"""``budgetlens contexts FILE [--budget N] [--marker TEXT] [--closed] [--format text|json]``.

Where a JSON text (an LLM reply) was cut off, and the budgeted context a continuation prompt
needs. The text output is small whatever the size of the reply: the hierarchy context and the
overlap (each bounded by its option), and the size of the closed document; ``--closed`` prints
the closed document too (as long as the reply). ``--format json`` is for programs: every
field, the closed document included. Exit status 0 when the text is JSON or a cut-off prefix
of JSON, 1 when it is not (the message says what is wrong), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from budgetlens import JsonContexts, get_contexts
from budgetlens.continuation.contexts import DEFAULT_BUDGET, DEFAULT_MARKER, DEFAULT_OVERLAP_CHARS
from budgetlens.serialize import to_jsonable
from budgetlens_cli.io import read_cut_text
from budgetlens_cli.main import EXIT_FINDINGS, EXIT_OK, UsageError, non_negative_int


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "contexts", help="show where a JSON text was cut off and how to continue it",
        description="Find the cut in FILE (a JSON reply that may stop mid-way; '-' reads "
                    "standard input): the cut position and path, the closed JSON, the overlap "
                    "a continuation must repeat, and the budgeted hierarchy context with the "
                    "cut marked.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--budget", type=non_negative_int, default=DEFAULT_BUDGET,
                   help=f"characters of values shown in full (default {DEFAULT_BUDGET})")
    p.add_argument("--marker", default=DEFAULT_MARKER,
                   help=f"text marking the cut (default {DEFAULT_MARKER})")
    p.add_argument("--overlap-chars", type=non_negative_int, default=DEFAULT_OVERLAP_CHARS,
                   help=f"length of the overlap context (default {DEFAULT_OVERLAP_CHARS})")
    p.add_argument("--closed", action="store_true",
                   help="also print the closed document (the whole reply, closed so it"
                        " parses); by default only its size")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="output format (default text; json has every field)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not args.marker:
        raise UsageError("--marker must not be empty")
    text, dropped = read_cut_text(args.file)
    ctx = get_contexts(text, budget=args.budget, marker=args.marker,
                       overlap_chars=args.overlap_chars)
    if args.format == "json":
        data = to_jsonable(ctx)
        data["dropped_incomplete_bytes"] = dropped
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        if dropped:
            print(f"{args.file}: dropped {dropped} byte(s) of an incomplete UTF-8 character at "
                  f"the end", file=sys.stderr)
        print_text(ctx, closed=args.closed)
    return EXIT_OK if ctx.json_parsing_success else EXIT_FINDINGS


def print_text(ctx: JsonContexts, *, closed: bool = False) -> None:
    """The text output: the description, where the cut (or the error) is, what was skipped,
    then the contexts a continuation prompt needs; the closed document with ``closed``, else
    its size only (a 1 MB reply prints a few kilobytes)."""
    print(ctx.description)
    at = ctx.cut if ctx.cut is not None else ctx.error
    if at is not None:
        print(f"position: line {at.line + 1}, column {at.character + 1} (offset {at.offset})")
    print(f"json_parsing_success: {str(ctx.json_parsing_success).lower()}")
    if ctx.skipped_prefix.strip():
        print(f"skipped before the JSON: {len(ctx.skipped_prefix)} characters")
    if ctx.skipped_suffix:
        print(f"skipped after the JSON: {len(ctx.skipped_suffix)} characters")
    for heading, body in ((f"hierarchy context for the prompt (budget {ctx.budget})",
                           ctx.hierarchy_context_for_prompt),
                          ("overlap context", ctx.overlap_context),
                          ("complete part", ctx.complete_part if closed else "")):
        if body:
            print(f"\n--- {heading} ---")
            print(body)
    if ctx.complete_part and not closed:
        size = len(ctx.complete_part)
        print(f"\ncomplete part: {size:,} character{'s' if size != 1 else ''}"
              " (--closed prints it)")
