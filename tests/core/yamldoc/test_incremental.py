"""Re-reading a text edited inside one scalar (``yamldoc.incremental``) answers exactly what
reading it in full answers.

The differential tests edit generated pipelines at random (characters typed, deleted and
replaced anywhere, most of them in or next to a scalar, in chains: each text is the one
before it edited once more) and compare ``parse_yaml`` of every version with the same text
read in full with re-reading switched off: the same plain values (types included), the same
spans in the same order (offsets, kinds, styles, ranges) and the same problems. The mechanism
tests count what a one-digit edit does: no event of the parser is read, the value tree is
copied only along the edited path, and what is kept stays bounded.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budgetlens.yamldoc import incremental
from budgetlens.yamldoc import parse as yaml_parse
from budgetlens.yamldoc.parse import YamlDocument, YamlProblem, parse_yaml
from tests.core.yamldoc.reference_reader import parse_yaml_reference
from tests.core.yamldoc.test_reader_equivalence import _spans, _strict

HAVE_LIBYAML = bool(getattr(yaml, "__with_libyaml__", False))
LOADERS = {"pure-python": yaml.SafeLoader}
if HAVE_LIBYAML:
    LOADERS["libyaml"] = yaml.CSafeLoader


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    incremental.clear()
    yield
    incremental.clear()


@pytest.fixture(params=sorted(LOADERS))
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    chosen = LOADERS[request.param]
    monkeypatch.setattr(yaml_parse, "_LOADER", chosen)
    return chosen


def full_read(text: str) -> tuple[YamlDocument | None, list[YamlProblem]]:
    saved = incremental.ENABLED
    incremental.ENABLED = False
    try:
        return parse_yaml(text)
    finally:
        incremental.ENABLED = saved


def assert_same_as_full(text: str) -> YamlDocument | None:
    doc, problems = parse_yaml(text)
    full, full_problems = full_read(text)
    assert problems == full_problems, text
    assert (doc is None) == (full is None), text
    if doc is not None and full is not None:
        assert _strict(doc.value, full.value), text
        assert _spans(doc) == _spans(full), text
    return doc


# ----------------------------------------------------------------- generated pipelines

WORDS = ["alpha", "beta", "x1", "step", "42", "3.5", "-7", "true", "null", "~", "yes", "0x1F",
         "1_000", "2024-01-02", "é🚀", "a b", ".5", "+3", "call_model"]


def _scalar(rng: random.Random) -> str:
    word = rng.choice(WORDS)
    style = rng.random()
    if style < 0.55:
        return word
    if style < 0.75:
        return f'"{word} {{q}}"' if rng.random() < 0.5 else f'"{word}\\t"'
    if style < 0.9:
        return f"'{word} it''s'" if rng.random() < 0.3 else f"'{word}'"
    return f"[{word}, {rng.choice(WORDS)}]" if rng.random() < 0.5 else f"{{k: {word}, n: 1}}"


def document(rng: random.Random) -> str:
    lines = ["extends: base.yaml", "settings:",
             f"  max_context_tokens: {'&ctx ' if rng.random() < 0.3 else ''}{rng.randint(1, 9999)}"
             + ("  # the budget" if rng.random() < 0.3 else ""),
             f"  note: {_scalar(rng)}", "steps:"]
    for i in range(rng.randint(1, 8)):
        lines.append(f"  - id: step_{i:04d}")
        lines.append(f"    type: {rng.choice(['call_model', 'tool', 'call_modl'])}")
        lines.append(f"    prompt_key: {_scalar(rng)}")
        if rng.random() < 0.5:
            lines.append(f"    max_output_tokens: {rng.randint(0, 5000)}")
        if rng.random() < 0.3:
            lines.append("    user_parts:")
            lines.append(f"      template: {_scalar(rng)}")
        if rng.random() < 0.2:
            lines.append("    text: |")
            lines.append(f"      {rng.choice(WORDS)} line")
        if rng.random() < 0.2:
            lines.append("    tags:")
            lines.extend(f"      - {_scalar(rng)}" for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.15 and "&ctx" in lines[2]:
            lines.append("    limit: *ctx")
        if rng.random() < 0.1:
            lines.append("    # a comment")
    eol = "\r\n" if rng.random() < 0.2 else "\n"
    bom = "\ufeff" if rng.random() < 0.1 else ""
    return bom + eol.join(lines) + (eol if rng.random() < 0.9 else "")


TYPED = list("0123456789") * 3 + list("abxyz_.-+/ ") * 2 + [
    ":", "#", '"', "'", ",", "\n", "&", "*", "!", "[", "]", "{", "}", "\\", "é", "🚀", "\t",
    "<<", "=", "%", "|", "?", "\r", " #", ": ", "- "]
SCALARISH = re.compile(r"[\w.'\"+-]+")


def edit(rng: random.Random, text: str) -> str:
    """One random edit, most of the time in or next to a scalar-looking run."""
    runs = [m.span() for m in SCALARISH.finditer(text)]
    if runs and rng.random() < 0.85:
        start, end = rng.choice(runs)
        at = rng.randint(max(0, start - 1), min(len(text), end + 1))
    else:
        at = rng.randint(0, len(text))
    kind = rng.random()
    if kind < 0.45:  # type
        return text[:at] + rng.choice(TYPED) + text[at:]
    if kind < 0.8:  # delete one or two
        return text[:at] + text[at + rng.choice([1, 1, 2]):]
    return text[:at] + rng.choice(TYPED) + text[at + 1:]  # replace one


@pytest.mark.parametrize("seed", range(6))
def test_random_edits_read_as_in_full(seed: int, loader: Any) -> None:
    # chains of edits: each text is the one before edited once more, or, after an edit that
    # broke the document, the last good one edited again (as a typo fixed)
    rng = random.Random(seed)
    before = dict(incremental.counts)
    versions = 0
    for _ in range(25):
        good = document(rng)
        assert assert_same_as_full(good) is not None
        for _ in range(40):
            text = edit(rng, good)
            if assert_same_as_full(text) is not None:
                good = text
            versions += 1
    assert versions == 1000
    answered = incremental.counts["edit"] - before["edit"]
    # the edits are meant to land in scalars: a good share is answered without reading
    assert answered >= versions // 8


def test_many_edits_of_one_pipeline_move_offsets_correctly(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    # a long chain of accepted edits in many scalars, with the cuts rebuilt into full spans
    # now and then: every version equals its full reading
    monkeypatch.setattr(incremental, "MAX_CUTS", 5)
    rng = random.Random(7)
    text = "\n".join(["a: 1", "b: 'x'", "steps:"] + [
        f"  - {{id: s{i}, n: {i}}}\n  - k: \"v{i}\"  # c\n    m: [w{i}, {i}]" for i in range(30)]
    ) + "\n"
    assert_same_as_full(text)
    before = incremental.counts["edit"]
    for _ in range(400):
        runs = [m.span() for m in re.finditer(r"(?<=[ \[{'\"])[\w]+(?=[,\]}'\"\n])", text)]
        start, end = rng.choice(runs)
        at = rng.randint(start, end)
        if rng.random() < 0.6 or end - start < 2:
            text = text[:at] + rng.choice("0123456789abc") + text[at:]
        else:
            at = min(at, end - 1)
            text = text[:at] + text[at + 1:]
        assert_same_as_full(text)
    assert incremental.counts["edit"] - before >= 300


KEYS = st.sampled_from(["a", "b", "steps", "id", "n", "é"])
SCALARS = st.one_of(st.integers(-10**4, 10**4), st.booleans(), st.none(),
                    st.text(alphabet="abc xyz019.-_'\"\\:#é🚀", max_size=8))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)), max_leaves=12)
EDITS = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 2),
                           st.sampled_from([*TYPED, ""])), min_size=1, max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(VALUES, st.booleans(), EDITS)
def test_dumped_documents_edited_read_as_in_full(loader: Any, value: Any, flow: bool,
                                                 edits: list[tuple[int, int, str]]) -> None:
    incremental.clear()
    text = yaml.safe_dump({"root": value}, default_flow_style=flow, allow_unicode=True)
    assert_same_as_full(text)
    for at, cut, typed in edits:
        at %= len(text) + 1
        text = text[:at] + typed + text[at + cut:]
        doc = assert_same_as_full(text)
        ref, _ = parse_yaml_reference(text, loader)
        assert (doc is None) == (ref is None)
        if doc is not None and ref is not None:
            assert _strict(doc.value, ref.value) and _spans(doc) == _spans(ref)


# ------------------------------------------------------------------- the mechanism


def _step(i: int) -> str:
    return (f"  - id: step_{i:04d}\n    type: call_model\n    prompt_key: p{i % 20:02d}\n"
            f"    user_parts:\n      template: \"Question {{question}} ({i})\"\n"
            f"    max_output_tokens: {512 + i}\n")


BIG = "settings:\n  max_context_tokens: 3000\nsteps:\n" + "".join(_step(i) for i in range(200))


def _counting(loader: Any, calls: list[int]) -> Any:
    class Counting(loader):  # type: ignore[misc,valid-type]
        def get_event(self) -> Any:
            calls.append(1)
            return super().get_event()
    return Counting


def test_a_one_digit_edit_reads_no_event_and_copies_only_its_path(
        loader: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(yaml_parse, "_LOADER", _counting(loader, calls))
    old, _ = parse_yaml(BIG)
    assert old is not None and len(calls) > 200 * 15  # read in full: every event
    at = BIG.index("max_output_tokens: 612") + len("max_output_tokens: 61")
    edited = BIG[:at] + "9" + BIG[at + 1:]  # 612 -> 619, step 100
    calls.clear()
    new, problems = parse_yaml(edited)
    assert calls == [] and problems == []
    assert new is not None and new.value["steps"][100]["max_output_tokens"] == 619
    # the value tree is copied along ("steps", 100, ...) only; every other step is shared
    assert new.value is not old.value and new.value["steps"] is not old.value["steps"]
    assert new.value["steps"][100] is not old.value["steps"][100]
    assert all(new.value["steps"][i] is old.value["steps"][i] for i in range(200) if i != 100)
    assert old.value["steps"][100]["max_output_tokens"] == 612  # the earlier answer stands
    # and it is the full reading's answer
    full, _ = full_read(edited)
    assert full is not None and _strict(new.value, full.value) and _spans(new) == _spans(full)


def test_a_longer_value_moves_every_later_offset(loader: Any) -> None:
    parse_yaml(BIG)
    at = BIG.index("max_context_tokens: 3000") + len("max_context_tokens: 3000")
    edited = BIG[:at] + "12" + BIG[at:]  # two characters typed on the second line
    before = incremental.counts["edit"]
    doc, _ = parse_yaml(edited)
    assert incremental.counts["edit"] == before + 1
    assert doc is not None and doc.value["settings"]["max_context_tokens"] == 300012
    span = doc.spans[("steps", 199, "max_output_tokens")]
    assert edited[span.start:span.end] == "711"
    assert edited[span.key_start:span.key_end] == "max_output_tokens"  # type: ignore[misc]
    assert span.value.start.line == 3 + 6 * 199 + 5  # counted by hand: 6 lines per step


@pytest.mark.parametrize(("old", "new"), [
    ("a: 1\nb: 2\n", "a: 1\nbb: 2\n"),  # a key
    ("a: &x 1\nb: *x\n", "a: &x 12\nb: *x\n"),  # an anchored scalar
    ("a: !!str 1\n", "a: !!str 12\n"),  # a tagged one
    ("a: |\n  x\n", "a: |\n  xy\n"),  # a block scalar
    ("a: 1\n", "a: 1 #\n"),  # a comment typed after it
    ("a: 1\n", "a: 1:\n"),  # a colon
    ("a: [1, 2]\n", "a: [1, 2 ]\n"),  # a blank at its end
    ("a: 'x'\n", "a: 'x''\n"),  # a quote
    ('a: "x"\n', 'a: "x\\"\n'),  # an escape
    ("a: x\n", "a: <<\n"),  # a value the one-pass reader does not take
    ("a: x\nb: y\n", "a: xy\nb: yx\n"),  # two scalars
])
def test_other_edits_are_read_in_full(old: str, new: str, loader: Any) -> None:
    parse_yaml(old)
    before = incremental.counts["edit"]
    assert_same_as_full(new)
    assert incremental.counts["edit"] == before


def test_the_same_text_again_is_the_same_answer(loader: Any) -> None:
    first, _ = parse_yaml(BIG)
    before = incremental.counts["same"]
    again, _ = parse_yaml(BIG)
    assert incremental.counts["same"] == before + 1
    assert first is not None and again is not None and again.value is first.value


def test_what_is_kept_stays_bounded(loader: Any) -> None:
    for i in range(incremental.CAPACITY + 10):
        parse_yaml(f"a: {i}\nb: [{i}, x]\n")
    assert len(incremental._READS) == incremental.CAPACITY
    for memo in __import__("budgetlens.yamldoc.simple", fromlist=["_PLAIN"])._PLAIN.values():
        assert len(memo) <= 20_000


def test_the_text_kept_stays_under_its_cap(loader: Any) -> None:
    big = "a: 1\nb: [" + ", ".join(["x"] * 60_000) + "]\n"  # 180,000 characters
    for i in range(5):
        parse_yaml(f"v: {i}\n" + big)
    assert sum(len(t) for t in incremental._READS) <= incremental.MAX_KEPT_CHARS
    assert len(incremental._READS) == incremental.MAX_KEPT_CHARS // len(big)
    parse_yaml("x" * (incremental.MAX_KEPT_CHARS + 1))  # longer than the cap: not kept
    assert all(len(t) <= incremental.MAX_KEPT_CHARS for t in incremental._READS)


def test_a_quoted_scalar_is_re_read_in_place_only_with_printable_characters() -> None:
    """The quoted shapes take exactly the characters that keep a scalar on its line: tab,
    \\x20-\\x7e, \\xa0-\\u2027, \\u202a-\\ud7ff, \\ue000-\\ufefe, \\uff00-\\ufffd and the astral
    planes (YAML's printable set without line breaks and the BOM), checked on every code
    point in both quote styles."""
    allowed = [(0x9, 0x9), (0x20, 0x7E), (0xA0, 0x2027), (0x202A, 0xD7FF), (0xE000, 0xFEFE),
               (0xFF00, 0xFFFD), (0x10000, 0x10FFFF)]

    def printable(code: int) -> bool:
        return any(lo <= code <= hi for lo, hi in allowed)
    for quote in ("'", '"'):
        shape = incremental._SHAPES[quote]
        wrong = [code for code in range(0x110000)
                 if chr(code) not in (quote, "\\")
                 and (shape.match(f"{quote}{chr(code)}{quote}") is not None) != printable(code)]
        assert wrong == [], quote
