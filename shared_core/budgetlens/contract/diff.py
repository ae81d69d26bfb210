"""The budget diff of a change: every ``call_model`` step before and after, and why it moved.

``budget_diff`` takes two sides (the reports of every pipeline of a workspace, the files they
were read from and the workspace root), matches steps by pipeline path (relative to the root)
and step name, and says for each: its numbers before and after (fixed tokens, total,
headroom, fits) and the changed inputs behind the change: the prompt file whose content hash
changed, the template, or each term (a setting, a config.json value) whose value changed.
No git, no subprocess: the caller gives each side's files (a folder on disk or a revision
read into memory).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path, PurePath

from budgetlens.contract.model import PipelineReport, StepBudget
from budgetlens.files import FileSource, SourceError, content_hash


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


@dataclass(frozen=True)
class DiffSide:
    """One side of a diff: the reports of every pipeline, the files and the workspace root."""

    root: str
    reports: list[PipelineReport]
    files: FileSource


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
    """The prompt file relative to the root, ``template``, or the setting
    (``settings.max_context_tokens``, ``config.json model_context_window``)."""
    before: int | None
    after: int | None
    """Tokens for a prompt or template, the value for a setting; None on a missing side."""


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
class BudgetDiff:
    """Every step of both sides, newly failing first, then changed, added, removed, same."""

    steps: tuple[StepDiff, ...]
    added_pipelines: tuple[str, ...]
    removed_pipelines: tuple[str, ...]

    @property
    def newly_failing(self) -> list[StepDiff]:
        return [s for s in self.steps if s.status is StepStatus.NEWLY_FAILING]

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
    return _StepInputs(step, prompt, _prompt_hash(side.files, step.prompt_file),
                       step.template.value, settings)


def _numbers(step: StepBudget) -> StepNumbers:
    return StepNumbers(step.fixed.value, step.total, step.window.value, step.headroom, step.fits)


def _keyed(side: DiffSide) -> dict[str, dict[tuple[str, int], _StepInputs]]:
    """Per pipeline (relative path): its steps by (name, occurrence of that name)."""
    out: dict[str, dict[tuple[str, int], _StepInputs]] = {}
    for report in side.reports:
        steps: dict[tuple[str, int], _StepInputs] = {}
        for step in report.steps:
            n = sum(1 for name, _ in steps if name == step.step)
            steps[(step.step, n)] = _inputs(step, side)
        out[relative(report.pipeline, side.root)] = steps
    return out


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
    return tuple(causes)


def _status(before: StepNumbers | None, after: StepNumbers | None,
            causes: tuple[InputChange, ...]) -> StepStatus:
    if after is None:
        return StepStatus.REMOVED
    if not after.fits and (before is None or before.fits):
        return StepStatus.NEWLY_FAILING
    if before is None:
        return StepStatus.ADDED
    return StepStatus.CHANGED if causes or before != after else StepStatus.UNCHANGED


def _step_diff(pipeline: str, name: str, old: _StepInputs | None, new: _StepInputs | None,
               pipeline_added: bool, pipeline_removed: bool) -> StepDiff:
    before = _numbers(old.budget) if old is not None else None
    after = _numbers(new.budget) if new is not None else None
    causes = _causes(old, new) if old is not None and new is not None else ()
    return StepDiff(pipeline, name, _status(before, after, causes), before, after, causes,
                    pipeline_added, pipeline_removed)


def _pipeline_steps(pipeline: str, old: dict[tuple[str, int], _StepInputs] | None,
                    new: dict[tuple[str, int], _StepInputs] | None) -> Iterable[StepDiff]:
    old_steps, new_steps = old or {}, new or {}
    keys = list(new_steps) + [k for k in old_steps if k not in new_steps]
    for key in keys:
        yield _step_diff(pipeline, key[0], old_steps.get(key), new_steps.get(key),
                         old is None, new is None)


_ORDER = list(StepStatus)


def budget_diff(base: DiffSide, head: DiffSide) -> BudgetDiff:
    """Every ``call_model`` step of both sides, compared (see the module docstring)."""
    old, new = _keyed(base), _keyed(head)
    pipelines = sorted(set(old) | set(new))
    steps = [s for p in pipelines for s in _pipeline_steps(p, old.get(p), new.get(p))]
    steps.sort(key=lambda s: _ORDER.index(s.status))  # stable: pipeline order kept
    return BudgetDiff(tuple(steps), tuple(p for p in pipelines if p not in old),
                      tuple(p for p in pipelines if p not in new))
