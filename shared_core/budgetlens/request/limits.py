"""What a request is fitted against: the model's window, input limit, output ceiling,
tokenizer and chat framing (from the bundled registry), the server's limit (``serving``),
the margin, and the name of the output-limit parameter.

- ``serving``: ``{"max_model_len": 8192}`` (vLLM) or ``{"num_ctx": 8192}`` (Ollama) lowers
  the window, as config.json's ``serving`` does for a pipeline (``contract.limits``); the
  smallest wins. A near miss of a key (``max_model_length``) is an error, not ignored.
- ``variant``: a variant of the model from ``models/variants.json`` (``"1m"``: Claude's 1M
  window, which needs a beta header) sets the window; the registry's ``max_input`` is the
  model's own window's, so none applies (as the check does, ``contract.limits``).
- ``gateway``: a gateway of ``models/gateways.json`` (``"github-models"``) caps the input
  (everything but the output, margin included) at its sourced per-request cap for the
  model, as BL067 does in the check; a gateway with no recorded cap for the model caps
  nothing. An unknown variant or gateway is a ``ValueError``, not ignored.
- ``margin``: tokens kept free for what the count may miss: an ``int``, or ``"2% + 128"``
  (a share of the input tokens, rounded up, plus tokens; read and computed by
  ``contract.margin``, as the check's); default 0 for an exact count and the check's
  default for an approximate one (≈), ``contract.margin.DEFAULT_APPROXIMATE_MARGIN``
  (``"12% + 128"``).
- the output parameter: ``max_completion_tokens`` for OpenAI's reasoning models (``o1``,
  ``o3``, ``o4``, ``gpt-5``: they refuse ``max_tokens``), ``max_output_tokens`` for Google
  (the google-genai SDK's name), ``max_tokens`` otherwise (OpenAI-compatible servers,
  Anthropic).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from budgetlens.contract.margin import DEFAULT_APPROXIMATE_MARGIN, margin_tokens
from budgetlens.contract.margin import parse_margin as contract_margin
from budgetlens.models.gateways import Variant, gateway_cap, gateway_names, variant_names
from budgetlens.models.gateways import variant as find_variant
from budgetlens.models.registry import ModelInfo, load_registry
from budgetlens.request.framing import FRAMINGS, Framing, bare_name, openai_framing
from budgetlens.tokens.core import TokenizerError, get_tokenizer
from budgetlens.tokens.families import family_for_model, is_exact

#: The server limits a ``serving`` block may set: config.json's keys (``contract.limits``
#: has the same; not imported from there, as that loads config.json's validation).
SERVING_KEYS = ("max_model_len", "num_ctx")
#: The registry's tokenizer family -> the chat framing its models are counted with.
_FRAMING_OF = {"claude": "claude", "gemini": "gemini", "llama3": "llama3", "llama4": "llama3",
               "qwen": "qwen", "deepseek": "deepseek", "mistral": "mistral"}
_TOKENS_FRAMING = {"llama3": "llama3", "qwen2": "qwen", "deepseek": "deepseek",
                   "mistral_tekken": "mistral", "claude_approx": "claude",
                   "gemini_approx": "gemini"}
_REASONING = ("o1", "o3", "o4", "gpt-5")


class UnknownModel(ValueError):
    """The model is not in the registry and no ``window`` was given."""


@dataclass(frozen=True)
class Margin:
    """``percent``% of the input tokens (rounded up) plus ``tokens``."""

    percent: float | Fraction = 0.0
    tokens: int = 0

    def of(self, input_tokens: int) -> int:
        return margin_tokens(Fraction(str(self.percent)) if isinstance(self.percent, float)
                             else self.percent, self.tokens, input_tokens)

    def __str__(self) -> str:
        if not self.percent:
            return f"{self.tokens}"
        pct = f"{float(self.percent):g}%"
        return f"{pct} + {self.tokens}" if self.tokens else pct


def parse_margin(margin: int | str | Margin | None, approximate: bool) -> Margin:
    """The margin of ``margin`` (see the module docstring); ``ValueError`` when unreadable."""
    if isinstance(margin, Margin):
        return margin
    if margin is None:
        return parse_margin(DEFAULT_APPROXIMATE_MARGIN, False) if approximate else Margin()
    if isinstance(margin, bool) or (isinstance(margin, int) and margin < 0):
        raise ValueError(f"margin must be tokens >= 0 or a text like '2% + 128', got {margin!r}")
    if isinstance(margin, int):
        return Margin(0.0, margin)
    parsed = contract_margin(margin) if isinstance(margin, str) else None
    if parsed is None:
        raise ValueError(f"margin must be tokens >= 0 or a text like '2% + 128', got {margin!r}")
    return Margin(parsed[0], parsed[1])


def output_param(model: str, provider: str = "") -> str:
    """The name of the output-limit parameter for ``model`` (module docstring)."""
    name = bare_name(model)
    if provider == "OpenAI" or name.startswith(_REASONING):
        if name.startswith(_REASONING):
            return "max_completion_tokens"
        return "max_tokens"
    if provider == "Google" or name.startswith("gemini"):
        return "max_output_tokens"
    return "max_tokens"


@dataclass(frozen=True)
class RequestLimits:
    """The model a request goes to, and everything it is fitted against."""

    model: str
    info: ModelInfo | None
    window: int
    window_source: str
    max_input: int | None
    max_output: int | None
    tokenizer: str
    """The tokenizer's name (an encoding or family name; ``get_tokenizer`` takes it)."""
    tokenizer_exact: bool
    framing: Framing
    output_param: str
    max_input_source: str = ""
    """Where ``max_input`` comes from: the registry's entry, or a gateway's cap."""


def serving_window(serving: Mapping[str, object] | None) -> tuple[int, str] | None:
    """The smallest server limit of ``serving`` and its key; None without one. A key that
    is a near miss of a known one raises ``ValueError``."""
    if not serving:
        return None
    limits: list[tuple[int, str]] = []
    for key, value in serving.items():
        if key in SERVING_KEYS:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"serving {key} must be tokens >= 1, got {value!r}")
            limits.append((value, key))
            continue
        from budgetlens.contract.near_miss import suggest  # lazy: only for an unknown key

        close = suggest(key, SERVING_KEYS)
        if close is not None:
            raise ValueError(f"serving key {key!r} is not known; did you mean {close!r}?")
    return min(limits) if limits else None


def _lookup(model: str) -> ModelInfo | None:
    registry = load_registry()
    info = registry.get(model)
    if info is None and "/" in model:
        info = registry.get(model.rsplit("/", 1)[1])
    return info


def _framing(model: str, info: ModelInfo | None, tokenizer: str) -> Framing:
    if info is not None:
        if info.provider == "OpenAI":
            return openai_framing(model, info.tokenizer)
        return FRAMINGS[_FRAMING_OF.get(info.tokenizer, "generic")]
    if tokenizer in ("o200k_base", "cl100k_base") and bare_name(model).startswith(
            ("gpt-", "o1", "o3", "o4", "chatgpt")):
        return openai_framing(model, tokenizer)
    family = family_for_model(model)
    return FRAMINGS[_TOKENS_FRAMING.get(family or "", "generic")]


def framing_of(model: str, info: ModelInfo | None, tokenizer: str) -> Framing:
    """The chat framing ``model`` is counted with (``info``: its registry entry, if any),
    as a request to it is (the contract counts a step's tools and schema with it)."""
    return _framing(model, info, tokenizer)


def _tokenizer_of(model: str, info: ModelInfo | None, given: str | None) -> tuple[str, bool]:
    if given is not None:
        return given, is_exact(get_tokenizer(given))
    if info is not None:
        return info.encoding, info.exact
    try:
        tok = get_tokenizer(model)
    except TokenizerError:
        return "cl100k_base", False  # the nearest shipped vocabulary (models/registry.py)
    return tok.name, is_exact(tok)


def _model_limits(model: str, tokenizer: str | None) -> tuple[
        ModelInfo | None, str, bool, Framing, str]:
    """What a model's name decides: its entry, tokenizer and exactness, framing, output
    parameter."""
    info = _lookup(model)
    name, exact = _tokenizer_of(model, info, tokenizer)
    return (info, name, exact, _framing(model, info, name),
            output_param(model, info.provider if info is not None else ""))


def request_limits(model: str, *, serving: Mapping[str, object] | None = None,
                   window: int | None = None, max_output: int | None = None,
                   tokenizer: str | None = None, variant: str | None = None,
                   gateway: str | None = None) -> RequestLimits:
    """The limits of a request to ``model``: the registry's (or a ``variant``'s window),
    lowered by ``serving`` and capped by a ``gateway``; ``window`` / ``max_output`` /
    ``tokenizer`` given here win (a model the registry does not know needs ``window``,
    else ``UnknownModel``)."""
    info, name, exact, framing, param = _model_limits(model, tokenizer)
    if window is None and info is None:
        registry = load_registry()
        close = registry.suggest(model)
        raise UnknownModel(f"model {model!r} is not in the model registry ({registry.date}):"
                           " pass window=..." + (f"; did you mean {close!r}?" if close else ""))
    base = window if window is not None else info.window if info is not None else 0
    source = "given" if window is not None else \
        f"{info.name if info else model}, {info.registry_label if info else 'registry'}"
    max_input = info.max_input if info is not None else None
    if variant is not None:
        found = _variant(info, model, variant)
        max_input = None  # the registry's is the model's own window's (contract.limits)
        if window is None:
            base, source = found.window, f"{found.label}; needs {found.requires}"
    served = serving_window(serving)
    if served is not None and served[0] < base:
        base, source = served[0], f"serving {served[1]}, below {source}: {base:,}"
    input_source = f"max_input of {info.name}, {info.registry_label}" if info else ""
    max_input = max_input if max_input is not None and max_input < base else None
    cap = _gateway_cap(info, gateway)
    if cap is not None and cap[0] < base and (max_input is None or cap[0] < max_input):
        max_input, input_source = cap
    return RequestLimits(
        model=info.name if info is not None else model, info=info, window=base,
        window_source=source, max_input=max_input,
        max_output=max_output if max_output is not None else
        info.max_output if info is not None else None,
        tokenizer=name, tokenizer_exact=exact, framing=framing, output_param=param,
        max_input_source=input_source if max_input is not None else "")


def _variant(info: ModelInfo | None, model: str, wanted: str) -> Variant:
    """The variant ``wanted`` of ``model``; ``ValueError`` when the table has none."""
    found = find_variant(info.name, wanted) if info is not None else None
    if found is None:
        known = ", ".join(variant_names(info.name)) if info is not None else ""
        raise ValueError(f"variant {wanted!r} is not a variant of {model} (variants:"
                         f" {known or 'none recorded'}; models/variants.json)")
    return found


def _gateway_cap(info: ModelInfo | None, gateway: str | None) -> tuple[int, str] | None:
    """The input cap of ``gateway`` for the model and its source; None without one (a
    gateway with no recorded cap for the model). ``ValueError`` for an unknown gateway."""
    if gateway is None:
        return None
    if gateway not in gateway_names():
        raise ValueError(f"gateway {gateway!r} is not in the gateway table (gateways:"
                         f" {', '.join(gateway_names())}; models/gateways.json)")
    cap = gateway_cap(gateway, info.name if info is not None else None)
    return None if cap is None else (cap.max_input_tokens, f"the request cap of {cap.label}")
