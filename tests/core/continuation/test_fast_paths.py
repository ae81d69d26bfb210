"""The rendering's fast paths give what the previous implementation gave, and do bounded work.

Each path below (a long cut string read once on a closed copy, runs of scalar items or of flat
records taken whole at their end, flat containers laid out from one pass, cost floors for
side branches that do not fit) is exercised on documents built for it and compared with the
frozen previous implementation in ``tests/core/continuation/legacy/``; the mechanism tests
count calls (never time).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from budgetlens import get_contexts
from budgetlens.continuation import render as render_module
from budgetlens.continuation import runs as runs_module
from budgetlens.continuation import syntax as syntax_module
from budgetlens.serialize import to_jsonable
from tests.core.continuation.legacy.legacy_contexts import get_contexts as legacy_get_contexts
from tests.core.continuation.scanners import SCANNER_HOMES, wrap_scanner

_WORDS = ("a", "budget", "tok, en", 'say "hi"', "back\\slash", "数据", "😀", "{x}", "[y]", "",
          "tab\there", "é")


def _records(count: int, seed: int, *, nested: bool = False,
             words: tuple[str, ...] = _WORDS) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for i in range(count):
        row: dict[str, Any] = {"id": i, "name": rng.choice(words), "ok": rng.random() < 0.5,
                               "value": rng.choice([1.5, -0.25, 10**20, 3, 1e-7]),
                               "note": None if rng.random() < 0.5 else rng.choice(words)}
        if rng.random() < 0.05:
            row = {}  # an empty object among the records
        if nested and rng.random() < 0.1:
            row["tags"] = [rng.choice(_WORDS)]
        rows.append(row)
    return rows


def _scalars(count: int, seed: int, kinds: str) -> list[Any]:
    rng = random.Random(seed)
    pool: dict[str, list[Any]] = {
        "s": [w for w in _WORDS if not set(w) & set('\\"{}[]\t')] + ["x" * 30],
        "e": list(_WORDS),
        "n": [0, -12, 3.25, 1e300, 10**25, -0.0],
        "l": [True, False, None],
    }
    choices = [v for k in kinds for v in pool[k]]
    return [rng.choice(choices) for _ in range(count)]


def _docs() -> dict[str, str]:
    return {
        "records-compact": json.dumps(_records(900, 1), ensure_ascii=False),
        "records-plain": json.dumps(_records(900, 10, words=("a", "b c", "数据", "😀", "")),
                                    ensure_ascii=False),
        "records-pretty": json.dumps(_records(400, 2), indent=2),
        "records-nested": json.dumps(_records(700, 3, nested=True)),
        "records-tight": json.dumps(_records(700, 4), separators=(",", ":")),
        "records-in-object": json.dumps({"meta": {"n": 1}, "rows": _records(600, 5)},
                                        ensure_ascii=False, indent=1),
        "strings-plain": json.dumps(_scalars(3000, 6, "s"), ensure_ascii=False),
        "strings-escaped": json.dumps(_scalars(3000, 7, "e"), ensure_ascii=False, indent=2),
        "numbers-and-literals": json.dumps({"v": _scalars(4000, 8, "nl")}, indent=2),
        "mixed-scalars": json.dumps(_scalars(3000, 9, "senl"), separators=(",", ":")),
        "long-string": json.dumps({"t": "x", "text": "\n".join(
            f'line {i}, "q" é 😀 \\ {{}}' for i in range(3000))}, ensure_ascii=False),
        "long-plain-string": json.dumps(["a", "word " * 4000], indent=2),
    }


DOCS = _docs()


def _same(text: str, budget: int) -> None:
    new = to_jsonable(get_contexts(text, budget=budget))
    old = to_jsonable(legacy_get_contexts(text, budget=budget))
    assert new == old, f"differs for a cut at {len(text)} (budget {budget}): {text[-60:]!r}"


@pytest.mark.parametrize("name", sorted(DOCS))
def test_fast_paths_match_the_previous_implementation(name: str) -> None:
    doc = DOCS[name]
    rng = random.Random(name)
    offsets = sorted({rng.randrange(1, len(doc) + 1) for _ in range(24)} | {len(doc) - 1})
    for k, offset in enumerate(offsets):
        _same(doc[:offset], (60, 200, 1000, 10_000, 30_000)[k % 5])
    for offset in offsets[-3:]:
        _same(doc[:offset] + "\n", 10_000)


@pytest.mark.parametrize("tail", ["", "\\", "\\u00", "\\ud83d", "\\ud83d\\ude0", "\ud83d"])
def test_a_long_cut_string_with_any_ending_matches_the_previous_implementation(
        tail: str) -> None:
    doc = DOCS["long-string"]
    cut = doc[:len(doc) // 2] + tail
    for budget in (0, 200, 10**6):
        _same(cut, budget)


def test_a_long_cut_string_is_decoded_once_and_its_copy_is_the_closed_json() -> None:
    doc = DOCS["long-string"]
    cut = doc[:len(doc) - 40]
    decoded: list[int] = []
    scanstring = syntax_module._scanstring

    def counting(s: str, end: int, strict: bool) -> tuple[str, int]:
        value, stop = scanstring(s, end, strict)
        decoded.append(len(value))
        return value, stop

    mp = pytest.MonkeyPatch()
    wrap_scanner(mp, "_scanstring", counting)
    loads_calls: list[int] = []
    real_loads = json.loads
    mp.setattr(json, "loads", lambda s, *a, **k: loads_calls.append(len(s)) or real_loads(s))
    try:
        ctx = get_contexts(cut, budget=200)
    finally:
        mp.undo()
    body = cut[cut.index('"text": "') + 9:]
    expected_chars = len(json.loads('"' + body + '"'))
    assert ctx.hierarchy_context_for_prompt.endswith(
        f'"text": <string: {expected_chars:,} chars><<<CUT>>>')
    # the long string's characters were decoded once (by the scanner), never by json.loads
    assert sum(1 for n in decoded if n > 1000) == 1, decoded
    assert all(n < 1000 for n in loads_calls), loads_calls
    assert json.loads(ctx.complete_part)["text"] == json.loads('"' + body + '"')


def _count_calls(module: Any, name: str, mp: pytest.MonkeyPatch) -> list[int]:
    """Count the calls of ``name`` in ``module`` (or in each module of a tuple of them)."""
    calls: list[int] = []
    for home in module if isinstance(module, tuple) else (module,):
        if not hasattr(home, name):
            continue
        real = getattr(home, name)

        def counted(*args: Any, real: Any = real, **kwargs: Any) -> Any:
            calls.append(1)
            return real(*args, **kwargs)

        mp.setattr(home, name, counted)
    return calls


@pytest.mark.parametrize("name", ["strings-plain", "records-plain"])
def test_items_that_fit_are_taken_without_a_call_per_item(name: str) -> None:
    doc = DOCS[name]
    cut = doc[:len(doc) - 500]
    mp = pytest.MonkeyPatch()
    takes = _count_calls(render_module._Allocator, "take", mp)
    costs = _count_calls(render_module, "value_cost", mp)
    try:
        ctx = get_contexts(cut, budget=10_000)
    finally:
        mp.undo()
    assert ctx.hierarchy_context_for_prompt == legacy_get_contexts(
        cut, budget=10_000).hierarchy_context_for_prompt
    shown = ctx.hierarchy_context_for_prompt.count("\n")
    assert shown > 300  # hundreds of lines of items in full
    # the items of the runs were taken at once; only the few around them one by one
    assert len(takes) + len(costs) < 150, (len(takes), len(costs))


def test_side_branches_that_do_not_fit_are_not_measured_one_by_one() -> None:
    # sections far larger than the budget: the 64 misses of the level are decided from a lower
    # bound of their cost (read with the C scanner), not by measuring each one
    sections = [{"id": i, "text": "word " * 60, "tags": ["a", "b"], "n": i}
                for i in range(400)]
    doc = json.dumps({"doc": {"sections": sections}}, indent=2)
    cut = doc[:doc.rindex("{") + 1]  # right after the last section's opening brace
    mp = pytest.MonkeyPatch()
    findall_calls: list[int] = []
    real = render_module._COST_SCALARS

    class Counting:
        def findall(self, *args: Any) -> Any:
            findall_calls.append(1)
            return real.findall(*args)

    mp.setattr(render_module, "_COST_SCALARS", Counting())
    try:
        ctx = get_contexts(cut, budget=200)
    finally:
        mp.undo()
    assert "items not shown>" in ctx.hierarchy_context_for_prompt
    assert ctx.hierarchy_context_for_prompt == legacy_get_contexts(
        cut, budget=200).hierarchy_context_for_prompt
    assert len(findall_calls) < 10, len(findall_calls)
    # nor read again: the items the scan decoded in bulk give the bound (the C scanner is
    # called about as often as for the budget 0, which measures nothing)
    scans: dict[int, int] = {}
    for budget in (0, 200):
        mp = pytest.MonkeyPatch()
        calls = _count_calls(SCANNER_HOMES, "_scan_once", mp)
        try:
            get_contexts(cut, budget=budget)
        finally:
            mp.undo()
        scans[budget] = len(calls)
    assert scans[200] <= scans[0] + 8, scans


def _scalar_run_doc(name: str) -> str:
    rng = random.Random(name)
    if name == "numbers":
        values: list[Any] = [rng.choice([7, -12, 3.25, 1e300, True, None]) for _ in range(20_000)]
        return json.dumps({"v": values}, indent=2)
    words = ["a", "tok, en", "数据", "😀", "x" * 30]
    literals = [json.dumps(rng.choice(words), ensure_ascii=False) for _ in range(20_000)]
    if name == "strings":  # one separator between every two items
        return '{"v": [' + ",\n    ".join(literals) + "]}"
    # separators of two kinds
    return '{"v": [' + "".join(lit + rng.choice([", ", ",\n "]) for lit in literals) + "1]}"


@pytest.mark.parametrize(("name", "budget"), [
    ("numbers", 1_000), ("numbers", 5_000), ("strings-mixed", 1_000),
    ("strings-mixed", 5_000)])
def test_a_scalar_run_is_read_from_its_end_only_as_far_as_the_budget_reaches(
        name: str, budget: int) -> None:
    # runs of a thousand items or more: the items split off to be measured are about as many
    # as can fit, not the whole run
    doc = _scalar_run_doc(name)
    cut = doc[:len(doc) - 300]
    mp = pytest.MonkeyPatch()
    read: list[int] = []
    sizes: list[int] = []
    real = runs_module.last_scalars

    def counting(text: str, run: Any, m: int, plain: bool) -> Any:
        read.append(min(m, run.size))
        sizes.append(run.size)
        return real(text, run, m, plain)

    mp.setattr(runs_module, "last_scalars", counting)
    try:
        ctx = get_contexts(cut, budget=budget)
    finally:
        mp.undo()
    assert ctx.hierarchy_context_for_prompt == legacy_get_contexts(
        cut, budget=budget).hierarchy_context_for_prompt
    shown = ctx.hierarchy_context_for_prompt.count("\n")
    assert read, "the runs were not read from their end"
    # those split off are at most about twice as many as the rendering shows (a line each)
    assert min(sizes) > 500, sizes
    assert sum(read) <= 2 * shown + 64, (read, sizes, shown)


@pytest.mark.parametrize("budget", [1_000, 5_000, 30_000])
def test_plain_strings_kept_by_the_scan_are_measured_without_reading_them_again(
        budget: int) -> None:
    # one separator between every two items: the lengths come from the decoded items the
    # scan kept, their places from the separator; no item is split off the text
    doc = _scalar_run_doc("strings")
    cut = doc[:len(doc) - 300]
    mp = pytest.MonkeyPatch()
    split_off = _count_calls(runs_module, "last_scalars", mp)
    whole = _count_calls(runs_module, "_scalar_items", mp)
    kept = _count_calls(runs_module, "_kept_strings_tail", mp)
    try:
        ctx = get_contexts(cut, budget=budget)
    finally:
        mp.undo()
    assert ctx.hierarchy_context_for_prompt == legacy_get_contexts(
        cut, budget=budget).hierarchy_context_for_prompt
    assert ctx.hierarchy_context_for_prompt.count("\n") > budget // 40
    assert kept and not split_off and not whole, (len(kept), len(split_off), len(whole))


def test_strings_equal_to_the_separator_are_not_taken_for_separators() -> None:
    # '", "' is both a separator between two strings and the string ", " itself: this run of
    # such strings with one other separator (',' after "x") holds as many of them as a run
    # with one separator everywhere would; the items' places are still where they are
    items = [", "] * 40 + ["x"] + [", "] * 20
    text, starts, ends = "[", [], []
    for i, item in enumerate(items):
        starts.append(len(text))
        text += json.dumps(item)
        ends.append(len(text))
        text += "," if item == "x" else ", " if i < len(items) - 1 else ""
    text += "]"
    run = syntax_module.Child(1, len(text) - 1, runs_module.RUN, len(items))
    for budget in (30, 100, 150):
        tail = runs_module.scalar_tail(text, run, budget, list(items))
        assert tail is not None
        at, k, cost, head_end, literals = tail
        assert (at, head_end) == (starts[-k], ends[-k - 1]), (budget, k)
        assert literals == [json.dumps(item) for item in items[-k:]]
        assert cost == sum(len(item) + 2 for item in items[-k:]) <= budget


@pytest.mark.parametrize("text", ['["é" ]', '["é"]', '["a", ]'])
def test_a_run_of_one_kept_string_is_read_the_general_way(text: str) -> None:
    """Found by review: the kept-strings path read the separator after the first item, and a
    run of one string has none (it raised ValueError). The scan makes no such run today;
    ``scalar_tail`` must still answer as for any run."""
    run = syntax_module.Child(1, text.index('"', 2) + 1, runs_module.RUN, 1)
    for budget in (0, 1, 3, 100):
        tail = runs_module.scalar_tail(text, run, budget, [json.loads(text[1:run.end])])
        if budget < len(text[1:run.end]):
            assert tail is None
        else:
            assert tail is not None
            at, k, cost, head_end, literals = tail
            assert (at, k, head_end, literals) == (1, 1, 1, [text[1:run.end]])
            assert cost == len(text[1:run.end])
