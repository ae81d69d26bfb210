"""The lower bound of a side branch's cost (``runs.scalar_floor``) is never above its cost.

The rendering turns a branch down without measuring it when this bound is above the budget
left, so a bound above the true cost would change the rendering. Numbers count their fewest
possible characters: an integer its sign and digits (a JSON integer has no leading zeros),
a float three (a fraction or an exponent); strings their decoded characters and quotes.
Checked exhaustively for integers at every bit length the C scanner reads, on generated JSON
written with any number form, escapes and nesting (hypothesis), and on a document whose side
branches only the integers' digits keep from fitting (compared with the previous
implementation; the branches are turned down unmeasured). Mechanisms are counted, never timed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetlens import get_contexts
from budgetlens.continuation import render as render_module
from budgetlens.continuation import runs as runs_module
from budgetlens.serialize import to_jsonable
from tests.core.continuation.legacy.legacy_contexts import get_contexts as legacy_get_contexts


def _cost(text: str) -> int:
    """The budget cost of the JSON value ``text`` (its scalar literals as written)."""
    return sum(map(len, render_module._COST_SCALARS.findall(text, 0, len(text))))


def _digits(n: int) -> int:
    """The decimal digits of ``n`` > 0 (without ``str``, limited to 4,300 digits)."""
    k = max(1, int(n.bit_length() * 0.30103))
    while 10**k <= n:
        k += 1
    while k > 1 and 10 ** (k - 1) > n:
        k -= 1
    return k


def test_the_integer_bound_never_exceeds_the_digits_at_any_bit_length() -> None:
    # the smallest and largest magnitudes of every bit length up to past the C scanner's
    # limit (4,300 digits): where a bound from the bit length is tightest
    for bits in range(1, 14_400):
        for magnitude in (1 << (bits - 1), (1 << bits) - 1):
            digits = _digits(magnitude)
            assert runs_module._int_floor(magnitude) <= digits, bits
            assert runs_module._int_floor(-magnitude) <= digits + 1, bits
    # more than a digit per number: 12345 (14 bits) at least 4 characters, -6789 5
    assert runs_module.scalar_floor([12345, -6789, 0, 2.5], 10**9) == 4 + 5 + 1 + 3
    assert runs_module._int_floor(-(10**20)) == 21  # of 22


_NUMBER = st.from_regex(r"-?(?:0|[1-9][0-9]{0,30})(?:\.[0-9]{1,12})?(?:[eE][+-]?[0-9]{1,3})?",
                        fullmatch=True)
_STRING = st.builds(lambda s, ascii_only: json.dumps(s, ensure_ascii=ascii_only),
                    st.text(max_size=12), st.booleans())
_SCALAR = st.one_of(_NUMBER, _STRING, st.sampled_from(["true", "false", "null"]))


def _array(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def _object(members: list[tuple[str, str]]) -> str:
    return "{" + ", ".join(f"{key}: {value}" for key, value in members) + "}"


_VALUE = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5).map(_array),
        st.lists(st.tuples(_STRING, inner), max_size=5).map(_object)),
    max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(_VALUE, st.integers(min_value=0, max_value=400))
def test_the_floor_never_exceeds_the_cost_of_the_value_as_written(text: str, cap: int) -> None:
    value = json.loads(text)
    cost = _cost(text)
    floor = runs_module.scalar_floor(value, cap)
    if type(value) in (dict, list):
        # a duplicate key's dropped value only lowers the bound
        assert floor <= cost, (text, floor, cost)
    else:
        assert floor <= cost == len(text), (text, floor, cost)
    # above the cap only when the cost is
    assert (floor > cap) <= (cost > cap)


def _integer_sections() -> str:
    # each section holds about 100 characters of integers and little else: a budget of 90 is
    # above a bound counting one digit per number and below one counting them all
    sections = [{"id": f"s{i}", "n": 10**20 + i, "m": -(10**20) - i, "k": 10**25 + i,
                 "j": 10**30 + i} for i in range(200)]
    return json.dumps({"doc": {"sections": sections}}, indent=2)


@pytest.mark.parametrize("budget", [90, 160, 5_000])
def test_branches_the_digits_keep_from_fitting_match_the_previous_implementation(
        budget: int) -> None:
    doc = _integer_sections()
    for offset in (len(doc) // 3, len(doc) // 2, len(doc) - 40, doc.rindex("{") + 1):
        cut = doc[:offset]
        new = to_jsonable(get_contexts(cut, budget=budget))
        old = to_jsonable(legacy_get_contexts(cut, budget=budget))
        assert new == old, (offset, budget)


def test_branches_the_digits_keep_from_fitting_are_turned_down_unmeasured() -> None:
    doc = _integer_sections()
    cut = doc[:doc.rindex("{") + 1]  # right after the last section's opening brace
    measured: list[int] = []
    real = render_module.verbatim_cost

    def counting(*args: Any) -> int:
        measured.append(1)
        return real(*args)

    mp = pytest.MonkeyPatch()
    mp.setattr(render_module, "verbatim_cost", counting)
    mp.setattr(render_module, "value_cost", lambda *args: measured.append(1) or 10**9)
    try:
        ctx = get_contexts(cut, budget=90)
    finally:
        mp.undo()
    assert "<199 items not shown>" in ctx.hierarchy_context_for_prompt
    # 64 sections in a row do not fit, each turned down by its bound, none measured
    assert len(measured) <= 2, len(measured)
