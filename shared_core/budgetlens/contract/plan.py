"""The clamp plan: the auto-clamp of a pipeline, as minimal text edits of its files.

``clamp_plan(report, files=...)`` turns ``report.clamp`` (what auto_clamp lowers, see
``contract.clamp.compute_clamp``) into changes, each a record {file, range, key, before, after,
reason} with the text edits that make it. Only the numbers change; everything else stays
byte for byte (comments, quotes, key order, indentation, line endings). Where a value must
be added, a line is inserted in the file's own indentation style (a missing ``settings:``
block is created).

A value inherited from a parent is by default overridden in the child: a lower
``max_context_tokens`` goes into the child's ``settings``, and a lower output limit of an
inherited step copies the parent's ``steps`` block into the child with the number changed,
so the parent and its other children stay as they are. With ``edit_parent=True`` the file
that sets the value is edited instead. Applying a plan and checking again gives no contract
violation and an empty plan.

Every edit is verified before it leaves the core (``yamldoc.verify``): each file's edits are
applied in memory and parsed again, and the data must equal the original's with exactly the
planned values set; the pipeline must then use them. A replacement covers a number's own
characters only, so anchors (``&ctx 8000``), tags (``!!int``), quotes, commas and comments
stay. One scalar shared through an anchor, an alias or a ``<<`` merge key gets one edit, the
lowest value its users need, when every other user is a step's output limit, the same entry
merged from a defaults mapping, or a top-level holder of an alias the contract does not
read; otherwise (an anchor outside the contract's blocks read through an alias, a value
nested elsewhere such as ``retry.timeout_ms``) that file is not edited and a note names the
anchor's line. Inherited steps whose text uses aliases defined elsewhere are copied with
their values written out. A file whose edits fail any check gets none, and a note says where
to change it by hand.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from budgetlens.contract.clamp import compute_clamp
from budgetlens.contract.enums import (
    OutputSource,
)
from budgetlens.contract.pipeline import load_chain, merged_settings, steps_owner
from budgetlens.contract.results import (
    ClampValues,
    PipelineReport,
    StepBudget,
)
from budgetlens.files import FileSource, OverlayFiles
from budgetlens.source import Range, TextEdit, apply_text_edits
from budgetlens.yamldoc.edit import YamlText, edited_block, load_yaml_text, number_at
from budgetlens.yamldoc.parse import (
    YamlPath,
)
from budgetlens.yamldoc.verify import (
    Planned,
    assert_disjoint,
    expected_data,
    path_text,
    verify_file_edits,
)


@dataclass(frozen=True)
class ClampChange:
    """One clamped value: where, what, before and after, why, and the edits that do it.

    Several changes may share one edit (the output limits of inherited steps are all in
    the one copied ``steps`` block); ``ClampPlan.edits`` lists each edit once.
    """

    file: str
    range: Range
    key: str
    before: int | None
    after: int
    reason: str
    step: str | None = None
    edits: tuple[TextEdit, ...] = field(default=(), metadata={"json": False})
    path: YamlPath = field(default=(), metadata={"json": False})
    """Where the value sits in the loaded data of ``file``."""


@dataclass(frozen=True)
class ClampPlan:
    pipeline: str
    changes: list[ClampChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # why something could not be clamped

    @property
    def empty(self) -> bool:
        return not self.changes

    @property
    def edits(self) -> list[TextEdit]:
        seen: set[int] = set()
        out: list[TextEdit] = []
        for change in self.changes:
            for edit in change.edits:
                if id(edit) not in seen:
                    seen.add(id(edit))
                    out.append(edit)
        return out

    @property
    def files(self) -> list[str]:
        return sorted({e.file for e in self.edits})

    def edits_for(self, file: str) -> list[TextEdit]:
        return [e for e in self.edits if e.file == file]


def apply_edits(text: str, edits: list[TextEdit] | tuple[TextEdit, ...]) -> str:
    """Apply non-overlapping edits of one file to its text (``source.apply_text_edits``)."""
    return apply_text_edits(text, edits)


def apply_plan(plan: ClampPlan, files: FileSource) -> dict[str, str]:
    """The new text of every file the plan edits (nothing is written)."""
    return {f: apply_text_edits(files.read_text(Path(f)), plan.edits_for(f)) for f in plan.files}


def _output_path_key(path: YamlPath) -> bool:
    return (len(path) == 3 and path[0] == "steps" and isinstance(path[1], int)
            and path[2] in ("max_output_tokens", "max_tokens"))


_CONTRACT_BLOCKS = ("settings", "steps", "extends")


def _key_span(f: YamlText, path: YamlPath) -> tuple[int, int] | None:
    span = f.doc.span(path)
    if span is None or span.key_start is None or span.key_end is None:
        return None
    return span.key_start, span.key_end


def _home_key(f: YamlText, users: list[YamlPath]) -> tuple[int, int] | None:
    """The key a shared scalar is written under (its anchor's key): the last key before the
    scalar in the text. A ``<<`` merge copies that key; an alias has its own key, later."""
    span = f.doc.span(users[0]) if users else None
    keys = [k for k in (_key_span(f, u) for u in users)
            if k is not None and span is not None and k[1] <= span.start]
    return max(keys, key=lambda k: k[1]) if keys else None


def _fit_safe(f: YamlText, path: YamlPath, wants: set[YamlPath], users: list[YamlPath]
              ) -> bool:
    """Whether lowering the value at ``path`` (a second user of a shared scalar) keeps the
    pipeline fitting and its meaning: a step's output limit only makes the step smaller; the
    same entry merged (``<<``) into the contract's block from a defaults mapping
    (``x-d: &d {max_context_tokens: 3800}``) is the value itself; a top-level key the
    contract does not read (``x-c: *c``) is only a holder, unless the scalar is written
    there and the contract reads it through an alias: a value defined outside the
    contract's blocks (``defaults: &lim 990``) may be read by anything, so it is not
    lowered. Any other value (``retry.timeout_ms: *lim``, another setting) is not."""
    if _output_path_key(path):
        return True
    key = _key_span(f, path)
    want_keys = {_key_span(f, w) for w in wants}
    if key is not None and key in want_keys:
        return True  # one entry merged into the contract's block
    if len(path) != 1 or path[0] in _CONTRACT_BLOCKS:
        return False
    home = _home_key(f, users)
    return key != home or home in want_keys


def _change_key(path: YamlPath) -> str:
    if _output_path_key(path):
        return f"steps[{path[1]}].{path[2]}"
    return path_text(path)


def _step_name(f: YamlText, index: int) -> str | None:
    step = f.doc.node(("steps", index))
    if isinstance(step, dict):
        for k in ("id", "name"):
            if isinstance(step.get(k), str):
                return str(step[k])
    return None


# ---------------------------------------------------------------------------- the plan
@dataclass
class _Want:
    """A value the plan sets: ``after`` at ``path`` of a file."""

    seq: int
    path: YamlPath
    after: int
    key: str
    before: int | None
    reason: str
    step: str | None = None


@dataclass
class _Insert:
    at: int
    text: str
    wants: list[_Want]
    planned: list[Planned]
    end: int | None = None  # replaces ``at..end`` (an empty value ``~``) instead


@dataclass
class _FilePlan:
    file: YamlText
    replaces: dict[tuple[int, int], list[_Want]] = field(default_factory=dict)
    inserts: list[_Insert] = field(default_factory=list)


class _Builder:
    def __init__(self, plan: ClampPlan) -> None:
        self.plan = plan
        self.files: dict[str, _FilePlan] = {}
        self.seq = 0

    def want(self, path: YamlPath, after: int, key: str, before: int | None, reason: str,
             step: str | None = None) -> _Want:
        self.seq += 1
        return _Want(self.seq, path, after, key, before, reason, step)

    def of(self, f: YamlText) -> _FilePlan:
        return self.files.setdefault(f.path, _FilePlan(f))

    def note(self, f: YamlText, path: YamlPath | None, text: str) -> None:
        span = f.doc.span(path) if path is not None else None
        where = f":{f.line(span.start)}" if span is not None else ""
        self.plan.notes.append(f"{f.path}{where}: {text}")

    def replace(self, f: YamlText, want: _Want) -> None:
        where = f.scalar_range(want.path)
        if isinstance(where, str):
            self.note(f, want.path, f"{want.key} not lowered to {want.after}: {where};"
                                    " change it by hand")
            return
        self.of(f).replaces.setdefault(where, []).append(want)

    def insert(self, f: YamlText, at_text: tuple[int, str] | tuple[int, str, int],
               wants: list[_Want], planned: list[Planned]) -> None:
        end = at_text[2] if len(at_text) == 3 else None
        self.of(f).inserts.append(_Insert(at_text[0], at_text[1], wants, planned, end))

    @staticmethod
    def by_hand(f: YamlText, changes: list[tuple[float, ClampChange]]) -> str:
        out = []
        for _, c in changes:
            span = f.doc.span(c.path) or f.doc.span(c.path[:-1]) or f.doc.span(())
            line = f.line(span.start) if span is not None else 1
            out.append(f"{c.key} to {c.after} (line {line})")
        return ", ".join(out)

    # ---- the checks every file's edits pass before they leave the core
    def finish(self) -> list[ClampChange]:
        out: list[tuple[float, ClampChange]] = []
        for fp in self.files.values():
            out.extend(self.file_changes(fp))
        out.sort(key=lambda sc: sc[0])
        return [c for _, c in out]

    def file_changes(self, fp: _FilePlan) -> list[tuple[float, ClampChange]]:
        """The changes of one file, each with its order; none when any edit is refused or
        the file's edits do not verify (a file's edits go all or nothing)."""
        f = fp.file
        acc = _Edits()
        refused = False
        for (start, end), wants in fp.replaces.items():
            refused = not self.replace_shared(f, start, end, wants, acc) or refused
        for ins in fp.inserts:
            edit = f.edit(ins.at, ins.at if ins.end is None else ins.end, ins.text)
            acc.edits.append(edit)
            acc.planned.extend(ins.planned)
            for w in ins.wants:
                acc.changes.append((w.seq, ClampChange(
                    f.path, edit.range, w.key, w.before, w.after, w.reason, w.step,
                    (edit,), w.path)))
        if refused:
            if acc.changes:
                self.plan.notes.append(f"{f.path}: not edited (a file's edits go all or"
                                       f" nothing); set {self.by_hand(f, acc.changes)} by hand")
            return []
        why = verify_file_edits(f.doc, acc.edits, acc.planned)
        if why is not None:
            self.plan.notes.append(f"{f.path}: not edited: {why}; set"
                                   f" {self.by_hand(f, acc.changes)} by hand")
            return []
        return acc.changes

    def replace_shared(self, f: YamlText, start: int, end: int, wants: list[_Want],
                       acc: _Edits) -> bool:
        """One replacement of the scalar at ``start..end``, set to the lowest value its
        wants need, with a change for every other user of the scalar; False (and notes) when
        another user could not take the lower value."""
        value = min(w.after for w in wants)
        mine = {w.path for w in wants}
        users = f.users(wants[0].path)
        others = [u for u in users if u not in mine]
        bad = [u for u in others if not _fit_safe(f, u, mine, users)]
        source = f.anchor_text(wants[0].path)
        if bad:
            for w in wants:
                self.note(f, w.path, f"{w.key} not lowered to {w.after}: the value"
                                     f" comes from {source}, which also sets"
                                     f" {path_text(bad[0])}; change it there by hand")
            return False
        edit = f.edit(start, end, str(value))
        acc.edits.append(edit)
        shared = (f"; one value from {source} feeds "
                  + ", ".join(_change_key(p) for p in [*mine, *others])
                  + f": set to {value}, the lowest they need") if others or \
            len(wants) > 1 else ""
        for w in wants:
            acc.changes.append((w.seq, ClampChange(
                f.path, edit.range, w.key, w.before, value, w.reason + shared, w.step,
                (edit,), w.path)))
            acc.planned.append(Planned(w.path, value))
        for u in others:
            before = f.doc.node(u)
            acc.changes.append((wants[0].seq + 0.5, ClampChange(
                f.path, edit.range, _change_key(u),
                before if isinstance(before, int) else None, value,
                f"shares {source} with {wants[0].key}{shared}",
                _step_name(f, u[1]) if _output_path_key(u) and isinstance(u[1], int)
                else None, (edit,), u)))
            acc.planned.append(Planned(u, value))
        return True


@dataclass
class _Edits:
    """What a file's plan has so far: its edits, the values they set, and the changes."""

    edits: list[TextEdit] = field(default_factory=list)
    planned: list[Planned] = field(default_factory=list)
    changes: list[tuple[float, ClampChange]] = field(default_factory=list)


_STEP_OUTPUTS = (OutputSource.MAX_OUTPUT_TOKENS, OutputSource.MAX_TOKENS)


def _output_want(b: _Builder, step: StepBudget, after: int, reason: str, *,
                 copied: bool = False) -> _Want:
    key = _output_key(step) if step.output_source in _STEP_OUTPUTS else "max_output_tokens"
    extra = f"; the steps of {step.defined_in} are copied here to override it" if copied else ""
    return b.want(("steps", step.index, key), after, f"steps[{step.index}].{key}",
                  step.output.value, reason + extra, step.step)


def _plan_output(b: _Builder, owner: YamlText, step: StepBudget, after: int, reason: str) -> None:
    want = _output_want(b, step, after, reason)
    if step.output_source in _STEP_OUTPUTS:
        if number_at(owner, want.path) != step.output.value:
            b.note(owner, ("steps", step.index), f"step {step.step!r} changed since the check;"
                                                 " run it again")
            return
        b.replace(owner, want)
        return
    at = owner.insert_entry(("steps", step.index), "max_output_tokens", after)
    if at is None:
        b.note(owner, ("steps", step.index), f"step {step.step!r}: no place to add"
                                             f" max_output_tokens: {after}; add it by hand")
        return
    b.insert(owner, at, [want], [Planned(want.path, after)])


def _copy_text(owner: YamlText, child: YamlText, values: dict[int, int],
               steps_data: list[Any]) -> tuple[list[str], dict[YamlPath, int]] | None:
    """The owner's ``steps`` entry as text with the new output limits, and the values it
    sets (a scalar shared by several steps is set once, to the lowest of their limits)."""
    groups: dict[tuple[int, int], list[YamlPath]] = {}
    inserts: list[tuple[int, str] | tuple[int, str, int]] = []
    inserted: list[int] = []
    for index, after in values.items():
        step = steps_data[index]
        key = "max_output_tokens" if "max_output_tokens" in step else \
            "max_tokens" if "max_tokens" in step else None
        if key is None:
            at = owner.insert_entry(("steps", index), "max_output_tokens", after)
            if at is None:
                return None
            inserts.append(at)
            inserted.append(index)
            continue
        where = owner.scalar_range(("steps", index, key))
        if isinstance(where, str):
            return None
        groups.setdefault(where, []).append(("steps", index, key))
    edits: list[TextEdit] = []
    sets: dict[YamlPath, int] = {}
    for (start, end), paths in groups.items():
        users = [u for u in owner.users(paths[0]) if u[:1] == ("steps",)]
        if not all(_output_path_key(u) for u in users):
            return None
        value = min(values[int(p[1])] for p in paths)
        edits.append(owner.edit(start, end, str(value)))
        sets.update({u: value for u in users})
    edits.extend(owner.edit(ins[0], ins[2] if len(ins) == 3 else ins[0], ins[1])
                 for ins in inserts)
    for index in inserted:
        sets[("steps", index, "max_output_tokens")] = values[index]
    lines = edited_block(owner.text, edits, "steps")
    return None if lines is None else (lines, sets)


def _copy_options(child: YamlText, owner: YamlText, values: dict[int, int],
                  steps_data: list[Any]) -> list[tuple[tuple[int, str], dict[YamlPath, int]]]:
    """Ways to copy the owner's steps into the child with the new output limits, best first:
    the owner's text with its numbers changed, then the resolved values written out as one
    flow line (no alias of the parent can be left undefined). Each: the insertion and the
    values it sets."""
    options: list[tuple[tuple[int, str], dict[YamlPath, int]]] = []
    text = _copy_text(owner, child, values, steps_data)
    if text is not None:
        at = child.append_top_level(text[0], None)
        if at is not None:
            options.append((at, text[1]))
    sets_plain: dict[YamlPath, int] = {}
    for index, after in values.items():
        step = steps_data[index]
        key = "max_output_tokens" if "max_output_tokens" in step or "max_tokens" not in step \
            else "max_tokens"
        sets_plain[("steps", index, key)] = after
    data = expected_data({"steps": steps_data}, [Planned(p, v) for p, v in sets_plain.items()])
    if data is not None:
        flow = "steps: " + json.dumps(data["steps"], ensure_ascii=False, separators=(", ", ": "))
        at = child.append_top_level([flow], flow)
        if at is not None:
            options.append((at, sets_plain))
    return options


def _copied_wants(b: _Builder, owner: YamlText, copied: list[tuple[StepBudget, int, str]],
                  sets: dict[YamlPath, int]) -> list[_Want]:
    """The values a copy of the owner's steps sets: the clamped limits, and the limits of
    other steps that share one scalar with them."""
    wants: list[_Want] = []
    for s, _after, reason in copied:
        path = next(p for p in sets if p[1] == s.index)
        w = _output_want(b, s, sets[path], reason, copied=True)
        wants.append(replace(w, path=path, key=_change_key(path)))
    for p, v in sets.items():
        if all(w.path != p for w in wants) and isinstance(p[1], int):
            before = owner.doc.node(p)
            wants.append(b.want(p, v, _change_key(p), before if isinstance(before, int)
                                else None, f"shares one value of {owner.path} with"
                                " another step's limit", _step_name(owner, p[1])))
    return wants


def _plan_copied_steps(b: _Builder, child: YamlText, owner: YamlText,
                       copied: list[tuple[StepBudget, int, str]]) -> None:
    steps_data = owner.doc.node(("steps",))
    values = {s.index: after for s, after, _ in copied}
    if not isinstance(steps_data, list) or not all(
            0 <= i < len(steps_data) and isinstance(steps_data[i], dict) for i in values):
        _copy_refused(b, child, owner, copied)
        return
    for at, sets in _copy_options(child, owner, values, steps_data):
        new_steps = expected_data({"steps": steps_data},
                                  [Planned(p, v) for p, v in sets.items()])
        if new_steps is None:
            continue
        planned = [Planned(("steps",), new_steps["steps"])]
        if verify_file_edits(child.doc, [child.edit(at[0], at[0], at[1])], planned) is not None:
            continue
        b.insert(child, at, _copied_wants(b, owner, copied, sets), planned)
        return
    _copy_refused(b, child, owner, copied)


def _copy_refused(b: _Builder, child: YamlText, owner: YamlText,
                  copied: list[tuple[StepBudget, int, str]]) -> None:
    limits = ", ".join(f"step {s.step!r} to {after}" for s, after, _ in copied)
    b.note(owner, ("steps",), f"the output limits of {child.path} come from these steps;"
                              f" they could not be copied into it to override them: lower"
                              f" {limits} here by hand, or use edit_parent")


def _effective_problems(report: PipelineReport, plan: ClampPlan, files: FileSource,
                        texts: dict[str, str]) -> dict[str, str]:
    """Files whose planned values would not be the ones the pipeline then uses, and why:
    the re-check that the targeted violation is gone."""
    chain = load_chain(report.pipeline, OverlayFiles(files, texts), root=None)
    settings = merged_settings(chain)
    owner = steps_owner(chain)
    bad: dict[str, str] = {}
    for c in plan.changes:
        if c.path == ("settings", "max_context_tokens") and c.step is None:
            got = settings.get("max_context_tokens")
            if got is None or got.value != c.after:
                bad.setdefault(c.file, f"the pipeline would still use max_context_tokens="
                                       f"{got.value if got else None}")
        elif _output_path_key(c.path) and owner is not None and owner.model is not None \
                and owner.model.steps is not None and os.path.normpath(owner.path) == \
                os.path.normpath(c.file) and isinstance(c.path[1], int):
            step = owner.model.steps[c.path[1]]
            got_out = step.max_output_tokens if step.max_output_tokens is not None \
                else step.max_tokens
            if got_out is not None and got_out > c.after:
                bad.setdefault(c.file, f"step {c.step!r} would still use an output limit of"
                                       f" {got_out}")
    return bad


class _Loaded:
    """The files a plan reads, each read and parsed once (``None``: unreadable)."""

    def __init__(self, files: FileSource) -> None:
        self.source = files
        self.files: dict[str, YamlText | None] = {}

    def get(self, path: str) -> YamlText | None:
        if path not in self.files:
            self.files[path] = load_yaml_text(path, self.source)
        return self.files[path]


def _plan_context(b: _Builder, child: YamlText, loaded: _Loaded, report: PipelineReport,
                  edit_parent: bool) -> None:
    """Lower ``max_context_tokens`` where it is set, else add an override to the child."""
    values, ctx = report.clamp, report.context
    if values.context_after is None or values.context_before is None or ctx is None:
        return
    window = report.window.value if report.window else 0
    reason = values.context_reason or (
        f"lowered so that every step fits the window of {window} tokens"
        f" (not below min_context_tokens={report.context_floor})")
    path: YamlPath = ("settings", "max_context_tokens")
    if ctx.location is not None and (not ctx.inherited or edit_parent):
        target = loaded.get(ctx.location.file)
        if target is None or number_at(target, path) != ctx.value:
            b.plan.notes.append(f"{ctx.location.file}: max_context_tokens changed since the"
                                " check; run it again")
        else:
            b.replace(target, b.want(path, values.context_after, "settings.max_context_tokens",
                                     values.context_before, reason))
        return
    if child.doc.span(("settings",)) is not None:
        at = child.insert_entry(("settings",), "max_context_tokens", values.context_after)
    else:
        unit = " " * child.indent_unit()
        at = child.insert_top_level(
            ["settings:", f"{unit}max_context_tokens: {values.context_after}"],
            f"settings: {{max_context_tokens: {values.context_after}}}")
    if at is None:
        b.plan.notes.append(f"{child.path}: no place to add settings.max_context_tokens:"
                            f" {values.context_after}; add it by hand")
        return
    origin = ctx.location.file if ctx.location else "a parent"
    want = b.want(path, values.context_after, "settings.max_context_tokens",
                  values.context_before, reason + f"; overrides the value inherited from {origin}")
    b.insert(child, at, [want], [Planned(path, values.context_after)])


def _plan_outputs(b: _Builder, child: YamlText, loaded: _Loaded, report: PipelineReport,
                  edit_parent: bool) -> None:
    """Lower each clamped output limit where it is set; inherited steps are copied into the
    child (unless ``edit_parent``)."""
    copied: list[tuple[StepBudget, int, str]] = []
    for oc in report.clamp.outputs:
        step = report.steps[oc.index]
        if step.inherited and not edit_parent:
            copied.append((step, oc.after, oc.reason))
            continue
        owner = loaded.get(step.defined_in)
        if owner is None:
            b.plan.notes.append(f"{step.defined_in}: step {step.step!r} changed since the"
                                " check; run it again")
            continue
        _plan_output(b, owner, step, oc.after, oc.reason)
    if not copied:
        return
    owner = loaded.get(copied[0][0].defined_in)
    if owner is None:
        b.plan.notes.append(f"{child.path}: could not copy the inherited steps to lower their"
                            " output limits; use edit_parent")
    else:
        _plan_copied_steps(b, child, owner, copied)


def _recheck(report: PipelineReport, plan: ClampPlan, loaded: _Loaded) -> None:
    """Drop the changes of every file whose planned values the pipeline would then not use,
    with a note saying what to set by hand."""
    texts = {f: apply_text_edits(lf.text, plan.edits_for(f))
             for f in plan.files if (lf := loaded.files.get(f)) is not None}
    if not texts:
        return
    for file, why in _effective_problems(report, plan, loaded.source, texts).items():
        lf = loaded.files.get(file)
        mine = [(0.0, c) for c in plan.changes if c.file == file]
        by_hand = _Builder.by_hand(lf, mine) if lf is not None else \
            ", ".join(f"{c.key} to {c.after}" for _, c in mine)
        plan.notes.append(f"{file}: not edited: {why}; set {by_hand} by hand")
        plan.changes[:] = [c for c in plan.changes if c.file != file]


def clamp_plan(report: PipelineReport, *, files: FileSource,
               edit_parent: bool = False) -> ClampPlan:
    """The changes that make ``report``'s pipeline fit, as minimal verified text edits.

    Empty when the pipeline fits, or when its budget is unknown (errors such as a missing
    ``max_context_tokens`` must be fixed first); ``notes`` says why a value could not be
    clamped (a file that changed since the report was made, a shared anchor whose other
    users would change, an edit that would not verify) and where to change it by hand.
    Every file's edits are applied in memory and re-parsed before they are offered: exactly
    the planned values change, and the pipeline then uses them.
    """
    plan = ClampPlan(report.pipeline)
    if report.clamp.empty or report.context is None or report.window is None:
        return plan
    loaded = _Loaded(files)
    child = loaded.get(report.pipeline)
    if child is None:
        plan.notes.append(f"{report.pipeline}: cannot be read as YAML; nothing clamped")
        return plan
    b = _Builder(plan)
    _plan_context(b, child, loaded, report, edit_parent)  # 1. max_context_tokens
    _plan_outputs(b, child, loaded, report, edit_parent)  # 2. output limits
    plan.changes.extend(b.finish())
    _recheck(report, plan, loaded)  # 3. the re-check: the pipeline uses the planned values
    assert_disjoint(plan.edits)
    return plan


def context_clamp_plan(report: PipelineReport, *, files: FileSource,
                       edit_parent: bool = False) -> ClampPlan:
    """Only the ``max_context_tokens`` change of ``clamp_plan`` (empty when the plan does
    not lower the context): the editor's "clamp max_context_tokens" quick fix."""
    return clamp_plan(replace(report, clamp=replace(report.clamp, outputs=())), files=files,
                      edit_parent=edit_parent)


def output_clamp_plan(report: PipelineReport, step_index: int, *, files: FileSource,
                      edit_parent: bool = False) -> ClampPlan:
    """Lower only the output limit of ``report.steps[step_index]``, the context held where it
    is: the editor's "clamp this step's output" quick fix. Empty when lowering that output
    alone cannot make the step fit (the context must come down first) or it already fits.
    """
    if report.context is None or report.window is None:
        return ClampPlan(report.pipeline)
    values = compute_clamp(report.steps, context=report.context.value,
                           window=report.window.value,
                           ceiling=report.output_ceiling.value if report.output_ceiling
                           else None, floor=report.context.value)
    mine = tuple(oc for oc in values.outputs if oc.index == step_index)
    if values.context_after is not None or not mine:
        return ClampPlan(report.pipeline)
    return clamp_plan(replace(report, clamp=ClampValues(outputs=mine)), files=files,
                      edit_parent=edit_parent)


def _output_key(step: StepBudget) -> str:
    return "max_tokens" if step.output_source is OutputSource.MAX_TOKENS else "max_output_tokens"
