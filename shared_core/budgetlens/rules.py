"""The explanation of each diagnostic code, as ``budgetlens rule CODE`` prints it.

The text is docs/diagnostics.md's (the code's row of the table and its section), copied into
the package as ``rules.json`` by ``scripts/gen_rules.py`` so that an installed wheel explains
every code offline; tests/core/test_rules.py keeps the two equal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

RULES_FILE = Path(__file__).with_name("rules.json")
#: The project's home (SARIF's ``tool.driver.informationUri``).
REPOSITORY_URL = "https://github.com/budgetlens/budgetlens"
#: docs/diagnostics.md as the repository's site shows it: each code's section is a
#: ``### BL050`` heading, so its anchor is ``#bl050`` (GitHub lower-cases heading text).
DIAGNOSTICS_URL = f"{REPOSITORY_URL}/blob/main/docs/diagnostics.md"


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


def help_uri(code: str) -> str | None:
    """The absolute address of ``code``'s section of docs/diagnostics.md
    (``.../docs/diagnostics.md#bl050``), or None for a code the page does not document."""
    rule = get_rule(code)
    return f"{DIAGNOSTICS_URL}#{rule.code.lower()}" if rule is not None else None


def get_rule(code: str) -> Rule | None:
    """The rule of ``code`` (any case, surrounding blanks ignored), else None."""
    return all_rules().get(code.strip().upper())


#: Letters typed for the digits they look like (``BL05O``).
_LOOKALIKES = str.maketrans("OIL", "011")


def close_codes(code: str) -> list[str]:
    """At most three known codes that look like ``code`` (for "did you mean"), closest first:
    a number alone (``50``) is that code, letters that look like digits are read as them,
    then the codes within two edits, the longest common start first."""
    from budgetlens.contract.near_miss import osa_distance  # lazy: only for a miss

    wanted = code.strip().upper()
    if wanted.isdigit():
        wanted = "BL" + wanted.zfill(3)
    elif wanted.startswith("BL"):
        wanted = "BL" + wanted[2:].translate(_LOOKALIKES)
    rules = all_rules()
    if wanted in rules:
        return [wanted]
    scored = sorted((osa_distance(wanted, known, 2), -_common_start(wanted, known), known)
                    for known in rules)
    return [known for distance, _, known in scored[:3] if distance <= 2]


def _common_start(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
