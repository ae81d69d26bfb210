"""``budgetlens tokens FILE... [--tokenizer NAME]``: token counts per file."""

from __future__ import annotations

import argparse
import json
from typing import Any

from budgetlens.tokens import DEFAULT_TOKENIZER, TokenCounter, TokenizerError, get_tokenizer
from budgetlens_lsp.cli.io import read_text_arg
from budgetlens_lsp.cli.main import EXIT_OK, UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "tokens", help="count the tokens of files",
        description="Print the token count of each FILE ('-' reads standard input).")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--tokenizer", default=DEFAULT_TOKENIZER,
                   help=f"encoding name, model name or tokenizer.json path "
                        f"(default {DEFAULT_TOKENIZER})")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        counter = TokenCounter(get_tokenizer(args.tokenizer))
    except TokenizerError as exc:
        raise UsageError(str(exc)) from None
    rows = [(name, counter.count(read_text_arg(name))) for name in args.files]
    if args.format == "json":
        print(json.dumps({"tokenizer": counter.name,
                          "files": [{"file": f, "tokens": n} for f, n in rows],
                          "total": sum(n for _, n in rows)}, indent=2))
        return EXIT_OK
    total = sum(n for _, n in rows)
    width = len(f"{total:,}")
    for name, n in rows:
        print(f"{n:>{width},}  {name}")
    if len(rows) > 1:
        print(f"{total:>{width},}  total ({counter.name})")
    return EXIT_OK
