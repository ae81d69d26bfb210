"""Documents laid out unlike the bench's: large items, minified, indented by 4 or by tabs.

Found by measuring shapes the bench did not have: an array whose items are each larger than
a thirty-second of the text was read token by token in Python (every item's window failed,
so the scan descended into each: 16-23 times ``json.loads`` at 100 KB), and a minified
value shown in full was laid out by a tokenizer that read each string twice. The renderings
are compared with the frozen previous implementation (``tests/core/continuation/legacy/``)
and with ``json.dumps(indent=2)``; the mechanism (how many containers the scan descends into)
is counted, never timed.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budgetlens import get_contexts
from budgetlens.continuation import cut as cut_module
from budgetlens.continuation.pretty import pretty_lines
from budgetlens.serialize import to_jsonable
from tests.core.continuation.legacy.legacy_contexts import get_contexts as legacy_get_contexts
from tests.core.continuation.legacy.legacy_render import pretty_lines as legacy_pretty_lines


def _node(rng: random.Random, depth: int) -> Any:
    if depth == 0:
        return rng.choice([1, "x, y", None, True, 2.5, "say \"hi\"", "数据"])
    if depth % 2:
        return {f"k{i}": _node(rng, depth - 1) for i in range(3)}
    return [_node(rng, depth - 1) for _ in range(3)]


def _large_items(count: int = 12, seed: int = 3, depth: int = 6) -> str:
    """An object holding one array of ``count`` items, each far above a thirty-second of
    the text (``depth`` levels of three containers: at 6, about 30,000 characters)."""
    rng = random.Random(seed)
    return json.dumps({"items": [_node(rng, depth) for _ in range(count)]}, indent=2,
                      ensure_ascii=False)


class _CountingFrame(cut_module.Frame):
    made = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        type(self).made += 1
        super().__init__(*args, **kwargs)


def _descended_per_cut(text: str, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many containers the scan descends into, for 20 cuts spread over ``text``."""
    monkeypatch.setattr(cut_module, "Frame", _CountingFrame)
    made = []
    for k in range(1, 21):
        _CountingFrame.made = 0
        cut_module.scan(text[:len(text) * k // 21])
        made.append(_CountingFrame.made)
    return made


@pytest.mark.parametrize("share", [0.3, 0.55, 0.8, 0.97])
def test_items_larger_than_a_window_are_read_by_the_c_scanner_after_the_first(
        monkeypatch: pytest.MonkeyPatch, share: float) -> None:
    text = _large_items()
    item = len(json.dumps(json.loads(text)["items"][0], indent=2))
    assert item > len(text) // 32  # larger than the windows the scan starts with
    cut = text[:int(len(text) * share)]
    monkeypatch.setattr(cut_module, "Frame", _CountingFrame)
    _CountingFrame.made = 0
    result = cut_module.scan(cut)
    assert result.error is None and result.kind is not None
    # descended: the open containers on the path to the cut (8 levels here), and within
    # each level's first large item the first of each of its levels; before, every item
    # of every level above the windows' size (hundreds)
    assert _CountingFrame.made <= 40, _CountingFrame.made
    monkeypatch.undo()
    for budget in (200, 1000, 10_000):
        assert to_jsonable(get_contexts(cut, budget=budget)) == \
            to_jsonable(legacy_get_contexts(cut, budget=budget))


def test_a_few_items_each_a_quarter_of_the_text_are_read_by_the_c_scanner(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Four items: the open one at the end is tried on a window twice the largest item
    before the scan descends into it, and what that read (up to the text's end) is charged
    to what failed windows may read; with half the text allowed, a cut in the second half
    had nothing left for the levels below, which were read token by token."""
    made = _descended_per_cut(_large_items(4, seed=7), monkeypatch)
    assert max(made) <= 40, made


def test_the_open_item_s_read_to_the_end_leaves_the_windows_for_the_levels_below(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten items of about 70,000 characters (eight levels): the open one is tried on a
    window that reaches the end of the text, and that read, charged to what failed windows
    may read, used it up on some cuts: the levels below were read token by token (471-940
    containers descended into). It is not charged (a level reads its open child so once)."""
    made = _descended_per_cut(_large_items(10, seed=7, depth=8), monkeypatch)
    assert max(made) <= 40, made


def test_a_large_item_that_is_invalid_is_still_reported_where_it_breaks() -> None:
    text = _large_items(6)
    broken_at = text.index('"k1"', len(text) // 2)
    broken = text[:broken_at] + '"k1" "x"' + text[broken_at + len('"k1":'):]
    got = get_contexts(broken[:int(len(broken) * 0.9)], budget=1000)
    assert got.error is not None and got.error.offset == broken_at + len('"k1" ')
    assert to_jsonable(got) == to_jsonable(legacy_get_contexts(
        broken[:int(len(broken) * 0.9)], budget=1000))


NUMBERS = st.one_of(st.integers(-10**25, 10**25),
                    st.floats(allow_nan=False, allow_infinity=False))
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=10)
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), NUMBERS, TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=25)
#: json.dumps's layouts, and one with space around every colon and comma
LAYOUTS = (dict(separators=(",", ":")), dict(indent=4), dict(indent="\t"), dict(),
           dict(separators=(" , ", " : ")))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.one_of(st.lists(VALUES, min_size=1, max_size=5),
                       st.dictionaries(TEXT, VALUES, min_size=1, max_size=4)),
       layout=st.sampled_from(range(len(LAYOUTS))), ascii_only=st.booleans(),
       depth=st.integers(0, 3))
def test_pretty_lines_lays_out_any_layout_as_json_dumps_indent_2(
        value: Any, layout: int, ascii_only: bool, depth: int) -> None:
    source = json.dumps(value, ensure_ascii=ascii_only, **LAYOUTS[layout])  # type: ignore[arg-type]
    lines = pretty_lines(source, 0, len(source), depth)
    assert lines == legacy_pretty_lines(source, 0, len(source), depth)
    expected = json.dumps(value, ensure_ascii=ascii_only, indent=2).split("\n")
    assert lines == [expected[0], *("  " * depth + line for line in expected[1:])]


def test_a_string_that_ends_in_a_colon_is_a_value_not_a_key() -> None:
    source = '{"a":"b:","c":[":",":x"],"d" :1}'
    assert pretty_lines(source, 0, len(source), 0) == [
        "{", '  "a": "b:",', '  "c": [', '    ":",', '    ":x"', "  ],", '  "d": 1', "}"]


def test_small_siblings_after_a_large_one_share_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by review: after one large member, a shared window was left whenever it had
    no room for a sibling as large as the largest, so every small sibling after it copied a
    fresh window as large as that member (an object of one 100 KB member and 70,000 small
    ones: 34,815 window copies, 13x json.loads). The text is copied about once again."""
    doc: dict[str, Any] = {"big": [{"x": j, "y": "v" * 20} for j in range(2000)]}
    doc.update({f"k{i}": [i] for i in range(15_000)})
    text = json.dumps(doc)[:-5]
    copied = [0]
    move = cut_module._Windows.move

    def counting(self: Any, text: str, pos: int, width: int) -> None:
        move(self, text, pos, width)
        copied[0] += len(self.chunk)

    monkeypatch.setattr(cut_module._Windows, "move", counting)
    result = cut_module.scan(text)
    assert result.error is None and result.kind is not None
    assert copied[0] <= 3 * len(text), (copied[0], len(text))
