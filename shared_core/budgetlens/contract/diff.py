"""The budget diff of a change: every ``call_model`` step before and after, and why it moved.

``budget_diff`` takes two sides (the reports of every pipeline of a workspace, the files they
were read from and the workspace root), matches steps by pipeline path (relative to the root)
and step name, and says for each: its numbers before and after (fixed tokens, total,
headroom, fits), the changed inputs behind the change (the prompt file whose content hash
changed, the template, or each term, a setting or a config.json value, whose value changed)
and the errors the check found for it on each side. An error of no one step (a YAML syntax
error, a bad setting, a broken parent) is the pipeline's: every step of that pipeline fails
with it. A pipeline that fails to load on a side (errors, no steps) is not "removed": its
steps of the other side fail there, their numbers unknown.
No git, no subprocess: the caller gives each side's files (a folder on disk or a revision
read into memory).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path, PurePath
from typing import ClassVar

from budgetlens.contract.results import PipelineReport, StepBudget
from budgetlens.files import FileSource, SourceError, content_hash
from budgetlens.source import Diagnostic, Severity, unique_diagnostics


class StepStatus(str, Enum):
    """What happened to a step between the two sides (the order is the report's order)."""

    NEWLY_FAILING = "newly_failing"
    CHANGED = "changed"
    ADDED = "added"
    REMOVED = "removed"
    UNCHANGED = "unchanged"


class ChangeKind(str, Enum):
    """The kind of a changed input of a step."""

    PROMPT = "prompt"
    TEMPLATE = "template"
    SETTING = "setting"
    TERM = "term"
    """A request term of the step (``tools``, ``response_schema``, ``reasoning``): its
    tokens."""


@dataclass(frozen=True)
class DiffSide:
    """One side of a diff: the reports of every pipeline, the files and the workspace root."""

    root: str
    reports: list[PipelineReport]
    files: FileSource
    notes: tuple[str, ...] = ()
    """What the side could not read and says so (a submodule of a revision)."""


@dataclass(frozen=True)
class StepNumbers:
    """The numbers of a step on one side."""

    fixed: int
    total: int
    window: int
    headroom: int
    fits: bool


@dataclass(frozen=True)
class InputChange:
    """One changed input of a step: a prompt file (its tokens), the template, a setting."""

    kind: ChangeKind
    name: str
    """The prompt file relative to the root, ``template``, the setting
    (``settings.max_context_tokens``, ``config.json model_context_window``) or the request
    term (``tools``)."""
    before: int | None
    after: int | None
    """Tokens for a prompt or template, the value for a setting; None on a missing side."""


@dataclass(frozen=True)
class SideError:
    """An error the check found on one side: its code, file (relative to that side's root,
    ``/`` separated), line (from 1) and message (the side's root left out of it)."""

    code: str
    file: str
    line: int
    message: str

    @property
    def key(self) -> tuple[str, str]:
        """What makes it the same error on both sides: its code and file (a message may
        carry numbers that move with the change)."""
        return (self.code, self.file)


def _new(before: tuple[SideError, ...], after: tuple[SideError, ...]) -> list[SideError]:
    """The errors of ``after`` that ``before`` does not have (by ``SideError.key``)."""
    seen = {e.key for e in before}
    return [e for e in after if e.key not in seen]


@dataclass(frozen=True)
class StepDiff:
    """One step before and after."""

    pipeline: str
    """The pipeline file relative to the workspace root (``/`` separated)."""
    step: str
    status: StepStatus
    before: StepNumbers | None
    after: StepNumbers | None
    causes: tuple[InputChange, ...]
    pipeline_added: bool = False
    pipeline_removed: bool = False
    errors_before: tuple[SideError, ...] = ()
    errors_after: tuple[SideError, ...] = ()
    """The errors of this step on each side (its pipeline's own are in
    ``BudgetDiff.pipeline_errors``)."""
    unknown_before: bool = False
    unknown_after: bool = False
    """The step is on that side but has no numbers there: it failed before they were
    computed (its pipeline did not load)."""

    #: Its JSON: every field, then ``headroom_drop``.
    JSON_ORDER: ClassVar = (..., "headroom_drop")

    @property
    def new_errors(self) -> list[SideError]:
        """The step's errors at HEAD that BASE does not have."""
        return _new(self.errors_before, self.errors_after)

    @property
    def headroom_drop(self) -> int:
        """How many tokens of headroom the change took (0 when it gave some or none)."""
        if self.before is None or self.after is None:
            return 0
        return max(0, self.before.headroom - self.after.headroom)


@dataclass(frozen=True)
class HeadroomThreshold:
    """``--max-headroom-drop``: a drop above ``tokens``, or above ``percent`` of the base
    headroom (any drop of a step with no headroom left in the base exceeds a percentage)."""

    tokens: int | None = None
    percent: float | None = None

    def exceeded_by(self, step: StepDiff) -> bool:
        drop = step.headroom_drop
        if drop <= 0 or step.before is None:
            return False
        if self.tokens is not None:
            return drop > self.tokens
        if self.percent is None:
            return False
        base = step.before.headroom
        return base <= 0 or drop * 100 > self.percent * base


@dataclass(frozen=True)
class PipelineErrors:
    """The errors of a pipeline that belong to no one step, on each side: every step of
    the pipeline fails with them."""

    pipeline: str
    before: tuple[SideError, ...]
    after: tuple[SideError, ...]

    @property
    def new(self) -> list[SideError]:
        return _new(self.before, self.after)


@dataclass(frozen=True)
class BudgetDiff:
    """Every step of both sides, newly failing first, then changed, added, removed, same."""

    steps: tuple[StepDiff, ...]
    added_pipelines: tuple[str, ...]
    removed_pipelines: tuple[str, ...]
    pipeline_errors: tuple[PipelineErrors, ...] = ()
    notes: tuple[str, ...] = ()
    """Both sides' notes (``DiffSide.notes``)."""

    @property
    def newly_failing(self) -> list[StepDiff]:
        return [s for s in self.steps if s.status is StepStatus.NEWLY_FAILING]

    @property
    def errors_at_head(self) -> list[SideError]:
        """Every error of HEAD, of a step or of a pipeline: ``budgetlens check`` fails on
        each, so the diff does too, whether BASE had it or not."""
        return [e for s in self.steps for e in s.errors_after] + \
            [e for p in self.pipeline_errors for e in p.after]

    @property
    def new_errors_at_head(self) -> list[SideError]:
        return [e for s in self.steps for e in s.new_errors] + \
            [e for p in self.pipeline_errors for e in p.new]

    def over_threshold(self, threshold: HeadroomThreshold | None) -> list[StepDiff]:
        if threshold is None:
            return []
        return [s for s in self.steps if threshold.exceeded_by(s)]


@dataclass(frozen=True)
class _StepInputs:
    """What a step's numbers are computed from on one side."""

    budget: StepBudget
    prompt: str | None  # relative path
    prompt_hash: str | None
    template_tokens: int
    settings: dict[str, tuple[int, str]]  # label -> (value, where it is set)
    terms: dict[str, int | None] = dataclasses.field(default_factory=dict)
    """The step's request terms (tools, response_schema, reasoning): tokens, None unset."""


_REQUEST_TERMS = ("tools", "response_schema", "reasoning")
_SETTING_TERMS = ("format_overhead", "history", "context", "output", "margin", "window")


def relative(path: str, root: str) -> str:
    """``path`` relative to ``root``, ``/`` separated."""
    return PurePath(os.path.relpath(os.path.abspath(path), os.path.abspath(root))).as_posix()


def _prompt_hash(files: FileSource, path: str | None) -> str | None:
    if path is None:
        return None
    try:
        return content_hash(files.read_text(Path(path)))
    except SourceError as exc:
        return f"unreadable:{exc.reason.value}"


def _inputs(step: StepBudget, side: DiffSide) -> _StepInputs:
    settings: dict[str, tuple[int, str]] = {}
    for label in _SETTING_TERMS:
        term = getattr(step, label)
        name = term.source if str(term.source).startswith(("settings.", "config.json")) \
            else label
        settings[label] = (term.value, str(name))
    prompt = relative(step.prompt_file, side.root) if step.prompt_file else None
    terms = {label: None if getattr(step, label) is None else getattr(step, label).value
             for label in _REQUEST_TERMS}
    return _StepInputs(step, prompt, _prompt_hash(side.files, step.prompt_file),
                       step.template.value, settings, terms)


def _numbers(step: StepBudget) -> StepNumbers:
    return StepNumbers(step.fixed.value, step.total, step.window.value, step.headroom, step.fits)


_Key = tuple[str, int]  # a step: its name and the occurrence of that name


@dataclass(frozen=True)
class _PipelineSide:
    """A pipeline on one side: its steps, its steps' errors by step name, its own errors,
    and whether it loaded (a pipeline with errors and no steps did not)."""

    steps: dict[_Key, _StepInputs]
    step_errors: dict[str, tuple[SideError, ...]]
    errors: tuple[SideError, ...]
    loaded: bool


def side_error(d: Diagnostic, root: str) -> SideError:
    """``d`` as a ``SideError`` of the side rooted at ``root``."""
    top = os.path.abspath(root)
    message = d.message.replace(top + os.sep, "").replace(top, ".")
    return SideError(d.code, relative(d.file, root), d.range.start.line + 1, message)


def _pipeline_side(report: PipelineReport, side: DiffSide) -> _PipelineSide:
    steps: dict[_Key, _StepInputs] = {}
    for step in report.steps:
        n = sum(1 for name, _ in steps if name == step.step)
        steps[(step.step, n)] = _inputs(step, side)
    by_step: dict[str, list[SideError]] = {}
    own: list[SideError] = []
    errors = [d for d in report.diagnostics if d.severity is Severity.ERROR]
    for d in unique_diagnostics(errors):
        error = side_error(d, side.root)
        if d.step is None:
            own.append(error)
        else:
            by_step.setdefault(d.step, []).append(error)
    return _PipelineSide(steps, {k: tuple(v) for k, v in by_step.items()}, tuple(own),
                         bool(report.steps) or not errors)


def _keyed(side: DiffSide) -> dict[str, _PipelineSide]:
    """Per pipeline (relative path): its steps, by (name, occurrence of that name), and
    its errors."""
    return {relative(r.pipeline, side.root): _pipeline_side(r, side) for r in side.reports}


def _causes(old: _StepInputs, new: _StepInputs) -> tuple[InputChange, ...]:
    causes: list[InputChange] = []
    if old.prompt != new.prompt or old.prompt_hash != new.prompt_hash:
        name = new.prompt if new.prompt is not None else old.prompt
        if old.prompt != new.prompt and old.prompt is not None and new.prompt is not None:
            name = f"{old.prompt} -> {new.prompt}"
        causes.append(InputChange(ChangeKind.PROMPT, name or "prompt",
                                  old.budget.system_prompt.value,
                                  new.budget.system_prompt.value))
    if old.template_tokens != new.template_tokens:
        causes.append(InputChange(ChangeKind.TEMPLATE, "template", old.template_tokens,
                                  new.template_tokens))
    for label, (value, name) in new.settings.items():
        before, _ = old.settings[label]
        if before != value:
            causes.append(InputChange(ChangeKind.SETTING, name, before, value))
    for label in _REQUEST_TERMS:
        was, now = old.terms.get(label), new.terms.get(label)
        if was != now:
            causes.append(InputChange(ChangeKind.TERM, label, was, now))
    return tuple(causes)


@dataclass(frozen=True)
class _Row:
    """A step on one side: whether it is there (with numbers, or failing without), its
    inputs, its own errors and every error it fails with (its own and its pipeline's)."""

    there: bool
    inputs: _StepInputs | None
    errors: tuple[SideError, ...]
    failing: tuple[SideError, ...]

    @property
    def numbers(self) -> StepNumbers | None:
        return _numbers(self.inputs.budget) if self.inputs is not None else None


def _row(side: _PipelineSide | None, key: _Key) -> _Row:
    if side is None:
        return _Row(False, None, (), ())
    inputs = side.steps.get(key)
    errors = side.step_errors.get(key[0], ())
    there = inputs is not None or bool(errors) or not side.loaded
    return _Row(there, inputs, errors, errors + side.errors if there else ())


def _status(old: _Row, new: _Row, causes: tuple[InputChange, ...]) -> StepStatus:
    if not new.there:
        return StepStatus.REMOVED
    before, after = old.numbers, new.numbers
    if _new(old.failing, new.failing) or (
            after is not None and not after.fits and (before is None or before.fits)):
        return StepStatus.NEWLY_FAILING
    if not old.there:
        return StepStatus.ADDED
    same_errors = {e.key for e in old.failing} == {e.key for e in new.failing}
    return StepStatus.CHANGED if causes or before != after or not same_errors \
        else StepStatus.UNCHANGED


def _step_diff(pipeline: str, key: _Key, old: _PipelineSide | None,
               new: _PipelineSide | None) -> StepDiff:
    before, after = _row(old, key), _row(new, key)
    causes = _causes(before.inputs, after.inputs) \
        if before.inputs is not None and after.inputs is not None else ()
    return StepDiff(pipeline, key[0], _status(before, after, causes), before.numbers,
                    after.numbers, causes, old is None, new is None, before.errors,
                    after.errors, before.there and before.inputs is None,
                    after.there and after.inputs is None)


def _pipeline_steps(pipeline: str, old: _PipelineSide | None,
                    new: _PipelineSide | None) -> Iterable[StepDiff]:
    old_steps = old.steps if old is not None else {}
    new_steps = new.steps if new is not None else {}
    keys = list(new_steps) + [k for k in old_steps if k not in new_steps]
    named = {name for name, _ in keys}
    for side in (new, old):  # errors of a step with no numbers on either side
        for name in side.step_errors if side is not None else ():
            if name not in named:
                named.add(name)
                keys.append((name, 0))
    for key in keys:
        yield _step_diff(pipeline, key, old, new)


def _pipeline_errors(pipeline: str, old: _PipelineSide | None,
                     new: _PipelineSide | None) -> PipelineErrors | None:
    before = old.errors if old is not None else ()
    after = new.errors if new is not None else ()
    return PipelineErrors(pipeline, before, after) if before or after else None


_ORDER = list(StepStatus)


def budget_diff(base: DiffSide, head: DiffSide) -> BudgetDiff:
    """Every ``call_model`` step of both sides, compared (see the module docstring)."""
    old, new = _keyed(base), _keyed(head)
    pipelines = sorted(set(old) | set(new))
    steps = [s for p in pipelines for s in _pipeline_steps(p, old.get(p), new.get(p))]
    steps.sort(key=lambda s: _ORDER.index(s.status))  # stable: pipeline order kept
    errors = (_pipeline_errors(p, old.get(p), new.get(p)) for p in pipelines)
    return BudgetDiff(tuple(steps), tuple(p for p in pipelines if p not in old),
                      tuple(p for p in pipelines if p not in new),
                      tuple(e for e in errors if e is not None), base.notes + head.notes)
