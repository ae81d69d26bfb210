"""``TextEnum``: the base of every closed set of strings in the core (policies, sources,
tiers, kinds, outcomes).

A member is its string everywhere: in JSON (``to_jsonable``, ``json.dumps``) and in text
(``str``, f-strings), as ``enum.StrEnum`` is from Python 3.11 on.
"""

from __future__ import annotations

from enum import Enum


class TextEnum(str, Enum):
    """A closed set of strings: each member is its string in JSON and in text.

    ``f"{PackTier.FULL}"`` is ``full``, so text output that interpolates a member reads as the
    plain string it replaced.
    """

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, format_spec: str) -> str:
        return format(str.__str__(self), format_spec)
