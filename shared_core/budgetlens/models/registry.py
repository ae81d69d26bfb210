"""Reading the bundled model registry (``registry.json``) and looking models up."""

from __future__ import annotations

import difflib
import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

#: Tokenizer families counted exactly offline (their tiktoken encodings ship in the package).
EXACT_FAMILIES = frozenset({"cl100k_base", "o200k_base"})
#: The shipped encoding that approximates each family without an exact offline tokenizer.
#: cl100k_base is the nearest shipped vocabulary for all of them (Llama 3's tokenizer is
#: cl100k_base plus 28,000 tokens); see docs/models.md for the measured differences.
APPROXIMATE_ENCODING = "cl100k_base"


def counting_encoding(family: str) -> str:
    """The shipped encoding that counts for a tokenizer ``family``."""
    return family if family in EXACT_FAMILIES else APPROXIMATE_ENCODING


@dataclass(frozen=True)
class ModelInfo:
    """One model of the registry."""

    name: str
    provider: str
    window: int
    max_input: int | None
    max_output: int | None
    tokenizer: str
    """The tokenizer family: ``o200k_base``, ``cl100k_base``, ``llama3``, ``qwen``, ..."""
    source: str
    """Where the numbers come from: package, version and the entry read."""
    date: str
    """The registry's refresh date (YYYY-MM-DD)."""

    @property
    def exact(self) -> bool:
        """Counts for this model are exact (else approximate, shown with ``≈``)."""
        return self.tokenizer in EXACT_FAMILIES

    @property
    def encoding(self) -> str:
        return counting_encoding(self.tokenizer)

    @property
    def registry_label(self) -> str:
        return f"registry {self.date}"

    def describe(self) -> str:
        """A few lines for a hover: provider, limits, tokenizer, source and date."""
        counts = "exact" if self.exact else f"approximate (≈, counted with {self.encoding})"
        lines = [f"**{self.name}** ({self.provider})",
                 f"- window: {self.window:,} tokens",
                 f"- max output: {self.max_output:,} tokens" if self.max_output else
                 "- max output: not published",
                 f"- tokenizer: {self.tokenizer}, counts {counts}",
                 f"- source: {self.source} ({self.registry_label})"]
        if self.max_input:
            lines.insert(3, f"- max input: {self.max_input:,} tokens")
        return "\n".join(lines)


@dataclass(frozen=True)
class Registry:
    date: str
    sources: tuple[dict[str, str], ...]
    models: dict[str, ModelInfo]

    @functools.cached_property
    def _folded(self) -> dict[str, str]:
        return {name.lower(): name for name in self.models}

    def get(self, name: str) -> ModelInfo | None:
        """The model called ``name`` (case does not matter); ``None`` when unknown."""
        info = self.models.get(name)
        if info is None:
            canonical = self._folded.get(name.strip().lower())
            info = self.models.get(canonical) if canonical else None
        return info

    def suggest(self, name: str) -> str | None:
        """The known model ``name`` most likely means (``None`` when none is close)."""
        low = name.strip().lower()
        close = difflib.get_close_matches(low, list(self._folded), n=1, cutoff=0.75)
        if not close:
            starts = sorted(k for k in self._folded if k.startswith(low) or low.startswith(k))
            close = starts[:1]
        return self._folded[close[0]] if close else None

    def names(self) -> list[str]:
        return list(self.models)


def _info(name: str, raw: dict[str, Any], date: str) -> ModelInfo:
    return ModelInfo(name=name, provider=str(raw["provider"]), window=int(raw["window"]),
                     max_input=raw.get("max_input"), max_output=raw.get("max_output"),
                     tokenizer=str(raw["tokenizer"]), source=str(raw["source"]), date=date)


def parse_registry(text: str) -> Registry:
    """A registry from the text of a ``registry.json``."""
    data = json.loads(text)
    date = str(data["date"])
    return Registry(date, tuple(data["sources"]),
                    {name: _info(name, raw, date) for name, raw in data["models"].items()})


@functools.lru_cache(maxsize=1)
def load_registry() -> Registry:
    """The bundled registry, read once (the first call costs a few milliseconds)."""
    text = resources.files("budgetlens.models").joinpath("registry.json").read_text("utf-8")
    return parse_registry(text)
