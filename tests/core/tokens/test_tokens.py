"""Offline token counting against ids published for tiktoken's encodings."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from budgetlens.tokens.core import (
    TokenCounter,
    TokenizerError,
    get_tokenizer,
    resolve_tokenizer_name,
)

ENCODINGS = (Path(__file__).resolve().parents[3] / "shared_core" / "budgetlens" / "tokens"
             / "encodings")


@pytest.mark.parametrize(("name", "ids"), [
    ("cl100k_base", [15339, 1917]),
    ("o200k_base", [24912, 2375]),
])
def test_hello_world_has_the_published_ids(name: str, ids: list[int]) -> None:
    assert get_tokenizer(name).encode("hello world") == ids


def test_shipped_rank_files_match_tiktokens_published_sha256() -> None:
    published = {
        "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    }
    for name, digest in published.items():
        assert hashlib.sha256((ENCODINGS / f"{name}.tiktoken").read_bytes()).hexdigest() == digest


def test_special_token_text_counts_as_plain_text() -> None:
    # "<|endoftext|>" is 100257 as a special token; as text it is several ordinary tokens.
    ids = get_tokenizer("cl100k_base").encode("<|endoftext|>")
    assert 100257 not in ids
    assert len(ids) > 1


def test_cjk_and_emoji_round_trip_through_the_encoding() -> None:
    tok = get_tokenizer("cl100k_base")
    text = "予算は限られている 🚀 café"
    enc = tok._encoding  # type: ignore[attr-defined]
    assert enc.decode(tok.encode(text)) == text
    assert tok.count(text) == len(tok.encode(text)) > 0


@pytest.mark.parametrize(("spec", "expected"), [
    ("gpt-4o", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5-turbo", "cl100k_base"),
    (None, "cl100k_base"),
    ("", "cl100k_base"),
])
def test_model_names_map_to_their_encoding(spec: str | None, expected: str) -> None:
    assert resolve_tokenizer_name(spec) == expected


def test_unknown_tokenizer_names_say_what_to_use() -> None:
    with pytest.raises(TokenizerError, match="cl100k_base or o200k_base"):
        get_tokenizer("no-such-model-xyz")


def test_model_with_an_encoding_we_do_not_ship_is_refused_clearly() -> None:
    with pytest.raises(TokenizerError, match="does not ship"):
        get_tokenizer("text-davinci-003")


def test_missing_tokenizer_json_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match="not found"):
        get_tokenizer(str(tmp_path / "tokenizer.json"))


def test_counter_caches_by_content_and_never_encodes_twice() -> None:
    calls: list[str] = []

    class Spy:
        name = "spy"

        def encode(self, text: str) -> list[int]:
            calls.append(text)
            return [0] * len(text.split())

        def count(self, text: str) -> int:
            return len(self.encode(text))

    counter = TokenCounter(Spy())
    assert counter.count("a b c") == 3
    assert counter.count("a b c") == 3
    assert counter.count("a b") == 2
    assert calls == ["a b c", "a b"]
    assert (counter.hits, counter.misses) == (1, 2)


def test_encodings_metadata_names_both_shipped_files() -> None:
    meta = json.loads((ENCODINGS / "encodings.json").read_text("utf-8"))
    assert set(meta["encodings"]) == {"cl100k_base", "o200k_base"}
