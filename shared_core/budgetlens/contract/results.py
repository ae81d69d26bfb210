"""The result types of the budget contract: terms, step budgets, clamp values and reports.

Every type here is a frozen dataclass; ``budgetlens.serialize.to_jsonable`` turns it (or the
JSON view a type offers, e.g. ``StepBudget.summary``) into the ``--format json`` output.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from budgetlens.contract.enums import OutputSource, TermSource
from budgetlens.contract.frozen import quick_init
from budgetlens.contract.policy import DEVELOPMENT_ENV, POLICY_ENV, Policy
from budgetlens.serialize import JSON_AS, OMIT, to_jsonable
from budgetlens.source import Diagnostic, Location, Severity
from budgetlens.tokens.core import TokenizerLike

if TYPE_CHECKING:  # only annotations here; the module loads with the first settings.injection
    # block (contract/injection_settings.py), not with every check (start-up speed)
    from budgetlens.assembly.unified_budget import PolicyValues, UnifiedBudget


@quick_init
@dataclass(frozen=True)
class Term:
    """One term of a step's budget: its value and the place that set it."""

    value: int
    source: str = ""
    """What set it: a ``TermSource``, else a setting (``settings.max_context_tokens``)."""
    inherited: bool = False  # set in a parent pipeline, not in the pipeline itself
    location: Location | None = None

    @property
    def missing(self) -> bool:
        return self.source == TermSource.MISSING


def _unless_none(value: Any) -> Any:
    return OMIT if value is None else value


@dataclass(frozen=True)
class BudgetNumbers:
    """The numbers of a step's budget (the ``budget`` of the JSON output)."""

    system_prompt: int
    template: int
    format_overhead: int
    fixed: int
    history: int
    context: int
    output: int
    output_source: OutputSource
    margin: int
    total: int
    window: int
    headroom: int
    # the request terms of a step that has them (absent otherwise: contract/terms.py)
    tools: int | None = field(default=None, metadata={JSON_AS: _unless_none})
    response_schema: int | None = field(default=None, metadata={JSON_AS: _unless_none})
    reasoning: int | None = field(default=None, metadata={JSON_AS: _unless_none})
    max_input: int | None = field(default=None, metadata={JSON_AS: _unless_none})
    """The model's input limit when it is below the window: fixed + history + context +
    margin must fit it."""


@dataclass(frozen=True)
class StepSummary:
    """A step in the JSON output: its pipeline, name, whether it fits, and its numbers."""

    pipeline: str
    step: str
    fits: bool
    budget: BudgetNumbers


@quick_init
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
    output_source: OutputSource
    margin: Term
    window: Term
    total: int
    headroom: int  # window - total (negative when over)
    fits: bool
    prompt_file: str | None = None
    use_history: bool = False
    name_location: Location | None = None  # the id/name value, else the step's first key
    output_floor: Term | None = None
    """The lowest output limit a clamp may set for this step (``min_output_tokens``; its value
    is never above the step's own limit after the model's ceiling). ``None``: the default,
    half of that limit."""
    model: str | None = None
    """The step's own ``model`` (registry name), when it names one the registry knows."""
    ceiling: Term | None = None
    """The output ceiling of the step's own model (``None``: the pipeline's)."""
    approximate: bool = False
    """The step's counts are approximate (its model's tokenizer is not available offline)."""
    own_window: bool = False
    """The step's window is its own (its ``model``, ``serving``, ``gateway`` or
    ``variant``), not necessarily the pipeline's."""
    own_context: bool = False
    """The step's context is its own (``use_context: false`` or its own
    ``max_context_tokens``): the clamp does not lower the pipeline's for it."""
    gateway_cap: Term | None = None
    """The per-request input cap of the step's gateway for its model (``gateway:``)."""
    tools: Term | None = None
    """The step's tool definitions (in ``fixed``; contract/terms.py)."""
    response_schema: Term | None = None
    """The step's response schema (in ``fixed``)."""
    reasoning: Term | None = None
    """The step's thinking budget; in ``total`` unless ``reasoning_in_output``."""
    reasoning_in_output: bool = False
    """The thinking budget counts toward the output limit (Claude): it adds nothing."""
    max_input: Term | None = None
    """The model's input limit, when it is below the window."""

    def request_terms(self) -> list[tuple[str, Term]]:
        """The request terms in the fixed part, named as the texts show them: ``tools``,
        then ``response_schema``, those the step has."""
        return [(name, term) for name, term in (("tools", self.tools),
                                                ("response_schema", self.response_schema))
                if term is not None]

    @property
    def reasoning_added(self) -> int:
        """The tokens the thinking budget adds to the request beside the output limit."""
        if self.reasoning is None or self.reasoning_in_output:
            return 0
        return self.reasoning.value

    @property
    def input_tokens(self) -> int:
        """Everything the request sends: fixed + history + context + margin."""
        return self.fixed.value + self.history.value + self.context.value + self.margin.value

    @property
    def inherited(self) -> bool:
        return os.path.normpath(self.defined_in) != os.path.normpath(self.pipeline)

    @property
    def numbers(self) -> BudgetNumbers:
        return BudgetNumbers(
            system_prompt=self.system_prompt.value, template=self.template.value,
            format_overhead=self.format_overhead.value, fixed=self.fixed.value,
            history=self.history.value, context=self.context.value, output=self.output.value,
            output_source=self.output_source, margin=self.margin.value, total=self.total,
            window=self.window.value, headroom=self.headroom,
            tools=_value(self.tools), response_schema=_value(self.response_schema),
            reasoning=_value(self.reasoning), max_input=_value(self.max_input))

    @property
    def summary(self) -> StepSummary:
        return StepSummary(self.pipeline, self.step, self.fits, self.numbers)

    def terms(self) -> dict[str, Term]:
        terms = {"system_prompt": self.system_prompt, "template": self.template,
                 "format_overhead": self.format_overhead, "history": self.history,
                 "context": self.context, "output": self.output, "margin": self.margin,
                 "window": self.window}
        for name in ("tools", "response_schema", "reasoning", "max_input"):
            term = getattr(self, name)
            if term is not None:
                terms[name] = term
        return terms


def _value(term: Term | None) -> int | None:
    return None if term is None else term.value


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
    unfit: tuple[str, ...] = ()  # steps that cannot fit whatever is clamped within the floors
    context_reason: str = ""  # why the context is lowered, naming the step that needs it
    unfit_steps: tuple[int, ...] = ()  # ``unfit`` as indices into the steps

    @property
    def empty(self) -> bool:
        return self.context_after is None and not self.outputs


@dataclass(frozen=True)
class StepInjection:
    """The injection split of one ``call_model`` step."""

    pipeline: str
    step: str
    index: int = field(metadata={"json": False})
    """Index into ``PipelineReport.steps``."""
    location: Location = field(metadata={"json": False})
    window: int
    tokens_used_before: int
    """The step's fixed + history tokens."""
    label: str
    """``injection 1,640: cards 656 · buckets 984`` (hover and code lens text; see
    ``injection_label``)."""
    budget: UnifiedBudget
    """Both sources present, default shares."""
    direct_target: UnifiedBudget
    """Both sources present, a bucket the direct target of the request."""


def injection_label(budget: UnifiedBudget) -> str:
    """``injection 1,640: cards 656 · buckets 984`` for the split ``budget``."""
    text = (f"injection {budget.total_budget:,}: cards {budget.knowledge_card_budget:,}"
            f" · buckets {budget.bucket_budget:,}")
    return text + " (window overrun)" if budget.context_overrun else text


@dataclass(frozen=True)
class InjectionCheck:
    """What ``check_injection`` found: the merged policy, diagnostics and the steps' splits."""

    policy: PolicyValues | None
    """None when no file of the chain has a ``settings.injection`` block; the values of a
    ``UnifiedContextBudgetPolicy`` (``contract.injection_settings.merged_policy``)."""
    location: Location | None = field(metadata={"json": False})
    """The block that contributes first (the pipeline's own, else the nearest parent's)."""
    diagnostics: tuple[Diagnostic, ...]
    steps: tuple[StepInjection, ...]

    @property
    def has_errors(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self.diagnostics)

    def step(self, index: int) -> StepInjection | None:
        return next((s for s in self.steps if s.index == index), None)


@dataclass(frozen=True)
class ReportSummary:
    """A pipeline report in JSON output (``PipelineReport.summary``)."""

    pipeline: str
    policy: Policy
    tokenizer: str | None
    config: str | None
    diagnostics: tuple[dict[str, Any], ...]
    steps: tuple[StepSummary, ...]


@quick_init
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
    """The lowest ``max_context_tokens`` a clamp may set (``min_context_tokens``, default half
    of ``max_context_tokens``; never above it, never below 1)."""
    clamp: ClampValues = field(default_factory=ClampValues)
    injection: InjectionCheck | None = None
    """The ``settings.injection`` policy of the chain and each step's split (None without one)."""
    model: str | None = None
    """config.json's ``model`` (or the target checked against), as named."""
    approximate: bool = False
    """Counts are approximate: the model's tokenizer family has no exact offline tokenizer."""
    target: str | None = None
    """The target model this report checks against (``CheckOptions.target``)."""
    input_fingerprints: Mapping[str, str] | None = field(
        default=None, compare=False, repr=False, metadata={"json": False})
    """Each file the check read (or probed: a config.json looked for and missing), with its
    fingerprint as read (``FileSource.fingerprint``): what a cache of results keys this
    report by (``budgetlens check``'s result cache). None for a report made by hand."""

    @property
    def has_errors(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self.diagnostics)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]

    @property
    def summary(self) -> ReportSummary:
        return ReportSummary(self.pipeline, self.policy, self.tokenizer, self.config,
                             tuple(to_jsonable(d) for d in self.diagnostics),
                             tuple(s.summary for s in self.steps))


@dataclass(frozen=True)
class CheckOptions:
    """How to check: overrides of the policy, tokenizer and config, and the workspace root.

    ``environ`` is the environment to read ``PIPELINE_LIMITS_POLICY`` and ``APP_DEVELOPMENT``
    from (``None``: the process environment, read at each call).
    """

    policy: Policy | str | None = None
    tokenizer: TokenizerLike | None = None
    """A tokenizer name (as config.json's ``tokenizer``) or a tokenizer object / counting
    function (see ``budgetlens.tokens.core.as_tokenizer``); None: config.json's, else
    cl100k_base."""
    config_path: Path | str | None = None
    workspace_root: Path | str | None = None
    environ: Mapping[str, str] | None = None
    target: str | None = None
    """A registry model to check against instead of config.json's model and numbers (its
    window, output ceiling and tokenizer; ``serving`` does not apply)."""

    def key(self, environ: Mapping[str, str]) -> tuple[str, ...]:
        tokenizer = self.tokenizer
        if tokenizer is not None and not isinstance(tokenizer, str):
            tokenizer = f"{type(tokenizer).__qualname__}@{id(tokenizer):x}"  # an object
        return (str(self.policy or ""), tokenizer or "", str(self.config_path or ""),
                str(self.workspace_root or ""), environ.get(POLICY_ENV, ""),
                environ.get(DEVELOPMENT_ENV, ""), self.target or "",
                # where the user's models.json is (models_file.user_models_path)
                environ.get("XDG_CONFIG_HOME", ""), environ.get("HOME", ""))
