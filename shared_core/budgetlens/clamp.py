"""The clamp plan: the auto-clamp of a pipeline, as minimal text edits of its files.

``clamp_plan(report, files=...)`` turns ``report.clamp`` (what auto_clamp lowers, see
``contract.compute_clamp``) into changes, each a record {file, range, key, before, after,
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
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from budgetlens.contract import ClampValues, PipelineReport, StepBudget, compute_clamp
from budgetlens.files import FileSource, SourceError
from budgetlens.source import Position, Range, TextEdit, apply_text_edits
from budgetlens.yaml_source import YamlDocument, YamlPath, parse_yaml


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
    edits: tuple[TextEdit, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"file": self.file, "range": self.range.to_dict(), "key": self.key,
                "before": self.before, "after": self.after, "reason": self.reason,
                "step": self.step}


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

    def to_dict(self) -> dict[str, object]:
        return {"pipeline": self.pipeline, "changes": [c.to_dict() for c in self.changes],
                "notes": list(self.notes)}


def apply_edits(text: str, edits: list[TextEdit] | tuple[TextEdit, ...]) -> str:
    """Apply non-overlapping edits of one file to its text (``source.apply_text_edits``)."""
    return apply_text_edits(text, edits)


def apply_plan(plan: ClampPlan, files: FileSource) -> dict[str, str]:
    """The new text of every file the plan edits (nothing is written)."""
    return {f: apply_text_edits(files.read_text(Path(f)), plan.edits_for(f)) for f in plan.files}


# ------------------------------------------------------------------------- text helpers
@dataclass
class _File:
    path: str
    text: str
    doc: YamlDocument

    @property
    def newline(self) -> str:
        return "\r\n" if "\r\n" in self.text else "\n"

    def column(self, offset: int) -> int:
        return self.doc.index.position(offset).character

    def indent_unit(self) -> int:
        """The file's indentation step: how far a nested block key sits right of its parent."""
        steps: list[int] = []
        for path, span in self.doc.spans.items():
            if len(path) < 2 or span.key_start is None:
                continue
            parent = self.doc.span(path[:-1])
            if parent is None or parent.kind != "mapping" or parent.flow \
                    or parent.key_start is None:
                continue
            diff = self.column(span.key_start) - self.column(parent.key_start)
            if diff > 0:
                steps.append(diff)
        return min(steps) if steps else 2

    def line_end_after(self, offset: int) -> int:
        """End of the line holding the last non-blank character before ``offset``."""
        j = offset
        while j > 0 and self.text[j - 1] in " \t\r\n":
            j -= 1
        line = self.doc.index.position(max(j - 1, 0)).line
        return self.doc.index.line_end(line)

    def replace(self, path: YamlPath, new_text: str) -> TextEdit | None:
        span = self.doc.span(path)
        if span is None or span.kind != "scalar":
            return None
        return TextEdit(self.path, span.value, new_text)

    def insert_entry(self, mapping: YamlPath, key: str, value: int) -> TextEdit | None:
        """Add ``key: value`` to the mapping at ``mapping`` (which must exist)."""
        span = self.doc.span(mapping)
        node = self.doc.node(mapping)
        if span is None:
            return None
        nl = self.newline
        if span.kind == "mapping" and span.flow:
            j = span.end - 1
            if self.text[j:j + 1] != "}":
                return None
            k = j
            while k > span.start + 1 and self.text[k - 1] in " \t\r\n":
                k -= 1
            sep = ", " if isinstance(node, dict) and node else ""
            at = self.doc.index.position(k)
            return TextEdit(self.path, Range(at, at), f"{sep}{key}: {value}")
        if span.kind == "mapping" and isinstance(node, dict) and node:
            last = list(node)[-1]
            last_span = self.doc.span((*mapping, last))
            first_span = self.doc.span((*mapping, next(iter(node))))
            if last_span is None or first_span is None or first_span.key_start is None:
                return None
            indent = " " * self.column(first_span.key_start)
            end = _content_end(self.doc, (*mapping, last))
            at = self.doc.index.position(self.line_end_after(end))
            return TextEdit(self.path, Range(at, at), f"{nl}{indent}{key}: {value}")
        if span.kind == "scalar" and node is None:
            key_start = span.key_start
            base_col = self.column(key_start) if key_start is not None else 0
            indent = " " * (base_col + self.indent_unit())
            if span.start == span.end:  # "settings:" with nothing after it
                line = self.doc.index.position(key_start or span.start).line
                at = self.doc.index.position(self.doc.index.line_end(line))
                return TextEdit(self.path, Range(at, at), f"{nl}{indent}{key}: {value}")
            return TextEdit(self.path, span.value, f"{{{key}: {value}}}")
        return None

    def insert_top_level(self, block: list[str], flow_text: str) -> TextEdit | None:
        """Insert a top-level entry: after ``extends`` if there is one, else first."""
        root = self.doc.span(())
        node = self.doc.value
        nl = self.newline
        if root is None or not isinstance(node, dict):
            return None
        if root.kind == "mapping" and root.flow:
            j = root.end - 1
            k = j
            while k > root.start + 1 and self.text[k - 1] in " \t\r\n":
                k -= 1
            at = self.doc.index.position(k)
            return TextEdit(self.path, Range(at, at), (", " if node else "") + flow_text)
        first_key = self.doc.span((next(iter(node)),)) if node else None
        col = self.column(first_key.key_start) if first_key and first_key.key_start is not None \
            else 0
        lines = [" " * col + line for line in block]
        ext = self.doc.span(("extends",))
        if ext is not None:
            at = self.doc.index.position(self.line_end_after(ext.end))
            return TextEdit(self.path, Range(at, at), nl + nl.join(lines))
        if first_key is not None and first_key.key_start is not None:
            line = self.doc.index.position(first_key.key_start).line
            at = self.doc.index.position(self.doc.index.offset(Position(line, 0)))
            return TextEdit(self.path, Range(at, at), nl.join(lines) + nl)
        return None


def _content_end(doc: YamlDocument, path: YamlPath) -> int:
    """Where the text of the value at ``path`` really ends.

    A block collection's node ends where the next token starts, after any comment lines
    that follow it; its content ends with its last scalar (or closing bracket).
    """
    span = doc.span(path)
    if span is None:
        return 0
    if span.kind == "scalar" or span.flow:
        return span.end
    n = len(path)
    ends = [s.end for p, s in doc.spans.items()
            if p[:n] == path and len(p) > n and (s.kind == "scalar" or s.flow)]
    return max(ends, default=span.end)


def _load(path: str, files: FileSource) -> _File | None:
    try:
        text = files.read_text(Path(path))
    except SourceError:
        return None
    doc, _ = parse_yaml(text)
    if doc is None:
        return None
    return _File(path, text, doc)


def _number_at(f: _File, path: YamlPath) -> int | None:
    value = f.doc.node(path)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# ---------------------------------------------------------------------------- the plan
def _step_output_edit(f: _File, step: StepBudget, after: int) -> TextEdit | None:
    base: YamlPath = ("steps", step.index)
    if step.output_source in ("max_output_tokens", "max_tokens"):
        path = (*base, step.output_source)
        if _number_at(f, path) != step.output.value:
            return None
        return f.replace(path, str(after))
    return f.insert_entry(base, "max_output_tokens", after)


def _copied_steps_block(owner: _File, child: _File, edits: list[TextEdit]) -> str | None:
    """The owner's ``steps`` entry, edited, as text to append to the child."""
    new_owner = apply_text_edits(owner.text, edits)
    doc, _ = parse_yaml(new_owner)
    if doc is None:
        return None
    span = doc.span(("steps",))
    if span is None or span.key_start is None:
        return None
    key_pos = doc.index.position(span.key_start)
    start = span.key_start - key_pos.character
    end = _content_end(doc, ("steps",))
    while end > start and new_owner[end - 1] in " \t\r\n":
        end -= 1
    block = new_owner[start:end]
    shift = 0
    root = child.doc.value
    if isinstance(root, dict) and root:
        first = child.doc.span((next(iter(root)),))
        if first is not None and first.key_start is not None:
            shift = child.column(first.key_start) - key_pos.character
    lines = block.replace("\r\n", "\n").split("\n")
    if shift > 0:
        lines = [(" " * shift + ln) if ln.strip() else ln for ln in lines]
    elif shift < 0:
        lines = [ln[-shift:] if ln[:-shift].strip() == "" else ln for ln in lines]
    return child.newline.join(lines)


def clamp_plan(report: PipelineReport, *, files: FileSource,
               edit_parent: bool = False) -> ClampPlan:
    """The changes that make ``report``'s pipeline fit, as minimal text edits.

    Empty when the pipeline fits, or when its budget is unknown (errors such as a missing
    ``max_context_tokens`` must be fixed first); ``notes`` says why a value could not be
    clamped (for instance a file that changed since the report was made).
    """
    plan = ClampPlan(report.pipeline)
    values = report.clamp
    if values.empty or report.context is None or report.window is None:
        return plan
    loaded: dict[str, _File | None] = {}

    def get(path: str) -> _File | None:
        if path not in loaded:
            loaded[path] = _load(path, files)
        return loaded[path]

    child = get(report.pipeline)
    if child is None:
        plan.notes.append(f"{report.pipeline}: cannot be read as YAML; nothing clamped")
        return plan
    # 1. max_context_tokens
    if values.context_after is not None and values.context_before is not None:
        ctx = report.context
        reason = values.context_reason or (
            f"lowered so that every step fits the window of {report.window.value} tokens"
            f" (not below min_context_tokens={report.context_floor})")
        if ctx.location is not None and (not ctx.inherited or edit_parent):
            target = get(ctx.location.file)
            path: YamlPath = ("settings", "max_context_tokens")
            edit = target.replace(path, str(values.context_after)) if target else None
            if target is None or edit is None or _number_at(target, path) != ctx.value:
                plan.notes.append(f"{ctx.location.file}: max_context_tokens changed since the"
                                  " check; run it again")
            else:
                plan.changes.append(ClampChange(
                    target.path, edit.range, "settings.max_context_tokens",
                    values.context_before, values.context_after, reason, None, (edit,)))
        else:
            settings_span = child.doc.span(("settings",))
            if settings_span is not None:
                edit = child.insert_entry(("settings",), "max_context_tokens",
                                          values.context_after)
            else:
                unit = " " * child.indent_unit()
                edit = child.insert_top_level(
                    ["settings:", f"{unit}max_context_tokens: {values.context_after}"],
                    f"settings: {{max_context_tokens: {values.context_after}}}")
            if edit is None:
                plan.notes.append(f"{child.path}: no place to add settings.max_context_tokens")
            else:
                origin = ctx.location.file if ctx.location else "a parent"
                plan.changes.append(ClampChange(
                    child.path, edit.range, "settings.max_context_tokens",
                    values.context_before, values.context_after,
                    reason + f"; overrides the value inherited from {origin}", None, (edit,)))
    # 2. output limits
    copied: list[tuple[StepBudget, int, str]] = []
    for oc in values.outputs:
        step = report.steps[oc.index]
        key = f"steps[{step.index}].max_output_tokens" if step.output_source != "max_tokens" \
            else f"steps[{step.index}].max_tokens"
        if step.inherited and not edit_parent:
            copied.append((step, oc.after, oc.reason))
            continue
        owner = get(step.defined_in)
        edit = _step_output_edit(owner, step, oc.after) if owner else None
        if owner is None or edit is None:
            plan.notes.append(f"{step.defined_in}: step {step.step!r} changed since the check;"
                              " run it again")
            continue
        plan.changes.append(ClampChange(owner.path, edit.range, key, oc.before, oc.after,
                                        oc.reason, step.step, (edit,)))
    if copied:
        owner = get(copied[0][0].defined_in)
        owner_edits = [(_step_output_edit(owner, s, after) if owner else None)
                       for s, after, _ in copied]
        block = (_copied_steps_block(owner, child, [e for e in owner_edits if e])
                 if owner and all(owner_edits) else None)
        if block is None:
            plan.notes.append(f"{child.path}: could not copy the inherited steps to lower their"
                              " output limits; use edit_parent")
        else:
            nl = child.newline
            at = child.doc.index.position(len(child.text.rstrip(" \t\r\n")))
            edit = TextEdit(child.path, Range(at, at), f"{nl}{nl}{block}")
            for s, after, reason in copied:
                plan.changes.append(ClampChange(
                    child.path, edit.range, f"steps[{s.index}].{_output_key(s)}",
                    s.output.value, after,
                    reason + f"; the steps of {s.defined_in} are copied here to override it",
                    s.step, (edit,)))
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
    return "max_tokens" if step.output_source == "max_tokens" else "max_output_tokens"
