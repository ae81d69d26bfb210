"""The plan of one ``call_model`` step: its terms as its files define them.

A step's plan (``_StepPlan``) holds every term of its budget except the token counts: the
prompt file to count, the template with its placeholders emptied, history, the output limit
and its floor, the step's own model, and the diagnostics those files alone give.
``_StepPlanner`` makes it (``step_plan``), or takes over the previous version's plan of an
unchanged step with its locations made again (``moved``). ``planner.py`` drives it for the
whole pipeline; ``check.py`` counts tokens and adds up the terms.

``_Shared`` is what every step of one pipeline shares (config.json, policy, context, window).
``CheckStopped`` lives here because planning and checking both poll ``stop()`` (``_poll``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from budgetlens import codes
from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.clamp import floor_below
from budgetlens.contract.config import LoadedConfig
from budgetlens.contract.enums import (
    OutputSource,
    TermSource,
)
from budgetlens.contract.frozen import quick_init
from budgetlens.contract.limits import ModelLimits, replace_diagnostics, step_limits, step_terms
from budgetlens.contract.pipeline import (
    PipelineFile,
    Setting,
    Step,
)
from budgetlens.contract.policy import Policy
from budgetlens.contract.results import (
    Term,
)
from budgetlens.contract.terms import (
    REASONING,
    RESPONSE_SCHEMA,
    TOOLS,
    TermSpec,
    plan_reasoning,
    plan_spec,
)
from budgetlens.files import (
    path_problem,
)
from budgetlens.models.registry import Registry
from budgetlens.source import Diagnostic, FixData, Location, Related, Severity
from budgetlens.yamldoc.parse import YamlPath
from budgetlens.yamldoc.scalar import string_range

if TYPE_CHECKING:
    from fractions import Fraction  # loaded by a margin with a percentage (margin.py)


class CheckStopped(Exception):
    """``check_pipeline``'s ``stop()`` turned true: the check was abandoned midway (the
    cache holds nothing of it but whole parsed files)."""


def _poll(stop: Callable[[], bool] | None) -> None:
    """Raise :class:`CheckStopped` when ``stop()`` holds (asked before each file of the
    extends chain is loaded and before each step is planned or checked)."""
    if stop is not None and stop():
        raise CheckStopped


# ------------------------------------------------------------------ terms from settings
def _setting_term(setting: Setting, source: str) -> Term:
    return Term(int(setting.value), source, setting.depth > 0, setting.location)


def _output_floor(limit: int, source: OutputSource, set_floor: Term | None) -> Term:
    """The lowest output limit a clamp may set for a step whose limit (after the model's
    ceiling) is ``limit``: ``min_output_tokens`` as set (``set_floor``, see
    ``_floor_setting``), default half of that limit, never above it."""
    if set_floor is None:
        return _half_output(limit, source)
    return replace(set_floor, value=floor_below(limit, set_floor.value))


@functools.lru_cache(maxsize=4096)
def _half_output(limit: int, source: OutputSource) -> Term:
    """The default output floor (half of the limit): a term of its arguments alone (no
    place), made once for the many steps of a run with the same limit."""
    return Term(floor_below(limit, None), f"half of {source} {limit}")


def _config_term(config: LoadedConfig | None, key: str) -> Term | None:
    """config.json's ``key`` as a term (``None`` when unset or without a usable config)."""
    cfg = config.config if config is not None else None
    value = getattr(cfg, key, None) if cfg is not None else None
    if config is None or value is None:
        return None
    return Term(int(value), f"config.json {key}", location=config.location(key))


def _name_location(pf: PipelineFile, index: int) -> Location:
    """The step's id (else name) value, else its first key, else the step (lazy)."""
    doc = pf.doc
    if doc is not None:
        for key in ("id", "name"):
            if ("steps", index, key) in doc.spans:
                return pf.location(("steps", index, key))
        step_node = doc.node(("steps", index))
        if isinstance(step_node, dict) and step_node:
            return pf.key_location(("steps", index, next(iter(step_node))))
    return pf.location(("steps", index))


@quick_init
@dataclass(frozen=True)
class _Shared:
    """What every ``call_model`` step of one pipeline is checked with."""

    config: LoadedConfig | None
    policy: Policy
    overhead: Term
    margin: Term
    history: Setting | None  # settings.max_history_tokens
    context: Term
    window: Term
    ceiling: Term | None
    inherited: bool  # the steps come from a parent pipeline
    margin_percent: Fraction | None = None  # of a text margin ("2% + 128"), see margin.py


# _At and _StepPlan are made for every step of every version of a pipeline, and never
# changed once made: plain dataclasses, whose __init__ costs a fifth of a frozen one's.
@dataclass
class _At:
    """One step being checked: the file that defines it, its index there and its name."""

    owner: PipelineFile
    index: int
    step: Step
    name: str

    def path(self, *keys: str) -> YamlPath:
        return ("steps", self.index, *keys)

    def location(self, *keys: str) -> Location:
        return self.owner.location(self.path(*keys))

    @property
    def name_location(self) -> Location:
        return _name_location(self.owner, self.index)


@dataclass
class _StepPlan:
    """One ``call_model`` step as its pipeline, extends chain and config.json define it:
    every term but the token counts, and the diagnostics those files alone give."""

    at: _At
    location: Location
    name_location: Location
    prompt_file: str | None  # the prompt file whose tokens count (None: ``prompt`` is all)
    prompt: Term  # the system prompt's term when no file is counted
    prompt_key_location: Location | None
    template: str | None  # the template with its placeholders emptied (None: no template)
    template_location: Location | None
    history: Term
    output: Term
    output_source: OutputSource
    output_floor: Term
    own: ModelLimits | None  # the limits of a step that names its own ``model``
    before: tuple[Diagnostic, ...]  # the prompt's (no prompt_key, a path that names nothing)
    after: tuple[Diagnostic, ...]  # the template's, history's, output limit's and ceiling's
    context: Term | None = None  # the step's own context (None: the pipeline's)
    tools: TermSpec | None = None  # the step's tools (contract/terms.py)
    schema: TermSpec | None = None  # the step's response_schema
    reasoning: Term | None = None  # the step's thinking budget, as written

    @property
    def request_terms(self) -> bool:
        """The step has tools, a response schema or a thinking budget."""
        return self.tools is not None or self.schema is not None or self.reasoning is not None


#: the step keys an output limit is read from (``_Planner.output_term``)
_STEP_OUTPUT_KEYS = {source: source.value for source in (OutputSource.MAX_OUTPUT_TOKENS,
                                                         OutputSource.MAX_TOKENS)}


_HISTORY_OFF = Term(0, TermSource.HISTORY_OFF)
#: A step's own keys that change its limits (limits.step_terms).
_STEP_LIMIT_KEYS = ("serving", "gateway", "variant")


class _StepPlanner:
    """Makes the ``_StepPlan`` of each ``call_model`` step, and keeps the diagnostics found
    on the way (``_Planner`` adds the pipeline as a whole)."""

    def __init__(self, pipeline: str, cache: BudgetCache,
                 stop: Callable[[], bool] | None = None) -> None:
        self.pipe = pipeline
        self.stop = stop
        self.cache = cache
        self.diags: list[Diagnostic] = []
        self.inputs: set[str] = {pipeline}
        self.output_floor: Term | None = None  # min_output_tokens as set, for every step
        #: each step's floor by its output limit and source (``floor``), and the history
        #: term of the steps with use_history: the same terms for the same inputs, made once
        self.floors: dict[tuple[int, OutputSource], Term] = {}
        self.history: Term | None = None
        self.limits = ModelLimits()  # the model's window, ceiling and tokenizer (limits.py)
        self.models: Registry | None = None  # the registry with models.json (None: none)
        #: the prompt file of each prompt_key, with why it names no file (or None)
        self.prompt_paths: dict[str, tuple[str, str | None]] = {}

    def add(self, loc: Location, severity: Severity, code: str, message: str,
            step: str | None = None, related: tuple[Related, ...] = (),
            data: FixData | None = None) -> None:
        self.diags.append(Diagnostic(loc.file, loc.range, severity, code, message, self.pipe,
                                     step, related, data))


    def take(self) -> tuple[Diagnostic, ...]:
        """The diagnostics found since the last call."""
        out = tuple(self.diags)
        self.diags.clear()
        return out

    # ------------------------------------------------------------------------ one step
    def step_plan(self, at: _At, shared: _Shared) -> _StepPlan:
        _poll(self.stop)
        # a step with no key of its own (nearly every step) has no model or terms of its
        # own: none of their look-ups is made (``step_context`` checks the same itself)
        extra = bool(at.step.model_extra)
        own = self.step_model(at, shared) if extra else None
        prompt_file, prompt, key_location = self.prompt_term(at, shared)
        before = self.take()
        template, template_location = self.template_term(at)
        context = self.step_context(at, shared)
        history = self.history_term(at, shared)
        output, source = self.output_term(at, shared)
        self.check_ceiling(at, output, source, own.ceiling if own else shared.ceiling)
        ceiling = (own.ceiling or shared.ceiling) if own else shared.ceiling
        limit = output.value if ceiling is None else min(output.value, ceiling.value)
        tools, schema, reasoning = (
            (self.term_spec(at, TOOLS), self.term_spec(at, RESPONSE_SCHEMA),
             self.reasoning_term(at)) if extra else (None, None, None))
        return _StepPlan(
            at=at, location=at.location(), name_location=at.name_location,
            prompt_file=prompt_file, prompt=prompt, prompt_key_location=key_location,
            template=template, template_location=template_location, history=history,
            output=output, output_source=source,
            output_floor=self.floor(limit, source), own=own,
            before=before, after=self.take(), context=context, tools=tools,
            schema=schema, reasoning=reasoning)

    def moved(self, old: _StepPlan, at: _At, shared: _Shared) -> _StepPlan:
        """The plan ``old`` of the same step in the previous version of the pipeline
        (``_Reuse.step`` says when it is the same), for this version: its terms kept, every
        location made again in the new text (lazily), the history and floor terms again
        from this version's settings."""
        if old.prompt_file is not None:
            self.inputs.add(old.prompt_file)
        output, owner, path = old.output, at.owner, ("steps", at.index)
        key = _STEP_OUTPUT_KEYS.get(old.output_source)
        if key is not None:  # the step's own max_output_tokens or max_tokens
            output = Term(output.value, output.source, output.inherited,
                          owner.location((*path, key)))
        ceiling = shared.ceiling
        limit = output.value if ceiling is None else min(output.value, ceiling.value)
        return _StepPlan(
            at, owner.location(path), at.name_location, old.prompt_file, old.prompt,
            owner.location((*path, "prompt_key")) if old.prompt_key_location else None,
            old.template,
            owner.location((*path, "user_parts", "template")) if old.template_location
            else None,
            self.history_term(at, shared), output, old.output_source,
            self.floor(limit, old.output_source), None, (), (),
            self.step_context(at, shared))

    def floor(self, limit: int, source: OutputSource) -> Term:
        """``_output_floor`` of a step, made once per limit and source."""
        term = self.floors.get((limit, source))
        if term is None:
            term = self.floors[(limit, source)] = _output_floor(limit, source,
                                                                self.output_floor)
        return term

    def term_spec(self, at: _At, key: str) -> TermSpec | None:
        """A step's ``tools`` or ``response_schema`` (contract/terms.py); BL005 at the value
        when it has the wrong shape, BL045 when its file names nothing."""
        raw = (at.step.model_extra or {}).get(key)
        if raw is None:
            return None
        loc = at.location(key)
        spec = plan_spec(key, raw, at.owner.path, loc)
        if isinstance(spec, str):
            self.add(loc, Severity.ERROR, codes.INVALID_VALUE,
                     f"step {at.name!r}: {spec}; it counts as 0 tokens", at.name)
            return None
        problem = path_problem(spec.file) if spec.file is not None else None
        if problem is not None:
            self.add(loc, Severity.ERROR, codes.TERM_FILE_UNREADABLE,
                     f"{key} file of step {at.name!r} cannot be used: {problem}", at.name)
            return None
        if spec.file is not None:
            self.inputs.add(spec.file)
        return spec

    def reasoning_term(self, at: _At) -> Term | None:
        """A step's thinking budget as written (its rule is the model's: check.py)."""
        raw = (at.step.model_extra or {}).get(REASONING)
        if raw is None:
            return None
        loc = at.location(REASONING)
        term = plan_reasoning(raw, loc)
        if isinstance(term, str):
            self.add(loc, Severity.ERROR, codes.INVALID_VALUE, f"step {at.name!r}: {term}",
                     at.name)
            return None
        return term

    def step_model(self, at: _At, shared: _Shared) -> ModelLimits | None:
        """The limits of a step that names its own ``model`` or sets its own ``serving``,
        ``gateway`` or ``variant`` (limits.py); None without."""
        extra = at.step.model_extra or {}
        name = extra.get("model")
        terms = bool(extra) and any(extra.get(key) is not None for key in _STEP_LIMIT_KEYS)
        if name is None and not terms:  # the pipeline's, without a diagnostic
            return None
        own = step_limits(name, at.location("model"), shared.config, self.limits,
                          self.models) if name is not None else replace_diagnostics(self.limits)
        if terms:
            own = step_terms(own, extra, shared.config, at.location, f"steps[{at.index}]",
                             self.models)
        self.diags.extend(replace(d, pipeline=self.pipe, step=at.name) for d in own.diagnostics)
        if not terms and (own.model is None or own.model is self.limits.model):
            return None
        return own

    def step_context(self, at: _At, shared: _Shared) -> Term | None:
        """The step's own context: 0 with ``use_context: false``, its own
        ``max_context_tokens`` (the pipeline's is not charged to it); ``None``: the
        pipeline's. A wrong value is BL005 and the pipeline's is used."""
        extra = at.step.model_extra
        if not extra:  # no key of its own (nearly every step)
            return None
        use = extra.get("use_context")
        if use is not None and type(use) is not bool:
            self.add(at.location("use_context"), Severity.ERROR, codes.INVALID_VALUE,
                     f"use_context of step {at.name!r} must be true or false, got {use!r};"
                     " the pipeline's context is charged", at.name)
            use = None
        if use is False:
            return Term(0, TermSource.CONTEXT_OFF, shared.inherited, at.location("use_context"))
        return self.own_tokens(at, shared, "max_context_tokens",
                               "the pipeline's settings.max_context_tokens")

    def own_history(self, at: _At, shared: _Shared) -> Term | None:
        """The step's own ``max_history_tokens`` (for a use_history step), else None."""
        if not at.step.model_extra:
            return None
        return self.own_tokens(at, shared, "max_history_tokens", "settings.max_history_tokens")

    def own_tokens(self, at: _At, shared: _Shared, key: str, fallback: str) -> Term | None:
        """The step's own ``key``, a token count, as a term; None when unset, or when not an
        integer >= 0 (BL005 at the value, saying ``fallback`` is used)."""
        own = (at.step.model_extra or {}).get(key)
        if own is None:
            return None
        if type(own) is not int or own < 0:
            self.add(at.location(key), Severity.ERROR, codes.INVALID_VALUE,
                     f"{key} of step {at.name!r} must be an integer >= 0, got {own!r};"
                     f" {fallback} is used", at.name)
            return None
        return Term(own, f"steps[{at.index}].{key}", shared.inherited, at.location(key))

    def prompt_term(self, at: _At, shared: _Shared,
                    ) -> tuple[str | None, Term, Location | None]:
        """The prompt file of a step (its tokens are counted per check), or the system
        prompt's term when there is no file to count."""
        if at.step.prompt_key is not None:
            return self.prompt(at, at.step.prompt_key, shared.config)
        if at.path("prompt_key") not in at.owner.invalid:
            self.add(at.name_location, Severity.WARNING, codes.PROMPT_KEY_MISSING,
                     f"call_model step {at.name!r} has no prompt_key: its system prompt"
                     " counts as 0 tokens", at.name)
        return None, Term(0, TermSource.NO_PROMPT_KEY), None

    def prompt(self, at: _At, key: str, config: LoadedConfig | None,
               ) -> tuple[str | None, Term, Location | None]:
        """The prompt file ``<prompts_dir>/<key>.txt`` of a step."""
        cfg = config.config if config is not None else None
        if config is None or cfg is None:
            return None, Term(0, TermSource.PROMPT_FILE_NO_CONFIG), None
        key_loc, name = at.location("prompt_key"), at.name
        found = self.prompt_paths.get(key)
        if found is None:
            found = self.prompt_paths[key] = _prompt_path(config.directory, cfg.prompts_dir,
                                                          key)
        path, problem = found
        if problem is not None:
            self.add(key_loc, Severity.ERROR, codes.PROMPT_UNREADABLE,
                     f"prompt file {path!r} of step {name!r} cannot be used: {problem}", name)
            return None, Term(0, TermSource.PROMPT_FILE), None
        self.inputs.add(path)
        return path, Term(0, TermSource.PROMPT_FILE, location=Location(path)), key_loc

    def template_term(self, at: _At) -> tuple[str | None, Location | None]:
        """The template with its placeholders emptied (counted per tokenizer by the plan)
        and its place; syntax errors reported."""
        text = at.step.user_parts.template if at.step.user_parts else None
        if text is None:
            return None, None
        tpath = at.path("user_parts", "template")
        parsed = self.cache.template(text)
        for problem in parsed.problems:
            rng = string_range(at.owner.doc, tpath, problem.start, problem.end)
            self.add(Location(at.owner.path, rng), Severity.ERROR, codes.TEMPLATE_SYNTAX,
                     f"template of step {at.name!r}: {problem.message}", at.name)
        return parsed.emptied, at.owner.location(tpath)

    def history_term(self, at: _At, shared: _Shared) -> Term:
        """settings.max_history_tokens for a step with use_history (0 without)."""
        if not at.step.use_history:
            return _HISTORY_OFF
        own = self.own_history(at, shared)
        if own is not None:
            return own
        setting = shared.history
        if setting is not None and int(setting.value) > 0:
            if self.history is None:  # the same for every step
                self.history = _setting_term(setting, "settings.max_history_tokens")
            return self.history
        state = "is 0" if setting is not None else "is not set"
        related = ((Related(setting.location, "max_history_tokens is 0"),)
                   if setting is not None else ())
        message = f"step {at.name!r} uses history but settings.max_history_tokens {state}"
        if shared.policy is Policy.FAIL_FAST:
            self.add(at.location("use_history"), Severity.ERROR, codes.HISTORY_MISSING,
                     f"{message}: set it to the history's token budget (fail_fast)",
                     at.name, related)
        else:
            self.add(at.location("use_history"), Severity.WARNING, codes.HISTORY_MISSING,
                     f"{message}: auto_clamp runs it with no history", at.name, related)
        return Term(0, "settings.max_history_tokens", bool(setting and setting.depth > 0),
                    setting.location if setting else None)

    def output_term(self, at: _At, shared: _Shared) -> tuple[Term, OutputSource]:
        """A step's output limit: its max_output_tokens, else its max_tokens, else config.json
        model_max_tokens; missing (an error) when none is set."""
        for value, source in ((at.step.max_output_tokens, OutputSource.MAX_OUTPUT_TOKENS),
                              (at.step.max_tokens, OutputSource.MAX_TOKENS)):
            if value is not None:
                return (Term(value, source.value, shared.inherited, at.location(source.value)),
                        source)
        model = _config_term(shared.config, "model_max_tokens")
        if model is not None:
            return model, OutputSource.MODEL_MAX_TOKENS
        invalid = any(p[:2] == at.path() and p[2:3] in (("max_output_tokens",), ("max_tokens",))
                      for p in at.owner.invalid)
        if not invalid:
            self.add(at.name_location, Severity.ERROR, codes.OUTPUT_MISSING,
                     f"step {at.name!r} has no output limit: set max_output_tokens on the"
                     " step or model_max_tokens in config.json", at.name)
        return Term(0, TermSource.MISSING), OutputSource.MISSING

    def check_ceiling(self, at: _At, output: Term, source: OutputSource,
                      ceiling: Term | None) -> None:
        if ceiling is None or output.value <= ceiling.value:
            return
        self.add(output.location or at.name_location, Severity.ERROR,
                 codes.OUTPUT_ABOVE_CEILING,
                 f"step {at.name!r} asks for {output.value} output tokens ({source}), above"
                 f" the model's ceiling {_ceiling_name(ceiling)}", at.name,
                 (Related(ceiling.location, "model_max_output_tokens"
                          if ceiling.source.startswith("config.json") else ceiling.source),)
                 if ceiling.location else ())


@functools.lru_cache(maxsize=8192)
def _prompt_path(directory: str, prompts_dir: str, key: str) -> tuple[str, str | None]:
    """The prompt file ``<directory>/<prompts_dir>/<key>.txt`` (normalised) and why it can
    name no file (or None): a string function of its arguments, so made once for the many
    pipelines of a run that share config.json and prompts."""
    path = os.path.normpath(os.path.join(os.path.normpath(os.path.join(directory, prompts_dir)),
                                         f"{key}.txt"))
    return path, path_problem(path)



def _ceiling_name(ceiling: Term) -> str:
    """``model_max_output_tokens=4096``, or ``16384 (model gpt-4o (registry ...))``."""
    if ceiling.source == "config.json model_max_output_tokens":
        return f"model_max_output_tokens={ceiling.value}"
    return f"{ceiling.value} ({ceiling.source})"
