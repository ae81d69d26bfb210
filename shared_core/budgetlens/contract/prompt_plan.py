"""The plan of a prompt file in its own format (GitHub Models, Prompty, Dotprompt).

``budgetlens.formats`` reads the file into ``Step``s. ``_PromptPlanner`` turns each into
the ``_StepPlan`` the contract checks for a pipeline step, so ``check.py`` adds up the
terms, clamps and reports as it does for a pipeline. Nothing here knows a format: it reads
only the format-neutral ``PromptFile``.

A prompt file's terms:

- fixed: its messages' fixed text (variables empty) with the chat framing of OpenAI's
  cookbook (3 tokens per message, its role, 3 for the reply);
- context: the variables' declared budgets (``metadata.budgetlens.vars``), else 0: the
  variables get what is left, the step's headroom;
- output: the file's output limit, else the model's output ceiling, at most half the
  window (the runtime then sends none: the model may write up to its ceiling, or what the
  input leaves);
- window and ceiling: the file's model in the registry (its own spelling,
  ``openai/gpt-4o-mini``; a name in config.json's ``deployments`` first), else
  config.json's;
- margin: ``metadata.budgetlens.margin``, else the default.

The policy is ``fail_fast`` unless one is chosen (option, environment, config.json): no run
time clamps a prompt file's budget.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from budgetlens import codes
from budgetlens.contract.cache import RecordingFiles
from budgetlens.contract.config import LoadedConfig, load_config
from budgetlens.contract.enums import OutputSource, PolicySource, TermSource
from budgetlens.contract.limits import (
    ModelLimits,
    _gateway,
    step_limits,
    unknown_model_message,
)
from budgetlens.contract.near_miss import suggest
from budgetlens.contract.pipeline import (
    DEFAULT_SAFETY_MARGIN_TOKENS,
    Chain,
    PipelineFile,
    Step,
)
from budgetlens.contract.planner import _Plan, _Planner
from budgetlens.contract.policy import Policy, PolicyChoice
from budgetlens.contract.results import StepBudget, Term
from budgetlens.contract.step_plan import _At, _output_floor, _Shared, _StepPlan
from budgetlens.contract.terms import RESPONSE_SCHEMA, TOOLS, TermSpec
from budgetlens.files import MISSING_FINGERPRINT, SourceError, within
from budgetlens.formats import mapping, read_prompt_file
from budgetlens.formats.model import Located, ProblemKind, PromptFile
from budgetlens.formats.model import Step as PromptStep
from budgetlens.source import Diagnostic, Location, Position, Range, Severity
from budgetlens.tokens.core import TokenCounter

#: The code and severity of each problem a reader reports.
PROBLEM_CODES: dict[ProblemKind, tuple[str, Severity]] = {
    ProblemKind.YAML: (codes.YAML_SYNTAX, Severity.ERROR),
    ProblemKind.NOT_A_PROMPT: (codes.PROMPT_FILE_UNREADABLE, Severity.ERROR),
    ProblemKind.TEMPLATE: (codes.PROMPT_FILE_UNREADABLE, Severity.ERROR),
    ProblemKind.OUTPUT_DEFAULT: (codes.PROMPT_OUTPUT_UNSET, Severity.WARNING),
    ProblemKind.NEEDS_COMPLETION_TOKENS: (codes.PROMPT_MAX_TOKENS_REFUSED, Severity.ERROR),
    ProblemKind.ENV_UNRESOLVED: (codes.PROMPT_ENV_UNRESOLVED, Severity.WARNING),
    ProblemKind.FILE_REFERENCE: (codes.PROMPT_FILE_REFERENCE, Severity.ERROR),
    ProblemKind.PARTIAL_MISSING: (codes.PROMPT_PARTIAL_MISSING, Severity.ERROR),
    ProblemKind.HELPER_UNKNOWN: (codes.PROMPT_HELPER_UNKNOWN, Severity.WARNING),
    ProblemKind.VARIABLE_UNDECLARED: (codes.PROMPT_VARIABLE_UNDECLARED, Severity.WARNING),
}

#: OpenAI's cookbook framing: per message, and once for the reply's priming.
MESSAGE_FRAMING = 3
REPLY_PRIMING = 3
#: The concrete input cases of a step counted at most (a long testData list).
MAX_CASES = 50
FRAMING_SOURCE = "messages: fixed text + chat framing (3 a message, its role, 3 the reply)"


@dataclass(frozen=True)
class _PromptPlan(_Plan):
    """A prompt file's plan: each step's messages as (role, fixed text) pairs, counted with
    their framing as the step's template term."""

    messages: tuple[tuple[tuple[str, str], ...], ...] = ()
    #: per step: its variables, each with the range of the first message that reads it
    variables: tuple[tuple[tuple[str, Range], ...], ...] = ()
    #: per step: its concrete input cases, each a label and its messages rendered with them
    cases: tuple[tuple[tuple[str, tuple[tuple[str, str], ...]], ...], ...] = ()

    def notes(self, steps: list[StepBudget], counter: TokenCounter) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        for s, variables, cases in zip(steps, self.variables, self.cases, strict=True):
            out.extend(self.case_notes(s, cases, counter))
            if variables and s.headroom >= 0 and not s.window.missing:
                out.append(self.headroom_note(s, variables))
        return out

    def headroom_note(self, s: StepBudget, variables: tuple[tuple[str, Range], ...],
                      ) -> Diagnostic:
        """``{{input}}: up to 5,731 tokens on gpt-4o-mini with 2,000 output``."""
        names = ", ".join("{{" + name + "}}" for name, _ in variables)
        together = " together" if len(variables) > 1 else ""
        declared = f" beyond the declared {s.context.value:,}" if s.context.value else ""
        model = f" on {self.limits.name}" if self.limits.name else ""
        return Diagnostic(
            self.head.file, variables[0][1], Severity.INFORMATION,
            codes.PROMPT_VARIABLE_HEADROOM,
            f"{names}: up to {s.headroom:,} tokens{together}{declared}{model} with"
            f" {s.output.value:,} output", s.pipeline, s.step)

    def case_notes(self, s: StepBudget,
                   cases: tuple[tuple[str, tuple[tuple[str, str], ...]], ...],
                   counter: TokenCounter) -> list[Diagnostic]:
        """Each concrete input case's total (its messages rendered with its values, no
        declared budget): BL078 for one over the window, else one note with every total."""
        out: list[Diagnostic] = []
        totals: list[str] = []
        where = s.name_location or s.location
        if s.window.missing:
            return out
        for label, messages in cases:
            total = framed_tokens(messages, counter) + s.history.value + s.output.value \
                + s.margin.value
            totals.append(f"{label} {total:,}")
            if total > s.window.value:
                out.append(Diagnostic(
                    where.file, where.range, Severity.ERROR, codes.PROMPT_CASE_DOES_NOT_FIT,
                    f"{label} does not fit the window: its messages with their values"
                    f" {total - s.output.value - s.margin.value - s.history.value:,} +"
                    f" output {s.output.value:,} + margin {s.margin.value} = {total:,} >"
                    f" {s.window.value:,}", s.pipeline, s.step))
        if totals and not out:
            out.append(Diagnostic(
                where.file, where.range, Severity.INFORMATION, codes.PROMPT_VARIABLE_HEADROOM,
                f"input cases, totals of {s.window.value:,}: {', '.join(totals)}",
                s.pipeline, s.step))
        return out

    def templates(self, counter: TokenCounter) -> tuple[Term, ...]:
        terms = self.template_terms.get(counter.key)
        if terms is None:
            terms = tuple(Term(framed_tokens(msgs, counter), FRAMING_SOURCE, False,
                               sp.template_location)
                          for sp, msgs in zip(self.steps, self.messages, strict=True))
            self.template_terms[counter.key] = terms
        return terms


def framed_tokens(messages: tuple[tuple[str, str], ...], counter: TokenCounter) -> int:
    """The tokens of ``messages`` (role, text) with OpenAI's chat framing."""
    if not messages:
        return 0
    return sum(MESSAGE_FRAMING + counter.count(role) + counter.count(text)
               for role, text in messages) + REPLY_PRIMING


def _loc(path: str, rng: Range | None) -> Location:
    return Location(path, rng if rng is not None else Range.at(0, 0))


#: The keys of ``metadata.budgetlens``.
METADATA_KEYS = ("vars", "margin")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _int_map(value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v for k, v in value.items()
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0}


class _PromptPlanner(_Planner):
    """Builds the ``_Plan`` of a prompt file: config.json (optional), the file read by its
    format's reader, each step's terms."""

    reader_kinds: frozenset[ProblemKind] = frozenset()  # the kinds of the reader's problems

    def plan(self) -> _Plan:
        config, config_path = self.config()
        if config is None and self.options.config_path is None:
            root = self.options.workspace_root
            config = pyproject_config(self.files, os.path.dirname(self.pipe),
                                      str(root) if root is not None else None)
            config_path = config.path if config is not None else None
        if config_path:
            self.inputs.add(config_path)
        root = self.root(config)
        head = Location(self.pipe, Range.at(0, 0))
        self.models = self.models_registry(config)
        choice = self.policy(config, head)
        if choice.source is PolicySource.DEFAULT:
            choice = PolicyChoice(Policy.FAIL_FAST, PolicySource.PROMPT_FILE)
        chain = Chain((PipelineFile(self.pipe, None, None),))
        base: dict[str, Any] = dict(head=head, config=config, config_path=config_path,
                                    chain=chain, choice=choice, chain_root=root)
        prompt = self.read(root)
        self.reader_kinds = frozenset(p.kind for p in prompt.problems) if prompt else frozenset()
        if prompt is None or not prompt.steps:
            return self.empty(base, self.config_limits(config))
        return self.plan_prompt(prompt, base, root)

    def read(self, root: str) -> PromptFile | None:
        if not self.run_files.is_inside(self.pipe, root):  # a link out of the workspace
            self.files.outside(self.pipe)
            self.add(Location(self.pipe), Severity.ERROR, codes.PIPELINE_UNREADABLE,
                     f"prompt file {self.pipe} resolves outside the workspace root {root};"
                     " not read")
            return None
        try:
            text = self.files.read_text(Path(self.pipe))
        except SourceError as exc:
            self.add(Location(self.pipe), Severity.ERROR, codes.PIPELINE_UNREADABLE,
                     f"prompt file cannot be read: {exc}")
            return None
        prompt = self.read_text(text, None, root)
        if prompt is not None:
            for problem in prompt.problems:
                code, severity = PROBLEM_CODES[problem.kind]
                self.add(Location(self.pipe, problem.range), severity, code, problem.message)
        return prompt

    def read_text(self, text: str, inputs: Mapping[str, Any] | None,
                  root: str) -> PromptFile | None:
        """The file's text read by its format's reader (by ``self.mapping`` when a
        config.json's ``prompt_mappings`` entry reads it)."""
        if self.mapping is not None:
            return mapping.read(text, self.mapping, self.pipe, inputs, Path(root), self.files)
        return read_prompt_file(self.pipe, text, inputs, Path(root), self.files)

    def adopt_config(self, config: LoadedConfig | None, limits: ModelLimits) -> None:
        """config.json's diagnostics; a missing ``model_context_window`` is none when the
        file's model gives the window (config.json is optional for a prompt file)."""
        if config is None:
            return
        has_window = limits.window is not None and limits.model is not None
        self.adopt([d for d in config.diagnostics
                    if not (has_window and d.code == codes.WINDOW_INVALID)])

    def empty(self, base: dict[str, Any], limits: ModelLimits) -> _Plan:
        self.adopt_config(base["config"], limits)
        return _PromptPlan(deps=self.files.seen, inputs=frozenset(self.inputs),
                           window=limits.window, ceiling=limits.ceiling, limits=limits,
                           head_diags=self.take(), **base)

    def plan_prompt(self, prompt: PromptFile, base: dict[str, Any], root: str) -> _Plan:
        config: LoadedConfig | None = base["config"]
        first = prompt.steps[0]
        limits = _named_sources(self.file_gateway(prompt, self.file_limits(first, config),
                                                  config))
        self.adopt_config(config, limits)
        self.adopt(limits.diagnostics)
        if limits.window is None:
            where = _loc(self.pipe, first.model.range if first.model else None)
            self.add(where, Severity.ERROR, codes.WINDOW_INVALID,
                     "no context window: name a model the registry knows in the file, or"
                     " set model_context_window in a config.json at or above it")
        window = limits.window or Term(0, TermSource.MISSING)
        self.check_metadata(first)
        head_diags = self.take()
        context = self.vars_term(first)
        shared = _Shared(config, base["choice"].policy, _named(self.overhead(config)),
                         self.margin_term(first), None, context, window, limits.ceiling,
                         False)
        owner = base["chain"].pipeline
        steps = tuple(self.prompt_step(owner, i, step, shared)
                      for i, step in enumerate(prompt.steps))
        messages = tuple(tuple((m.role, m.text) for m in step.messages)
                         for step in prompt.steps)
        variables = tuple(_variables(step) for step in prompt.steps)
        cases = self.cases(prompt, root)
        prompt_root = str(self.options.workspace_root) \
            if self.options.workspace_root is not None else root
        return _PromptPlan(
            deps=self.files.seen, inputs=frozenset(self.inputs), window=limits.window,
            ceiling=limits.ceiling, limits=limits, head_diags=head_diags, shared=shared,
            context=context,
            context_floor=replace(context, source="declared budgets are not clamped"),
            steps=steps, prompt_root=prompt_root, messages=messages, variables=variables,
            cases=cases, **base)

    def cases(self, prompt: PromptFile, root: str,
              ) -> tuple[tuple[tuple[str, tuple[tuple[str, str], ...]], ...], ...]:
        """Each step's concrete input cases (``testData``, ``sample``, ``input.default``;
        the first ``MAX_CASES``), its messages rendered with each."""
        out = []
        if not any(step.samples for step in prompt.steps):  # most files: no read again
            return tuple(() for _ in prompt.steps)
        text = self.files.read_text(Path(self.pipe))  # read before: the same text
        for i, step in enumerate(prompt.steps):
            rendered = []
            for n, sample in enumerate(step.samples[:MAX_CASES]):
                again = self.read_text(text, sample, root)
                if again is None or len(again.steps) <= i:
                    continue
                label = f"case {n + 1}" if len(step.samples) > 1 else "the sample input"
                rendered.append((label, tuple((m.role, m.text)
                                              for m in again.steps[i].messages)))
            out.append(tuple(rendered))
        return tuple(out)

    def file_limits(self, step: PromptStep, config: LoadedConfig | None) -> ModelLimits:
        """The limits of the file's model (a target's with ``--target``), else config.json's."""
        base = self.config_limits(config)
        target = self.options.target
        name = target if target is not None else \
            (step.model.value if step.model is not None else None)
        if name is not None and not isinstance(name, str):
            self.add(_loc(self.pipe, step.model.range if step.model else None), Severity.ERROR,
                     codes.INVALID_VALUE, f"model must be a model name (a string), got"
                     f" {name!r}")
        if not isinstance(name, str):
            return base
        name = _deployment(config, name)
        loc = _loc(self.pipe, step.model.range if step.model is not None else None)
        limits = step_limits(name, loc, config, replace(base, forced=False), self.models)
        if target is not None:
            limits = replace(limits, forced=True)
        # the "did you mean" search only for an unknown model: it takes ~2 ms a file
        return replace(limits, diagnostics=tuple(
            replace(d, pipeline=self.pipe, message=unknown_model_message(
                name, "model", ": the file is checked with config.json's limits, if any",
                self.models) if d.code == codes.MODEL_UNKNOWN else d.message)
            for d in limits.diagnostics))

    def file_gateway(self, prompt: PromptFile, limits: ModelLimits,
                     config: LoadedConfig | None) -> ModelLimits:
        """``limits`` behind the gateway the file's runtime sends through (GitHub Models
        files: ``github-models``), unless config.json names a ``gateway`` (``null``: none).
        A model the gateway table has no cap for gets no note: the default is not the
        author's choice (BL068 is for a gateway written in config.json)."""
        extra = (config.config.model_extra or {}) if config is not None and \
            config.config is not None else {}
        if prompt.gateway is None or "gateway" in extra or limits.model is None:
            return limits
        first = prompt.steps[0]
        where = _loc(self.pipe, first.model.range if first.model is not None else None)
        return _gateway(limits, prompt.gateway, where, [], "prompt file")

    def check_metadata(self, step: PromptStep) -> None:
        """``metadata.budgetlens`` sets budget terms: a value that cannot be used is BL005,
        an unknown key BL008 (an error: the numbers would not be the author's)."""
        meta = step.budgetlens
        if meta is None:
            return
        where = _loc(self.pipe, meta.range)
        if not isinstance(meta.value, Mapping):
            self.add(where, Severity.ERROR, codes.INVALID_VALUE,
                     f"metadata.budgetlens must be a mapping (vars, margin), got"
                     f" {meta.value!r}; ignored")
            return
        for key, value in meta.value.items():
            if key not in METADATA_KEYS:
                near = suggest(str(key), METADATA_KEYS)
                hint = f"; did you mean {near!r}?" if near else \
                    f" (known: {', '.join(METADATA_KEYS)})"
                self.add(where, Severity.ERROR, codes.NEAR_MISS_KEY,
                         f"unknown key metadata.budgetlens.{key}{hint}")
            elif key == "margin" and not _count(value):
                self.add(where, Severity.ERROR, codes.INVALID_VALUE,
                         f"metadata.budgetlens.margin must be a whole number >= 0, got"
                         f" {value!r}; the default is used")
            elif key == "vars":
                bad = {k: v for k, v in value.items() if not _count(v)} \
                    if isinstance(value, Mapping) else {"": value}
                for name, v in bad.items():
                    what = f"vars.{name}" if name else "vars"
                    self.add(where, Severity.ERROR, codes.INVALID_VALUE,
                             f"metadata.budgetlens.{what} must be a whole number of tokens"
                             f" >= 0{'' if name else ' per variable (a mapping)'}, got {v!r};"
                             " not counted")

    def vars_term(self, step: PromptStep) -> Term:
        """The variables' declared budgets (``metadata.budgetlens.vars``), else 0."""
        meta = step.budgetlens
        declared = self.declared(step)
        declared.pop(step.history or "", None)  # the history term's (``history_input``)
        if not declared or meta is None:
            return Term(0, "variables: no declared budget (their headroom is what is left)")
        names = ", ".join(f"{k} {v}" for k, v in declared.items())
        return Term(sum(declared.values()), f"metadata.budgetlens.vars ({names})",
                    location=_loc(self.pipe, meta.range))

    def declared(self, step: PromptStep) -> dict[str, int]:
        """The variables' declared budgets (``metadata.budgetlens.vars``)."""
        meta = step.budgetlens
        return _int_map(meta.value.get("vars")) if meta is not None and \
            isinstance(meta.value, Mapping) else {}

    def history_input(self, step: PromptStep) -> Term:
        """The history input's declared budget as the history term (0 without one: the
        history gets the headroom)."""
        if not step.history:
            return Term(0, TermSource.HISTORY_OFF)
        budget = self.declared(step).get(step.history)
        if budget is None or step.budgetlens is None:
            return Term(0, f"history input {step.history!r}: in the headroom")
        return Term(budget, f"metadata.budgetlens.vars.{step.history} (the history input)",
                    location=_loc(self.pipe, step.budgetlens.range))

    def margin_term(self, step: PromptStep) -> Term:
        meta = step.budgetlens
        value = meta.value.get("margin") if meta is not None and \
            isinstance(meta.value, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
                and meta is not None:
            return Term(value, "metadata.budgetlens.margin", location=_loc(self.pipe, meta.range))
        return Term(DEFAULT_SAFETY_MARGIN_TOKENS, TermSource.DEFAULT)

    def prompt_step(self, owner: PipelineFile, index: int, step: PromptStep,
                    shared: _Shared) -> _StepPlan:
        name = step.name if step.name != self.pipe else os.path.basename(self.pipe)
        model_step = Step.light_validate({"id": name, "type": "call_model"})
        assert model_step is not None
        at = _At(owner, index, model_step, name)
        first = step.messages[0].range if step.messages else None
        location = _loc(self.pipe, first)
        name_location = _loc(self.pipe, step.model.range if step.model is not None
                             and step.model.range is not None else first)
        output, source = self.output(step, shared, name_location, name)
        ceiling = shared.ceiling
        self.check_ceiling(at, output, source, ceiling)
        limit = output.value if ceiling is None else min(output.value, ceiling.value)
        return _StepPlan(
            at=at, location=location, name_location=name_location, prompt_file=None,
            prompt=Term(0, "system prompt: in the messages"), prompt_key_location=None,
            template=None, template_location=location,
            history=self.history_input(step),
            output=output, output_source=source,
            output_floor=_output_floor(max(limit, 1), source, None), own=None,
            before=(), after=self.take_step(name),
            tools=self.file_term(TOOLS, step.tools), schema=self.file_term(
                RESPONSE_SCHEMA, step.output_schema))

    def file_term(self, key: str, found: Located | None) -> TermSpec | None:
        """The step's tools or output schema as the request term ``key`` (contract/terms.py
        counts it as a pipeline step's); ``None`` without one, or for tools the file only
        names (defined in code: nothing to count)."""
        if found is None or found.value is None:
            return None
        return TermSpec(key, found.value, None, _loc(self.pipe, found.range))

    def output(self, step: PromptStep, shared: _Shared, where: Location,
               name: str) -> tuple[Term, OutputSource]:
        """The file's output limit, else the model's ceiling (BL053 without either)."""
        out = step.output
        if out.value is not None:
            return (Term(out.value, out.key, location=_loc(self.pipe, out.range)),
                    OutputSource.MAX_OUTPUT_TOKENS)
        if shared.ceiling is not None:
            counted, why = unset_output(shared.ceiling.value, shared.window)
            if ProblemKind.OUTPUT_DEFAULT not in self.reader_kinds:
                self.add(where, Severity.WARNING, codes.PROMPT_OUTPUT_UNSET,
                         f"no output limit: the runtime sends none, so the model may write"
                         f" up to its ceiling of {shared.ceiling.value} tokens or what the"
                         f" input leaves; counted: {counted} ({why}; set {out.key})", name)
            return (Term(counted, f"{out.key} unset: {why}", location=shared.ceiling.location),
                    OutputSource.MODEL_MAX_TOKENS)
        self.add(where, Severity.ERROR, codes.OUTPUT_MISSING,
                 f"step {name!r} has no output limit and its model no known ceiling: set"
                 f" {out.key}", name)
        return Term(0, TermSource.MISSING), OutputSource.MISSING

    def take_step(self, name: str) -> tuple[Diagnostic, ...]:
        return tuple(replace(d, step=name) for d in self.take())


def _variables(step: PromptStep) -> tuple[tuple[str, Range], ...]:
    """The step's variables in order of first use, each at the first message reading it
    (the history input left out: it is a conversation, not a value)."""
    seen: dict[str, Range] = {}
    for message in step.messages:
        for name in message.variables:
            if name not in seen and name != step.history:
                seen[name] = message.range
    return tuple(seen.items())


def unset_output(ceiling: int, window: Term) -> tuple[int, str]:
    """The output counted for a step that sets no limit, and why: the model's ceiling, at
    most half the window. Without a limit the API caps the reply at what the input leaves,
    so a ceiling as large as the window (gpt-4: 8,192 of 8,192) is no request failure; half
    the window keeps room for both (and is the clamp's default output floor)."""
    half = window.value // 2 if not window.missing else ceiling
    if ceiling <= half or half <= 0:
        return ceiling, "the model's output ceiling"
    return half, (f"half of the {window.value}-token window; the model's output ceiling,"
                  f" {ceiling}, is more")


def _deployment(config: LoadedConfig | None, name: str) -> str:
    """``name`` through config.json's ``deployments`` (an Azure deployment name to a
    registry model: ``{"gpt-35-turbo": "gpt-3.5-turbo"}``)."""
    cfg = config.config if config is not None else None
    mapped = ((cfg.model_extra or {}).get("deployments") if cfg is not None else None)
    if isinstance(mapped, Mapping):
        target = mapped.get(name)
        if isinstance(target, str) and target:
            return target
    return name


PYPROJECT = "pyproject.toml"
_CONFIG_JSON = "config.json "


def _named(term: Term) -> Term:
    """``term`` with its source naming pyproject.toml when its value was read there (the
    table is read as a config.json, whose terms say ``config.json <key>``)."""
    if term.location is None or os.path.basename(term.location.file) != PYPROJECT or \
            not term.source.startswith(_CONFIG_JSON):
        return term
    return replace(term, source=f"{term.source} (in {PYPROJECT} [tool.budgetlens])")


def _named_sources(limits: ModelLimits) -> ModelLimits:
    """``limits`` with every term read from pyproject.toml saying so (``_named``)."""
    def named(term: Term | None) -> Term | None:
        return None if term is None else _named(term)

    return replace(limits, window=named(limits.window), ceiling=named(limits.ceiling),
                   unserved=named(limits.unserved), max_input=named(limits.max_input))
_TABLE = re.compile(r"^\s*\[\s*tool\.budgetlens\s*\]\s*(#.*)?$")


def pyproject_config(files: RecordingFiles, start: str,
                     stop: str | None) -> LoadedConfig | None:
    """The ``[tool.budgetlens]`` table of the nearest pyproject.toml at or above ``start``
    (not above ``stop``) that has one, read as a config.json; every place probed is
    recorded in ``files`` (one created later counts). ``None`` without one, and on Python
    3.10 (no ``tomllib``)."""
    current = os.path.normpath(start or ".")
    limit = os.path.abspath(stop) if stop is not None else None
    for _ in range(256):
        path = os.path.normpath(os.path.join(current, PYPROJECT))
        if files.fingerprint(path) != MISSING_FINGERPRINT:
            loaded = _read_pyproject(path, files)
            if loaded is not None:
                return loaded
        absolute = os.path.abspath(current)
        if absolute == limit or os.path.dirname(absolute) == absolute or \
                (limit is not None and not within(absolute, limit)):
            return None
        current = os.path.normpath(os.path.join(current, os.pardir))
    return None


def _read_pyproject(path: str, files: RecordingFiles) -> LoadedConfig | None:
    try:
        text = files.read_text(Path(path))
    except SourceError:
        return None
    data = _toml(text)
    if data is None:
        return None  # not ours to report: the table may not even be there
    tool = data.get("tool")
    table = tool.get("budgetlens") if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        return None
    lines = text.split("\n")
    header = next((i for i, line in enumerate(lines) if _TABLE.match(line)), 0)
    places = {key: _key_line(lines, header, key) for key in table}
    return _as_config(path, table, places, lines)


def _toml(text: str) -> dict[str, Any] | None:
    """``tomllib.loads(text)`` (``None``: not TOML, or Python 3.10, which has no tomllib)."""
    if sys.version_info >= (3, 11):
        import tomllib  # here: only a repository with prompt files and no config.json

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return None
    return None  # pragma: no cover - Python 3.10: pyproject.toml is not read


def _key_line(lines: list[str], header: int, key: str) -> int:
    """The line of ``key`` in the table (its own line, or its sub-table's header), else the
    table's header."""
    own = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    sub = re.compile(rf"^\s*\[\s*tool\.budgetlens\.{re.escape(key)}\s*\]")
    for i in range(header + 1, len(lines)):
        if own.match(lines[i]) or sub.match(lines[i]):
            return i
        if lines[i].lstrip().startswith("[") and not lines[i].lstrip().startswith(
                "[tool.budgetlens"):
            break
    return header


def _as_config(path: str, table: dict[str, Any], places: dict[str, int],
               lines: list[str]) -> LoadedConfig:
    """The table as a config.json whose keys sit on their TOML lines (so every place a
    diagnostic or a term names is on the right line of pyproject.toml)."""
    parts, line = ["{"], 0
    for key in sorted(table, key=lambda k: places[k]):
        pad = max(places[key] - line, 0)
        parts.append("\n" * pad)
        line += pad
        entry = json.dumps(key) + ": " + json.dumps(table[key], default=str)
        parts.append(entry + ",")
    body = "".join(parts).rstrip(",") + "}"
    loaded = load_config(path, body)
    ranges = {key: Range(Position(n, 0), Position(n, len(lines[n]))) for key, n in
              places.items() if n < len(lines)}
    return replace(loaded, value_ranges={**loaded.value_ranges, **ranges},
                   key_ranges={**loaded.key_ranges, **ranges})
