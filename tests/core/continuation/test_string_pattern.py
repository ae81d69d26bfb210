"""``cut.JSON_STRING``: the string literal pattern the renderer's regular expressions share.

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

from budgetlens.continuation.cut import JSON_STRING

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
