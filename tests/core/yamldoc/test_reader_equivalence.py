"""The positioned YAML reader over events answers exactly what the reader before it answered.

The reference is the reader before it, frozen in ``reference_reader.py`` (``yaml.compose``
with PyYAML's composer, then the node graph converted). Every document of the corpus (hand
picked edge cases, the example and fixture files, generated pipelines, hypothesis-made
documents and mutations of them) is read by each reader of ``READERS`` and compared with the
reference over the same parser (libyaml's, or PyYAML's pure-Python one): the same plain values
(types included), the same spans in the same order, the same problems (codes, ranges,
messages). Positions are also checked against the text itself: a scalar's span holds its
characters, whatever BOM, line ends, tabs or non-BMP characters come before it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budgetlens.source import Position, Range
from budgetlens.yamldoc import compose as yaml_compose
from budgetlens.yamldoc import parse as yaml_parse
from budgetlens.yamldoc.parse import MAX_DEPTH, NodeKind, YamlDocument, YamlProblem, parse_yaml
from tests.core.yamldoc.reference_reader import parse_yaml_reference

ROOT = Path(__file__).resolve().parents[3]
HAVE_LIBYAML = bool(getattr(yaml, "__with_libyaml__", False))

#: name -> (loader, try the one-pass reader of simple documents first)
READERS: dict[str, tuple[Any, bool]] = {
    "pure-python": (yaml.SafeLoader, True),
    "pure-python-general": (yaml.SafeLoader, False),
}
if HAVE_LIBYAML:
    READERS["libyaml"] = (yaml.CSafeLoader, True)
    READERS["libyaml-general"] = (yaml.CSafeLoader, False)


@pytest.fixture(params=sorted(READERS))
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    loader, simple_first = READERS[request.param]
    monkeypatch.setattr(yaml_parse, "_LOADER", loader)
    monkeypatch.setattr(yaml_parse, "SIMPLE_FIRST", simple_first)
    return loader


def _strict(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down (``1 == True`` is not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_strict(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_strict(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _spans(doc: YamlDocument | None) -> list[tuple[Any, ...]]:
    if doc is None:
        return []
    return [(path, s.start, s.end, s.kind, s.flow, s.key_start, s.key_end, s.style, s.value,
             s.key) for path, s in doc.spans.items()]


def assert_same_as_reference(text: str, loader: Any) -> tuple[YamlDocument | None,
                                                               list[YamlProblem]]:
    doc, problems = parse_yaml(text)
    ref, ref_problems = parse_yaml_reference(text, loader)
    assert problems == ref_problems
    assert (doc is None) == (ref is None)
    if doc is not None and ref is not None:
        assert _strict(doc.value, ref.value)
        assert _spans(doc) == _spans(ref)
        assert doc.spans == ref.spans
    return doc, problems


# --------------------------------------------------------------------------- the corpus

EDGE_CASES = [
    "", "# only a comment\n", "---\n", "--- \n...\n", "~", "a", "'a'", "- 1\n- 2\n",
    "a: 1\n", "\ufeffa: 1\r\nb: 22\r\n", "a: 1\rb: 🚀x\rc: [1,\r 2]\r",
    "a: 1\r\n\rb: 2\n\r\nc: 3", "\ta: 1\n", "a:\t1\nb: \t'x'\t# t\n",
    "名前: 🚀\nsettings:\n  max_context_tokens: 4096  # c\n  list: [1, 22]\n",
    "😀😀: 😀\n𝔘: [𝔞, '𝔟', \"𝔠\\t\"]\n", "k: \"é\\u00e9\\U0001F600\"\n",
    "steps:\n  - id: a\n    t: |\n      line {x}\n      more\n    n: 5\n",
    "t: >\n  folded\n  text\n\n  para\nu: |-\n  keep\nv: |+\n  keep\n\n",
    "p: plain\n  continued\n  lines\nq: 'single\n  quoted'\n",
    "i: 7\nf: 1.5\nb: true\nn: ~\ns: '7'\nd: 2024-01-02\nts: 2001-12-14t21:59:43.10-05:00\n",
    "y: [yes, No, ON, off, y, n, True, FALSE, Null, NULL, null, '', ~]\n",
    "n: [0o17, 017, 0x1F, 0b101, 1_000, 190:20:30, -0, +12, 1e3, 1.0e+3, .5, -.inf, .NaN, .Inf]\n",
    "n: [08, 0.1.2, 1__0, 12e3, 6.8523015e+5, 685.230_15e+03, 685_230.15, 190:20:30.15]\n",
    "t: [!!int '7', !!str 7, !!float '1', !!bool 'yes', !!null '', !!str, ! 12, !!timestamp x]\n",
    "a: !!binary aGk=\n", "a: !!set {x, y}\n", "a: !!omap [x: 1]\n", "a: !custom 1\n",
    "a: !!python/object/apply:os.system [x]\n", "!!map {a: 1}", "!!seq [1]", "!!str {a: 1}",
    "a: 1\na: 2\n", "a: {x: 1}\na: [2]\nb: 3\nb: {y: 4}\n", "a: 1\nb:\n  c: 1\n  c: 2\n",
    "1: a\ntrue: b\n~: c\n1.5: d\n'<<': e\n", "? a\n: 1\n? b\n", "? [a]\n: 1\n",
    "{[1]: 2}\n", "? {a: 1}\n: 2\n", "[a, b]: 1\n",
    "base: &b {x: 1, y: 2}\nchild:\n  <<: *b\n  y: 3\n",
    "base: &b {x: 1}\nuse:\n  <<: *b\n  y: [*b, *b]\n",
    "a: &a {x: 1, z: [1, 2]}\nb: &b {y: 2, x: 9}\nc:\n  <<: [*a, *b]\n  w: 0\n",
    "a: &a {x: 1}\nc:\n  w: 0\n  <<: *a\n  <<: {x: 5, q: 6}\n",
    "c: {<<: [1, 2]}\n", "c: {<<: 5}\n", "c: {<<: {a: 1}, a: 2}\n", "c: [<<]\n",
    "c:\n  <<: &m {a: &n [1, 2]}\n  b: *n\nd: *m\n",
    "settings:\n  max_context_tokens: &ctx 8000\n  other: *ctx\nsteps:\n  - n: *ctx\n",
    "a: &x 1\nb: *x\nc: [*x, {d: *x}]\n", "&r 1", "- &s 'q'\n- *s\n- &t |\n  x\n- *t\n",
    "a: &x 1\n&y b: 2\nc: *y\n", "a: &x 1\n*x : 2\n", "a: &x 1\nb: &x 2\nc: *x\n",
    "a: &x 1\nb: [*x, *y]\n", "a: &x 1\nb: {<<: *x}\n", "a: &x !!int '7'\nb: *x\n",
    "a: &a 1\nb: [" + ", ".join(["*a"] * 20_000) + "]\n",
    "a: &a 1\nb: [" + ", ".join(["*a"] * 20_001) + "]\n",
    "a: &x [*x]\n", "a: &x {b: *x}\n", "a: *x\n", "a: &x 1\nb: &x 2\n", "&a a: *a\n",
    "? &k key\n: v\nother: *k\n", "*a", "&a [1, *a]",
    "a: 1\n---\nb: 2\n", "--- 1\n--- [\n", "--- 1\n...\n--- 2\n", "%YAML 1.1\n---\na: 1\n",
    "%YAML 9\n", "%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n",
    "'a\n", "a: b: c", "{{{{", "]", "- [", "a: [\n", "a: 'x\n", "\x00\x01", "a: \x07\n",
    "a:\n  - 1\n - 2\n", "a: 1\n b: 2\n", "- a\nb: 1\n", "a: |\n x\n  y\n z\n",
    "x: " + "9" * 5000 + "\n", "x: [" + "9" * 5000 + "]\n", "x: !!int '" + "9" * 5000 + "'\n",
    "[" * 64 + "]" * 64, "[" * 65 + "]" * 65, "- " * 66 + "x\n", "{a: " * 70 + "1" + "}" * 70,
    "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in zip("abcdefg", "bcdefgh",
                                                                     strict=True)),
    "a: &a [1, 2, 3]\nb: [" + ", ".join(["*a"] * 5000) + "]\n",
    "a: &a [1, 2, 3]\nb: [" + ", ".join(["*a"] * 5001) + "]\n",
    "flow: {a: [1, {b: c}], 'q': \"w\"}\nblock:\n  - [x, y]\n  - {z: 1}\n",
    "a:   # comment\n  b: 1   \n\n\n# tail\n", "a: 1 # c\n...\n# after\n",
    "- - - x\n  - y\n- z\n", "-\n- ~\n- \n", "a:\nb:\n", "a: ''\nb: \"\"\n",
]


def _files() -> Iterator[Path]:
    for pattern in ("examples/**/*.yaml", "tests/**/*.yaml", "shared_core/**/*.yaml",
                    ".pre-commit-hooks.yaml"):
        yield from sorted(ROOT.glob(pattern))


FILES = [str(p.relative_to(ROOT)) for p in _files()]


def _step(i: int) -> str:
    return (f"  - id: step_{i:04d}\n    type: call_model\n    prompt_key: p{i % 20:02d}\n"
            f"    use_history: {'true' if i % 3 == 0 else 'false'}\n    user_parts:\n"
            f"      template: \"Question {{question}} with {{context}} ({i})\"\n"
            f"    max_output_tokens: {512 + i % 256}\n")


GENERATED = {
    "pipeline": "extends: base4.yaml\nsettings:\n  max_context_tokens: 3000\nsteps:\n"
                + "".join(_step(i) for i in range(60)),
    "pipeline-crlf": ("settings:\n  max_context_tokens: &c 3000\nsteps:\n"
                      + "".join(_step(i) for i in range(30))).replace("\n", "\r\n")
                     + "  - {id: last, max_output_tokens: *c}\r\n",
}


def test_the_corpus_has_the_example_files() -> None:
    assert "examples/pipelines/long_report.yaml" in FILES
    assert len(FILES) >= 8


@pytest.mark.parametrize("text", EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_edge_cases_read_as_before(text: str, reader: Any) -> None:
    assert_same_as_reference(text, reader)


@pytest.mark.parametrize("name", FILES)
def test_project_files_read_as_before(name: str, reader: Any) -> None:
    text = (ROOT / name).read_text(encoding="utf-8")
    doc, problems = assert_same_as_reference(text, reader)
    assert doc is not None and not [p for p in problems if p.fatal]


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_pipelines_read_as_before(name: str, reader: Any) -> None:
    doc, problems = assert_same_as_reference(GENERATED[name], reader)
    assert doc is not None and problems == []


# ------------------------------------------------------------------ hypothesis documents

KEYS = st.sampled_from(["a", "b", "steps", "max_tokens", "<<", "1", "true", "~", "é", "🚀",
                        "x y", "id"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**20), st.floats(),
                    st.sampled_from(["yes", "0x1F", "012", "1_0", "1:20", ".inf", "~", "",
                                     "2024-01-02", "<<", "a: b", "- x", "#", "'q'", "😀"]),
                    st.text(max_size=12))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)), max_leaves=20)
DUMP_STYLES = st.fixed_dictionaries({
    "default_flow_style": st.sampled_from([False, True, None]),
    "allow_unicode": st.booleans(),
    "line_break": st.sampled_from(["\n", "\r\n", "\r"]),
    "explicit_start": st.booleans(),
    "indent": st.sampled_from([2, 4]),
    "width": st.sampled_from([20, 80]),
})
HYPOTHESIS = settings(max_examples=60, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow,
                                             HealthCheck.function_scoped_fixture])


def _dumped(value: Any, style: dict[str, Any], bom: bool) -> str:
    text: str = yaml.safe_dump(value, **style)
    return ("\ufeff" if bom else "") + text


@HYPOTHESIS
@given(VALUES, DUMP_STYLES, st.booleans())
def test_dumped_documents_read_as_before(reader: Any, value: Any, style: dict[str, Any],
                                         bom: bool) -> None:
    text = _dumped(value, style, bom)
    doc, _ = assert_same_as_reference(text, reader)
    # and the plain values are PyYAML's own (the keys dumped are strings, so no key differs)
    assert doc is not None and _strict(doc.value, yaml.load(text, Loader=reader))


YAMLISH = st.text(alphabet=list("{}[]:-,'\"!&*#|>?%@`<\n \t\r0123456789abxy_.~予🚀\\"),
                  max_size=120)


@HYPOTHESIS
@given(YAMLISH)
def test_arbitrary_text_reads_as_before(reader: Any, text: str) -> None:
    assert_same_as_reference(text, reader)


@HYPOTHESIS
@given(VALUES, DUMP_STYLES, st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(
    ["&a ", "*a", "<<: *a\n", "!!str ", "!x ", "? ", "---\n", "'", "[", "}", ":", "\t", "\r",
     "- ", "# ", "&a [", "\n  ", "a: 1\n", "*b", "&b "])), max_size=4))
def test_mutated_documents_read_as_before(reader: Any, value: Any, style: dict[str, Any],
                                          edits: list[tuple[int, str]]) -> None:
    text = _dumped(value, style, False)
    for at, insert in edits:
        at %= len(text) + 1
        text = text[:at] + insert + text[at:]
    assert_same_as_reference(text, reader)


# ------------------------------------------------------------ positions in code points

POSITIONED = [
    "\ufeffa: q\r\nb: xyz\r\n",
    "a: q\rb: xyz\r",
    "🚀😀: 🚀\n𝔘: xyz\n",
    "k: 'x\tyz' # tab\nn: |\n  a\tb\nm: xyz\n",
    "a: [😀, \"𝔘\", xyz]\r\n\rb: {c: xyz}\n",
    "s:\n  - 名前🚀\n  - k: xyz\n",
]


@pytest.mark.parametrize("text", POSITIONED, ids=range(len(POSITIONED)))
def test_scalar_spans_hold_their_own_characters(text: str, reader: Any) -> None:
    doc, problems = assert_same_as_reference(text, reader)
    assert doc is not None and problems == []
    seen = 0
    for path, span in doc.spans.items():
        value = doc.node(path)
        if span.style in ("|", ">"):  # a block scalar: its text starts at the indicator
            assert text[span.start] == span.style
        elif span.kind is NodeKind.SCALAR and isinstance(value, str):
            raw = text[span.start:span.end]
            assert raw == (value if span.style is None else f"{span.style}{value}{span.style}")
            seen += 1
            if value == "xyz":  # the LSP range too: line and column counted by hand
                head = text[:span.start]
                lines = re.split(r"\r\n|\r|\n", head)
                assert span.value == Range(
                    Position(len(lines) - 1, len(lines[-1])),
                    Position(len(lines) - 1, len(lines[-1]) + len(raw)))
        if span.key_start is not None and span.key_end is not None:
            assert text[span.key_start:span.key_end] == str(path[-1])
    assert seen >= 2


def test_lone_cr_ends_a_line_for_positions(reader: Any) -> None:
    doc, _ = parse_yaml("a: 1\rb: 🚀x\r")
    assert doc is not None
    assert doc.value == {"a": 1, "b": "🚀x"}
    assert doc.value_range(("b",)) == Range(Position(1, 3), Position(1, 5))


# ------------------------------------------------------- depth: refused where it starts


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000,
                                  "{a: " * 50_000 + "1" + "}" * 50_000],
                         ids=["flow-sequences", "flow-mappings"])
def test_deep_nesting_is_refused_after_reading_a_bounded_number_of_events(
        text: str, reader: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # libyaml slows quadratically with flow nesting and PyYAML's C composer recursed on the C
    # stack (about 30,000 levels crashed the process): the reader stops at the first node
    # nested deeper than MAX_DEPTH
    calls = []

    class Counting(reader):  # type: ignore[misc]
        def get_event(self) -> Any:
            calls.append(1)
            return super().get_event()

    monkeypatch.setattr(yaml_parse, "_LOADER", Counting)
    doc, problems = parse_yaml(text)
    assert doc is None
    step = 1 if text.startswith("[") else 4  # "[" or "{a: " per level
    at = (MAX_DEPTH + 1) * step  # the first node at depth 65, counted by hand
    assert [(p.code, p.range, p.message) for p in problems] == [
        ("BL003", Range(Position(0, at), Position(0, at)),
         f"nested deeper than {MAX_DEPTH} levels; refused")]
    assert len(calls) < 2 * 4 * MAX_DEPTH


# ----------------------------------------------------------------- the mechanisms used


@pytest.mark.skipif(not HAVE_LIBYAML, reason="PyYAML without libyaml: nothing to count")
@pytest.mark.parametrize("anchored", [False, True])
def test_libyaml_events_are_read_and_no_python_parser_or_composer_runs(
        anchored: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    counts = {"parser": 0, "composer": 0, "resolve": 0, "general": 0}

    def counting(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(yaml.parser.Parser, "parse_node",
                        counting("parser", yaml.parser.Parser.parse_node))
    monkeypatch.setattr(yaml.composer.Composer, "compose_node",
                        counting("composer", yaml.composer.Composer.compose_node))
    monkeypatch.setattr(yaml.resolver.BaseResolver, "resolve",
                        counting("resolve", yaml.resolver.BaseResolver.resolve))
    monkeypatch.setattr(yaml_parse, "compose_single",
                        counting("general", yaml_compose.compose_single))
    marker = f"v{id(counts)}"  # plain values no earlier test has resolved
    values = [f"{marker}-{i}" for i in range(40)]
    text = ("d: &d [1]\n" if anchored else "e: &e 1\nf: *e\n") + "".join(
        f"k{i}: {v}\nn{i}: {v}\n" for i, v in enumerate(values))
    doc, problems = parse_yaml(text)
    assert doc is not None and problems == []
    assert doc.value[f"n{len(values) - 1}"] == values[-1]
    # each distinct plain value is resolved once (keys too: k0.., n0..), never twice
    assert counts["parser"] == 0 and counts["composer"] == 0
    assert counts["resolve"] <= len(values) + 2 * len(values) + 2
    assert counts["general"] == (1 if anchored else 0)
    before = counts["resolve"]
    parse_yaml(text)
    assert counts["resolve"] == before  # the second reading resolves nothing again


def test_the_memos_stay_bounded() -> None:
    text = "".join(f"- {i}\n- v{i}\n" for i in range(25_000))
    doc, _ = parse_yaml(text)
    assert doc is not None and len(doc.value) == 50_000
    assert all(len(memo) <= 20_000 for memo in yaml_compose._TAGS.values())
    assert all(len(memo) <= 20_000 for memo in yaml_compose._VALUES.values())


def test_spans_are_made_when_asked_for() -> None:
    doc, _ = parse_yaml("a: 1\nb: [x, y]\n")
    assert doc is not None
    spans = doc.spans
    assert isinstance(spans, yaml_parse.SpanMap)
    assert spans[("b", 1)] is spans[("b", 1)]  # made once
    assert list(spans) == [(), ("a",), ("b",), ("b", 0), ("b", 1)]
    assert ("b", 2) not in spans and spans.get(("b", 2)) is None
    with pytest.raises(KeyError):
        spans[("c",)]


# ------------------------------------------------- what the reader before it crashed on

UNFIT = [("a: !!int", 3, 8, "tag:yaml.org,2002:int", ""),
         ("a: !!bool maybe", 3, 15, "tag:yaml.org,2002:bool", "maybe"),
         ("b: !!float ''\n", 3, 13, "tag:yaml.org,2002:float", ""),
         ("- !!bool", 2, 8, "tag:yaml.org,2002:bool", "")]


@pytest.mark.parametrize(("text", "start", "end", "tag", "value"), UNFIT)
def test_a_tag_its_constructor_cannot_read_is_refused_at_the_value(
        text: str, start: int, end: int, tag: str, value: str, reader: Any) -> None:
    with pytest.raises((IndexError, KeyError)):  # the reader before raised through
        parse_yaml_reference(text, reader)
    assert parse_yaml(text) == (None, [YamlProblem(
        "BL002", Range(Position(0, start), Position(0, end)),
        f"YAML tag {tag!r} does not fit the value {value!r}")])


@pytest.mark.parametrize("text", ['a: "\\U99999999"\n', 'a: "\\U0011FFFF"\n'])
def test_an_escape_out_of_unicode_is_a_syntax_error(text: str, reader: Any) -> None:
    if reader is yaml.SafeLoader:  # PyYAML's own scanner raised through chr()
        with pytest.raises((ValueError, OverflowError)):
            parse_yaml_reference(text, reader)
        doc, problems = parse_yaml(text)
    else:
        doc, problems = assert_same_as_reference(text, reader)
    assert doc is None and [p.code for p in problems] == ["BL001"]
