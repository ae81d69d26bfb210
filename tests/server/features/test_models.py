"""Completion of a model name: the word being typed after ``model:`` or in config.json's
``"targets": [...]`` is found by one match on the reversed line prefix. It gives what the
forward pattern's search gives (the oracle below, which on a long line of many ``model:``
tries each and reads on to the end from each), on every prefix."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from budgetlens_lsp.features.models import _typed_word

FORWARD = re.compile(r"""(?:["']?model["']?\s*:\s*|"targets"\s*:\s*\[(?:[^\]]*,)?\s*)"""
                     r"""["']?(?P<word>[\w./:@-]*)$""")


def _forward(prefix: str) -> str | None:
    match = FORWARD.search(prefix)
    return None if match is None else match.group("word")


PIECES = st.sampled_from(["model", '"model"', "'model'", '"targets"', "targets", ":", ": ",
                          " ", "[", "]", ",", ", ", '"', "'", "gpt-4o", "claude/3.5",
                          "a@b", "x.y", "-", "\t", "é", "#", "!",
                          # whole forms, so that a list reaches them often
                          '"targets": [', '"targets" :[ ', '"a", ', '"b",', "model: ",
                          '"model": "'])


@settings(max_examples=3000, deadline=None)
@given(st.lists(PIECES, max_size=14))
def test_the_reversed_match_gives_the_forward_search_s_word(pieces: list[str]) -> None:
    prefix = "".join(pieces)
    assert _typed_word(prefix) == _forward(prefix), prefix


def test_words_being_typed() -> None:
    assert _typed_word("    model: gpt-4") == "gpt-4"
    assert _typed_word('  "model": "claude-3') == "claude-3"
    assert _typed_word('  "targets": ["gpt-4o", "o3-m') == "o3-m"
    assert _typed_word('  "targets": [') == ""
    assert _typed_word("model:model:gpt") == "model:gpt"
    assert _typed_word("    prompt: gpt") is None
    assert _typed_word('  "targets": ["a"], "b') is None


def test_a_long_line_of_model_keys_is_read() -> None:
    line = "# " + "model:" * 20000 + " !"
    assert _typed_word(line) is None
    assert _typed_word(line[:-2]) == "model:" * 19999  # after the first key, as forward
