"""Strings without escapes taken whole at the end of a RUN are printed from the text.

When the scan kept a RUN's decoded strings and one separator stands between every two, the
strings that fit are measured from the decoded items (``runs._kept_strings_tail``) and their
literals are the text itself (``runs.SourceLiterals``): printed as that text when the
separator is the one the rendering writes (a comma, a line break and the indentation), else
with that separator replaced, never split into one string per item and joined again.
Compared with the frozen previous implementation (``tests/core/continuation/legacy/``) on
runs written with several separators, at several depths and budgets; mechanisms are counted,
never timed.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from budgetlens import get_contexts
from budgetlens.continuation import runs as runs_module
from budgetlens.serialize import to_jsonable
from tests.core.continuation.legacy.legacy_contexts import get_contexts as legacy_get_contexts

_PLAIN = ("a", "budget", "tok, en", "数据", "😀", "é", "x y")
# a string equal to a separator (", ", ","), brackets in strings: read the long way
_TRICKY = (*_PLAIN, "", ", ", ",", "{}", "[x]")


def _strings(count: int, seed: int, words: tuple[str, ...]) -> list[str]:
    rng = random.Random(seed)
    return [", ".join(rng.choice(words) for _ in range(rng.randint(1, 3)))
            for _ in range(count)]


def _docs(words: tuple[str, ...]) -> dict[str, str]:
    items = _strings(2500, 1, words)
    return {
        # the rendering's own separator at depth 1 (",\n" and two spaces): printed as written
        "indent-2-top": json.dumps(items, ensure_ascii=False, indent=2),
        # another indentation, or none: the separator is replaced
        "indent-4-top": json.dumps(items, ensure_ascii=False, indent=4),
        "compact": json.dumps(items, ensure_ascii=False),
        "tight": json.dumps(items, ensure_ascii=False, separators=(",", ":")),
        # one level down: ",\n    " is the rendering's separator there
        "indent-2-nested": json.dumps({"meta": {"n": 1}, "items": items}, ensure_ascii=False,
                                      indent=2),
        "indent-2-deeper": json.dumps({"a": [{"b": items}]}, ensure_ascii=False, indent=2),
    }


DOCS = _docs(_PLAIN)
TRICKY = _docs(_TRICKY)


def _same(text: str, budget: int) -> None:
    new = to_jsonable(get_contexts(text, budget=budget))
    old = to_jsonable(legacy_get_contexts(text, budget=budget))
    assert new == old, f"differs for a cut at {len(text)} (budget {budget}): {text[-60:]!r}"


@pytest.mark.parametrize("tricky", [False, True])
@pytest.mark.parametrize("name", sorted(DOCS))
def test_strings_taken_whole_match_the_previous_implementation(name: str, tricky: bool) -> None:
    doc = (TRICKY if tricky else DOCS)[name]
    rng = random.Random(name)
    offsets = sorted({rng.randrange(len(doc) // 2, len(doc) + 1) for _ in range(10)}
                     | {len(doc) - 1, len(doc) - 300})
    for k, offset in enumerate(offsets):
        _same(doc[:offset], (60, 200, 1000, 5_000, 30_000)[k % 5])


@pytest.mark.parametrize(("name", "replaced"), [
    ("indent-2-top", False), ("indent-2-nested", False), ("indent-2-deeper", False),
    ("indent-4-top", True), ("compact", True), ("tight", True)])
@pytest.mark.parametrize("budget", [1_000, 5_000])
def test_strings_taken_whole_are_printed_from_the_text(name: str, replaced: bool,
                                                       budget: int) -> None:
    doc = DOCS[name]
    cut = doc[:doc.rindex('",', 0, len(doc) - 200) + 2]  # after a comma, past many strings
    joined: list[bool] = []
    real_joined = runs_module.SourceLiterals.joined

    def counting(self: runs_module.SourceLiterals, text: str, between: str) -> str:
        joined.append(between != self.sep)
        return real_joined(self, text, between)

    def unexpected(*args: Any) -> Any:
        raise AssertionError("the literals were read again")

    mp = pytest.MonkeyPatch()
    mp.setattr(runs_module.SourceLiterals, "joined", counting)
    mp.setattr("budgetlens.continuation.render.scalar_literals", unexpected)
    try:
        ctx = get_contexts(cut, budget=budget)
    finally:
        mp.undo()
    assert ctx.hierarchy_context_for_prompt == legacy_get_contexts(
        cut, budget=budget).hierarchy_context_for_prompt
    assert ctx.hierarchy_context_for_prompt.count("\n") > budget // 40
    # RUNs of strings in full, printed from the text (their separator replaced or not)
    assert joined and set(joined) == {replaced}, joined
