"""``budgetlens pack DOCS.json --intent NAME [--max-chars N | --max-tokens N]``: pack a context.

DOCS.json is a JSON array of ``{"id", "schema_type", "data", "is_leaf"?, "origin_type"?,
"created_at"?}``. ``--intent`` is an intent name of the map, free text (matched by the map's
keyword rules) or structured JSON ``{"intent": NAME, "params": {...}}``. ``--format json``
prints ``{"context", "chars", "tokens", "report": [...]}``; ``--format text`` (default) prints
the report, then the context. Exit status 0; 2 for unreadable or invalid input.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from budgetlens import PackResult, TokenCounter, TokenizerError, get_tokenizer, pack_context
from budgetlens.assembly.input_errors import InputError
from budgetlens.assembly.packer import (
    IntentMap,
    PackDoc,
    intent_map_from_text,
    parse_docs,
)
from budgetlens.serialize import to_jsonable
from budgetlens_cli.io import invalid, read_text_arg
from budgetlens_cli.main import EXIT_OK, UsageError, non_negative_int

MAX_DOCS_CHARS = 64 * 1024 * 1024


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "pack", help="prioritize, trim and cap documents into a context for an intent",
        description="Rank the documents of DOCS.json ('-' reads standard input) for an intent,"
                    " trim lower ranks, drop the lowest until the context fits the cap, and"
                    " report what was kept, trimmed and dropped.")
    p.add_argument("docs", metavar="DOCS.json")
    p.add_argument("--intent", required=True, metavar="NAME",
                   help="intent name, free text, or JSON {\"intent\": ..., \"params\": {...}}")
    cap = p.add_mutually_exclusive_group()
    cap.add_argument("--max-chars", type=non_negative_int, metavar="N",
                     help="cap the context's length")
    cap.add_argument("--max-tokens", type=non_negative_int, metavar="N",
                     help="cap the context's tokens")
    p.add_argument("--map", metavar="FILE", help="intent map (YAML or JSON); default: built in")
    p.add_argument("--tokenizer", default=None, help="tokenizer for token counts (cl100k_base)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=run)


def _intent(value: str) -> str | Mapping[str, Any]:
    if not value.lstrip().startswith("{"):
        return value
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--intent: not valid JSON ({exc.msg} at column {exc.colno})") \
            from None
    if not isinstance(data, dict):
        raise UsageError("--intent: expected a JSON object {\"intent\": ..., \"params\": ...}")
    return data


def load_docs(name: str) -> list[PackDoc]:
    """The documents of DOCS.json; UsageError listing what is wrong when they are invalid."""
    text = read_text_arg(name)
    if len(text) > MAX_DOCS_CHARS:
        raise UsageError(f"{name}: larger than {MAX_DOCS_CHARS // (1024 * 1024)} MiB")
    try:
        return parse_docs(text)
    except InputError as exc:
        raise invalid(name, "documents", list(exc.messages)) from None


def load_intent_map(name: str | None) -> IntentMap | None:
    """The intent map of ``--map`` (None: the built-in one)."""
    if not name:
        return None
    try:
        return intent_map_from_text(read_text_arg(name), source=name)
    except InputError as exc:
        raise invalid(name, "intent map", list(exc.messages)) from None


def run(args: argparse.Namespace) -> int:
    docs = load_docs(args.docs)
    intent_map = load_intent_map(args.map)
    try:
        counter = TokenCounter(get_tokenizer(args.tokenizer))
    except TokenizerError as exc:
        raise UsageError(str(exc)) from None
    try:
        result = pack_context(docs, _intent(args.intent), max_chars=args.max_chars,
                              max_tokens=args.max_tokens, intent_map=intent_map,
                              counter=counter)
    except InputError as exc:
        raise UsageError("; ".join(exc.messages)) from None
    if args.format == "json":
        print(json.dumps(to_jsonable(result), indent=2, ensure_ascii=False))
    else:
        print(render_text(result))
    return EXIT_OK


def render_text(r: PackResult) -> str:
    cap = (f"cap {r.max_chars:,} chars" if r.max_chars is not None
           else f"cap {r.max_tokens:,} tokens" if r.max_tokens is not None else "no cap")
    lines = [f"intent {r.intent.name} ({r.intent.matched_by}): {r.count('kept')} kept,"
             f" {r.count('trimmed')} trimmed, {r.count('dropped')} dropped;"
             f" {r.chars:,} chars, {r.tokens:,} tokens ({r.tokenizer}); {cap}"]
    rows = [("rank", "status", "tier", "before", "after", "id", "reason")]
    rows += [(str(d.rank), d.status, d.tier or "-", f"{d.chars_before:,}", f"{d.chars_after:,}",
              d.id, d.reason) for d in r.report]
    widths = [max(len(row[k]) for row in rows) for k in range(6)]
    for row in rows:
        lines.append("  ".join(cell.ljust(w) if k >= 5 or k in (1, 2) else cell.rjust(w)
                               for k, (cell, w) in enumerate(zip(row, widths, strict=False)))
                     + "  " + row[6])
    lines.append("--- context ---")
    lines.append(r.context.rstrip("\n"))
    return "\n".join(lines)
