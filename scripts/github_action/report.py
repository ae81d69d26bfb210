"""The budgetlens Action's reading of its SARIF report (Python standard library only).

``report.py counts FILE``: ``errors=N`` and ``warnings=N`` lines for ``$GITHUB_OUTPUT``.
``report.py summary FILE --status S``: a markdown summary of the check for
``$GITHUB_STEP_SUMMARY``: the counts and a table of the first findings.

Every string taken from the report is escaped: it reaches GitHub's markdown renderer, and a
pipeline or a prompt under review may hold markdown or HTML of its own.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

#: the most findings listed in the summary (the SARIF file and the annotations have all)
MAX_ROWS = 50
_MARKDOWN_SPECIAL = "\\`*_{}[]()#+-.!|<>&~"


def escape(text: str) -> str:
    """``text`` as literal markdown inside a table cell: one line, every special character
    backslash-escaped (``<`` and ``&`` too, so no HTML tag or entity survives)."""
    flat = " ".join(str(text).split())
    return "".join("\\" + c if c in _MARKDOWN_SPECIAL else c for c in flat)


def results(sarif: Any) -> list[dict[str, Any]]:
    if not isinstance(sarif, dict) or not isinstance(sarif.get("runs"), list):
        raise ValueError("not a SARIF document: no runs")
    found: list[dict[str, Any]] = []
    for run in sarif["runs"]:
        found.extend(r for r in run.get("results", []) if isinstance(r, dict))
    return found


def counts(found: list[dict[str, Any]]) -> Counter[str]:
    return Counter(str(r.get("level", "warning")) for r in found)


def _where(result: dict[str, Any]) -> str:
    try:
        location = result["locations"][0]["physicalLocation"]
        return f"{location['artifactLocation']['uri']}:{location['region']['startLine']}"
    except (KeyError, IndexError, TypeError):
        return ""


def summary(found: list[dict[str, Any]], status: int) -> str:
    n = counts(found)
    verdict = {0: "passed", 1: "failed"}.get(status, f"could not check (exit status {status})")
    lines = ["## budgetlens check", "",
             f"{n['error']} error(s), {n['warning']} warning(s), {n['note']} note(s):"
             f" check {verdict}.", ""]
    if found:
        lines += ["| level | code | where | message |", "|---|---|---|---|"]
        for r in found[:MAX_ROWS]:
            message = r.get("message", {}).get("text", "") if isinstance(
                r.get("message"), dict) else ""
            lines.append(f"| {escape(str(r.get('level', '')))} | {escape(str(r.get('ruleId', '')))}"
                         f" | {escape(_where(r))} | {escape(message)} |")
        if len(found) > MAX_ROWS:
            lines += ["", f"… and {len(found) - MAX_ROWS} more (see the annotations and the"
                          " SARIF report)."]
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="report.py")
    parser.add_argument("what", choices=("counts", "summary"))
    parser.add_argument("sarif")
    parser.add_argument("--status", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        with open(args.sarif, encoding="utf-8") as f:
            found = results(json.load(f))
    except (OSError, ValueError) as exc:  # the check failed before writing its report
        if args.what == "counts":
            print("errors=0\nwarnings=0")
        else:
            print(f"## budgetlens check\n\nThe check could not check (exit status"
                  f" {args.status}): no report ({escape(str(exc))}). Its error is in the"
                  " step's log.\n")
        return 0
    if args.what == "counts":
        n = counts(found)
        print(f"errors={n['error']}\nwarnings={n['warning']}")
    else:
        sys.stdout.write(summary(found, args.status))
    return 0


if __name__ == "__main__":
    sys.exit(main())
