"""The clamp arithmetic: what auto_clamp lowers, and never below which floors.

``compute_clamp`` gives one pipeline's clamp values; ``shared_floors`` and ``with_floors``
give the floors and the context of several pipelines planned together (values they share
get the same floor, whatever the order of the files).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

from budgetlens.contract.enums import (
    TermSource,
)
from budgetlens.contract.results import (
    ClampValues,
    OutputClamp,
    PipelineReport,
    StepBudget,
    Term,
)


def floor_below(value: int, floor: int | None) -> int:
    """The lowest value a clamp may set in place of ``value``: ``floor`` (``None``: half of
    ``value``, rounded down), at least 1, and never above ``value`` itself (a clamp only
    lowers). 0 for a value of 0 (an unknown output limit)."""
    wanted = value // 2 if floor is None else floor
    return min(value, max(1, wanted))


def _base(step: StepBudget) -> int:
    """The tokens of a step a clamp cannot lower: fixed + history + margin (+ a thinking
    budget beside the output)."""
    return step.fixed.value + step.history.value + step.margin.value + step.reasoning_added


def _under_ceiling(steps: Sequence[StepBudget], ceiling: int | None
                   ) -> tuple[dict[int, int], dict[int, str]]:
    """Each step's output limit after the model's ceiling, and why a limit was lowered."""
    outputs = {i: s.output.value for i, s in enumerate(steps)}
    reasons: dict[int, str] = {}
    for i, s in enumerate(steps):
        own = s.ceiling.value if s.ceiling is not None else ceiling  # a step's own model
        if own is not None and outputs[i] > own:
            outputs[i] = own
            reasons[i] = f"above the model's output ceiling model_max_output_tokens={own}"
    return outputs, reasons


def _context_reason(name: str | None, *, new: int, context: int, floor: int, room: int,
                    window: int) -> str:
    """Why ``max_context_tokens`` goes from ``context`` to ``new`` (``name``: the step that
    needs the most room; None: a shared target set it)."""
    if new == context:
        return ""
    if name is None:
        return (f"lowered to {new} with the other pipelines that share this value"
                f" (not below its floor min_context_tokens={floor})")
    if new > floor:
        return (f"lowered so that step {name!r} fits the window of {window} tokens;"
                f" above its floor min_context_tokens={floor}")
    if room < floor:
        return (f"lowered for step {name!r} to its floor"
                f" min_context_tokens={floor}; each step that still does not"
                f" fit the window of {window} tokens gets its own output limit lowered")
    return (f"lowered so that step {name!r} fits the window of {window} tokens;"
            f" this is its floor min_context_tokens={floor}")


#: The clamp of a pipeline whose steps all fit as they are.
_NOTHING = ClampValues()


def _fits_as_is(steps: Sequence[StepBudget], context: int, window: int,
                ceiling: int | None) -> bool:
    """Every step fits its window with the context and its output limit as they are, and no
    output limit is above its ceiling: ``compute_clamp`` lowers nothing (no step is unfit or
    needy, no output is above what the context leaves it or above its floor's reach)."""
    for s in steps:
        output = s.output.value
        own = s.ceiling.value if s.ceiling is not None else ceiling
        if own is not None and output > own:
            return False
        win = s.window.value if s.model is not None or s.own_window else window
        ctx = s.context.value if s.own_context else context
        if _base(s) + ctx + output > win:
            return False
    return True


def compute_clamp(steps: Sequence[StepBudget], *, context: int, window: int,
                  ceiling: int | None, floor: int | None,
                  target: int | None = None) -> ClampValues:
    """The auto-clamp, as numbers; no value goes below its floor.

    Floors: ``floor`` for ``max_context_tokens`` (``min_context_tokens``; ``None``: half of
    ``context``) and each step's ``output_floor`` (``min_output_tokens``; ``None``: half of
    its output limit), each capped at the value itself and at least 1 (``floor_below``).

    1. An output above the model's ceiling (``model_max_output_tokens``) is lowered to it.
    2. A step that does not fit even with the context and its output at their floors is
       ``unfit``: nothing is lowered for it (the check reports it as an error, BL052).
    3. ``max_context_tokens`` is lowered once, so that the step that needs the most room fits
       with its output limit, but not below its floor. ``target`` (planning several
       pipelines that share the value) sets the context instead, never below the floor.
    4. Each step that still does not fit gets its own output limit lowered until it fits;
       that is never below its floor (step 2), and no other step's output changes.

    When every step fits as it is, under its ceiling, nothing is lowered: the answer is
    ``ClampValues()``, given without the rest (``_fits_as_is``).
    """
    if target is None and _fits_as_is(steps, context, window, ceiling):
        return _NOTHING
    return _clamp(steps, context=context, window=window, ceiling=ceiling, floor=floor,
                  target=target)


def _clamp(steps: Sequence[StepBudget], *, context: int, window: int, ceiling: int | None,
           floor: int | None, target: int | None) -> ClampValues:
    """``compute_clamp`` worked out in full (see there)."""
    outputs, reasons = _under_ceiling(steps, ceiling)
    full = window
    # a step that names its own model has its own window (the others share ``window``)
    win = {i: s.window.value if s.model is not None or s.own_window else full
           for i, s in enumerate(steps)}
    context_floor = floor_below(context, floor)
    # a step with its own context (use_context: false, its own max_context_tokens) is
    # charged that, which the clamp does not lower: only its output may be
    pinned = {i: s.context.value for i, s in enumerate(steps) if s.own_context}
    out_floor = {i: floor_below(outputs[i], s.output_floor.value if s.output_floor else None)
                 for i, s in enumerate(steps)}
    base = [_base(s) for s in steps]
    unfit = [i for i in range(len(steps))
             if base[i] + pinned.get(i, context) + outputs[i] > win[i]
             and base[i] + pinned.get(i, context_floor) + out_floor[i] > win[i]]
    fittable = [i for i in range(len(steps)) if i not in unfit]
    room = {i: win[i] - base[i] - outputs[i] for i in fittable}  # context each allows
    needy = min((i for i in fittable if room[i] < context and i not in pinned),
                key=lambda i: (room[i], i), default=None)
    if target is not None:
        new_context = min(context, max(context_floor, target))
    else:
        new_context = context if needy is None else max(context_floor, room[needy])
    reason = _context_reason(None if needy is None else steps[needy].step, new=new_context,
                             context=context, floor=context_floor,
                             room=0 if needy is None else room[needy],
                             window=full if needy is None else win[needy])
    for i in fittable:
        window = win[i]  # each step's own window (a step may name its own model)
        allowed = window - base[i] - pinned.get(i, new_context)
        if allowed < out_floor[i]:  # only a ``target`` above what this step allows does this
            unfit.append(i)
        elif outputs[i] > allowed:
            outputs[i] = allowed
            why = (f"max_context_tokens cannot go below its floor"
                   f" min_context_tokens={context_floor}" if i not in pinned else
                   f"the step's own context ({steps[i].context.source}"
                   f" {pinned[i]}) is not lowered")
            lowered = (f"{why}; with this output limit the step"
                       f" fits the window of {window} tokens (its floor min_output_tokens is"
                       f" {out_floor[i]})")
            reasons[i] = f"{reasons[i]}; then {lowered}" if i in reasons else lowered
    changed = tuple(OutputClamp(steps[i].step, i, steps[i].output.value, outputs[i], reasons[i])
                    for i in sorted(reasons) if outputs[i] != steps[i].output.value)
    moved = new_context != context
    return ClampValues(context_before=context if moved else None,
                       context_after=new_context if moved else None,
                       outputs=changed, unfit=tuple(steps[i].step for i in sorted(unfit)),
                       context_reason=reason, unfit_steps=tuple(sorted(unfit)))


@dataclass(frozen=True)
class SharedFloors:
    """The floors (and the context) a pipeline is clamped with when several pipelines are
    planned together (``shared_floors``); every value comes from the original files."""

    context_floor: int
    output_floors: tuple[int, ...]  # one per ``PipelineReport.steps``
    context: int | None = None  # the context every pipeline sharing the value agrees on
    context_reason: str = ""


_Key = tuple[str, ...]


def _context_keys(report: PipelineReport, edit_parent: bool) -> tuple[_Key, _Key]:
    """Where this pipeline's max_context_tokens is set, and where its clamp plan edits it:
    the same place, or an override in the pipeline itself (see ``clamp_plan``)."""
    ctx = report.context
    own: _Key = ("override", os.path.normpath(report.pipeline), "context")
    if ctx is None or ctx.location is None:
        return own, own
    start = ctx.location.range.start
    seen: _Key = ("value", os.path.normpath(ctx.location.file), "context", str(start.line),
                  str(start.character))
    return seen, (seen if not ctx.inherited or edit_parent else own)


def _output_keys(report: PipelineReport, step: StepBudget,
                 edit_parent: bool) -> tuple[_Key, _Key]:
    """Where a step's output limit is set, and where the clamp plan edits it."""
    seen: _Key = ("value", os.path.normpath(step.defined_in), "output", str(step.index))
    if step.inherited and not edit_parent:
        return seen, ("override", os.path.normpath(report.pipeline), "output", str(step.index))
    return seen, seen


class _Highest:
    """The highest floor of every value a plan of several pipelines sees or edits."""

    def __init__(self, planned: dict[str, PipelineReport], edit_parent: bool) -> None:
        self.floors: dict[_Key, int] = {}
        self.planned = planned
        self.edit_parent = edit_parent
        self.output_edits = {path: dict(_output_keys(r, s, edit_parent) for s in r.steps)
                             for path, r in planned.items()}

    def raise_to(self, keys: tuple[_Key, _Key], value: int) -> None:
        for key in keys:
            self.floors[key] = max(self.floors.get(key, 0), value)

    def add(self, path: str, r: PipelineReport) -> None:
        # an override a pipeline of its extends chain writes is used by it too
        ancestors = [a for a in map(os.path.normpath, r.chain[1:]) if a in self.planned]
        seen, edit = _context_keys(r, self.edit_parent)
        self.raise_to((seen, edit), r.context_floor)
        for a in ancestors:
            a_seen, a_edit = _context_keys(self.planned[a], self.edit_parent)
            if a_seen == seen:
                self.raise_to((a_edit, a_edit), r.context_floor)
        for s in r.steps:
            step_floor = s.output_floor.value if s.output_floor is not None \
                else floor_below(s.output.value, None)
            seen = _output_keys(r, s, self.edit_parent)[0]
            self.raise_to((seen, self.output_edits[path][seen]), step_floor)
            for a in ancestors:
                if seen in self.output_edits[a]:
                    self.raise_to((self.output_edits[a][seen], seen), step_floor)

    def of(self, r: PipelineReport) -> SharedFloors:
        return SharedFloors(self.floors[_context_keys(r, self.edit_parent)[1]],
                            tuple(self.floors[_output_keys(r, s, self.edit_parent)[1]]
                                  for s in r.steps))


def _shared_context(reports: Sequence[PipelineReport], floors: list[SharedFloors | None],
                    edit_parent: bool) -> list[SharedFloors]:
    """``floors`` with the context of each edited value: the lowest any pipeline editing it
    needs (``None``: a pipeline without a usable context keeps its own floor)."""
    lowest: dict[_Key, tuple[int, str, str]] = {}
    for r, f in zip(reports, floors, strict=True):
        if f is None or r.context is None:
            continue
        mine = with_floors(r, f).clamp
        wanted = (mine.context_after if mine.context_after is not None else r.context.value,
                  r.pipeline, mine.context_reason)
        key = _context_keys(r, edit_parent)[1]
        lowest[key] = min(lowest.get(key, wanted), wanted)
    shared: list[SharedFloors] = []
    for r, f in zip(reports, floors, strict=True):
        if f is None or r.context is None:
            shared.append(f or SharedFloors(r.context_floor, ()))
            continue
        need, by, reason = lowest[_context_keys(r, edit_parent)[1]]
        shared.append(replace(f, context=need, context_reason=(
            f"for {by}: {reason}" if reason and by != r.pipeline else "")))
    return shared


def shared_floors(reports: Sequence[PipelineReport], *,
                  edit_parent: bool = False) -> list[SharedFloors]:
    """The floors and the context of each pipeline when they are planned together.

    ``reports`` are the checks of the ORIGINAL files, never of files a plan has edited. A
    value the plan edits gets the highest floor of every pipeline that uses it (a parent's
    ``max_context_tokens`` is used by the children that inherit it, an override a child
    writes by its own children), and the lowest context any pipeline editing it needs at
    those floors; a value only one pipeline uses keeps that pipeline's floors. Planning
    parents before children (fewer files in the extends chain first), each with
    ``with_floors`` over the edits of the ones before, then gives the same values whatever
    the order or the names of the files.
    """
    usable = [r.context is not None and r.window is not None for r in reports]
    planned = {os.path.normpath(r.pipeline): r for r, ok in zip(reports, usable, strict=True)
               if ok}
    highest = _Highest(planned, edit_parent)
    for path, r in planned.items():
        highest.add(path, r)
    floors = [highest.of(r) if ok else None for r, ok in zip(reports, usable, strict=True)]
    return _shared_context(reports, floors, edit_parent)


def with_floors(report: PipelineReport, floors: SharedFloors) -> PipelineReport:
    """``report`` with its clamp computed under ``floors`` (see ``shared_floors``): what a
    plan of several pipelines uses. The diagnostics are the report's own."""
    if report.context is None or report.window is None or \
            len(floors.output_floors) != len(report.steps):
        return report
    steps = [replace(s, output_floor=Term(f, TermSource.SHARED_FLOOR))
             for s, f in zip(report.steps, floors.output_floors, strict=True)]
    ceiling = report.output_ceiling.value if report.output_ceiling else None
    values = compute_clamp(steps, context=report.context.value, window=report.window.value,
                           ceiling=ceiling, floor=floors.context_floor, target=floors.context)
    if values.context_after is not None and floors.context_reason and \
            floors.context is not None and values.context_after == floors.context:
        values = replace(values, context_reason=floors.context_reason)
    return replace(report, steps=steps, clamp=values,
                   context_floor=floor_below(report.context.value, floors.context_floor))
