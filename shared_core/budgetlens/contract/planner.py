"""The plan of a pipeline's check: what its files alone decide, made once and kept.

``_Planner`` reads the pipeline, its extends chain and config.json. It merges the settings
and returns a ``_Plan``: what every step shares, each ``call_model`` step's plan and the
diagnostics those files give. Each step is planned by ``_StepPlanner`` (``step_plan.py``),
which ``_Planner`` extends. The ``BudgetCache`` keeps the plan on the files' fingerprints,
so a prompt edit does not plan again (``check.py`` counts the prompts on every check).

An edit of the pipeline itself starts from the previous version's ``_Plan``. A step the
edit left the same takes over its ``_StepPlan`` (``_Reuse`` says when that is exact); only
its locations are made again, lazily. So typing in one step plans that step only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from budgetlens import codes
from budgetlens.contract.cache import BudgetCache, RecordingFiles
from budgetlens.contract.clamp import floor_below
from budgetlens.contract.config import LoadedConfig
from budgetlens.contract.discovery import pipeline_config
from budgetlens.contract.enums import (
    TermSource,
)
from budgetlens.contract.frozen import quick_init
from budgetlens.contract.limits import ModelLimits, config_limits
from budgetlens.contract.margin import parse_margin
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
    file_settings,
    load_chain,
    merged_settings,
    read_pipeline,
    step_name,
    steps_owner,
)
from budgetlens.contract.policy import PolicyChoice, resolve_policy
from budgetlens.contract.results import (
    CheckOptions,
    StepBudget,
    Term,
)
from budgetlens.contract.step_plan import (
    _At,
    _poll,
    _setting_term,
    _Shared,
    _StepPlan,
    _StepPlanner,
)
from budgetlens.files import (
    MISSING_FINGERPRINT,
    DiskFiles,
    OutsideRoot,
    RunFiles,
)
from budgetlens.models.registry import Registry, load_registry
from budgetlens.source import Diagnostic, Location, Severity
from budgetlens.tokens.core import (
    TokenCounter,
)

if TYPE_CHECKING:
    from fractions import Fraction  # loaded by a margin with a percentage (margin.py)

    from budgetlens.formats.mapping import MappingSpec

_T = TypeVar("_T")


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
    if isinstance(setting.value, str):  # "2% + 128": the constant here, the rest per step
        parsed = parse_margin(setting.value)
        if parsed is None:
            return Term(DEFAULT_SAFETY_MARGIN_TOKENS, TermSource.DEFAULT)
        return Term(parsed[1], f"settings.budget_safety_margin_tokens {setting.value!r}",
                    setting.depth > 0, setting.location)
    return _setting_term(setting, "settings.budget_safety_margin_tokens")


def _margin_percent(settings: dict[str, Setting]) -> Fraction | None:
    """The percentage of a text margin (``"2% + 128"``); ``None`` for a number or none."""
    setting = settings.get("budget_safety_margin_tokens")
    if setting is None or not isinstance(setting.value, str):
        return None
    parsed = parse_margin(setting.value)
    return parsed[0] if parsed is not None and parsed[0] else None


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
                       if not sp.before and not sp.after and sp.own is None
                       and not sp.request_terms})

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
    the contract are done on every check (``_PipelineCheck``)."""

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

    def notes(self, steps: list[StepBudget], counter: TokenCounter) -> list[Diagnostic]:
        """Diagnostics a plan adds once its steps are counted (a prompt file's variable
        headroom and input cases, ``prompt_plan._PromptPlan``); a pipeline has none."""
        return []

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



@dataclass(frozen=True)
class _ConfigLookup:
    """config.json of a file as ``pipeline_config`` found it (``config`` None: none found),
    and the ``files`` it was looked up through: they hold the fingerprint of every place
    probed, which become the first entries of the plan's ``deps``."""

    files: RecordingFiles
    config: LoadedConfig | None
    path: str | None

    @staticmethod
    def of(pipe: str, run_files: RunFiles, options: CheckOptions,
           cache: BudgetCache) -> _ConfigLookup:
        files = RecordingFiles(run_files)
        return _ConfigLookup(files, *pipeline_config(pipe, files, options, cache))


class _Planner(_StepPlanner):
    """Builds the ``_Plan`` of a pipeline: reads and parses the pipeline, its extends chain
    and config.json, merges the settings, then plans every step (``_StepPlanner``)."""

    #: the config.json ``prompt_mappings`` entry that reads the file (a prompt file's
    #: planner only; set by the check before ``plan``)
    mapping: MappingSpec | None = None

    def __init__(self, pipeline: str, files: RunFiles, options: CheckOptions,
                 environ: Mapping[str, str], cache: BudgetCache,
                 previous: _Plan | None = None,
                 stop: Callable[[], bool] | None = None,
                 lookup: _ConfigLookup | None = None) -> None:
        super().__init__(pipeline, cache, stop)
        #: the plan of an earlier version of the pipeline (or None): its steps that are the
        #: same are taken over (``_Reuse``)
        self.previous = previous
        self.run_files = files
        #: config.json as the check looked it up to choose this planner (``config``)
        self.lookup = lookup
        self.files = lookup.files if lookup is not None else RecordingFiles(files)
        self.options = options
        self.environ = environ

    def adopt(self, diagnostics: tuple[Diagnostic, ...] | list[Diagnostic]) -> None:
        """Diagnostics of a file the pipeline reads, as this pipeline's."""
        if diagnostics:  # (most files have none)
            self.diags.extend(replace(d, pipeline=self.pipe) for d in diagnostics)

    def load_file(self, path: str) -> PipelineFile:
        _poll(self.stop)
        return self.cache.parsed("pipeline", path, self.files,
                                 lambda: read_pipeline(path, self.files))

    def config(self) -> tuple[LoadedConfig | None, str | None]:
        """config.json and its path: the check's ``lookup``, else looked up now (once)."""
        if self.lookup is None:
            self.lookup = _ConfigLookup(self.files, *pipeline_config(
                self.pipe, self.files, self.options, self.cache))
        return self.lookup.config, self.lookup.path

    # ------------------------------------------------------------- the pipeline as a whole
    def plan(self) -> _Plan:
        config, config_path = self.config()
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
        self.margin_problem(settings)
        context_diags = self.take()
        shared = _Shared(config, base["choice"].policy, self.overhead(config),
                         _margin_term(settings), settings.get("max_history_tokens"),
                         context or Term(0, TermSource.MISSING),
                         window or Term(0, TermSource.MISSING), base["ceiling"], False,
                         _margin_percent(settings))
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

    def margin_problem(self, settings: dict[str, Setting]) -> None:
        """BL005 at a text margin that is not ``"P% + C"``, ``"P%"`` or a number."""
        setting = settings.get("budget_safety_margin_tokens")
        if setting is None or not isinstance(setting.value, str) or \
                parse_margin(setting.value) is not None:
            return
        self.add(setting.location, Severity.ERROR, codes.INVALID_VALUE,
                 f"settings.budget_safety_margin_tokens must be an integer >= 0 or a text"
                 f" such as \"2% + 128\" (a percentage of the step's input, 0 to 100, plus"
                 f" tokens), got {setting.value!r}; the default"
                 f" {DEFAULT_SAFETY_MARGIN_TOKENS} is used")

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
