"""Long whitespace runs are merged on their own (tokens/pieces.py), with the ids tiktoken gives.

The proof in pieces.py's docstring is checked here: with every run of two or more
whitespace characters cut out (the production threshold is 4096), the ids equal tiktoken's
own on many generated texts short enough for tiktoken not to fail. Expected values are
tiktoken's, called directly.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetlens.tokens import pieces
from budgetlens.tokens.core import get_tokenizer
from budgetlens.tokens.errors import TokenizerError

ENCODINGS = ("cl100k_base", "o200k_base")
EVERY_RUN = pieces._long_runs(2)  # cut every run the proof allows (length >= 2)

WHITESPACE = [*pieces.WHITESPACE_NOT_NEWLINE, "\n", "\r", "\r\n"]
OTHERS = ["a", "B", "z", "é", "Ω", "字", "ß", "\u0301", "1", "23", "456", "!", "?", "'", "'s",
          "'LL", "/", "//", ".", "-", "😀", "\x1c", "\u200b", "ab", "Hello", "THE", "x2"]


def _tiktoken(name: str) -> object:
    return get_tokenizer(name)._encoding  # type: ignore[attr-defined]


def _random_text(rng: random.Random) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(1, 12)):
        if rng.random() < 0.55:
            n = rng.choice([1, 2, 3, 5, 17, 64, 200, rng.randint(1, 700)])
            pool = rng.sample(WHITESPACE, rng.randint(1, 3))
            parts.append("".join(rng.choice(pool) for _ in range(n)))
        else:
            parts.append("".join(rng.choice(OTHERS) for _ in range(rng.randint(1, 6))))
    return "".join(parts)


def test_white_space_set_is_unicode_white_space() -> None:
    """The run characters are exactly Unicode White_Space without \\r and \\n."""
    import regex  # tiktoken's own dependency

    ws = {chr(c) for c in range(0x110000) if regex.match(r"\p{White_Space}", chr(c))}
    assert set(pieces.WHITESPACE_NOT_NEWLINE) == ws - {"\r", "\n"}


@pytest.mark.parametrize("name", ENCODINGS)
def test_cut_runs_give_tiktokens_ids_on_generated_texts(name: str) -> None:
    enc = _tiktoken(name)
    rng = random.Random(20261206)
    cut_somewhere = 0
    for _ in range(1500):
        text = _random_text(rng)
        cut_somewhere += bool(pieces.cuts(text, EVERY_RUN))
        assert pieces.encode_ordinary(enc, text, name, pattern=EVERY_RUN) == \
            enc.encode_ordinary(text), repr(text)  # type: ignore[attr-defined]
    assert cut_somewhere > 1000  # the cut path is what was compared


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(WHITESPACE), st.sampled_from(OTHERS),
                          st.text(max_size=4)), max_size=40))
def test_cut_runs_give_tiktokens_ids_property(parts: list[str]) -> None:
    text = "".join(parts)
    for name in ENCODINGS:
        enc = _tiktoken(name)
        assert pieces.encode_ordinary(enc, text, name, pattern=EVERY_RUN) == \
            enc.encode_ordinary(text)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ENCODINGS)
def test_production_threshold_on_runs_tiktoken_still_counts(name: str) -> None:
    """Runs above LONG_RUN (4096), short enough for tiktoken (it fails near 900,000)."""
    enc = _tiktoken(name)
    for text in (" " * 5000, "x" + " " * 5000 + "y", "a.\n" + "\t " * 3000 + "!z",
                 "\n" + " " * 20000 + "\n" + "\u3000" * 5000 + "9", "q" + " " * 4096):
        assert pieces.encode_ordinary(enc, text, name) == \
            enc.encode_ordinary(text)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ENCODINGS)
def test_a_megabyte_of_spaces_is_counted(name: str) -> None:
    """tiktoken panics on it (PanicException); the count is that of the one piece it is,
    merged by tiktoken itself (_encode_single_piece), plus the text around it."""
    enc = _tiktoken(name)
    run = " " * 1_000_000
    expected = len(enc._encode_single_piece(run[:-1].encode())) \
        + len(enc.encode_ordinary(" hello"))  # type: ignore[attr-defined]
    assert get_tokenizer(name).count(run + "hello") == expected


def test_native_failure_is_a_tokenizer_error() -> None:
    class Panic(BaseException):
        pass

    def boom(text: str) -> list[int]:
        raise Panic("called `Result::unwrap()` on an `Err` value\nmore")

    with pytest.raises(TokenizerError, match=r"cannot be counted with cl100k_base.*Panic"):
        pieces.guarded("cl100k_base", boom, "x")

    def interrupted(text: str) -> list[int]:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pieces.guarded("cl100k_base", interrupted, "x")


@pytest.mark.parametrize("family", ["qwen2", "mistral_tekken"])
def test_families_on_tiktoken_cut_runs_with_the_same_ids(
        family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Qwen 2 and Mistral Tekken split with the same whitespace branches (pieces.py): their
    ids with every run of 2+ cut equal tiktoken's own (texts under LONG_RUN: uncut)."""
    from budgetlens.tokens.families import available, load_family

    if not available(family):
        pytest.skip(f"the {family} extra is not installed")
    tok = load_family(family)
    rng = random.Random(7)
    texts = [t for t in (_random_text(rng) for _ in range(600)) if len(t) < pieces.LONG_RUN]
    expected = [tok.encode(t) for t in texts]
    monkeypatch.setattr(pieces, "LONG_RUN", 2)
    monkeypatch.setattr(pieces, "_LONG", EVERY_RUN)
    assert [tok.encode(t) for t in texts] == expected
    monkeypatch.undo()
    big = " " * 1_000_000 + "hello"  # tiktoken panics on it
    assert tok.count(big) == len(tok.encode(big)) > 7000


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(WHITESPACE), st.sampled_from(OTHERS)), max_size=80),
       st.integers(min_value=2, max_value=12))
def test_quick_look_never_misses_a_long_run(parts: list[str], length: int) -> None:
    """The block test that skips the scan for ordinary texts is never wrong about a run."""
    text = "".join(parts)
    if pieces._long_runs(length).search(text):
        assert pieces._may_hold_run(text, length)
