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
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from budgetlens import codes
from budgetlens.contract.cache import BudgetCache, RecordingFiles
from budgetlens.contract.config import (
    LoadedConfig,
    find_config,
    load_config,
    read_config_if_present,
)
from budgetlens.contract.injection import InjectionCheck, check_injection
from budgetlens.contract.pipeline import (
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
from budgetlens.contract.policy import DEVELOPMENT_ENV, POLICY_ENV, Policy, resolve_policy
from budgetlens.contract.template import parse_template
from budgetlens.files import (
    MISSING_FINGERPRINT,
    DiskFiles,
    FileMissing,
    FileSource,
    SourceError,
    is_inside,
    path_problem,
)
from budgetlens.source import Diagnostic, Location, Range, Related, Severity
from budgetlens.tokens.core import (
    DEFAULT_TOKENIZER,
    TokenCounter,
    TokenizerError,
    TokenizerLike,
    get_tokenizer,
)
from budgetlens.yamldoc.parse import Span, YamlPath

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
    output_floor: Term | None = None
    """The lowest output limit a clamp may set for this step (``min_output_tokens``; its value
    is never above the step's own limit after the model's ceiling). ``None``: the default,
    half of that limit."""

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
    unfit: tuple[str, ...] = ()  # steps that cannot fit whatever is clamped within the floors
    context_reason: str = ""  # why the context is lowered, naming the step that needs it
    unfit_steps: tuple[int, ...] = ()  # ``unfit`` as indices into the steps

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
    """The lowest ``max_context_tokens`` a clamp may set (``min_context_tokens``, default half
    of ``max_context_tokens``; never above it, never below 1)."""
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
    function (see ``budgetlens.tokens.core.as_tokenizer``); None: config.json's, else
    cl100k_base."""
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
def floor_below(value: int, floor: int | None) -> int:
    """The lowest value a clamp may set in place of ``value``: ``floor`` (``None``: half of
    ``value``, rounded down), at least 1, and never above ``value`` itself (a clamp only
    lowers). 0 for a value of 0 (an unknown output limit)."""
    wanted = value // 2 if floor is None else floor
    return min(value, max(1, wanted))


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
    """
    outputs = {i: s.output.value for i, s in enumerate(steps)}
    reasons: dict[int, str] = {}
    if ceiling is not None:
        for i in range(len(steps)):
            if outputs[i] > ceiling:
                outputs[i] = ceiling
                reasons[i] = f"above the model's output ceiling model_max_output_tokens={ceiling}"
    context_floor = floor_below(context, floor)
    out_floor = {i: floor_below(outputs[i], s.output_floor.value if s.output_floor else None)
                 for i, s in enumerate(steps)}

    def base(i: int) -> int:
        s = steps[i]
        return s.fixed.value + s.history.value + s.margin.value

    unfit = [i for i in range(len(steps)) if base(i) + context + outputs[i] > window
             and base(i) + context_floor + out_floor[i] > window]
    fittable = [i for i in range(len(steps)) if i not in unfit]
    room = {i: window - base(i) - outputs[i] for i in fittable}  # context each step allows
    needy = min((i for i in fittable if room[i] < context), key=lambda i: (room[i], i),
                default=None)
    if target is not None:
        new_context = min(context, max(context_floor, target))
    elif needy is None:
        new_context = context
    else:
        new_context = max(context_floor, room[needy])
    reason = ""
    if new_context != context and needy is not None:
        name = steps[needy].step
        if new_context > context_floor:
            reason = (f"lowered so that step {name!r} fits the window of {window} tokens;"
                      f" above its floor min_context_tokens={context_floor}")
        elif room[needy] < context_floor:
            reason = (f"lowered for step {name!r} to its floor"
                      f" min_context_tokens={context_floor}; each step that still does not"
                      f" fit the window of {window} tokens gets its own output limit lowered")
        else:
            reason = (f"lowered so that step {name!r} fits the window of {window} tokens;"
                      f" this is its floor min_context_tokens={context_floor}")
    elif new_context != context:
        reason = (f"lowered to {new_context} with the other pipelines that share this value"
                  f" (not below its floor min_context_tokens={context_floor})")
    for i in fittable:
        allowed = window - base(i) - new_context
        if allowed < out_floor[i]:  # only a ``target`` above what this step allows does this
            unfit.append(i)
            continue
        if outputs[i] > allowed:
            outputs[i] = allowed
            lowered = (f"max_context_tokens cannot go below its floor"
                       f" min_context_tokens={context_floor}; with this output limit the step"
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
    highest: dict[_Key, int] = {}

    def raise_to(keys: tuple[_Key, _Key], value: int) -> None:
        for key in keys:
            highest[key] = max(highest.get(key, 0), value)

    planned = {os.path.normpath(r.pipeline): r for r, ok in zip(reports, usable, strict=True)
               if ok}
    output_edits = {path: dict(_output_keys(r, s, edit_parent) for s in r.steps)
                    for path, r in planned.items()}
    for path, r in planned.items():
        # an override a pipeline of its extends chain writes is used by it too
        ancestors = [a for a in map(os.path.normpath, r.chain[1:]) if a in planned]
        seen, edit = _context_keys(r, edit_parent)
        raise_to((seen, edit), r.context_floor)
        for a in ancestors:
            a_seen, a_edit = _context_keys(planned[a], edit_parent)
            if a_seen == seen:
                raise_to((a_edit, a_edit), r.context_floor)
        for s in r.steps:
            step_floor = s.output_floor.value if s.output_floor is not None \
                else floor_below(s.output.value, None)
            seen = _output_keys(r, s, edit_parent)[0]
            raise_to((seen, output_edits[path][seen]), step_floor)
            for a in ancestors:
                if seen in output_edits[a]:
                    raise_to((output_edits[a][seen], seen), step_floor)
    out: list[SharedFloors] = []
    for r, ok in zip(reports, usable, strict=True):
        if not ok:
            out.append(SharedFloors(r.context_floor, ()))
            continue
        out.append(SharedFloors(highest[_context_keys(r, edit_parent)[1]],
                                tuple(highest[_output_keys(r, s, edit_parent)[1]]
                                      for s in r.steps)))
    # the context of each edited value: the lowest any pipeline editing it needs
    lowest: dict[_Key, tuple[int, str, str]] = {}
    for r, ok, floors in zip(reports, usable, out, strict=True):
        if not ok or r.context is None:
            continue
        mine = with_floors(r, floors).clamp
        wanted = (mine.context_after if mine.context_after is not None else r.context.value,
                  r.pipeline, mine.context_reason)
        key = _context_keys(r, edit_parent)[1]
        lowest[key] = min(lowest.get(key, wanted), wanted)
    shared: list[SharedFloors] = []
    for r, ok, floors in zip(reports, usable, out, strict=True):
        if not ok or r.context is None:
            shared.append(floors)
            continue
        need, by, reason = lowest[_context_keys(r, edit_parent)[1]]
        shared.append(replace(floors, context=need, context_reason=(
            f"for {by}: {reason}" if reason and by != r.pipeline else "")))
    return shared


def with_floors(report: PipelineReport, floors: SharedFloors) -> PipelineReport:
    """``report`` with its clamp computed under ``floors`` (see ``shared_floors``): what a
    plan of several pipelines uses. The diagnostics are the report's own."""
    if report.context is None or report.window is None or \
            len(floors.output_floors) != len(report.steps):
        return report
    steps = [replace(s, output_floor=Term(f, None, "shared floor"))
             for s, f in zip(report.steps, floors.output_floors, strict=True)]
    ceiling = report.output_ceiling.value if report.output_ceiling else None
    values = compute_clamp(steps, context=report.context.value, window=report.window.value,
                           ceiling=ceiling, floor=floors.context_floor, target=floors.context)
    if values.context_after is not None and floors.context_reason and \
            floors.context is not None and values.context_after == floors.context:
        values = replace(values, context_reason=floors.context_reason)
    return replace(report, steps=steps, clamp=values,
                   context_floor=floor_below(report.context.value, floors.context_floor))


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


def _floor_setting(key: str, settings: dict[str, Setting],
                   config: LoadedConfig | None) -> Term | None:
    """A floor (``min_context_tokens``, ``min_output_tokens``) as set: in the pipeline's
    settings (merged along its extends chain), else in config.json; ``None`` when unset."""
    setting = settings.get(key)
    if setting is not None:
        return Term(int(setting.value), setting.location, f"settings.{key}", setting.depth > 0)
    cfg = config.config if config is not None else None
    value = getattr(cfg, key, None) if cfg is not None else None
    if config is not None and isinstance(value, int) and not isinstance(value, bool):
        return Term(value, config.location(key), f"config.json {key}")
    return None


def _context_floor(context: Term, settings: dict[str, Setting],
                   config: LoadedConfig | None) -> Term:
    """The lowest max_context_tokens a clamp may set, from the value as read (never from one
    a clamp lowered: the caller passes the original)."""
    set_floor = _floor_setting("min_context_tokens", settings, config)
    if set_floor is None:
        return Term(floor_below(context.value, None), None,
                    f"half of max_context_tokens {context.value}")
    return replace(set_floor, value=floor_below(context.value, set_floor.value))


def _output_floor(step: StepBudget, settings: dict[str, Setting], config: LoadedConfig | None,
                  ceiling: Term | None) -> Term:
    """The lowest output limit a clamp may set for ``step``: ``min_output_tokens``, default
    half of the step's limit (after the model's ceiling), never above that limit."""
    limit = step.output.value
    if ceiling is not None:
        limit = min(limit, ceiling.value)
    set_floor = _floor_setting("min_output_tokens", settings, config)
    if set_floor is None:
        key = "model_max_tokens" if step.output_source == "model_max_tokens" \
            else step.output_source
        return Term(floor_below(limit, None), None, f"half of {key} {limit}")
    return replace(set_floor, value=floor_below(limit, set_floor.value))


def _floor_advice(kind: str, floor: Term, step: StepBudget) -> tuple[str, int, str]:
    key = f"min_{kind}_tokens"
    if floor.source.startswith("settings."):
        return f"{kind} floor {floor.value} ({key})", floor.value, f"lower {key}"
    if floor.source.startswith("config.json"):
        return (f"{kind} floor {floor.value} (config.json {key})", floor.value,
                f"lower {key} in config.json")
    if kind == "context":
        return (f"context floor {floor.value} ({floor.source})", floor.value,
                f"lower max_context_tokens or set a lower {key}")
    limit = ("model_max_tokens in config.json" if step.output_source == "model_max_tokens"
             else f"the step's {step.output_source}")
    return (f"output floor {floor.value} ({floor.source})", floor.value,
            f"lower {limit} or set a lower {key}")


def _largest_term(step: StepBudget, window: int, context_floor: Term | None = None) -> str:
    """The largest term of a step that cannot fit, its share of the window, and what to
    change: ``history 15000 is 92% of the 16384 window: lower max_history_tokens``."""
    prompt = f" {os.path.basename(step.prompt_file)}" if step.prompt_file else ""
    candidates = [
        (f"system prompt {step.system_prompt.value}", step.system_prompt.value,
         f"shorten the system prompt{prompt}"),
        (f"template {step.template.value}", step.template.value,
         "shorten the step's user_parts.template"),
        (f"format overhead {step.format_overhead.value}", step.format_overhead.value,
         "lower format_overhead_tokens in config.json"),
        (f"history {step.history.value}", step.history.value,
         "lower max_history_tokens (or turn off use_history for this step)"
         if step.history.value else "lower max_history_tokens"),
    ]
    if context_floor is not None:
        candidates.append(_floor_advice("context", context_floor, step))
        if step.output_floor is not None:
            candidates.append(_floor_advice("output", step.output_floor, step))
    candidates.append((f"margin {step.margin.value}", step.margin.value,
                       "lower budget_safety_margin_tokens"))
    label, value, advice = max(candidates, key=lambda c: c[1])  # the first of equals
    percent = (value * 100 + window // 2) // window
    return f"{label} is {percent}% of the {window} window: {advice}"


def _unfit_message(label: str, step: StepBudget, window: int, context_floor: Term) -> str:
    """BL052 for a step that fits only below the clamp's floors."""
    out_floor = step.output_floor.value if step.output_floor is not None else 1
    total = (step.fixed.value + step.history.value + context_floor.value + out_floor
             + step.margin.value)
    return (f"{label} cannot fit the window of {window} tokens even at the clamp's floors:"
            f" fixed {step.fixed.value} + history {step.history.value} + context floor"
            f" {context_floor.value} + output floor {out_floor} + margin {step.margin.value}"
            f" = {total} > {window} (over by {total - window}); no clamp is planned for it;"
            f" {_largest_term(step, window, context_floor)}")


def _floor_related(context_floor: Term, step: StepBudget) -> tuple[Related, ...]:
    floors = [("min_context_tokens", context_floor), ("min_output_tokens", step.output_floor)]
    return tuple(Related(t.location, f"{key}: {t.value}{_fmt_inherited(t)}")
                 for key, t in floors if t is not None and t.location is not None)


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
        steps = [replace(s, output_floor=_output_floor(s, settings, config, ceiling))
                 for s in steps]
        floor_term = _context_floor(context, settings, config) if context else None
        floor = floor_term.value if floor_term else 0
        clamp = ClampValues()
        if context is not None and window is not None and steps:
            clamp = compute_clamp(steps, context=context.value, window=window.value,
                                  ceiling=ceiling.value if ceiling else None, floor=floor)
            self.contract(steps, policy, clamp, window, floor_term)
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
                 window: Term, context_floor: Term | None = None) -> None:
        outputs = {c.index: c for c in clamp.outputs}
        unfit = set(clamp.unfit_steps)
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
                         f" {s.margin.value} + 1); {_largest_term(s, window.value)}",
                         s.step, related, data)
                continue
            if s.fits:
                continue
            if i in unfit and context_floor is not None:
                self.add(where, Severity.ERROR, codes.CANNOT_FIT,
                         _unfit_message(label, s, window.value, context_floor), s.step,
                         related + _floor_related(context_floor, s), data)
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
