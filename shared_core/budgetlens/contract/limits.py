"""Where a pipeline's model limits come from: config.json's numbers, the model registry
(``model:`` in config.json or on a step, or a ``--target``) and the server (``serving``).

``config_limits`` gives the window, output ceiling and tokenizer of a pipeline with their
provenance (``window: 128000 from model gpt-4o (registry 2026-11-23)``) and the diagnostics
that explain them: a typed number that contradicts the registry (BL060), an unknown model
with a suggestion (BL061), a server limit that binds (BL062). ``step_limits`` does the same
for a ``call_model`` step that names its own ``model``.
"""

from __future__ import annotations

from dataclasses import dataclass

from budgetlens import codes
from budgetlens.contract.config import LoadedConfig
from budgetlens.contract.frozen import quick_init
from budgetlens.contract.results import Term
from budgetlens.models.registry import ModelInfo, Registry, load_registry
from budgetlens.models.resolution import query_of
from budgetlens.source import Diagnostic, Location, Related, Severity

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
    max_input: Term | None = None
    """The model's input limit, when it is below the window (``input_limit``)."""

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


def _serving(config: LoadedConfig, window: Term | None, name: str | None,
             out: list[Diagnostic] | None) -> Term | None:
    """The window after the server's limits (the smallest wins); BL062 (into ``out``) when
    a server limit is the binding one."""
    cfg = config.config
    serving = cfg.serving if cfg is not None else None
    if serving is None:
        return window
    limits = [(getattr(serving, key), key) for key in SERVING_KEYS
              if getattr(serving, key) is not None]
    if not limits:
        return window
    value, key = min(limits)
    if window is not None and value >= window.value:
        return window
    loc = config.location(f"serving.{key}")
    if window is not None and out is not None:
        whose = f"{name}'s" if name else "the model's"
        out.append(_diag(loc, Severity.INFORMATION, codes.SERVING_BINDS,
                         f"serving.{key} {value:,} is below {whose} window of"
                         f" {window.value:,} tokens ({window.source}): the server's"
                         f" limit is the window every step is checked against"))
    before = f" (below {window.value} from {window.source})" if window is not None else ""
    return Term(value, f"config.json serving.{key}{before}", location=loc)


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
    registry = registry or load_registry()
    if target is not None:
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
    info = registry.get(cfg.model) if cfg.model else None
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
    window = _serving(config, window, info.name if info else cfg.model, out)
    return ModelLimits(info, cfg.model, window, ceiling, info.encoding if info else None,
                       False, tuple(out), input_limit(info, window, model_loc))


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
    if config is not None:
        window = _serving(config, window, info.name, None)
    ceiling = _term(info, "max_output", info.max_output, loc) if info.max_output \
        else None
    return ModelLimits(info, info.name, window, ceiling, info.encoding, False,
                       max_input=input_limit(info, window, loc))


def replace_diagnostics(base: ModelLimits,
                        diagnostics: tuple[Diagnostic, ...] = ()) -> ModelLimits:
    return ModelLimits(base.model, base.name, base.window, base.ceiling, base.tokenizer,
                       base.forced, diagnostics, base.max_input)
