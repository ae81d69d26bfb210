"""Every diagnostic code is registered, stable and documented in docs/diagnostics.md."""

from __future__ import annotations

import re
from pathlib import Path

from budgetlens.codes import CODES

ROOT = Path(__file__).resolve().parents[2]

def test_every_code_is_documented_with_its_own_section() -> None:
    doc = (ROOT / "docs" / "diagnostics.md").read_text("utf-8")
    for code, info in CODES.items():
        assert f"\n### {code}\n" in doc, code
        assert f"| [{code}](#{code.lower()}) |" in doc, code
        assert re.match(r"BL[012]\d\d$", code)
        assert info.summary


def test_every_code_written_in_the_core_is_registered() -> None:
    used: set[str] = set()
    for module in sorted((ROOT / "shared_core" / "budgetlens").rglob("*.py")):
        used |= set(re.findall(r"\"(BL\d{3})\"", module.read_text("utf-8")))
    assert used and used <= set(CODES)
