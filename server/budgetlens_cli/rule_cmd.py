"""``budgetlens rule CODE [--format text|json]`` and ``budgetlens rule --all``: what a
diagnostic code means and how to fix it (as ``ruff rule`` does), from the text of
docs/diagnostics.md that the package carries (``budgetlens.rules``). An unknown code is bad
usage (exit status 2) with the codes it may be."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from budgetlens.rules import Rule, all_rules, close_codes, get_rule
from budgetlens_cli.main import EXIT_OK, UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "rule", help="explain a diagnostic code (meaning and fix), or list them all",
        description="Print what a diagnostic code (BL050) means and how to fix it, as"
                    " docs/diagnostics.md says; --all lists every code.")
    p.add_argument("code", nargs="?", metavar="CODE", help="a diagnostic code such as BL050")
    p.add_argument("--all", action="store_true", help="list every code with its title")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="output format (default text)")
    p.set_defaults(run=run)


def find_rule(code: str) -> Rule:
    """The rule of ``code``; UsageError naming the codes it may be when there is none."""
    rule = get_rule(code)
    if rule is not None:
        return rule
    close = close_codes(code)
    hint = (f"; did you mean {' or '.join(close)}?" if close
            else "; `budgetlens rule --all` lists every code")
    raise UsageError(f"unknown diagnostic code {code!r}{hint}")


def run(args: argparse.Namespace) -> int:
    if args.all == (args.code is not None):
        raise UsageError("rule: give a CODE (such as BL050) or --all")
    out = sys.stdout
    if args.all:
        rules = list(all_rules().values())
        if args.format == "json":
            json.dump([asdict(r) for r in rules], out, indent=2, ensure_ascii=False)
            out.write("\n")
        else:
            width = max(len(r.severity) for r in rules)
            out.writelines(f"{r.code}  {r.severity:<{width}}  {r.title}\n" for r in rules)
        return EXIT_OK
    rule = find_rule(args.code)
    if args.format == "json":
        json.dump(asdict(rule), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        out.write(rule.to_text())
    return EXIT_OK
