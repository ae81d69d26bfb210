"""The explanation of each diagnostic code, as ``budgetlens rule CODE`` prints it.

The text is docs/diagnostics.md's (the code's row of the table and its section), copied into
the package as ``rules.json`` by ``scripts/gen_rules.py`` so that an installed wheel explains
every code offline; tests/core/test_rules.py keeps the two equal.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

RULES_FILE = Path(__file__).with_name("rules.json")


@dataclass(frozen=True)
class Rule:
    code: str
    severity: str
    """As docs/diagnostics.md says it (``error (fail_fast) / warning (auto_clamp)`` for a
    policy-dependent rule)."""
    title: str
    text: str
    """The code's section of docs/diagnostics.md (Markdown): what it means and the fix."""

    def to_text(self) -> str:
        """The plain-text explanation: a heading line, then the section."""
        return f"{self.code} ({self.severity}): {self.title}\n\n{self.text}"


@lru_cache(maxsize=1)
def all_rules() -> dict[str, Rule]:
    """Every documented code, in the order of docs/diagnostics.md."""
    data = json.loads(RULES_FILE.read_text("utf-8"))
    return {code: Rule(code, info["severity"], info["title"], info["text"])
            for code, info in data["rules"].items()}


def get_rule(code: str) -> Rule | None:
    """The rule of ``code`` (any case, surrounding blanks ignored), else None."""
    return all_rules().get(code.strip().upper())


def close_codes(code: str) -> list[str]:
    """Known codes that look like ``code`` (for "did you mean"), closest first."""
    wanted = code.strip().upper()
    if wanted.isdigit():  # "50" or "050": the code with that number
        wanted = "BL" + wanted.zfill(3)
    known = list(all_rules())
    return difflib.get_close_matches(wanted, known, n=3, cutoff=0.6)
