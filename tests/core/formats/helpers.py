"""Helpers of the format reader tests: the corpus, plain tiktoken counts, range slices.

Token counts come from tiktoken's own ``Encoding`` built from the o200k_base ranks that
budgetlens ships (tiktoken cannot download them here); nothing of budgetlens counts.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import tiktoken
from tiktoken.load import load_tiktoken_bpe

from budgetlens.source import Range

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "tests" / "fixtures" / "prompt_files"
_ENCODINGS = REPO / "shared_core" / "budgetlens" / "tokens" / "encodings"

SUFFIXES = {"github_models": (".yml", ".yaml"), "prompty": (".prompty",),
            "dotprompt": (".prompt",)}


def corpus(fmt: str) -> list[Path]:
    """The corpus files of ``fmt`` (Dotprompt partials included)."""
    return sorted(p for p in (CORPUS / fmt).rglob("*") if p.name.endswith(SUFFIXES[fmt]))


@cache
def _o200k() -> Any:
    meta = json.loads((_ENCODINGS / "encodings.json").read_text())["encodings"]["o200k_base"]
    ranks = load_tiktoken_bpe(str(_ENCODINGS / meta["file"]), meta["sha256"])
    return tiktoken.Encoding("o200k_base", pat_str=meta["pat_str"], mergeable_ranks=ranks,
                             special_tokens=meta["special_tokens"])


def tokens(text: str) -> int:
    """o200k_base tokens of ``text`` (gpt-4o, gpt-4.1, o-series), plain tiktoken."""
    return len(_o200k().encode(text))


def offset(text: str, line: int, character: int) -> int:
    """The code-point offset of (line, character), lines split at \\n (the corpus has
    neither \\r nor other line breaks)."""
    lines = text.split("\n")
    return sum(len(x) + 1 for x in lines[:line]) + character


def sliced(text: str, rng: Range | None) -> str:
    """The text a range covers, counted here without budgetlens."""
    assert rng is not None
    return text[offset(text, rng.start.line, rng.start.character):
                offset(text, rng.end.line, rng.end.character)]
