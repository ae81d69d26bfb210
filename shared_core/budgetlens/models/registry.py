"""Reading the bundled model registry (``registry.json``) and looking models up."""

from __future__ import annotations

import difflib
import functools
import json
import os
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

from budgetlens.models import resolution
from budgetlens.models.checks import findings
from budgetlens.source import Location
from budgetlens.tokens.families import FAMILIES, available, family_for_model

#: Tokenizer families counted exactly offline with what ships in the package itself.
EXACT_FAMILIES = frozenset({"cl100k_base", "o200k_base"})
#: What a model of a family without an exact offline tokenizer (here) counts with.
#: cl100k_base is the nearest shipped vocabulary (Llama 3's tokenizer is cl100k_base plus
#: 28,000 tokens); see docs/models.md.
APPROXIMATE_ENCODING = "cl100k_base"
#: The registry's family -> the tokenizer family of budgetlens.tokens.families that counts it.
_TOKENS_FAMILY = {"llama3": "llama3", "qwen": "qwen2", "deepseek": "deepseek",
                  "mistral": "mistral_tekken", "claude": "claude_approx",
                  "gemini": "gemini_approx"}


@functools.lru_cache(maxsize=1024)
def counting_encoding(family: str, model: str = "") -> str:
    """The tokenizer that counts for model ``model`` of registry ``family``: the shipped
    OpenAI encoding; an exact family (``llama3``, ``qwen2``, ``deepseek``, ``mistral_tekken``)
    when the model's name says its vocabulary is that family's and the family's package is
    installed; the approximate family (``claude_approx``, ``gemini_approx``); else
    ``cl100k_base`` as an approximation."""
    if family in EXACT_FAMILIES:
        return family
    tokens = _TOKENS_FAMILY.get(family)
    if tokens is None:
        return APPROXIMATE_ENCODING
    if not FAMILIES[tokens].exact:
        return tokens
    # Versions of one registry family may change vocabulary (Qwen 3.5, Mistral's SentencePiece
    # models): exact only when the name maps to the same family.
    if family_for_model(model) == tokens and available(tokens):
        return tokens
    return APPROXIMATE_ENCODING


def counts_exactly(family: str, encoding: str) -> bool:
    """Whether a model of registry ``family`` counted with ``encoding`` (from
    ``counting_encoding``) is counted exactly."""
    if family in EXACT_FAMILIES:
        return encoding == family
    return encoding in FAMILIES and FAMILIES[encoding].exact


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
    origins: tuple[tuple[str, Location], ...] = ()
    """The fields a models.json set, each with where (``("window", <models.json:3:15>)``);
    empty for a registry entry as shipped."""

    def origin(self, key: str) -> Location | None:
        """Where a models.json set ``key`` (``window``, ``max_input``, ``max_output``,
        ``tokenizer``); ``None`` when it comes from the registry."""
        return next((loc for k, loc in reversed(self.origins) if k == key), None)

    def provenance(self, key: str) -> str:
        """``model gpt-4o (models.json:3:15)`` for a value a models.json set, else ``model
        gpt-4o (registry 2026-11-23)``."""
        loc = self.origin(key)
        if loc is None:
            return f"model {self.name} ({self.registry_label})"
        pos = loc.range.start
        return f"model {self.name} ({os.path.basename(loc.file)}:{pos.line + 1}" \
            f":{pos.character + 1})"

    @property
    def exact(self) -> bool:
        """Counts for this model are exact (else approximate, shown with ``≈``)."""
        return counts_exactly(self.tokenizer, self.encoding)

    @property
    def encoding(self) -> str:
        return counting_encoding(self.tokenizer, self.name)

    @property
    def missing_extra(self) -> str | None:
        """The extra (``llama``, ``qwen``, ...) whose tokenizer would count this model
        exactly when it is not installed; None when counts are exact or no extra helps."""
        if self.exact:
            return None
        tokens = _TOKENS_FAMILY.get(self.tokenizer)
        family = FAMILIES.get(tokens) if tokens is not None else None
        if family is not None and family.exact and family.extra and \
                family_for_model(self.name) == tokens:
            return family.extra
        return None

    @property
    def counting(self) -> str:
        """How counts are made, for a listing: ``o200k_base (exact)``, ``≈ claude_approx``,
        or ``≈ cl100k_base (exact with budgetlens[llama])`` when an exact tokenizer exists
        for the model but its extra is not installed."""
        if self.exact:
            return f"{self.encoding} (exact)"
        extra = self.missing_extra
        return f"≈ {self.encoding} (exact with budgetlens[{extra}])" if extra else \
            f"≈ {self.encoding}"

    @property
    def approximate_why(self) -> str | None:
        """Why this model's counts are approximate, and the ``pip install`` that makes them
        exact when there is one; None when they are exact."""
        if self.exact:
            return None
        extra = self.missing_extra
        if extra:
            return (f"its tokenizer ({_TOKENS_FAMILY.get(self.tokenizer)}) is not installed:"
                    f" pip install 'budgetlens[{extra}]' counts it exactly")
        return "no exact offline tokenizer exists for it"

    @property
    def registry_label(self) -> str:
        return f"registry {self.date}"

    def describe(self) -> str:
        """A few lines for a hover: provider, limits, tokenizer, source and date."""
        family = FAMILIES.get(self.encoding)
        base = family.approximates if family is not None and family.approximates else \
            self.encoding
        counts = "exact" if self.exact else f"approximate (≈, counted with {base})"
        lines = [f"**{self.name}** ({self.provider})",
                 f"- window: {self.window:,} tokens",
                 f"- max output: {self.max_output:,} tokens" if self.max_output else
                 "- max output: not published",
                 f"- tokenizer: {self.tokenizer}, counts {counts}",
                 f"- source: {self.source} ({self.registry_label})"]
        if self.max_input:
            lines.insert(3, f"- max input: {self.max_input:,} tokens")
        if self.origins:
            lines.append("- set by " + ", ".join(
                f"{k}: {self.provenance(k)[len(self.name) + 8:-1]}" for k in
                dict.fromkeys(k for k, _ in self.origins)))
        return "\n".join(lines)


@dataclass(frozen=True)
class Fixed:
    """A finding of ``budgetlens models --doctor`` that corrections.json fixed."""

    model: str
    check: str
    reason: str
    source: str


@dataclass(frozen=True)
class Registry:
    date: str
    sources: tuple[dict[str, str], ...]
    models: dict[str, ModelInfo]
    fixed: tuple[Fixed, ...] = ()
    """What corrections.json changed (the loader applies it to the shipped snapshot)."""
    exceptions: dict[str, dict[str, str]] = field(default_factory=dict)
    """Justified doctor findings: model -> check -> reason (corrections.json)."""
    disagreements: dict[str, list[dict[str, Any]]] | None = None
    """Where the two sources gave different numbers, recorded by the refresh script
    (``None``: the snapshot was refreshed before it recorded them)."""

    @functools.cached_property
    def _folded(self) -> dict[str, str]:
        return {name.lower(): name for name in self.models}

    @property
    def folded(self) -> dict[str, str]:
        """Each name lower-cased -> the name."""
        return self._folded

    def get(self, name: str) -> ModelInfo | None:
        """The model called ``name`` (case does not matter), also under a provider prefix
        (``openai/gpt-4o-mini``) or as an Ollama tag (``llama3.1:8b``, see ``resolve``);
        ``None`` when unknown."""
        info = self.models.get(name)
        if info is None:
            canonical = self.resolve(name)
            info = self.models.get(canonical) if canonical else None
        return info

    def resolve(self, name: str) -> str | None:
        """The registry name that ``name`` means, or ``None``: the name itself (case does
        not matter); else without a provider prefix (``openai/``, ``azure/``,
        ``openrouter/``, ...: ``resolution.PREFIXES``); else an Ollama tag read as the
        model it names (``resolution.tag_candidates``). Each rule gives one name, so a
        name resolves only when unambiguous."""
        return resolution.resolve(name, self._folded)

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
    """A registry from the text of a ``registry.json`` (as written, without corrections)."""
    data = json.loads(text)
    date = str(data["date"])
    return Registry(date, tuple(data["sources"]),
                    {name: _info(name, raw, date) for name, raw in data["models"].items()},
                    disagreements=data.get("disagreements"))


def _resource(name: str) -> str:
    return resources.files("budgetlens.models").joinpath(name).read_text("utf-8")


def load_raw_registry() -> Registry:
    """The bundled ``registry.json`` as written, before corrections.json."""
    return parse_registry(_resource("registry.json"))


def load_corrections() -> dict[str, Any]:
    """The bundled ``corrections.json``."""
    data: dict[str, Any] = json.loads(_resource("corrections.json"))
    return data


@functools.lru_cache(maxsize=1)
def load_registry() -> Registry:
    """The bundled registry with corrections.json applied, read once (the first call costs
    a few milliseconds)."""
    return apply_corrections(load_raw_registry(), load_corrections())


_FIELDS = ("window", "max_input", "max_output", "tokenizer")


def _corrected(info: ModelInfo, fix: dict[str, Any], why: str) -> ModelInfo:
    changed = {k: v for k, v in fix.items() if k in _FIELDS and getattr(info, k) != v}
    if not changed:
        return info
    return replace(info, **changed,
                   source=f"{info.source}; {', '.join(changed)} corrected: corrections.json"
                          f" ({why})")


def apply_corrections(raw: Registry, data: dict[str, Any]) -> Registry:
    """``raw`` with the rules and per-model corrections of a corrections.json applied
    (each change recorded in ``Registry.fixed`` and in the entry's ``source``); applying
    it twice changes nothing more."""
    exceptions: dict[str, dict[str, str]] = data.get("exceptions", {})
    models = dict(raw.models)
    fixed: list[Fixed] = []
    for rule in data.get("rules", ()):
        check = rule["check"]
        for name, info in models.items():
            if check in exceptions.get(name, {}) or \
                    check not in {c for c, _ in findings(info.window, info.max_input,
                                                         info.max_output)}:
                continue
            models[name] = _corrected(info, rule["fix"], check)
            fixed.append(Fixed(name, check, rule["reason"], rule["source"]))
    for name, fix in data.get("corrections", {}).items():
        if name in models:
            models[name] = _corrected(models[name], fix, fix["reason"])
            fixed.append(Fixed(name, "correction", fix["reason"], fix["source"]))
    return replace(raw, models=models, fixed=tuple(fixed), exceptions=exceptions)


def with_entries(registry: Registry, entries: dict[str, ModelInfo]) -> Registry:
    """``registry`` with ``entries`` (from models.json files) replacing or added to its
    models."""
    if not entries:
        return registry
    return replace(registry, models={**registry.models, **entries})
