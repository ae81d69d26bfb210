"""A text counted through a ``TokenCounter`` is hashed once: a tokenizer that keeps counts of
its own by ``text_digest`` (a shipped encoding's persistent count store) is handed the digest
the counter keyed its memo by, so the text is neither content-hashed nor digested twice.
Mechanisms, not times: the hash functions and the encoding's calls are counted."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from budgetlens.files import content_hash
from budgetlens.tokens import core, counts
from budgetlens.tokens.core import TiktokenTokenizer, TokenCounter
from budgetlens.tokens.counts import CountStore, text_digest

TEXTS = ["hello world", "日本語のテキスト and é", "emoji 👩‍👩‍👧", "x" * 5000 + " é"]


class _Encoding:
    """A stand-in encoding (one token per word) that counts its calls."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def encode_ordinary(self, text: str) -> list[int]:
        self.calls[text] += 1
        return [len(w) for w in text.split()]


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts of ``content_hash`` and ``text_digest`` calls made by ``tokens.core``."""
    calls: Counter[str] = Counter()

    def counted(name: str, fn: Callable[[str], object]) -> Callable[[str], object]:
        def wrapper(text: str) -> object:
            calls[name] += 1
            return fn(text)
        return wrapper

    monkeypatch.setattr(core, "content_hash", counted("content_hash", content_hash))
    monkeypatch.setattr(core, "text_digest", counted("text_digest", text_digest))
    monkeypatch.setenv(counts.NO_CACHE_ENV, "1")  # the store stays in memory
    yield calls


def _keeping(encoding: _Encoding) -> tuple[TiktokenTokenizer, CountStore]:
    store = CountStore("fake", "ab" * 32)
    return TiktokenTokenizer("fake", encoding, counts=store), store


def test_a_text_is_hashed_once_and_the_store_keeps_its_sha256(hashes: Counter[str]) -> None:
    encoding = _Encoding()
    tokenizer, store = _keeping(encoding)
    counter = TokenCounter(tokenizer)
    for text in TEXTS:
        assert counter.count(text) == len(text.split())
    assert hashes == Counter({"text_digest": len(TEXTS)})  # no content_hash, no 2nd digest
    assert encoding.calls == Counter(TEXTS)
    for text in TEXTS:  # the persistent key is still the sha256 of the UTF-8 text
        assert store.get(text_digest(text)) == len(text.split())
    for text in TEXTS:  # counted again: from the memo, one hash each, no encoding
        assert counter.count(text) == len(text.split())
    assert hashes == Counter({"text_digest": 2 * len(TEXTS)})
    assert encoding.calls == Counter(TEXTS)
    assert (counter.hits, counter.misses) == (len(TEXTS), len(TEXTS))


def test_a_second_counter_answers_from_the_store_without_encoding(
        hashes: Counter[str]) -> None:
    encoding = _Encoding()
    tokenizer, _ = _keeping(encoding)
    TokenCounter(tokenizer).count(TEXTS[1])
    assert TokenCounter(tokenizer).count(TEXTS[1]) == len(TEXTS[1].split())
    assert encoding.calls == Counter({TEXTS[1]: 1})
    assert hashes == Counter({"text_digest": 2})


def test_counts_handed_between_counters_are_keyed_alike(hashes: Counter[str]) -> None:
    """``take_fresh``/``learn`` (``check --jobs``): two counters of a keeping tokenizer, as
    in two processes (their own stores), key a text alike: the learner does not encode."""
    made, learner = _Encoding(), _Encoding()
    first = TokenCounter(_keeping(made)[0])
    second = TokenCounter(_keeping(learner)[0])
    first.keep_fresh()
    assert first.count(TEXTS[0]) == 2
    fresh = first.take_fresh()
    assert fresh == [(text_digest(TEXTS[0]).hex(), 2)]
    second.learn(fresh)
    assert second.count(TEXTS[0]) == 2
    assert learner.calls == Counter()


def test_a_tokenizer_without_a_store_keeps_the_content_hash(hashes: Counter[str]) -> None:
    encoding = _Encoding()
    counter = TokenCounter(TiktokenTokenizer("fake", encoding))
    counter.keep_fresh()
    assert counter.count(TEXTS[0]) == 2
    assert hashes == Counter({"content_hash": 1})
    assert counter.take_fresh() == [(content_hash(TEXTS[0]), 2)]


def test_a_shipped_encoding_counts_as_before(hashes: Counter[str]) -> None:
    """The real thing: the counter's answer is tiktoken's, with one digest a text."""
    tokenizer = core.get_tokenizer("cl100k_base")
    assert isinstance(tokenizer, TiktokenTokenizer) and tokenizer.keeps_counts
    counter = TokenCounter(tokenizer)
    plain = tokenizer.encode
    for text in TEXTS:
        assert counter.count(text) == len(plain(text))
    assert hashes["content_hash"] == 0
    assert hashes["text_digest"] == len(TEXTS)


def test_the_digest_handed_down_is_taken_for_that_text_object_only(
        hashes: Counter[str]) -> None:
    """``count_digest`` hands its digest to ``count`` for the very text object it was given;
    a count of another text in the meantime (a subclass's ``count`` counting a piece first)
    digests its own text, and nothing is kept once the call is over."""
    encoding = _Encoding()
    seen: list[int] = []

    class Nested(TiktokenTokenizer):
        def count(self, text: str) -> int:
            seen.append(super().count("other words " + text))
            return super().count(text)

    store = CountStore("fake", "cd" * 32)
    tokenizer = Nested("fake", encoding, counts=store)
    assert tokenizer.count_digest(TEXTS[0], text_digest(TEXTS[0])) == 2
    assert seen == [4]
    assert hashes == Counter({"text_digest": 1})  # "other words ..." only
    assert store.get(text_digest(TEXTS[0])) == 2
    assert store.get(text_digest("other words " + TEXTS[0])) == 4
    assert tokenizer._given.pair is None
