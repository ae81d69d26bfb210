"""get_contexts reads the document once, and gives what the previous implementation gave.

The expected results come from ``tests/core/continuation/legacy/``: a frozen copy of the
implementation before the single-read scan (it parsed the text with pydantic_core for hints,
then with the C scanner; its output is the reference the new code must reproduce exactly).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pydantic_core
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import budgetlens.continuation
from budgetlens import get_contexts
from budgetlens.continuation import syntax as syntax_module
from budgetlens.serialize import to_jsonable
from tests.core.continuation.legacy.legacy_contexts import get_contexts as legacy_get_contexts
from tests.core.continuation.scanners import SCANNER_HOMES, wrap_scanner

# ---------------------------------------------------------------- documents

_WORDS = ("budget", "token", "a, b", 'say "hi"', "back\\slash", "tab\tnew\nline", "é",
          "数据", "😀", "\u2028", "x" * 40, "")


def _report(size: int, seed: int) -> Any:
    rng = random.Random(seed)
    sections = []
    total = 0
    while total < size:
        section = {
            "id": f"s{len(sections)}", "title": " ".join(rng.choice(_WORDS) for _ in range(3)),
            "score": rng.choice([0, -0.0, 1.5, -12, 10**30, 1e300, 2.5e-8]),
            "ok": rng.random() < 0.5, "none": None,
            "tags": [rng.choice(_WORDS) for _ in range(rng.randint(0, 4))],
            "refs": [{"page": rng.randint(1, 9), "note": rng.choice(_WORDS)}
                     for _ in range(rng.randint(0, 2))],
        }
        sections.append(section)
        total += len(json.dumps(section))
    return {"document": {"meta": {"title": "T", "n": [1, 2, 3]}, "sections": sections}}


def _numbers(count: int, seed: int) -> Any:
    rng = random.Random(seed)
    return {"name": "series", "values": [rng.choice([rng.randint(-999, 999), 0.25, -1e-5])
                                         for _ in range(count)]}


def _strings(count: int, seed: int) -> Any:
    rng = random.Random(seed)
    return [", ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3))) for _ in range(count)]


def _records(count: int, seed: int) -> Any:
    rng = random.Random(seed)
    return [{"id": i, "name": rng.choice(_WORDS), "v": [i, {"w": rng.choice(_WORDS)}]}
            for i in range(count)]


def _dump(value: Any, style: int) -> str:
    if style == 0:
        return json.dumps(value, indent=2, ensure_ascii=False)
    if style == 1:
        return json.dumps(value, ensure_ascii=False)
    if style == 2:
        return json.dumps(value, indent="\t")
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True)


LARGE_DOCS = {
    "report-pretty": _dump(_report(30_000, 1), 0),
    "report-compact": _dump(_report(30_000, 2), 1),
    "report-tabs-ascii": _dump(_report(20_000, 3), 2),
    "numbers-pretty": _dump(_numbers(6_000, 4), 0),
    "numbers-compact": _dump(_numbers(6_000, 5), 3),
    "strings-pretty": _dump(_strings(3_000, 6), 0),
    "strings-compact": _dump(_strings(3_000, 7), 1),
    "records-compact": _dump(_records(1_500, 8), 3),
    "records-pretty": _dump(_records(800, 9), 0),
}


def _same(text: str, budget: int) -> None:
    new = to_jsonable(get_contexts(text, budget=budget))
    old = to_jsonable(legacy_get_contexts(text, budget=budget))
    assert new == old, f"differs for a cut at {len(text)} (budget {budget}): {text[-60:]!r}"


# ---------------------------------------------------------------- equivalence

@pytest.mark.parametrize("name", sorted(LARGE_DOCS))
def test_large_documents_cut_anywhere_match_the_previous_implementation(name: str) -> None:
    doc = LARGE_DOCS[name]
    rng = random.Random(name)
    offsets = sorted({rng.randrange(1, len(doc) + 1) for _ in range(40)}
                     | {len(doc) // 2, len(doc) - 1, len(doc)})
    for k, offset in enumerate(offsets):
        cut = doc[:offset]
        _same(cut, (0, 200, 1000, 10_000)[k % 4])
        if k % 5 == 0:
            _same(cut + "\n", 1000)  # an editor's final newline


SMALL_DOCS = [
    '{"a": [1, 2.50, -0, 1e400, 123456789012345678901234567890], "b": "x\\u00e9\\ud83d\\ude00y",'
    ' "c": {"d": null, "e": true}, "e": "tab\\tq\\"b\\\\", "f": [[], {}, [[]]], "g": false}',
    '[{"k": "😀 non-BMP"}, "\\ud83d", -0.0, 1E-7, [1, [2, [3, [4]]]], {"": ""}]',
    '```json\n{"x": {"y": [true, false, null, "z,}]"]}}\n```',
    'Here is the answer: {"a": 1, "b": [1, 2, 3, 4, 5, 6, 7, 8], "c": "end"} thanks',
    '"just a string with \\n escapes"',
]


@pytest.mark.parametrize("doc", SMALL_DOCS)
def test_small_documents_cut_at_every_offset_match_the_previous_implementation(
        doc: str) -> None:
    for offset in range(1, len(doc) + 1):
        for budget in (0, 60, 1000):
            _same(doc[:offset], budget)
        _same(doc[:offset] + "\n", 1000)
        _same(doc[:offset] + " \r\n", 30)


def test_duplicate_keys_count_once_as_json_loads_counts_them() -> None:
    # The previous implementation counted a duplicate for some values only (those its
    # pydantic_core hint made it read member by member); an object's size is now always its
    # distinct keys, as json.loads reads it.
    text = '{"a": {"k": 1, "k": 2}, "b": [1], "c": {"d": null, "\\u0064": true}, "e": "x'
    assert len(json.loads(text[:text.index(', "e"')] + "}")["c"]) == 1
    assert get_contexts(text, budget=0).hierarchy_context_for_prompt.splitlines()[2:] == [
        '  "a": <object: 1 key>,', '  "b": <array: 1 item>,', '  "c": <object: 1 key>,',
        '  "e": <string: 1 char><<<CUT>>>']
    after_comma = get_contexts(text[:text.index(' "e"')], budget=0)
    assert after_comma.hierarchy_context_for_prompt.splitlines()[4] == '  "c": <object: 1 key>,'
    after_value = get_contexts(text[:text.index(', "e"')], budget=0)
    assert after_value.hierarchy_context_for_prompt.splitlines()[4] == \
        '  "c": <object: 1 key><<<CUT>>>'


NUMBERS = st.one_of(st.integers(-10**25, 10**25),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from([0.0, -0.0, 1e300, 1e-300]))
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), NUMBERS, TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=6), st.dictionaries(TEXT, inner, max_size=5)),
    max_leaves=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=VALUES, style=st.integers(0, 3), data=st.data())
def test_random_values_cut_at_random_offsets_match_the_previous_implementation(
        value: Any, style: int, data: st.DataObject) -> None:
    doc = _dump(value, style)
    offsets = data.draw(st.lists(st.integers(1, len(doc)), min_size=1, max_size=8))
    for offset in offsets:
        budget = data.draw(st.sampled_from([0, 49, 50, 200, 1000, 10_000]))
        tail = data.draw(st.sampled_from(["", "", "\n", "  \n", "\t"]))
        _same(doc[:offset] + tail, budget)


# ---------------------------------------------------------------- one read

@contextmanager
def _counting() -> Iterator[dict[str, int]]:
    """Wrap the parsers get_contexts could use; count the characters each call reads (a
    failed call is counted to the end of what it was given)."""
    counts = {"read": 0, "pydantic_core": 0, "loads_chars": 0}
    scan_once, scanstring = syntax_module._scan_once, syntax_module._scanstring
    from_json, loads = pydantic_core.from_json, json.loads

    def wrap(fn: Callable[..., tuple[Any, int]], offset: int) -> Callable[..., tuple[Any, int]]:
        def counted(s: str, idx: int, *rest: Any) -> tuple[Any, int]:
            try:
                value, end = fn(s, idx, *rest)
            except BaseException:
                counts["read"] += len(s) - idx + offset
                raise
            counts["read"] += end - idx + offset
            return value, end
        return counted

    def counted_from_json(*args: Any, **kwargs: Any) -> Any:
        counts["pydantic_core"] += 1
        return from_json(*args, **kwargs)

    def counted_loads(s: Any, *args: Any, **kwargs: Any) -> Any:
        counts["loads_chars"] += len(s)
        return loads(s, *args, **kwargs)

    mp = pytest.MonkeyPatch()
    wrap_scanner(mp, "_scan_once", wrap(scan_once, 0))
    wrap_scanner(mp, "_scanstring", wrap(scanstring, 1))  # it starts after the quote
    mp.setattr(pydantic_core, "from_json", counted_from_json)
    mp.setattr(json, "loads", counted_loads)
    try:
        yield counts
    finally:
        mp.undo()


def _shapes() -> dict[str, str]:
    text = json.dumps({"title": "t", "text": "\n".join(f"line {i}, \"q\"" for i in range(9000))},
                      indent=2)
    return {"report": _dump(_report(300_000, 11), 0), "numbers": LARGE_DOCS["numbers-pretty"],
            "strings": LARGE_DOCS["strings-compact"], "records": LARGE_DOCS["records-compact"],
            "text": text}


@pytest.mark.parametrize("shape", ["report", "numbers", "strings", "records", "text"])
def test_get_contexts_reads_the_document_once(shape: str) -> None:
    doc = _shapes()[shape]
    for fraction in (0.3, 0.77, 0.999):
        cut = doc[:int(len(doc) * fraction)]
        with _counting() as counts:
            ctx = get_contexts(cut, budget=0)  # summary mode: the rendering reads nothing
        assert ctx.cut is not None and ctx.json_parsing_success
        assert counts["pydantic_core"] == 0
        # one pass: every character read about once (windows that failed at the open child
        # re-read a bounded part; long runs are read once, by the bulk check)
        assert len(cut) * 0.9 <= counts["read"] <= len(cut) * 1.25 + 8192, counts
        # json.loads decodes keys and short values; never the document. A long cut string is
        # decoded once more for the length its type hint states (and only that string)
        long_string = len(cut) - cut.find('"text": "') if shape == "text" else 0
        assert counts["loads_chars"] <= 4096 + long_string, counts
        scan_reads = counts["read"]
        for budget in (200, 1000, 10_000):
            with _counting() as counts:
                get_contexts(cut, budget=budget)
            assert counts["pydantic_core"] == 0
            # what the rendering reads again (the side branches it measures: what its budget
            # reaches, and up to 64 misses per level) does not grow with the document
            assert counts["read"] - scan_reads <= 6 * budget + 40_000, (budget, counts)


def test_every_module_that_holds_a_scanner_is_counted() -> None:
    # ``_counting`` wraps the C scanners in the modules of SCANNER_HOMES; a module that holds
    # its own reference and is not listed would read the text uncounted
    package = Path(budgetlens.continuation.__file__).parent
    holders = set()
    for info in pkgutil.iter_modules([str(package)]):
        module = importlib.import_module(f"budgetlens.continuation.{info.name}")
        if any(getattr(module, name, None) is getattr(syntax_module, name)
               for name in ("_scan_once", "_scanstring")):
            holders.add(module)
    assert holders == set(SCANNER_HOMES)


def test_a_complete_document_is_read_once() -> None:
    doc = LARGE_DOCS["report-pretty"]
    with _counting() as counts:
        ctx = get_contexts(doc)
    assert ctx.is_complete
    assert counts["pydantic_core"] == 0
    assert counts["read"] == len(doc)
