"""The budget contract of a pipeline: every ``call_model`` step must fit the model's window.

For each ``call_model`` step::

    fixed + history + context + output + margin  <=  model_context_window

    fixed   = tokens(system prompt file) + tokens(template, placeholders emptied)
              + format_overhead_tokens + tools + response_schema
    history = the step's max_history_tokens, else settings', if use_history; else 0
    context = 0 with use_context: false, else the step's max_context_tokens, else
              settings.max_context_tokens
    output  = max_output_tokens, else max_tokens, else config model_max_tokens
    margin  = settings.budget_safety_margin_tokens (default 128; "2% + 128" adds a share
              of fixed + history + context, contract/margin.py)

The window is the step's own (its model, variant and serving: limits.step_terms) or the
pipeline's. A step behind a gateway also keeps its input (all but the output) under the
gateway's per-request cap (BL067).

A step's thinking budget (``reasoning``) adds to the left side unless it lies inside the
output limit (Claude); what the request sends (fixed + history + context + margin) must
also fit the model's ``max_input`` when that is below the window (BL054). The request terms
are counted by ``contract/terms.py``.

``check_pipeline`` computes every term with the place it came from (inherited settings
point into the parent file), validates every rule, and reports diagnostics with stable
``BL0xx`` codes. Under ``fail_fast`` a violation is an error; under ``auto_clamp`` it is a
warning that says what the run time clamps to (see ``compute_clamp``). A step that fits only
below the clamp's floors (``min_context_tokens``, ``min_output_tokens``) is an error under
both policies (BL052), naming its largest term and the setting to change.

A check runs in two parts. ``planner.py`` reads the pipeline, its extends chain and
config.json into a ``_Plan``: every step's terms except token counts, and the diagnostics
those files alone give. The ``BudgetCache`` keeps the plan on their fingerprints, and an
edit of the pipeline plans again only the steps it changed (``_Reuse``).

This module does the rest on every check (``_PipelineCheck``). It resolves the tokenizer,
counts the prompt files (cached by fingerprint) and the templates (once per tokenizer), adds
up each step, computes the clamp and reports the contract. So a pipeline whose only changed
input is a prompt is re-counted without reading its structure again.

``check_pipeline(stop=...)`` lets a caller abandon a check that went stale: it raises
``CheckStopped`` and caches nothing of it. Locations are lazy (``Location.lazy``): a line
and character are computed only for the places a report shows.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from budgetlens import codes
from budgetlens.contract.advice import floor_related, inherited_suffix, largest_term, unfit_message
from budgetlens.contract.cache import BudgetCache, RecordingFiles, with_places
from budgetlens.contract.clamp import compute_clamp
from budgetlens.contract.config import LoadedConfig
from budgetlens.contract.discovery import is_prompt_path, mapping_in
from budgetlens.contract.enums import (
    OutputSource,
    TermSource,
)
from budgetlens.contract.frozen import quick_init
from budgetlens.contract.injection_settings import check_injection
from budgetlens.contract.limits import ModelLimits
from budgetlens.contract.margin import step_margin
from budgetlens.contract.planner import _ConfigLookup, _Plan, _Planner
from budgetlens.contract.policy import Policy
from budgetlens.contract.results import (
    CheckOptions,
    ClampValues,
    PipelineReport,
    StepBudget,
    Term,
)
from budgetlens.contract.step_plan import (
    CheckStopped as CheckStopped,  # part of this module's interface
)
from budgetlens.contract.step_plan import _poll, _Shared, _StepPlan
from budgetlens.contract.step_text import SumStyle, sum_text
from budgetlens.contract.terms import (
    TermSpec,
    framing_for,
    load_json,
    reasoning_problems,
    reasoning_rule,
    reasoning_term,
    spec_term,
)
from budgetlens.files import (
    DiskFiles,
    FileMissing,
    FileSource,
    RunFiles,
    SourceError,
    path_problem,
)
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


class _Outside:
    """A prompt file that resolves outside the workspace root (not read)."""


_OUTSIDE = _Outside()


class _CheckState:
    """The state of one pipeline's check, and the tokenizer it counts with (the option's,
    config.json's or the model's; a step's own model may count with its family's)."""

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


class _PipelineCheck(_CheckState):
    """Checks a pipeline from its ``_Plan``: counts the prompts (cached by fingerprint), adds
    up every step, computes the clamp and reports the contract."""

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
        self.diags.extend(plan.notes(steps, counter))
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
        # every file the plan and the check read, by fingerprint: the caller's key for a
        # result cache (made here, not by a replace() of the report: 13 us a check)
        deps = {**self.plan.deps, **self.files.seen}
        return PipelineReport(diagnostics=unique, inputs=inputs, input_fingerprints=deps,
                              **kwargs)

    # ------------------------------------------------------------------------ one step
    def step_budget(self, sp: _StepPlan, template: Term, shared: _Shared,
                    counter: TokenCounter) -> StepBudget:
        """A step's budget: its model's limits and counter first (a model of its own), its
        prompt counted, then the plain or the full arithmetic."""
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
        approximate = (own.approximate and not self.explicit_tokenizer(shared)) \
            if own is not None and own.model is not self.plan.limits.model else self.approximate
        if _plain(sp, own, shared, self.plan.limits, approximate):
            return self.plain_step_budget(sp, shared, prompt, template, approximate)
        return self.full_step_budget(sp, own, shared, counter, prompt, template, approximate)

    def plain_step_budget(self, sp: _StepPlan, shared: _Shared, prompt: Term, template: Term,
                          approximate: bool) -> StepBudget:
        """``full_step_budget`` of a plain step (``_plain``), without the calls of the terms
        it does not have: their fields keep their defaults (docs/performance.md,
        plain-step)."""
        at, history, output, source = sp.at, sp.history, sp.output, sp.output_source
        context, window, margin = sp.context or shared.context, shared.window, shared.margin
        fixed = prompt.value + template.value + shared.overhead.value
        total = fixed + history.value + context.value + output.value + margin.value
        return StepBudget(
            pipeline=self.pipe, step=at.name, index=at.index, location=sp.location,
            defined_in=at.owner.path, system_prompt=prompt, template=template,
            format_overhead=shared.overhead,
            fixed=Term(fixed, _FIXED_LABEL, shared.inherited, sp.location),
            history=history, context=context, output=output, output_source=source,
            margin=margin, window=window, total=total, headroom=window.value - total,
            fits=(window.value >= total and not window.missing and not context.missing
                  and source is not OutputSource.MISSING),
            prompt_file=sp.prompt_file, use_history=bool(at.step.use_history),
            name_location=sp.name_location, output_floor=sp.output_floor,
            approximate=approximate, own_context=sp.context is not None)

    # long-function: one step's arithmetic, read top to bottom
    def full_step_budget(self, sp: _StepPlan, own: ModelLimits | None, shared: _Shared,
                         counter: TokenCounter, prompt: Term, template: Term,
                         approximate: bool) -> StepBudget:
        """A step's budget, every term counted: its request terms (tools, response schema,
        thinking budget), its own model's limits, its margin, its gateway's cap."""
        at = sp.at
        terms = self.request_terms(sp, own, shared, counter) if sp.request_terms else _NO_TERMS
        fixed = Term(prompt.value + template.value + shared.overhead.value + terms.fixed,
                     _FIXED_LABEL + terms.fixed_label, shared.inherited, sp.location)
        history, output, source = sp.history, sp.output, sp.output_source
        context, window = sp.context or shared.context, shared.window
        margin = step_margin(shared.margin, shared.margin_percent,
                             fixed.value + history.value + context.value,
                             approximate=approximate,
                             default=shared.margin.source == TermSource.DEFAULT)
        total = fixed.value + history.value + context.value + output.value + margin.value \
            + terms.added
        headroom = window.value - total
        fits = (headroom >= 0 and not window.missing and not context.missing
                and source is not OutputSource.MISSING)
        cap = own.cap if own is not None else self.plan.limits.cap
        return StepBudget(
            pipeline=self.pipe, step=at.name, index=at.index, location=sp.location,
            defined_in=at.owner.path, system_prompt=prompt, template=template,
            format_overhead=shared.overhead, fixed=fixed, history=history, context=context,
            output=output, output_source=source, margin=margin, window=window, total=total,
            headroom=headroom, fits=fits, prompt_file=sp.prompt_file,
            use_history=bool(at.step.use_history), name_location=sp.name_location,
            output_floor=terms.output_floor(sp.output_floor, output),
            model=own.name if own else None,
            ceiling=own.ceiling if own else None, approximate=approximate,
            own_window=own is not None, own_context=sp.context is not None,
            gateway_cap=None if cap is None else Term(cap.max_input_tokens, cap.label, location=(
                own.gateway_location if own is not None else self.plan.limits.gateway_location)),
            tools=terms.tools, response_schema=terms.schema,
            reasoning=terms.reasoning, reasoning_in_output=terms.in_output,
            max_input=own.max_input if own else self.plan.limits.max_input)

    def request_terms(self, sp: _StepPlan, own: ModelLimits | None, shared: _Shared,
                      counter: TokenCounter) -> _RequestTerms:
        """A step's tools, response schema and thinking budget, counted and checked for its
        model (contract/terms.py)."""
        info = own.model if own is not None else self.plan.limits.model
        name = info.name if info is not None else None
        framing = (framing_for(info, counter.tokenizer.name)  # only what counts needs it
                   if sp.tools is not None or sp.schema is not None else None)
        tools, schema = (self.spec_term(sp, spec, framing, counter, name)
                         for spec in (sp.tools, sp.schema))
        reasoning, in_output = sp.reasoning, False
        if reasoning is not None:
            rule = reasoning_rule(info)
            reasoning, in_output = reasoning_term(reasoning, rule), rule.inside_output
            ceiling = own.ceiling if own is not None else shared.ceiling
            for severity, message in reasoning_problems(reasoning, rule, sp.output, ceiling,
                                                        name):
                self.add(reasoning.location or sp.name_location, severity,
                         codes.REASONING_INVALID, f"step {sp.at.name!r}: {message}",
                         sp.at.name)
        return _RequestTerms(tools, schema, reasoning, in_output)

    def spec_term(self, sp: _StepPlan, spec: TermSpec | None, framing: Any,
                  counter: TokenCounter, model: str | None) -> Term | None:
        """The term of a step's tools or response schema (None: none, or its file cannot
        be used: BL045)."""
        if spec is None:
            return None
        value = spec.value
        if spec.file is not None:
            value = self.term_file(sp, spec)
            if value is None:
                return None
        return spec_term(spec, value, framing, counter.count, counter.tokenizer.name, model)

    def term_file(self, sp: _StepPlan, spec: TermSpec) -> Any:
        """The JSON value of a tools or response_schema file, read inside the workspace as a
        prompt file is (an input of the report, cached by fingerprint); None with BL045."""
        path, root, name = str(spec.file), self.plan.prompt_root, sp.at.name
        problem: str | None = None
        if not self.run_files.is_inside(path, root):
            self.files.outside(path)
            problem = f"{path} resolves outside the workspace root {root}"
        else:
            found = self.cache.parsed(f"json:{spec.key}", path, self.files,
                                      lambda: _read_json(self.files, path, spec.key))
            if not isinstance(found, _JsonProblem):
                return found
            problem = found.message
        self.add(spec.location, Severity.ERROR, codes.TERM_FILE_UNREADABLE,
                 f"{spec.key} file of step {name!r} cannot be used: {problem}", name)
        return None

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
                own = s.model is not None or s.own_window
                self.step_contract(i, s, policy, clamp, s.window if own else window,
                                   s.context if s.own_context else context_floor)
                if s.max_input is not None:  # nearly every step has none: no call
                    self.input_contract(s)
            if s.gateway_cap is not None:
                self.gateway_contract(s)

    def gateway_contract(self, s: StepBudget) -> None:
        """BL067 when a step's input (everything but its output: fixed + history + context
        + margin) is above its gateway's per-request cap."""
        cap = s.gateway_cap
        if cap is None:
            return
        sent = s.input_tokens
        if sent <= cap.value:
            return
        related = ((Related(cap.location, f"{cap.value:,} input tokens a request:"
                                          f" {cap.source}"),) if cap.location else ())
        self.add(s.name_location or s.location, Severity.ERROR, codes.GATEWAY_CAP,
                 f"step {s.step!r} sends {sent:,} input tokens (fixed {s.fixed.value:,} +"
                 f" history {s.history.value:,} + context {s.context.value:,} + margin"
                 f" {s.margin.value:,}), above the {cap.value:,}-token request cap of"
                 f" {cap.source} (over by {sent - cap.value:,})", s.step, related)

    def input_contract(self, s: StepBudget) -> None:
        """BL054 when what the step sends (fixed + history + context + margin) is above its
        model's input limit, naming the biggest term."""
        limit = s.max_input
        if limit is None or s.context.missing or s.input_tokens <= limit.value:
            return
        parts = {"fixed": s.fixed, "history": s.history, "context": s.context,
                 "margin": s.margin}
        name, term = max(parts.items(), key=lambda kv: kv[1].value)
        label = f"step {s.step!r}" + (f" (from {s.defined_in})" if s.inherited else "")
        related = tuple(Related(t.location, f"{n}: {t.value}{inherited_suffix(t)}")
                        for n, t in (*parts.items(), ("max_input", limit))
                        if t.location is not None and t.value)
        where = (self.plan.extends_location if s.inherited else None) \
            or s.name_location or s.location
        self.add(where, Severity.ERROR, codes.INPUT_ABOVE_LIMIT,
                 f"{label} sends {s.input_tokens:,} input tokens (fixed {s.fixed.value:,} +"
                 f" history {s.history.value:,} + context {s.context.value:,} + margin"
                 f" {s.margin.value:,}), above the model's input limit {limit.value:,}"
                 f" ({limit.source}) though the window is {s.window.value:,}; the biggest"
                 f" term is {name} {term.value:,} ({term.source or name}): lower it by"
                 f" {s.input_tokens - limit.value:,}", s.step, related)

    def step_contract(self, i: int, s: StepBudget, policy: Policy, clamp: ClampValues,
                      window: Term, context_floor: Term | None) -> None:
        """The contract diagnostic of one step (none when it fits)."""
        minimum = s.fixed.value + s.history.value + s.margin.value + s.reasoning_added + 1
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



class _JsonProblem:
    """Why a term file cannot be used."""

    def __init__(self, message: str) -> None:
        self.message = message


def _read_json(files: RecordingFiles, path: str, key: str) -> Any:
    """The JSON value of the term file ``path`` (``terms.load_json``), or the problem."""
    try:
        return load_json(files.read_text(Path(path)), key)
    except FileMissing:
        return _JsonProblem(f"{path} does not exist")
    except SourceError as exc:
        return _JsonProblem(str(exc))
    except ValueError as exc:
        return _JsonProblem(f"{path}: {exc}")


@quick_init
@dataclass(frozen=True)
class _RequestTerms:
    """A step's request terms as counted (contract/terms.py)."""

    tools: Term | None = None
    schema: Term | None = None
    reasoning: Term | None = None
    in_output: bool = False

    @property
    def fixed(self) -> int:
        if self.tools is None and self.schema is None:  # nearly every step
            return 0
        return sum(t.value for t in (self.tools, self.schema) if t is not None)

    @property
    def fixed_label(self) -> str:
        if self.tools is None and self.schema is None:
            return ""
        return "".join(f" + {label}" for label, t in (("tools", self.tools),
                                                      ("response schema", self.schema))
                       if t is not None)

    def output_floor(self, floor: Term, output: Term) -> Term:
        """The clamp's floor of a step's output limit: above a thinking budget that lies
        inside it (Claude's must stay below the output limit), else ``floor``."""
        if not self.in_output or self.reasoning is None or floor.value > self.reasoning.value:
            return floor
        value = min(output.value, self.reasoning.value + 1)
        return Term(value, f"reasoning {self.reasoning.value} + 1 (Claude's thinking lies"
                           " inside the output limit)", location=self.reasoning.location)

    @property
    def added(self) -> int:
        """The thinking budget beside the output limit (0 inside it: Claude)."""
        return 0 if self.reasoning is None or self.in_output else self.reasoning.value


_NO_TERMS = _RequestTerms()
_FIXED_LABEL = "system prompt + template + format overhead"


def _plain(sp: _StepPlan, own: ModelLimits | None, shared: _Shared, limits: ModelLimits,
           approximate: bool) -> bool:
    """A step with no request term (tools, response schema, thinking budget), no model of
    its own, and a pipeline with no gateway cap, no input limit and a constant margin
    (exact counts): nearly every step. Its budget needs none of those terms' calls."""
    return (own is None and not sp.request_terms and limits.cap is None
            and limits.max_input is None and shared.margin_percent is None
            and not approximate)


def _violation_data(s: StepBudget) -> ClampFix:
    """The data of a contract diagnostic: the budget, and each term with its place."""
    return ClampFix(to_jsonable(s.numbers), s.index, s.defined_in,
                    {label: to_jsonable(t) for label, t in s.terms().items()})


def _violation(label: str, s: StepBudget, window: Term) -> str:
    return (f"{label} does not fit the context window: {sum_text(s, SumStyle.MESSAGE)} >"
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


def _planner_for(pipe: str, run_files: RunFiles, options: CheckOptions, cache: BudgetCache,
                 environ: Mapping[str, str], previous: _Plan | None,
                 stop: Callable[[], bool] | None) -> _Planner:
    """The planner of the file ``pipe``: a prompt file's own (also for a file a config.json
    ``prompt_mappings`` entry reads: its ``mapping``), else a pipeline's.

    A pipeline's config.json is looked up once: the lookup that looks for a mapping is the
    one the planner plans with, and its fingerprints are the plan's."""
    lookup = None if is_prompt_path(pipe) else _ConfigLookup.of(pipe, run_files, options, cache)
    mapping = mapping_in(pipe, lookup.config) if lookup is not None else None
    if lookup is not None and mapping is None:
        return _Planner(pipe, run_files, options, environ, cache, previous, stop, lookup)
    # start-up speed: the format readers (Jinja2, Handlebars, mustache) load only when a
    # prompt file is checked (docs/performance.md)
    from budgetlens.contract.prompt_plan import _PromptPlanner
    planner = _PromptPlanner(pipe, run_files, options, environ, cache, previous, stop, lookup)
    planner.mapping = mapping  # set before ``plan``
    return planner


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
        plan = _planner_for(pipe, run_files, options, cache, environ,
                            previous if isinstance(previous, _Plan) else None, stop).plan()
        planned = True
    checker = _PipelineCheck(pipe, plan, run_files, options, cache, stop)
    report = checker.run()
    deps: Mapping[str, str] = report.input_fingerprints or {}
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
