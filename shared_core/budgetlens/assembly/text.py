"""Small text helpers shared by the context modules (``TextEnum`` is in ``budgetlens.enums``)."""

from __future__ import annotations


def one_line(text: str) -> str:
    """``text`` on one line: every run of whitespace (newlines too) becomes one space."""
    return " ".join(text.split())
