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
warning that says what the run time clamps to (see ``compute_clamp``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from budgetlens import codes
from budgetlens.cache import BudgetCache, RecordingFiles
from budgetlens.config import LoadedConfig, find_config, load_config, read_config_if_present
from budgetlens.files import (
    MISSING_FINGERPRINT,
    DiskFiles,
    FileMissing,
    FileSource,
    SourceError,
    is_inside,
    path_problem,
)
from budgetlens.pipeline import (
    CALL_MODEL,
    DEFAULT_SAFETY_MARGIN_TOKENS,
    Chain,
    PipelineFile,
    Setting,
    Step,
    load_chain,
    merged_settings,
    read_pipeline,
    step_name,
    steps_owner,
)
from budgetlens.pipeline_injection import InjectionCheck, check_injection
from budgetlens.policy import DEVELOPMENT_ENV, POLICY_ENV, Policy, resolve_policy
from budgetlens.source import Diagnostic, Location, Range, Related, Severity
from budgetlens.template import parse_template
from budgetlens.tokens import (
    DEFAULT_TOKENIZER,
    TokenCounter,
    TokenizerError,
    TokenizerLike,
    get_tokenizer,
)
from budgetlens.yaml_source import Span, YamlPath

PIPELINE_GLOBS = ("*.yaml", "*.yml")
#: The lowest max_context_tokens the clamp sets (the setting must be > 0).
MIN_CONTEXT = 1
_SKIP_DIRS = {"node_modules", "__pycache__", "site-packages"}


# ---------------------------------------------------------------------------------- data
@dataclass(frozen=True)
class Term:
    """One term of a step's budget: its value and the place that set it."""

    value: int
    location: Location | None = None
    source: str = ""  # what set it: "settings.max_context_tokens", "prompt file", "default"
    inherited: bool = False  # set in a parent pipeline, not in the pipeline itself

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source, "inherited": self.inherited,
                "location": self.location.to_dict() if self.location else None}


@dataclass(frozen=True)
class StepBudget:
    """The budget of one ``call_model`` step."""

    pipeline: str
    step: str
    index: int  # position in the steps list of ``defined_in``
    location: Location  # the step's mapping, in the file that defines it
    defined_in: str
    system_prompt: Term
    template: Term
    format_overhead: Term
    fixed: Term
    history: Term
    context: Term
    output: Term
    output_source: str  # "max_output_tokens" | "max_tokens" | "model_max_tokens" | "missing"
    margin: Term
    window: Term
    total: int
    headroom: int  # window - total (negative when over)
    fits: bool
    prompt_file: str | None = None
    use_history: bool = False
    name_location: Location | None = None  # the id/name value, else the step's first key

    @property
    def inherited(self) -> bool:
        return os.path.normpath(self.defined_in) != os.path.normpath(self.pipeline)

    def budget_dict(self) -> dict[str, Any]:
        return {
            "system_prompt": self.system_prompt.value, "template": self.template.value,
            "format_overhead": self.format_overhead.value, "fixed": self.fixed.value,
            "history": self.history.value, "context": self.context.value,
            "output": self.output.value, "output_source": self.output_source,
            "margin": self.margin.value, "total": self.total, "window": self.window.value,
            "headroom": self.headroom,
        }

    def to_dict(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "step": self.step, "fits": self.fits,
                "budget": self.budget_dict()}

    def terms(self) -> dict[str, Term]:
        return {"system_prompt": self.system_prompt, "template": self.template,
                "format_overhead": self.format_overhead, "history": self.history,
                "context": self.context, "output": self.output, "margin": self.margin,
                "window": self.window}


@dataclass(frozen=True)
class OutputClamp:
    step: str
    index: int  # index into ``PipelineReport.steps``
    before: int
    after: int
    reason: str


@dataclass(frozen=True)
class ClampValues:
    """What auto_clamp sets: a lower ``max_context_tokens`` and/or lower output limits."""

    context_before: int | None = None
    context_after: int | None = None
    outputs: tuple[OutputClamp, ...] = ()
    unfit: tuple[str, ...] = ()  # steps that cannot fit whatever is clamped

    @property
    def empty(self) -> bool:
        return self.context_after is None and not self.outputs


@dataclass(frozen=True)
class PipelineReport:
    """Everything ``check_pipeline`` found for one pipeline."""

    pipeline: str
    diagnostics: list[Diagnostic]
    steps: list[StepBudget]
    inputs: frozenset[str]
    policy: Policy
    policy_source: str = ""
    tokenizer: str | None = None
    config: str | None = None
    chain: tuple[str, ...] = ()
    context: Term | None = None  # merged settings.max_context_tokens (None when unusable)
    window: Term | None = None
    output_ceiling: Term | None = None
    context_floor: int = 0
    clamp: ClampValues = field(default_factory=ClampValues)
    injection: InjectionCheck | None = None
    """The ``settings.injection`` policy of the chain and each step's split (None without one)."""

    @property
    def has_errors(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self.diagnostics)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]

    def to_dict(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "policy": self.policy.value,
                "tokenizer": self.tokenizer, "config": self.config,
                "diagnostics": [d.to_dict() for d in self.diagnostics],
                "steps": [s.to_dict() for s in self.steps]}


@dataclass(frozen=True)
class CheckOptions:
    """How to check: overrides of the policy, tokenizer and config, and the workspace root.

    ``environ`` is the environment to read ``PIPELINE_LIMITS_POLICY`` and ``APP_DEVELOPMENT``
    from (``None``: the process environment, read at each call).
    """

    policy: Policy | str | None = None
    tokenizer: TokenizerLike | None = None
    """A tokenizer name (as config.json's ``tokenizer``) or a tokenizer object / counting
    function (see ``budgetlens.tokens.as_tokenizer``); None: config.json's, else cl100k_base."""
    config_path: Path | str | None = None
    workspace_root: Path | str | None = None
    environ: Mapping[str, str] | None = None

    def key(self, environ: Mapping[str, str]) -> tuple[str, ...]:
        tokenizer = self.tokenizer
        if tokenizer is not None and not isinstance(tokenizer, str):
            tokenizer = f"{type(tokenizer).__qualname__}@{id(tokenizer):x}"  # an object
        return (str(self.policy or ""), tokenizer or "", str(self.config_path or ""),
                str(self.workspace_root or ""), environ.get(POLICY_ENV, ""),
                environ.get(DEVELOPMENT_ENV, ""))


# ---------------------------------------------------------------------------- discovery
def find_pipelines(root: Path | str) -> list[Path]:
    """Pipeline files under ``root``: ``root`` itself if a file, else every ``pipelines/*.yaml``
    (and ``*.yml``) below it, hidden folders and dependency folders skipped; sorted. A
    ``pipelines`` folder itself (also as ``.`` from inside it) gives its own files."""
    root = Path(root)
    if not root.is_dir():
        return [root]
    found: list[Path] = []
    if os.path.basename(os.path.abspath(root)) == "pipelines":
        for pattern in PIPELINE_GLOBS:
            found.extend(root.glob(pattern))
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(".") and d not in _SKIP_DIRS)
        if "pipelines" in dirnames:
            folder = Path(dirpath) / "pipelines"
            for pattern in PIPELINE_GLOBS:
                found.extend(folder.glob(pattern))
    return sorted(set(found))


# ---------------------------------------------------------------------------- the clamp
def compute_clamp(steps: list[StepBudget], *, context: int, window: int,
                  ceiling: int | None, floor: int) -> ClampValues:
    """The auto-clamp of ``auto_clamp`` (docs/pipeline-format.md), as numbers.

    1. An output above the model's ceiling (``model_max_output_tokens``) is lowered to it.
    2. ``max_context_tokens`` is lowered once, so that the worst step fits, but not below
       ``floor`` (``min_context_tokens``, default half of ``max_context_tokens``) unless a
       step cannot fit otherwise even with output 1.
    3. Each step that still does not fit gets its output limit lowered until it fits.
    ``max_context_tokens`` never goes below 1 (the smallest valid value) and an output limit
    never below 1; a step that cannot fit even then is left alone (``unfit``).
    """
    outputs = {i: s.output.value for i, s in enumerate(steps)}
    reasons: dict[int, str] = {}
    if ceiling is not None:
        for i in range(len(steps)):
            if outputs[i] > ceiling:
                outputs[i] = ceiling
                reasons[i] = f"above the model's output ceiling model_max_output_tokens={ceiling}"

    def base(i: int) -> int:
        s = steps[i]
        return s.fixed.value + s.history.value + s.margin.value

    least = MIN_CONTEXT + 1  # the smallest context and output a step can run with
    unfit = tuple(s.step for i, s in enumerate(steps) if base(i) + least > window)
    fittable = [i for i, s in enumerate(steps) if base(i) + least <= window]
    new_context = context
    if any(base(i) + context + outputs[i] > window for i in fittable):
        worst = max(base(i) + outputs[i] for i in fittable)
        new_context = min(context, max(min(floor, context), window - worst, MIN_CONTEXT))
        # a step that cannot fit at that context even with output 1 lowers the context more
        need = min((window - base(i) - 1 for i in fittable), default=new_context)
        new_context = max(MIN_CONTEXT, min(new_context, need))
    for i in fittable:
        total = base(i) + new_context + outputs[i]
        if total > window:
            outputs[i] = window - base(i) - new_context
            reasons[i] = (f"max_context_tokens={new_context} is as low as the clamp goes;"
                          f" the step fits with this output limit")
    changed = tuple(OutputClamp(steps[i].step, i, steps[i].output.value, outputs[i], reasons[i])
                    for i in sorted(reasons) if outputs[i] != steps[i].output.value)
    return ClampValues(context_before=context if new_context != context else None,
                       context_after=new_context if new_context != context else None,
                       outputs=changed, unfit=unfit)


# ----------------------------------------------------------------------------- checking
def _diag(loc: Location, severity: Severity, code: str, message: str, pipeline: str,
          step: str | None = None, related: tuple[Related, ...] = (),
          data: dict[str, Any] | None = None) -> Diagnostic:
    return Diagnostic(loc.file, loc.range, severity, code, message, pipeline, step, related, data)


def _template_range(pf: PipelineFile, path: YamlPath, start: int, end: int) -> Range:
    """The file range of ``[start, end)`` of a template string, exact when the YAML scalar
    maps onto its text simply (plain, quoted without escapes, literal block); else the whole
    value."""
    doc = pf.doc
    span: Span | None = doc.span(path) if doc else None
    if doc is None or span is None:
        return Range.at(0, 0)
    value = doc.node(path)
    raw = doc.text[span.start:span.end]
    if not isinstance(value, str):
        return span.value
    if span.style is None and "\n" not in raw and raw == value:
        return doc.index.range(span.start + start, span.start + end)
    if span.style in ("'", '"') and raw[1:-1] == value:
        return doc.index.range(span.start + 1 + start, span.start + 1 + end)
    if span.style == "|":
        header_end = raw.find("\n")
        if header_end != -1:
            offsets: list[int] = []
            chars: list[str] = []
            body_start = span.start + header_end + 1
            lines = doc.text[body_start:span.end].split("\n")
            indent = None
            pos = body_start
            for line in lines:
                stripped = line.rstrip("\r")
                if indent is None and stripped.strip():
                    indent = len(stripped) - len(stripped.lstrip(" "))
                cut = min(indent or 0, len(stripped))
                for k, ch in enumerate(stripped[cut:]):
                    offsets.append(pos + cut + k)
                    chars.append(ch)
                offsets.append(pos + len(stripped))
                chars.append("\n")
                pos += len(line) + 1
            if "".join(chars).startswith(value[:end]) and end <= len(offsets):
                last = offsets[end - 1] + 1 if end > start else offsets[start]
                return doc.index.range(offsets[start], last)
    return span.value


def _name_location(pf: PipelineFile, index: int) -> Location:
    for key in ("id", "name"):
        loc = pf.doc.value_range(("steps", index, key)) if pf.doc else None
        if loc is not None:
            return Location(pf.path, loc)
    step_node = pf.doc.node(("steps", index)) if pf.doc else None
    if isinstance(step_node, dict) and step_node:
        return pf.key_location(("steps", index, next(iter(step_node))))
    return pf.location(("steps", index))


def _fmt_inherited(term: Term) -> str:
    return " (inherited)" if term.inherited else ""


class _Checker:
    def __init__(self, pipeline: str, files: FileSource, options: CheckOptions,
                 environ: Mapping[str, str], cache: BudgetCache) -> None:
        self.pipe = pipeline
        self.files = RecordingFiles(files)
        self.options = options
        self.environ = environ
        self.cache = cache
        self.diags: list[Diagnostic] = []
        self.inputs: set[str] = {pipeline}
        self.first: PipelineFile | None = None

    def add(self, loc: Location, severity: Severity, code: str, message: str,
            step: str | None = None, related: tuple[Related, ...] = (),
            data: dict[str, Any] | None = None) -> None:
        self.diags.append(_diag(loc, severity, code, message, self.pipe, step, related, data))

    def load_file(self, path: str) -> PipelineFile:
        return self.cache.parsed("pipeline", path, self.files,
                                 lambda: read_pipeline(path, self.files))

    def load_config(self) -> tuple[LoadedConfig | None, str | None]:
        root = self.options.workspace_root
        explicit = self.options.config_path
        if explicit is not None:
            path = os.path.normpath(str(explicit))

            def load() -> LoadedConfig:
                try:
                    return load_config(path, self.files.read_text(Path(path)))
                except SourceError as exc:
                    return LoadedConfig(path, None, False, diagnostics=(Diagnostic(
                        path, Range.at(0, 0), Severity.ERROR, codes.CONFIG_INVALID,
                        f"config.json cannot be used: {exc}"),))
            return self.cache.parsed("config", path, self.files, load), path
        start = os.path.dirname(self.pipe) or "."

        def load_candidate(path: str) -> LoadedConfig | None:
            if self.files.fingerprint(Path(path)) == MISSING_FINGERPRINT:
                return None
            return self.cache.parsed("config", path, self.files,
                                     lambda: read_config_if_present(path, self.files))
        loaded, probed = find_config(start, self.files, load=load_candidate,
                                     stop_at=str(root) if root is not None else None)
        for p in probed:
            self.files.fingerprint(Path(p))
        return loaded, loaded.path if loaded else None

    def run(self) -> PipelineReport:
        config, config_path = self.load_config()
        if config_path:
            self.inputs.add(config_path)
        root = (os.path.normpath(str(self.options.workspace_root))
                if self.options.workspace_root is not None
                else (config.directory if config is not None else os.path.dirname(self.pipe)
                      or "."))
        chain = load_chain(self.pipe, self.files, root=root, load=self.load_file)
        self.inputs.update(pf.path for pf in chain.files)
        first = self.first = chain.pipeline
        self.diags.extend(replace(d, pipeline=self.pipe) for d in first.diagnostics)
        self.diags.extend(replace(d, pipeline=self.pipe) for d in chain.diagnostics)
        head = Location(self.pipe, first.head_range())
        cfg = config.config if config is not None else None
        if config is None:
            self.add(head, Severity.ERROR, codes.CONFIG_MISSING,
                     "no config.json found at or above this pipeline (it sets"
                     " model_context_window)")
        else:
            self.diags.extend(replace(d, pipeline=self.pipe) for d in config.diagnostics)
        # policy
        development = cfg.development if cfg is not None else None
        choice = resolve_policy(override=self.options.policy, environ=self.environ,
                                development=development)
        if choice.problem:
            self.add(head, Severity.WARNING, codes.POLICY_INVALID, choice.problem)
        policy = choice.policy
        # tokenizer
        spec = self.options.tokenizer or (cfg.tokenizer if cfg is not None else None)
        base_dir = Path(config.directory) if config is not None else None
        try:
            tokenizer = get_tokenizer(spec, base_dir=base_dir)
        except TokenizerError as exc:
            loc = (config.location("tokenizer") if config is not None and not
                   self.options.tokenizer else head)
            self.add(loc, Severity.ERROR, codes.TOKENIZER_INVALID,
                     f"{exc}; counting with {DEFAULT_TOKENIZER} instead")
            tokenizer = get_tokenizer(DEFAULT_TOKENIZER)
        counter = self.cache.counter(tokenizer)
        window: Term | None = None
        if config is not None and cfg is not None and config.window_ok:
            window = Term(cfg.model_context_window, config.location("model_context_window"),
                          "config.json model_context_window")
        ceiling: Term | None = None
        if cfg is not None and cfg.model_max_output_tokens is not None:
            ceiling = Term(cfg.model_max_output_tokens,
                           config.location("model_max_output_tokens") if config else None,
                           "config.json model_max_output_tokens")
        report_base = dict(pipeline=self.pipe, policy=policy, policy_source=choice.source,
                           tokenizer=tokenizer.name, config=config_path,
                           chain=tuple(pf.path for pf in chain.files), window=window,
                           output_ceiling=ceiling)
        if not first.usable or (chain.broken and len(chain.files) == 1):
            return self.finish(steps=[], **report_base)
        settings = merged_settings(chain)
        context = self.context_term(chain, settings, head)
        steps = self.steps(chain, settings, config, counter, policy, context, window, ceiling)
        floor_setting = settings.get("min_context_tokens")
        floor = (int(floor_setting.value) if floor_setting is not None
                 else (context.value // 2 if context else 0))
        clamp = ClampValues()
        if context is not None and window is not None and steps:
            clamp = compute_clamp(steps, context=context.value, window=window.value,
                                  ceiling=ceiling.value if ceiling else None, floor=floor)
            self.contract(steps, policy, clamp, window)
        report = self.finish(steps=steps, context=context, context_floor=floor, clamp=clamp,
                             **report_base)
        injection = check_injection(report, files=self.files, loaded=chain.files)
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
        return PipelineReport(diagnostics=unique, inputs=frozenset(self.inputs), **kwargs)

    def context_term(self, chain: Chain, settings: dict[str, Setting],
                     head: Location) -> Term | None:
        setting = settings.get("max_context_tokens")
        if setting is not None:
            return Term(int(setting.value), setting.location, "settings.max_context_tokens",
                        setting.depth > 0)
        invalid = any(("settings", "max_context_tokens") in pf.invalid for pf in chain.files)
        if not invalid and not chain.broken:
            loc = chain.pipeline.key_location(("settings",)) if chain.pipeline.doc and \
                chain.pipeline.doc.span(("settings",)) else head
            self.add(loc, Severity.ERROR, codes.CONTEXT_INVALID,
                     "settings.max_context_tokens is missing: set an integer > 0 here or in a"
                     " parent pipeline (the token limit of the retrieved context)")
        return None

    def steps(self, chain: Chain, settings: dict[str, Setting], config: LoadedConfig | None,
              counter: TokenCounter, policy: Policy, context: Term | None,
              window: Term | None, ceiling: Term | None) -> list[StepBudget]:
        owner = steps_owner(chain)
        if owner is None or owner.model is None or owner.model.steps is None:
            return []
        cfg = config.config if config is not None else None
        overhead = cfg.format_overhead_tokens if cfg is not None else 0
        if config is None or cfg is None:
            overhead_term = Term(overhead, None, "no config.json")
        elif "format_overhead_tokens" in cfg.model_fields_set:
            overhead_term = Term(overhead, config.location("format_overhead_tokens"),
                                 "config.json format_overhead_tokens")
        else:  # not set (or invalid, reported as BL013): the default applies
            overhead_term = Term(overhead, None, "default")
        margin_setting = settings.get("budget_safety_margin_tokens")
        margin = (Term(int(margin_setting.value), margin_setting.location,
                       "settings.budget_safety_margin_tokens", margin_setting.depth > 0)
                  if margin_setting is not None
                  else Term(DEFAULT_SAFETY_MARGIN_TOKENS, None, "default"))
        history_setting = settings.get("max_history_tokens")
        context_term = context or Term(0, None, "missing")
        window_term = window or Term(0, None, "missing")
        inherited = owner.path != self.pipe
        out: list[StepBudget] = []
        for index, step in enumerate(owner.model.steps):
            if step.type != CALL_MODEL:
                continue
            out.append(self.step_budget(
                owner, index, step, config, counter, policy, overhead_term, margin,
                history_setting, context_term, window_term, ceiling, inherited))
        return out

    def step_budget(self, owner: PipelineFile, index: int, step: Step,
                    config: LoadedConfig | None, counter: TokenCounter, policy: Policy,
                    overhead: Term, margin: Term, history_setting: Setting | None,
                    context: Term, window: Term, ceiling: Term | None,
                    inherited: bool) -> StepBudget:
        name = step_name(step, index)
        base = ("steps", index)
        step_loc = owner.location(base)
        cfg = config.config if config is not None else None
        # system prompt
        prompt_term = Term(0, None, "no prompt_key")
        prompt_file: str | None = None
        if step.prompt_key is None:
            if (*base, "prompt_key") not in owner.invalid:
                self.add(_name_location(owner, index), Severity.WARNING,
                         codes.PROMPT_KEY_MISSING,
                         f"call_model step {name!r} has no prompt_key: its system prompt"
                         " counts as 0 tokens", name)
        else:
            prompt_file, prompt_term = self.prompt(owner, index, step.prompt_key, config,
                                                   counter, name)
        # template
        template_text = step.user_parts.template if step.user_parts else None
        template_term = Term(0, None, "no template")
        if template_text is not None:
            tpath: YamlPath = (*base, "user_parts", "template")
            parsed = parse_template(template_text)
            for problem in parsed.problems:
                rng = _template_range(owner, tpath, problem.start, problem.end)
                self.add(Location(owner.path, rng), Severity.ERROR, codes.TEMPLATE_SYNTAX,
                         f"template of step {name!r}: {problem.message}", name)
            template_term = Term(counter.count(parsed.emptied), owner.location(tpath),
                                 "user_parts.template", inherited)
        fixed_value = prompt_term.value + template_term.value + overhead.value
        fixed = Term(fixed_value, step_loc, "system prompt + template + format overhead",
                     inherited)
        # history
        history = Term(0, None, "use_history is off")
        if step.use_history:
            if history_setting is not None and int(history_setting.value) > 0:
                history = Term(int(history_setting.value), history_setting.location,
                               "settings.max_history_tokens", history_setting.depth > 0)
            else:
                shown = owner.location((*base, "use_history"))
                state = ("is 0" if history_setting is not None else "is not set")
                related = ((Related(history_setting.location, "max_history_tokens is 0"),)
                           if history_setting is not None else ())
                if policy is Policy.FAIL_FAST:
                    self.add(shown, Severity.ERROR, codes.HISTORY_MISSING,
                             f"step {name!r} uses history but settings.max_history_tokens"
                             f" {state}: set it to the history's token budget (fail_fast)",
                             name, related)
                else:
                    self.add(shown, Severity.WARNING, codes.HISTORY_MISSING,
                             f"step {name!r} uses history but settings.max_history_tokens"
                             f" {state}: auto_clamp runs it with no history", name, related)
                history = Term(0, history_setting.location if history_setting else None,
                               "settings.max_history_tokens",
                               bool(history_setting and history_setting.depth > 0))
        # output
        if step.max_output_tokens is not None:
            output = Term(step.max_output_tokens, owner.location((*base, "max_output_tokens")),
                          "max_output_tokens", inherited)
            source = "max_output_tokens"
        elif step.max_tokens is not None:
            output = Term(step.max_tokens, owner.location((*base, "max_tokens")),
                          "max_tokens", inherited)
            source = "max_tokens"
        elif cfg is not None and cfg.model_max_tokens is not None:
            output = Term(cfg.model_max_tokens,
                          config.location("model_max_tokens") if config else None,
                          "config.json model_max_tokens")
            source = "model_max_tokens"
        else:
            output = Term(0, None, "missing")
            source = "missing"
            invalid = any(p[:2] == base and p[2:3] in (("max_output_tokens",), ("max_tokens",))
                          for p in owner.invalid)
            if not invalid:
                self.add(_name_location(owner, index), Severity.ERROR, codes.OUTPUT_MISSING,
                         f"step {name!r} has no output limit: set max_output_tokens on the"
                         " step or model_max_tokens in config.json", name)
        if ceiling is not None and output.value > ceiling.value:
            loc = output.location or _name_location(owner, index)
            self.add(loc, Severity.ERROR, codes.OUTPUT_ABOVE_CEILING,
                     f"step {name!r} asks for {output.value} output tokens ({source}), above"
                     f" the model's ceiling model_max_output_tokens={ceiling.value}", name,
                     (Related(ceiling.location, "model_max_output_tokens"),)
                     if ceiling.location else ())
        total = fixed.value + history.value + context.value + output.value + margin.value
        headroom = window.value - total
        fits = (headroom >= 0 and window.source != "missing" and context.source != "missing"
                and source != "missing")
        return StepBudget(
            pipeline=self.pipe, step=name, index=index, location=step_loc,
            defined_in=owner.path, system_prompt=prompt_term, template=template_term,
            format_overhead=overhead, fixed=fixed, history=history, context=context,
            output=output, output_source=source, margin=margin, window=window, total=total,
            headroom=headroom, fits=fits, prompt_file=prompt_file,
            use_history=bool(step.use_history), name_location=_name_location(owner, index))

    def prompt(self, owner: PipelineFile, index: int, key: str, config: LoadedConfig | None,
               counter: TokenCounter, name: str) -> tuple[str | None, Term]:
        key_loc = owner.location(("steps", index, "prompt_key"))
        cfg = config.config if config is not None else None
        if config is None or cfg is None:
            return None, Term(0, None, "prompt file (no config.json)")
        prompts_dir = os.path.normpath(os.path.join(config.directory, cfg.prompts_dir))
        path = os.path.normpath(os.path.join(prompts_dir, f"{key}.txt"))
        problem = path_problem(path)
        if problem is not None:
            self.add(key_loc, Severity.ERROR, codes.PROMPT_UNREADABLE,
                     f"prompt file {path!r} of step {name!r} cannot be used: {problem}", name)
            return None, Term(0, None, "prompt file")
        self.inputs.add(path)
        root = (str(self.options.workspace_root) if self.options.workspace_root is not None
                else config.directory)
        if not is_inside(path, root):
            self.add(key_loc, Severity.ERROR, codes.PROMPT_UNREADABLE,
                     f"prompt file {path} of step {name!r} resolves outside the workspace"
                     f" root {root}", name)
            return path, Term(0, Location(path), "prompt file")
        result = self.cache.prompt_tokens(path, self.files, counter)
        if isinstance(result, SourceError):
            if isinstance(result, FileMissing):
                self.add(key_loc, Severity.ERROR, codes.PROMPT_MISSING,
                         f"prompt file {path} of step {name!r} does not exist", name)
            else:
                self.add(key_loc, Severity.ERROR, codes.PROMPT_UNREADABLE,
                         f"prompt file of step {name!r} cannot be used: {result}", name)
            return path, Term(0, Location(path), "prompt file")
        return path, Term(result, Location(path), "prompt file")

    def contract(self, steps: list[StepBudget], policy: Policy, clamp: ClampValues,
                 window: Term) -> None:
        outputs = {c.index: c for c in clamp.outputs}
        for i, s in enumerate(steps):
            if s.output_source == "missing":
                continue
            where = s.name_location or s.location
            if s.inherited:
                ext = self.pipe_extends_location()
                where = ext or where
            related = tuple(Related(t.location, f"{label}: {t.value}{_fmt_inherited(t)}")
                            for label, t in s.terms().items()
                            if t.location is not None and t.value)
            data = {"budget": s.budget_dict(), "step_index": s.index,
                    "defined_in": s.defined_in,
                    "terms": {label: t.to_dict() for label, t in s.terms().items()}}
            arithmetic = (f"fixed {s.fixed.value} (system prompt {s.system_prompt.value}"
                          f" + template {s.template.value} + format overhead"
                          f" {s.format_overhead.value}) + history {s.history.value} + context"
                          f" {s.context.value} + output {s.output.value} + margin"
                          f" {s.margin.value} = {s.total}")
            label = f"step {s.step!r}" + (f" (from {s.defined_in})" if s.inherited else "")
            minimum = s.fixed.value + s.history.value + s.margin.value + 1
            if minimum > window.value:
                self.add(where, Severity.ERROR, codes.CANNOT_FIT,
                         f"{label} cannot fit the window of {window.value} tokens even with"
                         f" context 0 and output 1: it needs at least {minimum}"
                         f" (fixed {s.fixed.value} + history {s.history.value} + margin"
                         f" {s.margin.value} + 1)", s.step, related, data)
                continue
            if s.fits:
                continue
            message = (f"{label} does not fit the context window: {arithmetic} >"
                       f" {window.value} (over by {-s.headroom})")
            if policy is Policy.FAIL_FAST:
                self.add(where, Severity.ERROR, codes.CONTRACT_VIOLATION,
                         message + " [fail_fast]", s.step, related, data)
                continue
            parts = []
            if clamp.context_after is not None:
                parts.append(f"max_context_tokens {clamp.context_before} ->"
                             f" {clamp.context_after}")
            if i in outputs:
                parts.append(f"this step's output {outputs[i].before} -> {outputs[i].after}")
            if s.step in clamp.unfit:
                clamp_text = ("nothing: the step fits only with max_context_tokens 0, which"
                              " is not a valid setting")
                self.add(where, Severity.WARNING, codes.CONTRACT_VIOLATION,
                         f"{message}; auto_clamp can lower {clamp_text}", s.step, related,
                         data)
                continue
            clamp_text = " and ".join(parts) if parts else "nothing"
            self.add(where, Severity.WARNING, codes.CONTRACT_VIOLATION,
                     f"{message}; auto_clamp lowers {clamp_text} at run time", s.step,
                     related, data)

    def pipe_extends_location(self) -> Location | None:
        pf = self.first
        if pf is None or pf.doc is None or pf.doc.span(("extends",)) is None:
            return None
        return pf.location(("extends",))


def check_pipeline(path: Path | str, *, files: FileSource | None = None,
                   options: CheckOptions | None = None,
                   cache: BudgetCache | None = None) -> PipelineReport:
    """Check one pipeline file against the budget contract.

    Reads through ``files`` (default ``DiskFiles()``: the files on disk; ``OverlayFiles``
    for unsaved editor buffers), never raises for bad input: every problem is a diagnostic
    of the report. ``options`` defaults to ``CheckOptions()`` (the policy from the
    environment and config.json, config.json's tokenizer). With a ``cache``, a pipeline none
    of whose inputs changed is not checked again.
    """
    files = files if files is not None else DiskFiles()
    options = options or CheckOptions()
    environ = options.environ if options.environ is not None else os.environ
    pipe = os.path.normpath(str(path))
    cache = cache if cache is not None else BudgetCache()
    key = ("report", pipe, options.key(environ))
    cached = cache.report(key, files)
    if isinstance(cached, PipelineReport):
        return cached
    checker = _Checker(pipe, files, options, environ, cache)
    report = checker.run()
    cache.store_report(key, checker.files.seen, report)
    return report
