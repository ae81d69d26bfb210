"""History trimming at run time: drop the oldest turns until the history fits its budget.

``trim_history(turns, max_history_tokens, tokenizer)`` keeps the newest turns whose tokens
sum to at most the budget and returns what it dropped (the ``history_trim`` trace of a run).
The tokenizer is any ``TokenizerLike``: a name (``"cl100k_base"``), ``get_tokenizer(...)``,
a ``TokenCounter`` (its cache is used) or a function ``text -> int``.
A turn is a string or a mapping with a ``content`` string (``{"role": ..., "content": ...}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from budgetlens.tokens.core import TokenizerLike, as_counter

Turn = TypeVar("Turn", bound=str | Mapping[str, Any])


def turn_text(turn: str | Mapping[str, Any]) -> str:
    """The text of a turn: the string itself, or its ``content`` (non-strings count as '')."""
    if isinstance(turn, str):
        return turn
    content = turn.get("content", "")
    return content if isinstance(content, str) else ""


@dataclass(frozen=True)
class HistoryTrim(Generic[Turn]):
    kept: list[Turn]
    dropped: list[Turn]  # oldest first
    tokens_before: int
    tokens_after: int
    budget: int

    @property
    def trimmed(self) -> bool:
        return bool(self.dropped)

    def trace(self) -> dict[str, int]:
        """The ``history_trim`` trace: turns and tokens before, after and dropped."""
        return {"budget": self.budget,
                "turns_before": len(self.kept) + len(self.dropped),
                "turns_after": len(self.kept), "turns_dropped": len(self.dropped),
                "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
                "tokens_dropped": self.tokens_before - self.tokens_after}


def trim_history(turns: Sequence[Turn], max_history_tokens: int,
                 count: TokenizerLike) -> HistoryTrim[Turn]:
    """Drop the oldest turns until the rest costs at most ``max_history_tokens``.

    ``count`` is the tokenizer (see the module docstring). A turn is never cut in the
    middle; a budget of 0 or less drops every turn.
    """
    counter = as_counter(count).count
    costs = [counter(turn_text(t)) for t in turns]
    total = sum(costs)
    budget = max(max_history_tokens, 0)
    kept_tokens = total
    first_kept = 0
    while first_kept < len(turns) and kept_tokens > budget:
        kept_tokens -= costs[first_kept]
        first_kept += 1
    return HistoryTrim(list(turns[first_kept:]), list(turns[:first_kept]), total,
                       kept_tokens, budget)
