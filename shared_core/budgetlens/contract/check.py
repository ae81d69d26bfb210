"""The budget contract of a pipeline: every ``call_model`` step must fit the model's window.

For each ``call_model`` step::

    fixed + history + context + output + margin  <=  model_context_window

    fixed   = tokens(system prompt file) + tokens(template, placeholders emptied)
              + format_overhead_tokens
    history = max_history_tokens if use_history else 0
    context = settings.max_context_tokens
    output  = max_output_tokens, else max_tokens, else config model_max_tokens
    margin  = settings.budget_safety_margin_tokens (default 128)

``check_pipeline`` computes every term with the place it came from (inherited settings
point into the parent file), validates every rule, and reports diagnostics with stable
``BL0xx`` codes. Under ``fail_fast`` a violation is an error; under ``auto_clamp`` it is a
warning that says what the run time clamps to (see ``compute_clamp``). A step that fits only
below the clamp's floors (``min_context_tokens``, ``min_output_tokens``) is an error under
both policies (BL052), naming its largest term and the setting to change.

A check runs in two parts. ``_Planner`` reads the pipeline, its extends chain and config.json
into a ``_Plan``: the merged settings, every step's terms except token counts (``_StepPlan``:
locations, the emptied template, history, output limit and its floor) and the diagnostics
those files alone give; the ``BudgetCache`` keeps it on their fingerprints. ``_Checker`` then,
on every check, resolves the tokenizer, counts the prompt files (cached by fingerprint) and
templates (once per tokenizer), adds up each step, computes the clamp and reports the
contract. So a pipeline whose only changed input is a prompt is re-counted without reading
its structure again.

An edit of the pipeline itself is planned from the previous version's ``_Plan``: the steps
the edit left the same take over their ``_StepPlan`` (``_Reuse`` says when that is exact),
with their locations made again in the new text, so typing in one step plans that step only.
Every location is lazy (``Location.lazy``): its line and character are computed when it is
read, for the few places a report shows, not for every term of every step.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from budgetlens import codes
from budgetlens.contract.advice import floor_related, inherited_suffix, largest_term, unfit_message
from budgetlens.contract.cache import BudgetCache, RecordingFiles, with_places
from budgetlens.contract.clamp import compute_clamp, floor_below
from budgetlens.contract.config import LoadedConfig
from budgetlens.contract.discovery import pipeline_config
from budgetlens.contract.enums import (
    OutputSource,
    TermSource,
)
from budgetlens.contract.frozen import quick_init
from budgetlens.contract.injection_settings import check_injection
from budgetlens.contract.limits import ModelLimits, config_limits, step_limits
from budgetlens.contract.models_file import (
    ModelsFile,
    overlay,
    read_models_file,
    user_models_path,
    workspace_models_path,
)
from budgetlens.contract.pipeline import (
    CALL_MODEL,
    DEFAULT_SAFETY_MARGIN_TOKENS,
    Chain,
    PipelineFile,
    Setting,
    Step,
    file_settings,
    load_chain,
    merged_settings,
    read_pipeline,
    step_name,
    steps_owner,
)
from budgetlens.contract.policy import Policy, PolicyChoice, resolve_policy
from budgetlens.contract.results import (
    CheckOptions,
    ClampValues,
    PipelineReport,
    StepBudget,
    Term,
)
from budgetlens.files import (
    MISSING_FINGERPRINT,
    DiskFiles,
    FileMissing,
    FileSource,
    OutsideRoot,
    RunFiles,
    SourceError,
    path_problem,
)
from budgetlens.models.registry import Registry, load_registry
from budgetlens.serialize import to_jsonable
from budgetlens.source import ClampFix, Diagnostic, FixData, Location, Related, Severity
from budgetlens.tokens.core import (
    DEFAULT_TOKENIZER,
    TokenCounter,
    Tokenizer,
    TokenizerError,
    TokenizerUnreadable,
    get_tokenizer,
    tokenizer_file,
    tokenizer_path,
)
from budgetlens.tokens.families import is_exact
from budgetlens.yamldoc.parse import YamlPath
from budgetlens.yamldoc.scalar import string_range

_T = TypeVar("_T")


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


def _floor_setting(key: str, settings: dict[str, Setting],
                   config: LoadedConfig | None) -> Term | None:
    """A floor (``min_context_tokens``, ``min_output_tokens``) as set: in the pipeline's
    settings (merged along its extends chain), else in config.json; ``None`` when unset."""
    setting = settings.get(key)
    if setting is not None:
        return _setting_term(setting, f"settings.{key}")
    cfg = config.config if config is not None else None
    value = getattr(cfg, key, None) if cfg is not None else None
    if config is not None and isinstance(value, int) and not isinstance(value, bool):
        return Term(value, f"config.json {key}", location=config.location(key))
    return None


def _context_floor(context: Term, settings: dict[str, Setting],
                   config: LoadedConfig | None) -> Term:
    """The lowest max_context_tokens a clamp may set, from the value as read (never from one
    a clamp lowered: the caller passes the original)."""
    set_floor = _floor_setting("min_context_tokens", settings, config)
    if set_floor is None:
        return Term(floor_below(context.value, None),
                    f"half of max_context_tokens {context.value}")
    return replace(set_floor, value=floor_below(context.value, set_floor.value))


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


def _overhead_term(config: LoadedConfig | None) -> Term:
    cfg = config.config if config is not None else None
    if config is None or cfg is None:
        return Term(0, TermSource.NO_CONFIG)
    if "format_overhead_tokens" in cfg.model_fields_set:
        return Term(cfg.format_overhead_tokens, "config.json format_overhead_tokens",
                    location=config.location("format_overhead_tokens"))
    # not set (or invalid, reported as BL013): the default applies
    return Term(cfg.format_overhead_tokens, TermSource.DEFAULT)


def _margin_term(settings: dict[str, Setting]) -> Term:
    setting = settings.get("budget_safety_margin_tokens")
    if setting is None:
        return Term(DEFAULT_SAFETY_MARGIN_TOKENS, TermSource.DEFAULT)
    return _setting_term(setting, "settings.budget_safety_margin_tokens")


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


#: the step keys an output limit is read from (``_Planner.output_term``)
_STEP_OUTPUT_KEYS = {source: source.value for source in (OutputSource.MAX_OUTPUT_TOKENS,
                                                         OutputSource.MAX_TOKENS)}


@dataclass(frozen=True)
class _Reuse:
    """The step plans of the previous version of a pipeline that a new version may take
    over (``_Planner.moved``).

    A step plan is made from the step's validated model, its index and name, the paths of
    the step that failed validation, the file (its path, and the places in it) and, of what
    the steps share, config.json (its directory, prompts_dir and model_max_tokens), the
    policy, whether the steps are inherited, max_history_tokens, the output ceiling and
    min_output_tokens. A plan is taken over when the file has the same path, config.json is
    the same object (unchanged, see ``BudgetCache.parsed``), the policy, the inheritance,
    max_history_tokens (value and depth) and the ceiling's value are the same, and the step
    is the same model at the same index with no path of it invalid in either version; and
    only a plan with no diagnostic and no model of its own. Every term that holds a place
    (the step's own locations, its output limit, history and floor) is made again.
    """

    plans: Mapping[int, _StepPlan]

    @staticmethod
    def of(previous: _Plan | None, owner: PipelineFile, shared: _Shared) -> _Reuse:
        if previous is None or previous.shared is None or not previous.steps:
            return _NO_REUSE
        old = previous.shared
        if previous.steps[0].at.owner.path != owner.path or old.config is not shared.config \
                or old.policy is not shared.policy or old.inherited != shared.inherited:
            return _NO_REUSE
        if (_setting_key(old.history), _value(old.ceiling)) != \
                (_setting_key(shared.history), _value(shared.ceiling)):
            return _NO_REUSE
        return _Reuse({sp.at.index: sp for sp in previous.steps
                       if not sp.before and not sp.after and sp.own is None})

    def step(self, at: _At) -> _StepPlan | None:
        """The previous plan of the step ``at`` if it may be taken over, else None."""
        old = self.plans.get(at.index)
        if old is None or old.at.name != at.name or old.at.step != at.step:
            return None
        if _invalid_in(old.at) or _invalid_in(at):
            return None
        return old


def _setting_key(setting: Setting | None) -> tuple[Any, int] | None:
    return None if setting is None else (setting.value, setting.depth)


def _value(term: Term | None) -> int | None:
    return None if term is None else term.value


_NO_REUSE = _Reuse({})


def _invalid_in(at: _At) -> bool:
    """Some path inside the step failed validation."""
    invalid = at.owner.invalid
    return bool(invalid) and any(p[:2] == ("steps", at.index) for p in invalid)


@quick_init
@dataclass(frozen=True)
class _Plan:
    """What a pipeline's check reads from the pipeline, its extends chain and its config.json
    (cached by their fingerprints, ``deps``); the prompts' token counts, the arithmetic and
    the contract are done on every check (``_Checker``)."""

    deps: Mapping[str, str]  # every file read (and place probed) with its fingerprint
    head: Location
    config: LoadedConfig | None
    config_path: str | None
    chain: Chain
    choice: PolicyChoice
    window: Term | None
    ceiling: Term | None
    inputs: frozenset[str]
    limits: ModelLimits  # the model's window, ceiling and tokenizer (limits.py)
    head_diags: tuple[Diagnostic, ...]  # the files', config's and policy's
    context_diags: tuple[Diagnostic, ...] = ()  # max_context_tokens missing
    shared: _Shared | None = None  # None: the steps are not checked (unusable pipeline)
    context: Term | None = None
    context_floor: Term | None = None
    steps: tuple[_StepPlan, ...] = ()
    prompt_root: str = "."  # prompt files must resolve inside it
    chain_root: str = "."  # the pipeline and its extends chain must resolve inside it
    extends_location: Location | None = None  # the pipeline's own ``extends`` value
    #: the template terms of ``steps`` per counter's key (``TokenCounter.key``), made on
    #: first use
    template_terms: dict[str, tuple[Term, ...]] = field(default_factory=dict, compare=False,
                                                        repr=False)

    def templates(self, counter: TokenCounter) -> tuple[Term, ...]:
        """Each step's template term, counted with ``counter`` (once per tokenizer)."""
        terms = self.template_terms.get(counter.key)
        if terms is None:
            inherited = self.shared is not None and self.shared.inherited
            terms = tuple(Term(0, TermSource.NO_TEMPLATE) if sp.template is None else
                          Term(counter.count(sp.template), "user_parts.template", inherited,
                               sp.template_location) for sp in self.steps)
            self.template_terms[counter.key] = terms
        return terms


_HISTORY_OFF = Term(0, TermSource.HISTORY_OFF)


class _Planner:
    """Builds the ``_Plan`` of a pipeline: reads and parses the pipeline, its extends chain
    and config.json, merges the settings and finds every step's terms but token counts."""

    def __init__(self, pipeline: str, files: RunFiles, options: CheckOptions,
                 environ: Mapping[str, str], cache: BudgetCache,
                 previous: _Plan | None = None,
                 stop: Callable[[], bool] | None = None) -> None:
        self.pipe = pipeline
        #: the plan of an earlier version of the pipeline (or None): its steps that are the
        #: same are taken over (``_Reuse``)
        self.previous = previous
        self.stop = stop
        self.run_files = files
        self.files = RecordingFiles(files)
        self.options = options
        self.environ = environ
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

    def adopt(self, diagnostics: tuple[Diagnostic, ...] | list[Diagnostic]) -> None:
        """Diagnostics of a file the pipeline reads, as this pipeline's."""
        self.diags.extend(replace(d, pipeline=self.pipe) for d in diagnostics)

    def take(self) -> tuple[Diagnostic, ...]:
        """The diagnostics found since the last call."""
        out = tuple(self.diags)
        self.diags.clear()
        return out

    def load_file(self, path: str) -> PipelineFile:
        _poll(self.stop)
        return self.cache.parsed("pipeline", path, self.files,
                                 lambda: read_pipeline(path, self.files))

    # ------------------------------------------------------------- the pipeline as a whole
    def plan(self) -> _Plan:
        config, config_path = pipeline_config(self.pipe, self.files, self.options, self.cache)
        if config_path:
            self.inputs.add(config_path)
        root = self.root(config)
        chain = load_chain(self.pipe, self.files, root=root, load=self.load_file,
                           inside=self.run_files.is_inside, abspath=self.run_files.abspath,
                           outside=self.files.outside)
        self.inputs.update(pf.path for pf in chain.files)
        self.inputs.update(chain.dependencies)  # a parent left unread (outside) too
        first = chain.pipeline
        self.adopt(first.diagnostics)
        self.adopt(chain.diagnostics)
        head = Location.lazy(self.pipe, PipelineFile.head_range, first)  # read when shown
        if config is None:
            self.add(head, Severity.ERROR, codes.CONFIG_MISSING,
                     "no config.json found at or above this pipeline (it sets"
                     " model_context_window)")
        else:
            self.adopt(config.diagnostics)
        self.models = self.models_registry(config)
        self.limits = self.config_limits(config)
        self.adopt(self.limits.diagnostics)
        choice = self.policy(config, head)
        base: dict[str, Any] = dict(
            head=head, config=config, config_path=config_path, chain=chain, choice=choice,
            window=self.limits.window, ceiling=self.limits.ceiling, limits=self.limits,
            head_diags=self.take(), chain_root=root)
        if not first.usable or (chain.broken and len(chain.files) == 1):
            return _Plan(deps=self.files.seen, inputs=frozenset(self.inputs), **base)
        return self.plan_steps(base)

    def _made_for(self, key: tuple[Any, ...], owner: object, make: Callable[[], _T]) -> _T:
        """``make()`` once per ``key`` of a run (``RunFiles.remembered``: the pipelines of a
        folder share ``owner``, the parsed object it is made of), and made again for another
        object of the same path."""
        kept: tuple[object, _T] = self.run_files.remembered(key, lambda: (owner, make()))
        return kept[1] if kept[0] is owner else make()

    def config_limits(self, config: LoadedConfig | None) -> ModelLimits:
        """``config_limits`` of ``config`` (and the target), made once per config.json of a
        run (``_made_for``)."""
        target, models = self.options.target, self.models
        if config is None:
            return config_limits(config, target)
        return self._made_for(("config limits", config.path, target, id(models)), config,
                              lambda: config_limits(config, target, models))

    def _models_file(self, path: str) -> ModelsFile | None:
        return self.cache.parsed("models.json", path, self.files,
                                 lambda: _read_models_file(path, self.files))

    def models_registry(self, config: LoadedConfig | None) -> Registry | None:
        """The registry with the user's and the workspace's models.json over it (``None``:
        neither exists, the bundled one is used). Each that exists is an input of the
        pipeline; a missing one's fingerprint is recorded (one created later counts). Their
        diagnostics are the pipeline's."""
        if config is None:
            return None
        problems: list[Diagnostic] = []
        named = _models_file_setting(config, problems)
        self.adopt(problems)
        paths = [p for p in (user_models_path(self.environ),
                             workspace_models_path(config.path, named)) if p]
        loaded: list[ModelsFile] = []
        for path in paths:
            if self.files.fingerprint(path) == MISSING_FINGERPRINT:
                continue  # recorded: a models.json created there later counts
            self.inputs.add(path)
            found = self._models_file(path)
            if found is not None:
                self.adopt(found.diagnostics)
                loaded.append(found)
        if not loaded:
            return None
        made = self._made_for(("models registry", *map(id, loaded)), loaded[0],
                              lambda: overlay(load_registry(), loaded))
        self.adopt(made[1])
        return made[0]

    def overhead(self, config: LoadedConfig | None) -> Term:
        """``_overhead_term`` of ``config``, made once per config.json of a run
        (``_made_for``)."""
        if config is None:
            return _overhead_term(config)
        return self._made_for(("overhead", config.path), config, lambda: _overhead_term(config))

    def parent_settings(self, pf: PipelineFile, depth: int) -> tuple[tuple[str, Setting], ...]:
        """``file_settings`` of a parent in the chain, made once per file and depth of a
        run (many pipelines extend one parent; ``_made_for``)."""
        return self._made_for(("parent settings", pf.path, depth), pf,
                              lambda: file_settings(pf, depth))

    def root(self, config: LoadedConfig | None) -> str:
        """The workspace root: the option's, else the folder of config.json (of a config
        named by ``config_path``: the folder common to it and the pipeline, so a shared
        config kept elsewhere leaves the pipeline's own tree inside), else the pipeline's."""
        if self.options.workspace_root is not None:
            return os.path.normpath(str(self.options.workspace_root))
        if config is None:
            return os.path.dirname(self.pipe) or "."
        if self.options.config_path is None:
            return config.directory
        return _common_folder(config.directory, os.path.dirname(self.pipe) or ".")

    def policy(self, config: LoadedConfig | None, head: Location) -> PolicyChoice:
        cfg = config.config if config is not None else None
        choice = resolve_policy(override=self.options.policy, environ=self.environ,
                                development=cfg.development if cfg is not None else None)
        if choice.problem:
            self.add(head, Severity.WARNING, codes.POLICY_INVALID, choice.problem)
        return choice

    def plan_steps(self, base: dict[str, Any]) -> _Plan:
        chain: Chain = base["chain"]
        config: LoadedConfig | None = base["config"]
        window: Term | None = base["window"]
        settings = merged_settings(chain, self.parent_settings)
        context = self.context_term(chain, settings, base["head"])
        context_diags = self.take()
        shared = _Shared(config, base["choice"].policy, self.overhead(config),
                         _margin_term(settings), settings.get("max_history_tokens"),
                         context or Term(0, TermSource.MISSING),
                         window or Term(0, TermSource.MISSING), base["ceiling"], False)
        steps, shared = self.steps(chain, shared, settings)
        prompt_root = (str(self.options.workspace_root)
                       if self.options.workspace_root is not None
                       else self.root(config) if config is not None else ".")
        return _Plan(
            deps=self.files.seen, inputs=frozenset(self.inputs), context_diags=context_diags,
            shared=shared, context=context,
            context_floor=_context_floor(context, settings, config) if context else None,
            steps=steps, prompt_root=prompt_root,
            extends_location=self.pipe_extends_location(chain.pipeline), **base)

    def context_term(self, chain: Chain, settings: dict[str, Setting],
                     head: Location) -> Term | None:
        setting = settings.get("max_context_tokens")
        if setting is not None:
            return _setting_term(setting, "settings.max_context_tokens")
        invalid = any(("settings", "max_context_tokens") in pf.invalid for pf in chain.files)
        if not invalid and not chain.broken:
            loc = chain.pipeline.key_location(("settings",)) if chain.pipeline.doc and \
                chain.pipeline.doc.span(("settings",)) else head
            self.add(loc, Severity.ERROR, codes.CONTEXT_INVALID,
                     "settings.max_context_tokens is missing: set an integer > 0 here or in a"
                     " parent pipeline (the token limit of the retrieved context)")
        return None

    def steps(self, chain: Chain, shared: _Shared, settings: dict[str, Setting],
              ) -> tuple[tuple[_StepPlan, ...], _Shared]:
        owner = steps_owner(chain)
        if owner is None or owner.model is None or owner.model.steps is None:
            return (), shared
        inherited = owner.path != self.pipe
        if inherited != shared.inherited:  # (a replace costs more than the comparison)
            shared = replace(shared, inherited=inherited)
        self.output_floor = _floor_setting("min_output_tokens", settings, shared.config)
        reuse = _Reuse.of(self.previous, owner, shared)
        plans: list[_StepPlan] = []
        for index, step in enumerate(owner.model.steps):
            if step.type != CALL_MODEL:
                continue
            at = _At(owner, index, step, step_name(step, index))
            old = reuse.step(at)
            if old is None:
                plans.append(self.step_plan(at, shared))
            else:
                plans.append(self.moved(old, at, shared))
        return tuple(plans), shared

    @staticmethod
    def pipe_extends_location(pf: PipelineFile) -> Location | None:
        if pf.doc is None or pf.doc.span(("extends",)) is None:
            return None
        return pf.location(("extends",))

    # ------------------------------------------------------------------------ one step
    def step_plan(self, at: _At, shared: _Shared) -> _StepPlan:
        _poll(self.stop)
        own = self.step_model(at, shared)
        prompt_file, prompt, key_location = self.prompt_term(at, shared)
        before = self.take()
        template, template_location = self.template_term(at)
        history = self.history_term(at, shared)
        output, source = self.output_term(at, shared)
        self.check_ceiling(at, output, source, own.ceiling if own else shared.ceiling)
        ceiling = (own.ceiling or shared.ceiling) if own else shared.ceiling
        limit = output.value if ceiling is None else min(output.value, ceiling.value)
        return _StepPlan(
            at=at, location=at.location(), name_location=at.name_location,
            prompt_file=prompt_file, prompt=prompt, prompt_key_location=key_location,
            template=template, template_location=template_location, history=history,
            output=output, output_source=source,
            output_floor=self.floor(limit, source), own=own,
            before=before, after=self.take())

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
            self.floor(limit, old.output_source), None, (), ())

    def floor(self, limit: int, source: OutputSource) -> Term:
        """``_output_floor`` of a step, made once per limit and source."""
        term = self.floors.get((limit, source))
        if term is None:
            term = self.floors[(limit, source)] = _output_floor(limit, source,
                                                                self.output_floor)
        return term

    def step_model(self, at: _At, shared: _Shared) -> ModelLimits | None:
        """The limits of a step that names its own ``model`` (limits.py); None without."""
        name = (at.step.model_extra or {}).get("model")
        if name is None:  # step_limits gives the pipeline's, without a diagnostic
            return None
        own = step_limits(name, at.location("model"), shared.config, self.limits, self.models)
        self.diags.extend(replace(d, pipeline=self.pipe, step=at.name) for d in own.diagnostics)
        return None if own.model is None or own.model is self.limits.model else own

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


class _Outside:
    """A prompt file that resolves outside the workspace root (not read)."""


_OUTSIDE = _Outside()


class _Checker:
    """Checks a pipeline from its ``_Plan``: counts the prompts (cached by fingerprint), adds
    up every step, computes the clamp and reports the contract."""

    def __init__(self, pipeline: str, plan: _Plan, files: RunFiles, options: CheckOptions,
                 cache: BudgetCache, stop: Callable[[], bool] | None = None) -> None:
        self.pipe = pipeline
        self.stop = stop
        self.plan = plan
        self.run_files = files
        self.files = RecordingFiles(files)
        self.options = options
        self.cache = cache
        self.diags: list[Diagnostic] = list(plan.head_diags)
        #: each prompt file's tokens per tokenizer in this run (or why it has none), looked
        #: up once
        self.prompts: dict[tuple[str, str], int | SourceError | _Outside] = {}
        #: the system prompt's term of each prompt file counted (per tokenizer)
        self.prompt_terms: dict[tuple[str, str], Term] = {}
        self.approximate = False  # the counts are approximate (the model's family: ≈)
        #: the tokenizer.json the counts come from, as named and as resolved: inputs of the
        #: report (an editor checks the pipeline again when either changes)
        self.tokenizer_files: set[str] = set()

    def add(self, loc: Location, severity: Severity, code: str, message: str,
            step: str | None = None, related: tuple[Related, ...] = (),
            data: FixData | None = None) -> None:
        self.diags.append(Diagnostic(loc.file, loc.range, severity, code, message, self.pipe,
                                     step, related, data))

    def run(self) -> PipelineReport:
        plan = self.plan
        tokenizer = self.tokenizer(plan.config, plan.head)
        self.diags.extend(plan.context_diags)
        report_base: dict[str, Any] = dict(
            pipeline=self.pipe, policy=plan.choice.policy, policy_source=plan.choice.source,
            tokenizer=tokenizer.name, config=plan.config_path,
            chain=tuple(pf.path for pf in plan.chain.files), window=plan.window,
            output_ceiling=plan.ceiling, model=plan.limits.name,
            approximate=self.approximate, target=self.options.target)
        if plan.shared is None:
            return self.finish(steps=[], **report_base)
        return self.check_steps(plan.shared, self.cache.counter(tokenizer), report_base)

    def tokenizer(self, config: LoadedConfig | None, head: Location) -> Tokenizer:
        cfg = config.config if config is not None else None
        spec = self.options.tokenizer or (cfg.tokenizer if cfg is not None else None)
        limits = self.plan.limits
        if limits.tokenizer and (limits.forced or spec is None):
            spec = limits.tokenizer  # the model's (limits.py): exact or approximate
            self.approximate = limits.approximate
        directory = config.directory if config is not None else None
        file = tokenizer_file(spec, base_dir=Path(directory) if directory else None) \
            if isinstance(spec, str) else None
        if file is not None:
            problem = self.tokenizer_file_problem(file, spec, config)
            if problem is not None:
                return self.bad_tokenizer(problem, config, head)
        try:
            tokenizer = self.get_tokenizer(spec, directory)
        except TokenizerError as exc:
            if file is not None and isinstance(exc, TokenizerUnreadable):
                self.files.outside(file)  # not read: no cache keeps this error
            return self.bad_tokenizer(str(exc), config, head)
        # an approximate family named directly (tokenizer: claude_approx) is approximate too
        self.approximate = self.approximate or not is_exact(tokenizer)
        return tokenizer

    def bad_tokenizer(self, problem: str, config: LoadedConfig | None,
                      head: Location) -> Tokenizer:
        """BL014 at config.json's ``tokenizer`` (at ``head`` when an option named it), and
        the default tokenizer to count with instead."""
        loc = config.location("tokenizer") if config is not None and not \
            self.options.tokenizer else head
        self.add(loc, Severity.ERROR, codes.TOKENIZER_INVALID,
                 f"{problem}; counting with {DEFAULT_TOKENIZER} instead")
        return get_tokenizer(DEFAULT_TOKENIZER)

    def tokenizer_file_problem(self, file: str, spec: Any,
                               config: LoadedConfig | None) -> str | None:
        """Why the tokenizer.json ``file`` (named by ``spec``) is not read, else None; it is
        an input either way, found or not (created or relinked later counts)."""
        problem = path_problem(file)
        if problem is not None:  # names no file at all
            return f"tokenizer file {spec!r}: {problem}"
        self.files.fingerprint(file)
        self.tokenizer_files = {file, self.run_files.realpath(file)}
        root = self.plan.prompt_root
        cfg = config.config if config is not None else None
        if cfg is not None and spec == cfg.tokenizer and not self.options.tokenizer \
                and not self.run_files.is_inside(file, root):
            # named by the workspace's own config.json: read inside it only, as a prompt
            # file is (an option or editor setting is the user's own choice); an unread
            # input, as such a prompt is (no cache keeps this error, and the result cache
            # does not hash the file)
            self.files.outside(file)
            return f"tokenizer file {file} resolves outside the workspace root {root}"
        return None

    def get_tokenizer(self, spec: Any, directory: str | None) -> Tokenizer:
        """``get_tokenizer(spec)`` relative to ``directory`` (config.json's folder), found
        once per name and folder in a run (``RunFiles.remembered``; a tokenizer object is
        taken as it is, a failure is not kept: it raises for every pipeline)."""
        def make() -> Tokenizer:
            return get_tokenizer(spec, base_dir=Path(directory) if directory is not None
                                 else None)
        if spec is not None and not isinstance(spec, str):
            return make()
        found: Tokenizer = self.run_files.remembered(("tokenizer", spec, directory), make)
        return found

    def check_steps(self, shared: _Shared, counter: TokenCounter,
                    report_base: dict[str, Any]) -> PipelineReport:
        plan = self.plan
        window: Term | None = plan.window
        ceiling: Term | None = plan.ceiling
        context = plan.context
        steps = [self.step_budget(sp, template, shared, counter)
                 for sp, template in zip(plan.steps, plan.templates(counter),
                                                 strict=True)]
        floor_term = plan.context_floor
        floor = floor_term.value if floor_term else 0
        clamp = ClampValues()
        if context is not None and window is not None and steps:
            clamp = compute_clamp(steps, context=context.value, window=window.value,
                                  ceiling=ceiling.value if ceiling else None, floor=floor)
            self.contract(steps, shared.policy, clamp, window, floor_term)
        report = self.finish(steps=steps, context=context, context_floor=floor, clamp=clamp,
                             **report_base)
        injection = check_injection(report, files=self.files, loaded=plan.chain.files)
        if injection.policy is None and not injection.diagnostics:
            return report
        self.diags.extend(injection.diagnostics)
        return self.finish(steps=steps, context=context, context_floor=floor, clamp=clamp,
                           injection=injection, **report_base)

    def finish(self, **kwargs: Any) -> PipelineReport:
        seen: set[tuple[Any, ...]] = set()
        unique: list[Diagnostic] = []
        for d in self.diags:
            key = (d.file, d.range, d.code, d.message)
            if key not in seen:
                seen.add(key)
                unique.append(d)
        unique.sort(key=lambda d: (d.file != self.pipe, d.file, d.range.start, d.code))
        inputs = self.plan.inputs | self.tokenizer_files if self.tokenizer_files \
            else self.plan.inputs
        return PipelineReport(diagnostics=unique, inputs=inputs, **kwargs)

    # ------------------------------------------------------------------------ one step
    # long-function: one step's arithmetic, read top to bottom (the step model's limits first)
    def step_budget(self, sp: _StepPlan, template: Term, shared: _Shared,
                    counter: TokenCounter) -> StepBudget:
        _poll(self.stop)
        own = sp.own
        if own is not None:
            shared = replace(shared, window=own.window or shared.window, ceiling=own.ceiling)
            step_counter = self.step_counter(own, shared, counter)
            if step_counter is not counter and sp.template is not None:
                template = Term(step_counter.count(sp.template), "user_parts.template",
                                shared.inherited, sp.template_location)
            counter = step_counter
        self.diags.extend(sp.before)
        prompt = sp.prompt
        if sp.prompt_file is not None:
            prompt = self.prompt_tokens(sp, sp.prompt_file, counter)
        self.diags.extend(sp.after)
        at = sp.at
        fixed = Term(prompt.value + template.value + shared.overhead.value,
                     "system prompt + template + format overhead", shared.inherited,
                     sp.location)
        history, output, source = sp.history, sp.output, sp.output_source
        context, window, margin = shared.context, shared.window, shared.margin
        total = fixed.value + history.value + context.value + output.value + margin.value
        headroom = window.value - total
        fits = (headroom >= 0 and not window.missing and not context.missing
                and source is not OutputSource.MISSING)
        return StepBudget(
            pipeline=self.pipe, step=at.name, index=at.index, location=sp.location,
            defined_in=at.owner.path, system_prompt=prompt, template=template,
            format_overhead=shared.overhead, fixed=fixed, history=history, context=context,
            output=output, output_source=source, margin=margin, window=window, total=total,
            headroom=headroom, fits=fits, prompt_file=sp.prompt_file,
            use_history=bool(at.step.use_history), name_location=sp.name_location,
            output_floor=sp.output_floor, model=own.name if own else None,
            ceiling=own.ceiling if own else None,
            approximate=(own.approximate and not self.explicit_tokenizer(shared)) if own
            else self.approximate)

    def step_counter(self, own: ModelLimits, shared: _Shared,
                     counter: TokenCounter) -> TokenCounter:
        """The pipeline's counter, or the one of the step model's tokenizer family when the
        tokenizer is not set explicitly (option or config.json)."""
        if self.explicit_tokenizer(shared) or not own.tokenizer \
                or own.tokenizer == counter.tokenizer.name:
            return counter
        return self.cache.counter(get_tokenizer(own.tokenizer))

    def explicit_tokenizer(self, shared: _Shared) -> bool:
        """A tokenizer is set explicitly (option, editor setting or config.json)."""
        cfg = shared.config.config if shared.config is not None else None
        return bool(self.options.tokenizer or (cfg is not None and cfg.tokenizer))

    def prompt_tokens(self, sp: _StepPlan, path: str, counter: TokenCounter) -> Term:
        """The tokens of the prompt file of a step (0 with a diagnostic when it cannot be
        counted)."""
        key_loc = sp.prompt_key_location or sp.name_location
        name, root = sp.at.name, self.plan.prompt_root
        result = self.prompts.get((path, counter.key))
        if result is None:
            if self.run_files.is_inside(path, root):
                result = self.cache.prompt_tokens(path, self.files, counter)
            else:  # not read, but an input still: relinked into the workspace, it counts
                self.files.outside(path)
                result = _OUTSIDE
            self.prompts[(path, counter.key)] = result
        if isinstance(result, _Outside):
            self.add(key_loc, Severity.ERROR, codes.PROMPT_UNREADABLE,
                     f"prompt file {path} of step {name!r} resolves outside the workspace"
                     f" root {root}", name)
            return sp.prompt
        if isinstance(result, FileMissing):
            self.add(key_loc, Severity.ERROR, codes.PROMPT_MISSING,
                     f"prompt file {path} of step {name!r} does not exist", name)
            return sp.prompt
        if isinstance(result, SourceError):
            self.add(key_loc, Severity.ERROR, codes.PROMPT_UNREADABLE,
                     f"prompt file of step {name!r} cannot be used: {result}", name)
            return sp.prompt
        term = self.prompt_terms.get((path, counter.key))
        if term is None:  # the same for every step of the file (Location(path))
            term = self.prompt_terms[(path, counter.key)] = Term(
                result, TermSource.PROMPT_FILE, location=sp.prompt.location)
        return term

    # ----------------------------------------------------------------------- the contract
    def contract(self, steps: list[StepBudget], policy: Policy, clamp: ClampValues,
                 window: Term, context_floor: Term | None = None) -> None:
        for i, s in enumerate(steps):
            if s.output_source is not OutputSource.MISSING:
                self.step_contract(i, s, policy, clamp, window if s.model is None else s.window,
                                   context_floor)

    def step_contract(self, i: int, s: StepBudget, policy: Policy, clamp: ClampValues,
                      window: Term, context_floor: Term | None) -> None:
        """The contract diagnostic of one step (none when it fits)."""
        minimum = s.fixed.value + s.history.value + s.margin.value + 1
        if s.fits and minimum <= window.value:
            return
        label = f"step {s.step!r}" + (f" (from {s.defined_in})" if s.inherited else "")
        severity, code = Severity.ERROR, codes.CANNOT_FIT
        extra: tuple[Related, ...] = ()
        if minimum > window.value:
            message = (f"{label} cannot fit the window of {window.value} tokens even with"
                       f" context 0 and output 1: it needs at least {minimum}"
                       f" (fixed {s.fixed.value} + history {s.history.value} + margin"
                       f" {s.margin.value} + 1); {largest_term(s, window.value)}")
        elif s.fits:
            return
        elif i in clamp.unfit_steps and context_floor is not None:
            message = unfit_message(label, s, window.value, context_floor)
            extra = floor_related(context_floor, s)
        elif policy is Policy.FAIL_FAST:
            code, message = codes.CONTRACT_VIOLATION, _violation(label, s, window) + \
                " [fail_fast]"
        else:
            severity, code = Severity.WARNING, codes.CONTRACT_VIOLATION
            message = (f"{_violation(label, s, window)}; auto_clamp lowers"
                       f" {_clamp_text(i, clamp)} at run time")
        where = (self.plan.extends_location if s.inherited else None) \
            or s.name_location or s.location
        related = tuple(Related(t.location, f"{label}: {t.value}{inherited_suffix(t)}")
                        for label, t in s.terms().items() if t.location is not None and t.value)
        self.add(where, severity, code, message, s.step, related + extra, _violation_data(s))


def _ceiling_name(ceiling: Term) -> str:
    """``model_max_output_tokens=4096``, or ``16384 (model gpt-4o (registry ...))``."""
    if ceiling.source == "config.json model_max_output_tokens":
        return f"model_max_output_tokens={ceiling.value}"
    return f"{ceiling.value} ({ceiling.source})"


def _violation_data(s: StepBudget) -> ClampFix:
    """The data of a contract diagnostic: the budget, and each term with its place."""
    return ClampFix(to_jsonable(s.numbers), s.index, s.defined_in,
                    {label: to_jsonable(t) for label, t in s.terms().items()})


def _violation(label: str, s: StepBudget, window: Term) -> str:
    arithmetic = (f"fixed {s.fixed.value} (system prompt {s.system_prompt.value}"
                  f" + template {s.template.value} + format overhead"
                  f" {s.format_overhead.value}) + history {s.history.value} + context"
                  f" {s.context.value} + output {s.output.value} + margin"
                  f" {s.margin.value} = {s.total}")
    return (f"{label} does not fit the context window: {arithmetic} >"
            f" {window.value} (over by {-s.headroom})")


def _clamp_text(index: int, clamp: ClampValues) -> str:
    """What auto_clamp lowers for the step at ``index``."""
    parts = []
    if clamp.context_after is not None:
        parts.append(f"max_context_tokens {clamp.context_before} -> {clamp.context_after}")
    for c in clamp.outputs:
        if c.index == index:
            parts.append(f"this step's output {c.before} -> {c.after}")
    return " and ".join(parts) if parts else "nothing"


def _common_folder(a: str, b: str) -> str:
    """The deepest folder holding both ``a`` and ``b``: relative when both are (and neither
    climbs with ``..``), else absolute; ``a`` when there is none (another drive)."""
    a, b = os.path.normpath(a), os.path.normpath(b)
    climbs = any(p == os.pardir or p.startswith(os.pardir + os.sep) for p in (a, b))
    if not os.path.isabs(a) and not os.path.isabs(b) and not climbs:
        return os.path.commonpath([a, b]) or "."
    try:
        return os.path.commonpath([os.path.abspath(a), os.path.abspath(b)])
    except (OSError, ValueError):  # the current folder deleted; paths on two drives
        return a


def _folder_if_relative(pipe: str, options: CheckOptions) -> str | None:
    """The current folder when the pipeline's path or a path option (``config_path``,
    ``workspace_root``, a tokenizer file named by the option) is relative, else None: what they
    name, and whether the pipeline lies inside the workspace as named, depend on it (a
    cached result is kept for it too)."""
    tokenizer = tokenizer_path(options.tokenizer) if isinstance(options.tokenizer, str) \
        else None  # a name (an encoding, a model) is no path
    paths = (pipe, options.config_path, options.workspace_root, tokenizer)
    if all(p is None or os.path.isabs(p) for p in paths):
        return None
    try:
        return os.getcwd()
    except OSError:  # the current folder was deleted: a relative path names nothing
        return None


def check_pipeline(path: Path | str, *, files: FileSource | None = None,
                   options: CheckOptions | None = None,
                   cache: BudgetCache | None = None,
                   stop: Callable[[], bool] | None = None) -> PipelineReport:
    """Check one pipeline file against the budget contract.

    Reads through ``files`` (default ``DiskFiles()``: the files on disk; ``OverlayFiles``
    for unsaved editor buffers), never raises for bad input: every problem is a diagnostic
    of the report. ``options`` defaults to ``CheckOptions()`` (the policy from the
    environment and config.json, config.json's tokenizer). With a ``cache``, a pipeline none
    of whose inputs changed is not checked again, and one whose pipeline, extends chain and
    config.json are unchanged is not parsed again (only its prompts are counted, by
    fingerprint). Every file is fingerprinted and resolved at most once per call; a caller
    checking many pipelines against one unchanging state of the files may pass one
    ``RunFiles`` for all of them.

    ``stop`` (a caller whose result may go stale, as the language server while the user
    types) is asked before each file of the extends chain is loaded and before each step is
    planned or checked; once it returns true the check raises :class:`CheckStopped`, and
    nothing of it is stored in ``cache`` (but whole parsed files).
    """
    base = files if files is not None else DiskFiles()
    run_files = base if isinstance(base, RunFiles) else RunFiles(base)
    options = options or CheckOptions()
    environ = options.environ if options.environ is not None else os.environ
    pipe = os.path.normpath(str(path))
    cache = cache if cache is not None else BudgetCache()
    options_key = (*options.key(environ), _folder_if_relative(pipe, options))
    key = ("report", pipe, options_key)
    cached = cache.report(key, run_files)
    if isinstance(cached, PipelineReport):
        return cached
    structure_key = ("structure", pipe, options_key)
    plan = cache.structure(structure_key, run_files)
    planned = False
    if not isinstance(plan, _Plan):
        previous = cache.stale_structure(structure_key)
        plan = _Planner(pipe, run_files, options, environ, cache,
                        previous if isinstance(previous, _Plan) else None, stop).plan()
        planned = True
    checker = _Checker(pipe, plan, run_files, options, cache, stop)
    report = checker.run()
    deps: Mapping[str, str] = {**plan.deps, **checker.files.seen}
    # the prompts' root only when the steps were planned (an unusable pipeline's is unset)
    roots = (plan.chain_root, plan.prompt_root) if plan.shared is not None \
        else (plan.chain_root,)
    if cache.places:
        deps = with_places(run_files, deps, *roots)
    if planned:  # stored only with its report: a stopped check leaves no structure
        cache.store_structure(structure_key, with_places(run_files, plan.deps, *roots)
                              if cache.places else plan.deps, plan)
    cache.store_report(key, deps, report)
    return report


def _read_models_file(path: str, files: RecordingFiles) -> ModelsFile | None:
    """A models.json (``None`` when it is gone). The user's file lies outside the
    workspace: when the workspace's sources refuse it, it is read from disk (it is the
    user's own, not part of a checked change)."""
    try:
        return read_models_file(path, files)
    except OutsideRoot:
        return read_models_file(path, DiskFiles())


def _models_file_setting(config: LoadedConfig, out: list[Diagnostic]) -> str | None:
    """config.json's ``models_file`` (a path relative to config.json); BL069 at the value
    when it is not a non-empty text."""
    extra = config.config.model_extra if config.config is not None else None
    value = (extra or {}).get("models_file")
    if value is None or (isinstance(value, str) and value.strip()):
        return value
    loc = config.location("models_file")
    out.append(Diagnostic(loc.file, loc.range, Severity.ERROR, codes.MODELS_FILE_INVALID,
                          f"config.json models_file must be the path of a models.json,"
                          f" got {value!r}; models.json next to config.json is read"))
    return None
