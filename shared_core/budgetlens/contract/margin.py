"""Proportional safety margins: ``budget_safety_margin_tokens: "2% + 128"``.

A margin is a constant, a percentage of the step's input, or both. The input is what the
request sends: ``fixed + history + context`` (the system prompt, template and format
overhead, the history budget and the context budget), never the output or the margin
itself. The percentage is rounded up to a whole token::

    margin = constant + ceil(percent / 100 * (fixed + history + context))

An approximate count (Claude, Gemini, a family whose extra is not installed) drifts in
proportion to the text's length, so a step counted approximately gets
``APPROXIMATE_PERCENT`` by default on top of the constant, when the pipeline sets no margin.
A margin the pipeline sets (a number or a text) is used as written. The run time
(``request.limits``) uses the same default (``DEFAULT_APPROXIMATE_MARGIN``) and the same
arithmetic (``margin_tokens``) for a request counted approximately.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from budgetlens.contract.results import Term

if TYPE_CHECKING:
    from fractions import Fraction

#: The percentage of the input an approximate count gets by default: above the 11% drift
#: earendil-works/pi#9101 measured between an approximate count and the provider's. A whole
#: number: ``fractions`` (and ``decimal``, which it loads) is imported only when a margin
#: has a percentage (start-up speed: about 10 M instructions, docs/performance.md).
APPROXIMATE_PERCENT = 12
#: The margin's constant when the pipeline sets none (``budget_safety_margin_tokens``).
DEFAULT_MARGIN_TOKENS = 128
#: The default margin of an approximate count, ``"12% + 128"``: the one rule of the check
#: (a step counted ≈ with no margin set) and of the run time (``fit_request`` of a ≈ count
#: with no ``margin=``), both computed by ``margin_tokens``.
DEFAULT_APPROXIMATE_MARGIN = f"{APPROXIMATE_PERCENT}% + {DEFAULT_MARGIN_TOKENS}"

_TEXT = re.compile(r"\s*(?:(?P<pct>\d+(?:\.\d+)?)\s*%)?\s*(?:(?P<plus>\+)\s*"
                   r"(?P<const>\d+))?\s*")


def parse_margin(text: str) -> tuple[Fraction, int] | None:
    """The percentage and the constant of ``"2% + 128"`` (``"5%"``: no constant; a plain
    ``"128"`` is read as the number); ``None`` when the text is neither."""
    from fractions import Fraction  # lazy: start-up speed (see APPROXIMATE_PERCENT)

    stripped = text.strip()
    if stripped.isdigit():
        return Fraction(0), int(stripped)
    m = _TEXT.fullmatch(text)
    if m is None or m.group("pct") is None:
        return None
    percent = Fraction(m.group("pct"))
    if percent > 100:
        return None
    return percent, int(m.group("const") or 0)


def margin_tokens(percent: Fraction, constant: int, input_tokens: int) -> int:
    """``constant + ceil(percent / 100 * input_tokens)``: the margin of ``input_tokens``."""
    return constant + math.ceil(percent * max(input_tokens, 0) / 100)


def _percent_text(percent: Fraction) -> str:
    return str(percent.numerator) if percent.denominator == 1 else f"{float(percent):g}"


def step_margin(base: Term, percent: Fraction | None, input_tokens: int, *,
                approximate: bool, default: bool) -> Term:
    """A step's margin: ``base`` (the constant) plus ``percent`` of ``input_tokens``
    (``fixed + history + context``), rounded up. With no percentage set, a step counted
    approximately under the default margin (``default``) gets ``APPROXIMATE_PERCENT``."""
    why = ""
    if percent is None and approximate and default:
        from fractions import Fraction  # lazy, as in parse_margin

        percent, why = Fraction(APPROXIMATE_PERCENT), " (default for approximate counts)"
    if not percent:
        return base
    extra = margin_tokens(percent, 0, input_tokens)
    source = (f"{base.source}{why}: {_percent_text(percent)}% of input {input_tokens:,}"
              f" = {extra:,}, + {base.value:,}")
    return Term(base.value + extra, source, base.inherited, base.location)
