"""Where a pipeline's model limits come from: config.json's numbers, the model registry
(``model:`` in config.json or on a step, or a ``--target``) and the server (``serving``).

``config_limits`` gives the window, output ceiling and tokenizer of a pipeline with their
provenance (``window: 128000 from model gpt-4o (registry 2026-11-23)``) and the diagnostics
that explain them: a typed number that contradicts the registry (BL060), an unknown model
with a suggestion (BL061), a server limit that binds (BL062). ``step_limits`` does the same
for a ``call_model`` step that names its own ``model``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from budgetlens import codes
from budgetlens.contract.config import LoadedConfig
from budgetlens.contract.frozen import quick_init
from budgetlens.contract.results import Term
from budgetlens.models.registry import ModelInfo, Registry, load_registry
from budgetlens.models.resolution import query_of
from budgetlens.source import Diagnostic, Location, Related, Severity

if TYPE_CHECKING:
    from budgetlens.models.gateways import GatewayCap

SERVING_KEYS = ("max_model_len", "num_ctx")


@quick_init
@dataclass(frozen=True)
class ModelLimits:
    """The limits a pipeline (or one step) is checked with, and why."""

    model: ModelInfo | None = None
    name: str | None = None  # the model named (also when the registry does not know it)
    window: Term | None = None
    ceiling: Term | None = None
    tokenizer: str | None = None
    """The encoding the model's tokenizer family is counted with (None: no model known)."""
    forced: bool = False  # a target: its tokenizer wins over config.json's
    diagnostics: tuple[Diagnostic, ...] = ()
    unserved: Term | None = None
    """The window before any ``serving`` limit (a step's own ``serving`` replaces the
    config's: it applies to this)."""
    gateway: str | None = None  # the gateway named (config.json or the step), if any
    gateway_location: Location | None = None
    cap: GatewayCap | None = None  # the gateway's per-request cap for this model
    max_input: Term | None = None
    """The model's input limit, when it is below the window (``input_limit``)."""
    variant: str | None = None
    """The variant whose window is used (``variant: 1m``): the registry's ``max_input`` is
    the model's own window's, and the variant table records none, so none applies."""

    @property
    def approximate(self) -> bool:
        """Counts are approximate: the model's family has no exact offline tokenizer."""
        return self.model is not None and not self.model.exact


def _diag(loc: Location, severity: Severity, code: str, message: str,
          related: tuple[Related, ...] = ()) -> Diagnostic:
    return Diagnostic(loc.file, loc.range, severity, code, message, related=related)


def _from_model(info: ModelInfo, key: str = "window") -> str:
    return info.provenance(key)


def _term(info: ModelInfo, key: str, value: int, loc: Location | None) -> Term:
    """A limit from the model's entry: at the models.json value that set it, if one did."""
    return Term(value, _from_model(info, key), location=info.origin(key) or loc)


def unknown_model_message(name: str, what: str = "model", then: str = "",
                          registry: Registry | None = None) -> str:
    """``model 'gpt4o' is not in the model registry (2026-11-23)<then>; did you mean
    'gpt-4o'?``"""
    registry = registry or load_registry()
    suggestion = registry.suggest(name)
    hint = f"; did you mean {suggestion!r}?" if suggestion else \
        f"; run `budgetlens models {query_of(name)}` to find its name"
    return f"{what} {name!r} is not in the model registry ({registry.date}){then}{hint}"


def _typed(config: LoadedConfig, key: str) -> Term | None:
    cfg = config.config
    value = getattr(cfg, key, None) if cfg is not None else None
    if value is None or (key == "model_context_window" and not config.window_ok):
        return None
    return Term(int(value), f"config.json {key}", location=config.location(key))


def _checked(typed: Term | None, published: int | None, info: ModelInfo | None,
             what: str, model_loc: Location, out: list[Diagnostic]) -> Term | None:
    """The typed number if any, else the registry's. A typed number above the registry's
    claims more than the model has: BL060. One below it is a deliberate, safe restriction
    (the check is stricter) and is used without a warning."""
    if info is None or published is None:
        return typed
    if typed is None:
        return _term(info, "window" if what == "a window" else "max_output", published,
                     model_loc)
    if typed.value > published and typed.location is not None:
        out.append(_diag(typed.location, Severity.WARNING, codes.MODEL_CONTRADICTED,
                         f"{info.name} has {what} of {published:,} tokens"
                         f" ({info.registry_label}); config.json says {typed.value}",
                         (Related(model_loc, f"model: {info.name}"),)))
    return typed


#: One serving limit: its value, its key as written (``serving.num_ctx``,
#: ``serving["ollama/llama3.1"].num_ctx``, ``steps[1].serving.num_ctx``), the file it is in
#: (for the provenance) and where.
_Limit = tuple[int, str, str, Location]


def block_limits(block: Mapping[str, Any], key_text: str, file_text: str,
                 where: Callable[[str], Location]) -> list[_Limit]:
    """The serving limits (``SERVING_KEYS``) a mapping sets: whole numbers above 0 only (a
    wrong value is reported where the block is read)."""
    out: list[_Limit] = []
    for key in SERVING_KEYS:
        value = block.get(key)
        if type(value) is int and value > 0:
            out.append((value, f"{key_text}.{key}", file_text, where(key)))
    return out


def _same_model(key: str, names: tuple[str, ...], registry: Registry | None) -> bool:
    """``key`` (of config.json's ``serving``) names one of ``names``: as written (case
    does not matter) or as the registry resolves it (``ollama/llama3.1``)."""
    if key.lower() in {n.lower() for n in names}:
        return True
    info = (registry or load_registry()).get(key)
    return info is not None and info.name in names


def _config_place(config: LoadedConfig, prefix: str) -> Callable[[str], Location]:
    return lambda key: config.location(f"{prefix}.{key}")


def config_serving(config: LoadedConfig, names: tuple[str, ...],
                   registry: Registry | None = None) -> list[_Limit]:
    """The serving limits config.json sets for a model called one of ``names``: its own
    block (``serving: {"ollama/llama3.1": {"num_ctx": 8192}}``) when one sets a limit,
    else the workspace-wide keys (``serving: {"num_ctx": 8192}``)."""
    cfg = config.config
    serving = cfg.serving if cfg is not None else None
    if serving is None:
        return []
    for key, block in (serving.model_extra or {}).items():
        if isinstance(block, dict) and names and _same_model(key, names, registry):
            found = block_limits(block, f"serving[{key!r}]", "config.json",
                                 _config_place(config, f"serving.{key}"))
            if found:
                return found
    return [(getattr(serving, key), f"serving.{key}", "config.json",
             config.location(f"serving.{key}")) for key in SERVING_KEYS
            if getattr(serving, key) is not None]


def bind_serving(window: Term | None, limits: list[_Limit], name: str | None,
                 out: list[Diagnostic] | None, whom: str = "every step is") -> Term | None:
    """The window after the server's limits (the smallest of the block wins); BL062 (into
    ``out``) when a server limit is the binding one."""
    if not limits:
        return window
    value, key_text, file_text, loc = min(limits, key=lambda limit: limit[0])
    if window is not None and value >= window.value:
        return window
    if window is not None and out is not None:
        whose = f"{name}'s" if name else "the model's"
        out.append(_diag(loc, Severity.INFORMATION, codes.SERVING_BINDS,
                         f"{key_text} {value:,} is below {whose} window of"
                         f" {window.value:,} tokens ({window.source}): the server's"
                         f" limit is the window {whom} checked against"))
    before = f" (below {window.value} from {window.source})" if window is not None else ""
    return Term(value, f"{file_text} {key_text}{before}", location=loc)


def _serving(config: LoadedConfig, window: Term | None, name: str | None,
             out: list[Diagnostic] | None, info: ModelInfo | None = None,
             registry: Registry | None = None) -> Term | None:
    """The window after config.json's serving limits for the model (its own block, else
    the workspace-wide one)."""
    names = tuple(n for n in (name, info.name if info else None) if n)
    return bind_serving(window, config_serving(config, names, registry), name, out)


def _variant_window(window: Term | None, info: ModelInfo | None, wanted: object,
                    loc: Location, out: list[Diagnostic], what: str) -> Term | None:
    """The window of the model's variant ``wanted`` (``variant: 1m``) when the window
    comes from the registry; BL068 for a variant the table does not have."""
    if wanted is None:
        return window
    if info is None:
        out.append(_diag(loc, Severity.WARNING, codes.GATEWAY_UNKNOWN,
                         f"{what} variant {wanted!r} needs a registry model (model: ...);"
                         " the window is used as it is"))
        return window
    # lazy: start-up speed (the gateway and variant tables: only a variant or a gateway
    # named needs them)
    from budgetlens.models.gateways import variant, variant_names

    found = variant(info.name, wanted) if isinstance(wanted, str) else None
    if found is None:
        known = variant_names(info.name)
        listed = ", ".join(known) if known else "none recorded"
        out.append(_diag(loc, Severity.WARNING, codes.GATEWAY_UNKNOWN,
                         f"{what} variant {wanted!r} is not a variant of {info.name}"
                         f" (variants: {listed}); the registry's limits are used"))
        return window
    if window is not None and not window.source.startswith("model "):
        return window  # a typed number wins (a deliberate restriction)
    return Term(found.window, f"{found.label}; needs {found.requires}", location=loc)


def _gateway(limits: ModelLimits, wanted: object, loc: Location,
             out: list[Diagnostic], what: str) -> ModelLimits:
    """``limits`` with the gateway ``wanted`` (``gateway: github-models``) and its cap for
    the model; BL068 for a gateway the table does not have, or a model it has no
    sourced cap for (information)."""
    if wanted is None:
        return limits
    from budgetlens.models.gateways import (  # lazy, as in _variant_window
        gateway_cap,
        gateway_names,
        gateway_unsourced,
    )

    if not isinstance(wanted, str) or wanted not in gateway_names():
        out.append(_diag(loc, Severity.WARNING, codes.GATEWAY_UNKNOWN,
                         f"{what} gateway {wanted!r} is not in the gateway table (gateways:"
                         f" {', '.join(gateway_names())}); no gateway cap is checked"))
        return replace(limits, gateway=None, gateway_location=None, cap=None)
    model = limits.model.name if limits.model is not None else None
    cap = gateway_cap(wanted, model)
    if cap is None:
        unsourced = gateway_unsourced(wanted) or "not yet sourced"
        out.append(_diag(loc, Severity.INFORMATION, codes.GATEWAY_UNKNOWN,
                         f"gateway {wanted} has no recorded cap for"
                         f" {model or 'this model'} ({unsourced}); no gateway cap is"
                         " checked"))
    return replace(limits, gateway=wanted, gateway_location=loc, cap=cap)


def input_limit(info: ModelInfo | None, window: Term | None,
                loc: Location | None) -> Term | None:
    """The registry's ``max_input`` of ``info`` as a term, when it is below ``window`` (a
    server limit below it makes it moot); None otherwise."""
    if info is None or info.max_input is None or window is None \
            or info.max_input >= window.value:
        return None
    return Term(info.max_input, f"max_input of {_from_model(info, 'max_input')}",
                location=info.origin("max_input") or loc)


def config_limits(config: LoadedConfig | None, target: str | None = None,
                  registry: Registry | None = None) -> ModelLimits:
    """The window, output ceiling and tokenizer of a pipeline whose config is ``config``;
    with ``target``, those of the target model (typed numbers and ``serving`` ignored).
    ``registry``: the bundled one with the workspace's models.json (default: bundled)."""
    if config is None or config.config is None:
        return ModelLimits()
    cfg = config.config
    # the registry is read on first use (a few ms): a config.json without a model needs none
    if target is not None:
        registry = registry or load_registry()
        info = registry.get(target)
        if info is None:
            return ModelLimits(name=target)
        limit = _term(info, "window", info.window, None)
        return ModelLimits(info, info.name, limit,
                           _term(info, "max_output", info.max_output, None)
                           if info.max_output else None, info.encoding, True,
                           max_input=input_limit(info, limit, None))
    window, ceiling = _typed(config, "model_context_window"), _typed(
        config, "model_max_output_tokens")
    out: list[Diagnostic] = []
    info = (registry or load_registry()).get(cfg.model) if cfg.model else None
    model_loc = config.location("model")
    if cfg.model and info is None:
        out.append(_diag(model_loc, Severity.WARNING, codes.MODEL_UNKNOWN, unknown_model_message(
            cfg.model, then=": its limits come from config.json only", registry=registry)))
        if window is None and config.window_ok:
            out.append(_diag(model_loc, Severity.ERROR, codes.WINDOW_INVALID,
                             "config.json has no model_context_window and"
                             f" {unknown_model_message(cfg.model, registry=registry)}"))
    window = _checked(window, info.window if info else None, info, "a window", model_loc, out)
    ceiling = _checked(ceiling, info.max_output if info else None, info,
                       "an output ceiling", model_loc, out)
    extra = cfg.model_extra or {}
    unserved = _variant_window(window, info, extra.get("variant"), config.location("variant"),
                               out, "config.json")
    chosen = str(extra.get("variant")) if unserved is not window else None
    window = _serving(config, unserved, info.name if info else cfg.model, out, info, registry)
    limits = ModelLimits(info, cfg.model, window, ceiling, info.encoding if info else None,
                         False, (), unserved, variant=chosen,
                         max_input=None if chosen else input_limit(info, window, model_loc))
    limits = _gateway(limits, extra.get("gateway"), config.location("gateway"), out,
                      "config.json")
    return replace(limits, diagnostics=tuple(out))


def step_limits(name: object, loc: Location, config: LoadedConfig | None,
                base: ModelLimits, registry: Registry | None = None) -> ModelLimits:
    """The limits of a step whose ``model`` is ``name`` (``base``: the pipeline's); a step
    model the registry does not know keeps the pipeline's limits (BL061)."""
    if name is not None and not isinstance(name, str) and not base.forced:
        return replace_diagnostics(base, (_diag(
            loc, Severity.ERROR, codes.INVALID_VALUE,
            f"step model must be a model name (a string), got {name!r}; the step is checked"
            " with the pipeline's limits"),))
    if not isinstance(name, str) or base.forced or (base.model is not None and
                                                     name == base.model.name):
        return replace_diagnostics(base)
    info = (registry or load_registry()).get(name)
    if info is None:
        return replace_diagnostics(base, (_diag(
            loc, Severity.WARNING, codes.MODEL_UNKNOWN, unknown_model_message(
                name, "step model", ": the step is checked with the pipeline's limits",
                registry)),))
    window: Term | None = _term(info, "window", info.window, loc)
    unserved = window
    if config is not None:
        window = _serving(config, window, info.name, None, info, registry)
    ceiling = _term(info, "max_output", info.max_output, loc) if info.max_output \
        else None
    own = ModelLimits(info, info.name, window, ceiling, info.encoding, False, (), unserved,
                      max_input=input_limit(info, window, loc))
    if base.gateway is not None:  # config.json's gateway, for this step's model
        out: list[Diagnostic] = []
        own = _gateway(own, base.gateway, loc, out, "config.json")
        own = replace(own, gateway_location=base.gateway_location, diagnostics=tuple(out))
    return own


def step_terms(own: ModelLimits, step: Mapping[str, Any], config: LoadedConfig | None,
               where: Callable[..., Location], label: str,
               registry: Registry | None = None) -> ModelLimits:
    """``own`` (the step's model's limits, or the pipeline's) with the step's own
    ``variant``, ``serving`` and ``gateway``: a variant's window, the step's serving block
    (it wins over config.json's, per model and workspace-wide) and its gateway (it wins
    over config.json's). ``where(*keys)`` is the place of a key of the step; ``label`` is
    ``steps[1]``. Problems are in the result's diagnostics."""
    out: list[Diagnostic] = []
    if own.forced:
        return own
    before = own.window
    if step.get("variant") is not None:
        own = _step_variant(own, step.get("variant"), config, where("variant"), out, registry)
    serving = step.get("serving")
    if isinstance(serving, dict):
        limits = block_limits(serving, f"{label}.serving", "pipeline",
                              lambda k: where("serving", k))
        if limits:
            own = replace(own, window=bind_serving(own.unserved or own.window, limits,
                                                   own.name, out, "this step is"))
    elif serving is not None:
        out.append(_diag(where("serving"), Severity.ERROR, codes.INVALID_VALUE,
                         f"{label}.serving must be a mapping (max_model_len, num_ctx), got"
                         f" {serving!r}; the step is checked without it"))
    for key in SERVING_KEYS:
        value = serving.get(key) if isinstance(serving, dict) else None
        if value is not None and not (type(value) is int and value > 0):
            out.append(_diag(where("serving", key), Severity.ERROR, codes.INVALID_VALUE,
                             f"{label}.serving.{key} must be an integer > 0, got {value!r};"
                             " the value is ignored"))
    if step.get("gateway") is not None:
        own = _gateway(own, step.get("gateway"), where("gateway"), out, "step")
    if own.window is not before:
        own = replace(own, max_input=None if own.variant
                      else input_limit(own.model, own.window, where()))
    return replace(own, diagnostics=(*own.diagnostics, *out))


def _step_variant(own: ModelLimits, wanted: object, config: LoadedConfig | None,
                  loc: Location, out: list[Diagnostic],
                  registry: Registry | None) -> ModelLimits:
    """``own`` with the window of a step's ``variant`` (under config.json's serving limits
    for its model); ``variant`` set when the variant's window is used."""
    start = own.unserved if own.unserved is not None else own.window
    window = _variant_window(start, own.model, wanted, loc, out, "step")
    if window is not start:
        own = replace(own, variant=str(wanted))
    if config is not None and window is not None:
        name = own.model.name if own.model is not None else own.name
        return replace(own, unserved=window, window=_serving(config, window, name, None,
                                                             own.model, registry))
    return replace(own, unserved=window, window=window)


def replace_diagnostics(base: ModelLimits,
                        diagnostics: tuple[Diagnostic, ...] = ()) -> ModelLimits:
    return replace(base, diagnostics=diagnostics)
