"""``syntax.JSON_STRING``: the string literal pattern the renderer's regular expressions share.

Its first way scans ``[^"]`` runs and decides at each quote by the backslashes before it; its
second is the exact, escape-at-a-time pattern the code used before. On valid JSON string
literals both must match the same literal, and the fast way must be the one that matches the
strings an LLM writes (plain text, ``\\n``, ``\\"`` escapes), or the speed-up is not there.
"""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from budgetlens.continuation.syntax import JSON_STRING
from tests.waiting import HANG_GUARD

EXACT = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
SHARED = re.compile(JSON_STRING)
FAST = re.compile(JSON_STRING[3:JSON_STRING.index('"|"') + 1])  # the first way alone

# what follows a literal in a document: structure, and quotes and backslashes that a pattern
# running past the literal's end would take
_AFTER = ('', ', "x"', '": 1', '\\"', '"]', ' \\\\"')


def _escape_some(s: str, slash: bool, unicode: bool) -> str:
    """A JSON literal of ``s`` as a writer may choose it: optional ``\\/`` and ``\\uXXXX``."""
    literal = json.dumps(s, ensure_ascii=False)
    if slash:
        literal = literal.replace("/", "\\/")
    if unicode:
        literal = literal.replace("é", "\\u00e9")
    return literal


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from('ab "\\/\n\té数😀,:{}[]'), max_size=30),
       st.booleans(), st.booleans(), st.sampled_from(_AFTER))
def test_the_shared_pattern_matches_what_the_exact_one_matches(
        s: str, slash: bool, unicode: bool, after: str) -> None:
    literal = _escape_some(s, slash, unicode)
    assert json.loads(literal) == s
    text = "[" + literal + after
    exact = EXACT.match(text, 1)
    shared = SHARED.match(text, 1)
    assert exact is not None and shared is not None
    assert shared.group() == exact.group() == literal
    fast = FAST.match(text, 1)
    assert fast is None or fast.group() == literal


def test_the_fast_way_reads_the_strings_an_llm_writes() -> None:
    for s in ("plain words", 'say "hi" now', "line\nbreak", "tab\there", "数据 😀", "",
              'ends with a quote"', "a \\ backslash in the middle"):
        literal = json.dumps(s, ensure_ascii=False)
        fast = FAST.match(literal + ', "next"')
        assert fast is not None and fast.group() == literal, literal


def test_a_quote_after_two_backslashes_goes_the_exact_way() -> None:
    for literal in (r'"a\\"', r'"\\"', r'"a\\\"b"', r'"\\\\"'):
        assert FAST.match(literal + ', "x"') is None
        shared = SHARED.match(literal + ', "x"')
        assert shared is not None and shared.group() == literal


# The second way alone, as JSON_STRING tries it: only where the first does not match.
SECOND = re.compile(JSON_STRING[JSON_STRING.index('"|"') + 2:-1])


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from('ab "\\/\n\té数😀,:{}[]'), max_size=30),
       st.booleans(), st.booleans(), st.sampled_from(_AFTER))
def test_the_two_ways_never_both_match_one_literal(
        s: str, slash: bool, unicode: bool, after: str) -> None:
    """A pattern that repeats JSON_STRING and fails late backtracks into every literal before
    the failure; if a literal could be matched both ways, that is 2**n tries for n literals."""
    text = "[" + _escape_some(s, slash, unicode) + after
    assert FAST.match(text, 1) is None or SECOND.match(text, 1) is None
    assert SHARED.match(text, 1) is not None


def _many_strings(n: int, indent: int | None, trailing_space: bool) -> str:
    """A valid reply whose first object holds ``n`` string members then a nested array (so the
    renderer's flat-object and layout patterns fail only at its end), cut in a long string."""
    meta: dict[str, object] = {f"k{i}": f"v{i}" for i in range(n)}
    meta["nested"] = [1]
    doc = json.dumps({"meta": meta, "tags": [f"t{i}" for i in range(n)] + [[1]],
                      "body": "x" * 400}, indent=indent)
    if trailing_space:
        doc = doc.replace('"v0",\n', '"v0", \n')
    return doc[:doc.index("x" * 200)]


def test_a_reply_with_many_strings_before_a_late_mismatch_is_read_in_one_pass() -> None:
    """The renderer's patterns over a 40-member object that is not flat: with both ways open
    to every literal they retry 2**40 combinations (an hour per ~12 members more) before they
    fail; each must give its answer (run in a child, stopped after a generous minute)."""
    import subprocess
    import sys

    program = (
        "import json, sys\n"
        "from budgetlens import get_contexts\n"
        "for text in json.load(sys.stdin):\n"
        "    for budget in (200, 10000):\n"
        "        ctx = get_contexts(text, budget=budget)\n"
        "        assert ctx.json_parsing_success and ctx.cut is not None, ctx.error\n"
        "print('done')\n")
    cuts = [_many_strings(40, indent, trailing) for indent in (None, 2)
            for trailing in (False, True)]
    proc = subprocess.run([sys.executable, "-c", program], input=json.dumps(cuts),
                          capture_output=True, text=True, timeout=HANG_GUARD)
    assert proc.returncode == 0 and proc.stdout == "done\n", proc.stderr
