"""Small text helpers shared by the context modules."""

from __future__ import annotations

from enum import Enum


def one_line(text: str) -> str:
    """``text`` on one line: every run of whitespace (newlines too) becomes one space."""
    return " ".join(text.split())


class TextEnum(str, Enum):
    """A str-valued enum whose ``str()`` and ``format()`` give its value, as ``enum.StrEnum``
    does from Python 3.11 on: ``f"{PackTier.FULL}"`` is ``full``, so text output that
    interpolates a member reads as the plain string it replaced."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, format_spec: str) -> str:
        return format(str(self.value), format_spec)
