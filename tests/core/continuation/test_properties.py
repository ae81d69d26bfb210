"""Property tests over generated JSON, cut at every position (hypothesis).

The documents are serialised here by a small serialiser of the test's own, which records
where every value and every key sits; those spans are the independent oracle.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budgetlens import get_contexts, merge_with_overlap

MARKER = "\x00CUT\x00"  # a raw NUL never appears in serialised JSON: unambiguous


@dataclass(frozen=True)
class Num:
    """A number literal, kept exactly as generated."""

    literal: str


NUMBERS = st.from_regex(
    r"\A-?(0|[1-9][0-9]{0,4})(\.[0-9]{1,3})?([eE][+-]?[0-9]{1,2})?\Z").map(Num)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
LEAVES = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)
STYLES = st.sampled_from([
    {"ascii": False, "indent": None, "sep": (", ", ": ")},
    {"ascii": True, "indent": None, "sep": (",", ":")},
    {"ascii": False, "indent": 2, "sep": (",", ": ")},
])


@dataclass
class Span:
    path: tuple[str | int, ...]
    start: int
    end: int


@dataclass
class Doc:
    text: str
    values: list[Span]            # every value
    keys: list[tuple[int, int]]   # every key: (start of its quote, offset of its colon)


def serialise(value: Any, style: dict[str, Any]) -> Doc:
    out: list[str] = []
    values: list[Span] = []
    keys: list[tuple[int, int]] = []
    size = 0

    def emit(s: str) -> None:
        nonlocal size
        out.append(s)
        size += len(s)

    def newline(depth: int) -> None:
        if style["indent"] is not None:
            emit("\n" + " " * (style["indent"] * depth))

    def walk(v: Any, path: tuple[str | int, ...], depth: int) -> None:
        start = size
        if isinstance(v, Num):
            emit(v.literal)
        elif isinstance(v, str) or v is None or isinstance(v, bool):
            emit(json.dumps(v, ensure_ascii=style["ascii"]))
        elif isinstance(v, list):
            emit("[")
            for i, item in enumerate(v):
                if i:
                    emit(style["sep"][0])
                newline(depth + 1)
                walk(item, (*path, i), depth + 1)
            if v:
                newline(depth)
            emit("]")
        else:
            emit("{")
            for i, (k, item) in enumerate(v.items()):
                if i:
                    emit(style["sep"][0])
                newline(depth + 1)
                key_start = size
                emit(json.dumps(k, ensure_ascii=style["ascii"]))
                keys.append((key_start, size))
                emit(style["sep"][1])
                walk(item, (*path, k), depth + 1)
            if v:
                newline(depth)
            emit("}")
        values.append(Span(path, start, size))

    walk(value, (), 0)
    return Doc("".join(out), values, keys)


def lookup(value: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


_KEY_PREFIX = re.compile(r'"(?:[^"\\]|\\.)*": ')
_STRUCTURE = {"{", "[", "}", "]", "{}", "[]", "{...}", "[...]", "...", ""}


def non_structure_chars(rendering: str, cut_in_key: bool) -> int:
    """Characters of values shown in the rendering (structure, hints, marker excluded)."""
    total = 0
    for line in rendering.split("\n")[1:]:  # the first line is the header
        rest = line.strip(" ")
        at_cut = MARKER in rest
        if at_cut:
            rest = rest[:rest.index(MARKER)]
            if cut_in_key:
                continue  # a partial or complete key before its colon: structure
        if rest.endswith(",") and not at_cut:
            rest = rest[:-1]
        m = _KEY_PREFIX.match(rest)
        if m:
            rest = rest[m.end():]
        if rest in _STRUCTURE or (rest.startswith("<") and rest.endswith(">")):
            continue
        total += len(rest)
    return total


PROPERTY_SETTINGS = settings(max_examples=100, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow])


@PROPERTY_SETTINGS
@given(VALUES, STYLES)
def test_complete_part_parses_and_keeps_every_completed_value(value: Any,
                                                              style: dict[str, Any]) -> None:
    doc = serialise(value, style)
    original = doc.text
    for cut in range(1, len(original) + 1):
        ctx = get_contexts(original[:cut])
        assert ctx.json_parsing_success, (original[:cut], ctx.description)
        closed = json.loads(ctx.complete_part)
        for span in doc.values:
            if span.end <= cut:
                expected = json.loads(original[span.start:span.end])
                assert lookup(closed, span.path) == expected, (original[:cut], span.path)
        if cut == len(original) or _top_level_number_prefix(value, original[:cut]):
            assert ctx.is_complete and ctx.overlap_context == ""
        else:
            assert ctx.cut is not None and ctx.cut.offset == cut
            assert ctx.hierarchy_context == original[:cut]


@PROPERTY_SETTINGS
@given(VALUES, STYLES)
def test_merge_of_the_cut_text_with_the_rest_reproduces_the_original(
        value: Any, style: dict[str, Any]) -> None:
    original = serialise(value, style).text
    for cut in range(1, len(original)):
        base = get_contexts(original[:cut]).hierarchy_context
        for k in (1, 8, 32):
            if k > cut:
                continue
            fragment = original[cut - k:]
            result = merge_with_overlap(base, fragment)
            assert result.has_overlap or result.restarted
            if result.restarted:  # the fragment begins like the document: documented rule
                assert fragment.lstrip().startswith(base.lstrip()[:16])
                continue
            longest = max(n for n in range(1, min(len(base), len(fragment)) + 1)
                          if base.endswith(fragment[:n]))
            if longest == k:
                assert result.merged == original
            else:
                # periodic text at the cut: the longest match wins, as documented
                assert result.overlap_length == longest
                assert result.merged == base + fragment[longest:]


def _top_level_number_prefix(value: Any, prefix: str) -> bool:
    return isinstance(value, Num) and re.fullmatch(
        r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?", prefix) is not None


def _cut_in_key(doc: Doc, cut: int) -> bool:
    """The cut falls inside a key or between a key and its colon."""
    return any(start < cut <= colon for start, colon in doc.keys)


@PROPERTY_SETTINGS
@given(VALUES, STYLES, st.integers(min_value=0, max_value=300))
def test_rendering_never_exceeds_the_budget_in_value_characters(
        value: Any, style: dict[str, Any], budget: int) -> None:
    doc = serialise(value, style)
    original = doc.text
    for cut in range(1, len(original)):
        ctx = get_contexts(original[:cut], budget=budget, marker=MARKER)
        if _top_level_number_prefix(value, original[:cut]):
            assert ctx.is_complete  # "1" of "10" is a whole document by itself
            continue
        rendering = ctx.hierarchy_context_for_prompt
        assert rendering.count(MARKER) == 2  # in the header and at the cut
        assert rendering.endswith(MARKER) or rendering.rstrip(",").endswith(MARKER)
        shown = non_structure_chars(rendering, _cut_in_key(doc, cut))
        assert shown <= budget, (original[:cut], budget, rendering)


SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT)
LONG_ARRAYS = st.lists(st.one_of(SCALARS, SCALARS, SCALARS, st.lists(SCALARS, max_size=2)),
                       min_size=520, max_size=560)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(LONG_ARRAYS, STYLES, st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6),
       st.integers(min_value=0, max_value=4000))
def test_long_arrays_skipped_in_bulk_keep_every_item(
        items: list[Any], style: dict[str, Any], where: list[float], budget: int) -> None:
    doc = serialise({"k": items}, style)
    original = doc.text
    for fraction in where:
        cut = max(1, min(len(original) - 1, int(len(original) * fraction)))
        ctx = get_contexts(original[:cut], budget=budget, marker=MARKER)
        closed = json.loads(ctx.complete_part)
        for span in doc.values:
            if span.end <= cut:
                assert lookup(closed, span.path) == json.loads(original[span.start:span.end])
        assert non_structure_chars(ctx.hierarchy_context_for_prompt,
                                   _cut_in_key(doc, cut)) <= budget
        merged = merge_with_overlap(ctx.hierarchy_context, original[cut - 1:]).merged
        assert merged == original or merged.endswith(original[cut:])


EDITS = st.lists(st.tuples(st.floats(0.0, 1.0), st.sampled_from(["insert", "delete", "replace"]),
                           st.sampled_from(list('{}[]",:\\ 0-.eEtfnu\x01xé'))),
                 min_size=1, max_size=3)


@PROPERTY_SETTINGS
@given(st.one_of(st.lists(VALUES, min_size=1, max_size=4),
                 st.dictionaries(TEXT, VALUES, min_size=1, max_size=4)), STYLES, EDITS)
def test_agrees_with_json_loads_on_damaged_documents(value: Any, style: dict[str, Any],
                                                     edits: list[tuple[float, str, str]]) -> None:
    text = serialise(value, style).text
    for where, how, char in edits:
        i = int(where * len(text))
        if how == "insert":
            text = text[:i] + char + text[i:]
        elif how == "delete":
            text = text[:i] + text[i + 1:]
        else:
            text = text[:i] + char + text[i + 1:]
    ctx = get_contexts(text)
    try:
        expected = json.loads(text)
        valid = True
    except ValueError:
        valid = False
    plain = not ctx.skipped_prefix.strip() and not ctx.skipped_suffix
    if valid and text.strip()[:1] in ("{", "["):
        assert ctx.is_complete and plain
        assert json.loads(ctx.complete_part) == expected
    if ctx.is_complete and plain:
        assert valid
    if ctx.json_parsing_success:
        json.loads(ctx.complete_part)
        if ctx.cut is not None:
            assert not valid
    else:
        assert ctx.error is not None and not valid


@PROPERTY_SETTINGS
@given(VALUES, STYLES, st.sampled_from(["\n", "\r\n", "\t\n  ", "\n\n"]))
def test_a_final_newline_after_any_cut_changes_nothing_but_the_trailing_text(
        value: Any, style: dict[str, Any], ending: str) -> None:
    original = serialise(value, style).text
    for cut in range(1, len(original) + 1):
        plain = get_contexts(original[:cut])
        saved = get_contexts(original[:cut] + ending)
        assert saved.json_parsing_success, (original[:cut] + ending, saved.description)
        assert saved.complete_part == plain.complete_part, original[:cut]
        assert (saved.cut is None) == (plain.cut is None)
        if saved.cut is not None and plain.cut is not None:
            assert saved.cut.path == plain.cut.path
            assert saved.cut.offset in (cut, cut + len(ending))
