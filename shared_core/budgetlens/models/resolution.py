"""Which registry name a model name means: provider prefixes and Ollama tags.

A name is looked up as written (case does not matter). Else a known provider prefix is
taken off (``openai/gpt-4o-mini`` -> ``gpt-4o-mini``; ``openrouter/openai/gpt-4o`` loses
both), and an Ollama tag (``llama3.1:8b``, ``qwen2.5:7b-instruct``) is read as the model it
names. Each rule yields its candidates in a fixed order and the first one the registry
knows wins, so the answer never depends on anything but the name and the registry.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Mapping

#: Prefixes that name a provider or a gateway, not a model (LiteLLM's, OpenRouter's, the
#: Google API's ``models/``). A prefix the registry itself uses (``groq/``, ``ollama/``,
#: ``together_ai/``) is tried as written first.
PREFIXES = ("openai", "azure", "azure_ai", "anthropic", "google", "googleai", "gemini",
            "vertex_ai", "vertexai", "openrouter", "ollama", "ollama_chat", "mistral",
            "mistralai", "deepseek", "deepseek-ai", "groq", "together_ai", "togetherai",
            "bedrock", "meta", "meta-llama", "qwen", "models", "github", "lm_studio",
            "hosted_vllm", "vllm")
#: A quantisation or precision suffix of an Ollama tag (``8b-instruct-q4_K_M``).
_QUANT = re.compile(r"-(q\d\w*|fp16|fp8|bf16|f16|int4|int8)$", re.I)
#: ``llama3.1`` -> (``llama``, ``3.1``): a family and its version written together.
_FAMILY_VERSION = re.compile(r"^([a-z]+)(\d[\w.]*)$")


def tag_candidates(name: str) -> Iterator[str]:
    """The registry names an Ollama tag ``base:tag`` may mean, most specific first:
    ``ollama/base:tag``; the Hugging Face-style names ``base-size-instruct`` and
    ``base-size`` (also with a dash between family and version, ``llama-3.1-8b-instruct``);
    then the tag's model without a size, ``ollama/base``."""
    base, _, tag = name.partition(":")
    tag = _QUANT.sub("", tag)
    yield f"ollama/{base}:{tag}"
    if tag in ("", "latest"):
        yield f"ollama/{base}"
        return
    bases = [base]
    split = _FAMILY_VERSION.match(base)
    if split:
        bases.append(f"{split.group(1)}-{split.group(2)}")
    for stem in bases:
        if tag.endswith("-instruct"):
            yield f"{stem}-{tag}"
        else:
            yield f"{stem}-{tag}-instruct"
            yield f"{stem}-{tag}"
    yield f"ollama/{base}"


def _unprefixed(low: str) -> Iterator[str]:
    """``low`` without its provider prefixes, one more taken off each time."""
    while "/" in low:
        head, _, rest = low.partition("/")
        if head not in PREFIXES:
            return
        low = rest
        yield low


def resolve(name: str, folded: Mapping[str, str]) -> str | None:
    """The registry name (``folded``: lower-cased name -> name) ``name`` means, or
    ``None``."""
    low = name.strip().lower()
    if low in folded:
        return folded[low]
    for candidate in (low, *_unprefixed(low)):
        if candidate in folded:
            return folded[candidate]
        if ":" in candidate and "/" not in candidate:
            for tagged in tag_candidates(candidate):
                if tagged in folded:
                    return folded[tagged]
    return None


def query_of(name: str) -> str:
    """What to look for with ``budgetlens models QUERY`` for an unknown ``name``: the name
    without its provider prefixes and its Ollama tag (``ollama/llama3.9:8b`` -> ``llama3.9``)."""
    low = name.strip().lower()
    bare = [low, *_unprefixed(low)][-1]
    return bare.partition(":")[0] or name


def _squashed(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def search(query: str, names: Iterable[str], folded: Mapping[str, str]) -> list[str]:
    """The names ``query`` finds, best first: the name it resolves to (``resolve``); then
    every name containing it, ignoring case and punctuation (``llama3.1`` finds
    ``llama-3.1-8b-instruct``); without any, the names closest to it (``difflib``)."""
    names = list(names)
    exact = resolve(query, folded)
    key = _squashed(query)
    found = [n for n in names if key in _squashed(n)] if key else list(names)
    if not found and key:
        squashed = {_squashed(n): n for n in names}
        close = difflib.get_close_matches(key, list(squashed), n=10, cutoff=0.6)
        found = [squashed[c] for c in close]
    if exact is not None:
        found = [exact, *(n for n in found if n != exact)]
    return found
