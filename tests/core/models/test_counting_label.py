"""How ``budgetlens models`` says a model is counted: exact, approximate, or approximate
because the extra that would make it exact is missing."""

from __future__ import annotations

import pytest

from budgetlens.models import registry as registry_module
from budgetlens.models.registry import ModelInfo, counting_encoding


def _info(name: str, family: str) -> ModelInfo:
    return ModelInfo(name=name, provider="P", window=1000, max_input=None, max_output=None,
                     tokenizer=family, source="s", date="2026-01-02")


def test_exact_and_approximate_labels() -> None:
    assert _info("gpt-4o", "o200k_base").counting == "o200k_base (exact)"
    assert _info("claude-x", "claude").counting == "≈ claude_approx"
    assert _info("some-model", "unknown").counting == "≈ cl100k_base"


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    counting_encoding.cache_clear()
    monkeypatch.setattr(registry_module, "available", lambda name: False)
    try:
        assert _info("llama-3.1-8b-instruct", "llama3").counting == \
            "≈ cl100k_base (exact with budgetlens[llama])"
        # Mistral Large is SentencePiece: no extra would make it exact
        assert _info("mistral-large-latest", "mistral").counting == "≈ cl100k_base"
    finally:
        counting_encoding.cache_clear()
