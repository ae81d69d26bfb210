"""Property tests of the clamp on generated pipelines (one file, or a child and its parent).

For every generated workspace whose steps can fit at all: after applying the clamp plan no
contract violation remains, a second plan is empty, and the edits changed nothing but
numbers and inserted override lines.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from budgetlens.contract.check import check_pipeline
from budgetlens.contract.plan import apply_plan, clamp_plan
from budgetlens.contract.results import CheckOptions
from budgetlens.files import DiskFiles
from budgetlens.serialize import to_jsonable
from budgetlens.source import LineIndex, TextEdit
from tests.core.contract.helpers import make_workspace

WORDS = ["budget", "token", "context", "window", "answer", "the", "of", "予算", "🚀", "JSON"]
TEMPLATES = [None, "Q: {question}", "Use {{braces}} for {x}", "A\\nB {a} {b}"]
SETTING_KEYS = ("max_context_tokens", "max_history_tokens", "budget_safety_margin_tokens",
                "min_context_tokens")


@dataclass
class StepSpec:
    use_history: bool
    output_key: str | None  # max_output_tokens | max_tokens | None (config default)
    output: int
    template: str | None
    flow: bool


@st.composite
def step_specs(draw: Any) -> StepSpec:
    return StepSpec(use_history=draw(st.booleans()),
                    output_key=draw(st.sampled_from(["max_output_tokens", "max_tokens", None])),
                    output=draw(st.integers(1, 8000)),
                    template=draw(st.sampled_from(TEMPLATES)),
                    flow=draw(st.booleans()))


@dataclass
class Workspace:
    window: int
    model_max_tokens: int
    ceiling: int | None
    system: str
    settings: dict[str, int]
    placement: dict[str, str]  # key -> "base" | "child" | "both"
    steps: list[StepSpec]
    steps_in: str  # "base" | "child"
    two_files: bool
    indent: int
    crlf: bool
    flow_settings: bool
    child_settings_block: bool
    edit_parent: bool
    comments: bool


@st.composite
def workspaces(draw: Any) -> Workspace:
    window = draw(st.integers(1500, 16000))
    two = draw(st.booleans())
    settings_values = {
        "max_context_tokens": draw(st.integers(window // 3, window)),
        "max_history_tokens": draw(st.integers(1, 2000)),
        "budget_safety_margin_tokens": draw(st.integers(0, 300)),
        "min_context_tokens": draw(st.integers(0, window)),
    }
    present = {k: draw(st.booleans()) or k == "max_context_tokens" for k in SETTING_KEYS}
    settings_values = {k: v for k, v in settings_values.items() if present[k]}
    placement = {k: (draw(st.sampled_from(["base", "child", "both"])) if two else "base")
                 for k in settings_values}
    return Workspace(
        window=window, model_max_tokens=draw(st.integers(1, 4000)),
        ceiling=draw(st.one_of(st.none(), st.integers(1, 8000))),
        system=" ".join(draw(st.lists(st.sampled_from(WORDS), max_size=80))),
        settings=settings_values, placement=placement,
        steps=draw(st.lists(step_specs(), min_size=1, max_size=4)),
        steps_in=draw(st.sampled_from(["base", "child"])) if two else "base",
        two_files=two, indent=draw(st.sampled_from([2, 4])), crlf=draw(st.booleans()),
        flow_settings=draw(st.booleans()), child_settings_block=draw(st.booleans()),
        edit_parent=draw(st.booleans()), comments=draw(st.booleans()))


def _settings_text(values: dict[str, int], ind: str, flow: bool) -> list[str]:
    if flow:
        return ["settings: {" + ", ".join(f"{k}: {v}" for k, v in values.items()) + "}"]
    lines = ["settings:"]
    for i, (k, v) in enumerate(values.items()):
        lines.append(f"{ind}{k}: {v}" + ("   # tuned by hand" if i == 0 else ""))
    lines.append(f'{ind}note: "kept as is"')
    return lines


def _steps_text(steps: list[StepSpec], ind: str) -> list[str]:
    lines = ["steps:", f"{ind}- {{id: fetch, type: retrieve}}"]
    for n, s in enumerate(steps):
        keys: list[tuple[str, str]] = [("id", f"s{n}"), ("type", "call_model"),
                                       ("prompt_key", "sys")]
        if s.use_history:
            keys.append(("use_history", "true"))
        if s.output_key:
            keys.append((s.output_key, str(s.output)))
        if s.flow:
            body = ", ".join(f"{k}: {v}" for k, v in keys)
            if s.template is not None:
                body += f', user_parts: {{template: "{s.template}"}}'
            lines.append(f"{ind}- {{{body}}}")
            continue
        for i, (k, v) in enumerate(keys):
            lines.append(f"{ind}{'- ' if i == 0 else '  '}{k}: {v}")
        if s.template is not None:
            lines.append(f"{ind}  user_parts:")
            lines.append(f'{ind}  {" " * len(ind)}template: "{s.template}"')
    return lines


def _write(ws: Workspace, root: Path) -> Path:
    ind = " " * ws.indent
    nl = "\r\n" if ws.crlf else "\n"
    config = {"model_context_window": ws.window, "model_max_tokens": ws.model_max_tokens,
              "format_overhead_tokens": 16}
    if ws.ceiling is not None:
        config["model_max_output_tokens"] = ws.ceiling
    base_settings = {k: v for k, v in ws.settings.items() if ws.placement[k] != "child"}
    child_settings = {k: v for k, v in ws.settings.items() if ws.placement[k] != "base"}
    note = ["# a comment between sections", ""] if ws.comments else []
    base = ["# generated base pipeline"]
    if base_settings:
        base += _settings_text(base_settings, ind, ws.flow_settings) + note
    if ws.steps_in == "base":
        base += _steps_text(ws.steps, ind) + note
    files = {"base.yaml": nl.join(base) + nl}
    if ws.two_files:
        child = ["# generated child", "extends: base.yaml"]
        if child_settings or ws.child_settings_block:
            child += _settings_text(child_settings, ind, ws.flow_settings) + note
        if ws.steps_in == "child":
            child += _steps_text(ws.steps, ind) + note
        child.append(f"owner: {'team'}")
        files["child.yaml"] = nl.join(child) + nl
    make_workspace(root, config=config, pipelines=files, prompts={"sys.txt": ws.system})
    return root / "pipelines" / ("child.yaml" if ws.two_files else "base.yaml")


_NUMBER = re.compile(r"-?\d+")
_INSERTED_FLOW = re.compile(r", (max_context_tokens|max_output_tokens): \d+")
_INSERTED_LINE = re.compile(r"^\s*(settings:|max_context_tokens: \d+|max_output_tokens: \d+)$")


def _edit_is_numbers_or_overrides(edit: TextEdit, old_text: str, files: dict[str, str]) -> bool:
    index = LineIndex(old_text)
    start, end = index.offset(edit.range.start), index.offset(edit.range.end)
    replaced = old_text[start:end]
    if start != end:  # a replacement: a number by a number, or a flow entry
        return bool(_NUMBER.fullmatch(replaced) and _NUMBER.fullmatch(edit.new_text))
    new = edit.new_text
    flow = re.fullmatch(r"(, )?(max_context_tokens|max_output_tokens): \d+", new)
    if flow:
        return True
    lines = [ln for ln in re.split(r"\r?\n", new) if ln.strip()]
    if all(_INSERTED_LINE.match(ln) for ln in lines):
        return True
    # a copied steps block: the parent's steps text with only numbers changed
    lines = [_INSERTED_FLOW.sub("", ln) for ln in lines if not _INSERTED_LINE.match(ln)]
    masked = _NUMBER.sub("N", "\n".join(lines))
    for text in files.values():
        i = text.find("steps:")
        if i != -1:
            block = [_INSERTED_FLOW.sub("", ln) for ln in re.split(r"\r?\n", text[i:])
                     if ln.strip() and not _INSERTED_LINE.match(ln)]
            block = block[:len(lines)]
            if _NUMBER.sub("N", "\n".join(block)) == masked:
                return True
    return False


@settings(max_examples=int(os.environ.get("BUDGETLENS_PROPERTY_EXAMPLES", "100")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(workspaces())
def test_applying_the_plan_settles_the_pipeline(ws: Workspace) -> None:
    options = CheckOptions(policy="auto_clamp", environ={})
    with tempfile.TemporaryDirectory() as tmp:
        target = _write(ws, Path(tmp))
        disk = DiskFiles()
        report = check_pipeline(target, files=disk, options=options)
        errors = [d for d in report.diagnostics
                  if d.severity.value == "error" and d.code != "BL051"]
        assume(not errors)  # fixing input errors (e.g. steps that can never fit) is not a clamp
        assume(not report.clamp.unfit)  # fits only with max_context_tokens 0: not clampable
        plan = clamp_plan(report, files=disk, edit_parent=ws.edit_parent)
        event(f"changes: {sorted({c.key.split('.')[-1] for c in plan.changes}) or 'none'}")
        event(f"inserted: {any(e.range.start == e.range.end for e in plan.edits)}")
        assert plan.notes == []
        before = {f: Path(f).read_text("utf-8") for f in (report.chain or (report.pipeline,))}
        for edit in plan.edits:
            assert _edit_is_numbers_or_overrides(edit, before[edit.file], before), edit
        if not ws.edit_parent and ws.two_files:
            assert all(e.file == str(target) for e in plan.edits)
        for file, text in apply_plan(plan, disk).items():
            Path(file).write_bytes(text.encode("utf-8"))
            if ws.crlf:
                assert "\n" not in text.replace("\r\n", "")
        after = check_pipeline(target, files=disk, options=options)
        assert all(s.fits for s in after.steps), [to_jsonable(s.numbers) for s in after.steps]
        assert not [d for d in after.diagnostics if d.code in ("BL050", "BL051")]
        assert not [d for d in after.diagnostics if d.severity.value == "error"]
        assert clamp_plan(after, files=disk, edit_parent=ws.edit_parent).empty
