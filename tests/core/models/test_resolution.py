"""Model names as users write them: Ollama tags and provider prefixes resolve to registry
entries; the expectations are written by hand from the registry's names."""

from __future__ import annotations

import pytest

from budgetlens.models import load_registry

RESOLVED = [
    # Ollama tags: the Hugging Face-style entry of the same model and size
    ("llama3.1:8b", "llama-3.1-8b-instruct"),
    ("llama3.1:8b-instruct-q4_K_M", "llama-3.1-8b-instruct"),  # quantisation dropped
    ("llama3.3:70b", "llama-3.3-70b-instruct"),
    ("qwen2.5:7b-instruct", "qwen2.5-7b-instruct"),
    ("qwen2.5:7b", "qwen2.5-7b-instruct"),
    ("mistral:7b", "mistral-7b-instruct"),
    # a tag LiteLLM lists under ollama/ as written, and the default tag
    ("llama3:8b", "ollama/llama3:8b"),
    ("llama3.1:latest", "ollama/llama3.1"),
    # provider and gateway prefixes
    ("openai/gpt-4o-mini", "gpt-4o-mini"),
    ("azure/gpt-4o", "gpt-4o"),
    ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"),
    ("googleai/gemini-2.5-flash", "gemini-2.5-flash"),
    ("gemini/gemini-2.5-flash", "gemini-2.5-flash"),
    ("openrouter/openai/gpt-4o", "gpt-4o"),
    ("ollama/llama3.1:8b", "llama-3.1-8b-instruct"),
    ("OpenAI/GPT-4o", "gpt-4o"),
    # a registry name that has a prefix is itself
    ("ollama/llama3.1", "ollama/llama3.1"),
    ("groq/llama3-8b-8192", "groq/llama3-8b-8192"),
]


@pytest.mark.parametrize(("written", "name"), RESOLVED, ids=[r[0] for r in RESOLVED])
def test_tags_and_prefixes_resolve(written: str, name: str) -> None:
    info = load_registry().get(written)
    assert info is not None and info.name == name


@pytest.mark.parametrize("written", [
    "gpt-4o-turbo-max",          # not a model
    "myco/gpt-4o",               # not a provider prefix
    "llama9:8b",                 # no such model
    "openai/",                   # nothing after the prefix
])
def test_names_that_do_not_resolve(written: str) -> None:
    assert load_registry().get(written) is None
