"""Patterns the renderer runs on a reply's text do one match per value, not one per escaped
character: a window that ends inside a string's escape (right after its backslash) is still one
cut string, which counts nothing, so findall never restarts inside it (each restart scans to
the window's end again: quadratic in the window, seconds per sibling on replies that hold
escaped JSON)."""

from __future__ import annotations

from budgetlens.continuation import render

# a sibling that holds escaped JSON: a string of many \" escapes
ESCAPED = '["x' + '\\"' * 2000 + '", 1]'


def test_a_window_ending_after_a_backslash_is_one_cut_string() -> None:
    opening = ESCAPED.index('"')
    for stop in (opening + 2 + 2 * 700 + 1,   # right after the backslash of an escape
                 opening + 2 + 2 * 700 + 2,   # right after the escaped quote
                 opening + 2 + 2 * 700):      # between two escapes
        matches = render._COST_SCALARS.findall(ESCAPED, 0, stop)
        assert sum(map(len, matches)) == 0, stop  # a string cut by the window counts nothing
        assert len(matches) <= 2, (stop, len(matches))  # and is one match, not one per escape


def test_a_big_sibling_cut_inside_an_escape_costs_what_its_complete_values_cost() -> None:
    text = "[" + ", ".join([ESCAPED] * 3) + "]"
    whole = render.value_cost(text, 0, len(text), render.ARRAY, limit=10**9)
    assert whole == 3 * (len(ESCAPED) - len("[") - len(", 1]") + len("1"))  # literal and 1
    for limit in (50, 251, 700, 1500):
        cost = render.value_cost(text, 0, len(text), render.ARRAY, limit=limit)
        assert limit < cost <= whole, limit
