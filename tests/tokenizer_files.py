"""Tiny Hugging Face ``tokenizer.json`` files for tests (the ``tokenizers`` package is a test
dependency): one token per word, or one per character. ``TEXT`` is 3 tokens in the first
and 16 in the second (and 3 in cl100k_base)."""

from __future__ import annotations

import os
from pathlib import Path

import tokenizers

TEXT = "alpha beta gamma"


def tokenizer_json(*, per_character: bool) -> str:
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.pre_tokenizer = (
        tokenizers.pre_tokenizers.Split(tokenizers.Regex("[\\s\\S]"), behavior="isolated")
        if per_character else tokenizers.pre_tokenizers.WhitespaceSplit())
    return str(tok.to_str())


def save_tokenizer(path: Path, *, per_character: bool, in_place: bool = False) -> None:
    """Write the tokenizer to ``path``: to a new file renamed over it (as a download or a
    checkout does: a new inode, whatever the clock's resolution), or ``in_place``."""
    text = tokenizer_json(per_character=per_character)
    if in_place:
        path.write_text(text, "utf-8")
        return
    new = path.with_name(path.name + ".new")
    new.write_text(text, "utf-8")
    os.replace(new, path)
