"""What a re-check after an edit of the pipeline itself costs, counted (never timed), and
that what it takes over from the previous version is right.

A check after a one-character edit of a 500-step pipeline computes the positions (line and
character) of what it reports only, not of every step's terms (``Location.lazy``); it plans
again only the step the edit touched (the others' plans are taken over, their locations made
again in the new text); validation makes no deep copy of the document. Whatever the edit, the
report is the one a check with an empty cache gives, ranges included.
"""

from __future__ import annotations

import copy
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from budgetlens import codes
from budgetlens import source as source_module
from budgetlens.contract import check as check_module
from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import check_pipeline
from budgetlens.contract.pipeline import Pipeline
from budgetlens.contract.results import CheckOptions, PipelineReport
from budgetlens.contract.validation import validate_lenient
from budgetlens.files import DiskFiles, OverlayFiles
from budgetlens.serialize import to_jsonable
from budgetlens.source import Location, Range
from tests.core.contract.helpers import make_workspace

WINDOW = 8192


def _step(index: int, prompt: str = "small", *, history: bool = False,
          output: str = "max_output_tokens: 500") -> str:
    return (f"  - id: step_{index:04d}\n"
            "    type: call_model\n"
            f"    prompt_key: {prompt}\n"
            f"    use_history: {'true' if history else 'false'}\n"
            "    user_parts:\n"
            f"      template: \"Question {{question}} number {index}\"\n"
            f"    {output}\n")


def _big(steps: int) -> str:
    """A pipeline of ``steps`` steps, every 50th one over the window (its huge prompt)."""
    body = "".join(_step(i, "huge" if i % 50 == 0 else "small", history=i % 3 == 0)
                   for i in range(steps))
    return f"extends: base.yaml\nsettings:\n  max_context_tokens: 3000\nsteps:\n{body}"


def _workspace(root: Path) -> Path:
    make_workspace(root, config={"model_context_window": WINDOW, "model_max_tokens": 700,
                                 "prompts_dir": "prompts", "development": True},
                   pipelines={"base.yaml": "settings:\n  max_history_tokens: 400\n"
                                           "  budget_safety_margin_tokens: 100\n"},
                   prompts={"small.txt": "Answer the question briefly.",
                            "huge.txt": "budget window tokens " * 2000})
    return root / "pipelines" / "big.yaml"


def _check(path: Path, root: Path, cache: BudgetCache, text: str,
           overlay: dict[Path, str] | None = None) -> PipelineReport:
    files = OverlayFiles(DiskFiles(root), {path: text, **(overlay or {})})
    return check_pipeline(path, files=files, cache=cache,
                          options=CheckOptions(environ={}, workspace_root=root))


def _one_character_edit(text: str) -> str:
    """The last digit of the first step's max_output_tokens changed (500 -> 501)."""
    at = text.index("max_output_tokens: 500") + len("max_output_tokens: 50")
    return text[:at] + "1" + text[at + 1:]


def _count_positions(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count every line/character position computed from an offset (``LineIndex.position``:
    every range of a value, a key or a problem goes through it)."""
    calls: Counter[str] = Counter()
    original = source_module.LineIndex.position

    def position(self: source_module.LineIndex, offset: int) -> source_module.Position:
        calls["position"] += 1
        return original(self, offset)

    monkeypatch.setattr(source_module.LineIndex, "position", position)
    return calls


def _reported_ranges(report: PipelineReport) -> int:
    """The ranges a report's diagnostics show: each one's own and its related places'."""
    return sum(1 + len(d.related) for d in report.diagnostics)


@pytest.mark.parametrize("steps", [100, 500])
def test_a_one_character_edit_computes_the_positions_of_what_is_reported_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, steps: int) -> None:
    path = _workspace(tmp_path)
    text = _big(steps)
    cache = BudgetCache()
    _check(path, tmp_path, cache, text)
    calls = _count_positions(monkeypatch)

    report = _check(path, tmp_path, cache, _one_character_edit(text))
    computed = calls["position"]
    for d in report.diagnostics:  # what a client reads: every range, related ones too
        assert isinstance(d.range, Range)
        for related in d.related:
            assert isinstance(related.location.range, Range)

    assert len(report.steps) == steps
    over = [s.index for s in report.steps if not s.fits]
    assert over == list(range(0, steps, 50))  # every 50th step is over the window
    assert {d.step for d in report.diagnostics} == {f"step_{i:04d}" for i in over}
    # two positions (start, end) per range reported, a few for the file's head: not four
    # locations of every step (the main branch computed 4 * 2 * steps of them)
    assert computed <= 2 * _reported_ranges(report) + 8
    assert calls["position"] <= 2 * _reported_ranges(report) + 8


def test_a_step_location_read_later_is_computed_then_and_right(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _workspace(tmp_path)
    text = _big(60)
    cache = BudgetCache()
    _check(path, tmp_path, cache, text)
    edited = "# a comment line first\n" + _one_character_edit(text)
    report = _check(path, tmp_path, cache, edited)
    calls = _count_positions(monkeypatch)

    step = report.steps[42]
    # written out by hand: "steps:" is line 4 of the text after the comment, each step is 7
    # lines, its first line "  - id: step_0042" and its output line the 7th
    first = 5 + 42 * 7
    assert step.name_location == Location(str(path), Range.at(first, 8, first, 17))
    assert step.output.location == Location(str(path), Range.at(first + 6, 23, first + 6, 26))
    assert calls["position"] == 4  # those two ranges, nothing else


def test_a_one_character_edit_plans_only_the_step_it_touched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _workspace(tmp_path)
    text = _big(500)
    cache = BudgetCache()
    _check(path, tmp_path, cache, text)
    planned: list[int] = []
    original = check_module._Planner.step_plan

    def step_plan(self: Any, at: Any, shared: Any) -> Any:
        planned.append(at.index)
        return original(self, at, shared)

    monkeypatch.setattr(check_module._Planner, "step_plan", step_plan)
    _check(path, tmp_path, cache, _one_character_edit(text))
    assert planned == [0]
    planned.clear()
    # a line added above every step moves them all: no step planned again, all moved
    moved = _check(path, tmp_path, cache, "# note\n" + _one_character_edit(text))
    assert planned == []
    assert moved.steps[1].location.range.start.line == 5 + 7  # one line lower


def test_validation_makes_no_deep_copy_of_the_document(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _workspace(tmp_path)
    text = _big(50).replace("max_output_tokens: 500", "max_output_tokens: lots", 3)
    cache = BudgetCache()
    _check(path, tmp_path, cache, _big(50))

    def no_deepcopy(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("copy.deepcopy called")

    monkeypatch.setattr(copy, "deepcopy", no_deepcopy)
    report = _check(path, tmp_path, cache, text)
    invalid = [d for d in report.diagnostics if d.code == codes.INVALID_VALUE]
    assert [(d.step, d.message.split(":")[0]) for d in invalid] == [
        (f"step_000{i}", f"steps[{i}].max_output_tokens") for i in range(3)]


def test_lenient_validation_drops_bad_values_from_copies_and_leaves_the_input_alone() -> None:
    shared = {"max_output_tokens": "x", "id": "shared"}
    data: dict[str, Any] = {
        "extends": 7,
        "settings": {"max_context_tokens": -1, "max_history_tokens": 10, "extra": [1, 2]},
        "steps": [{"id": "a", "max_output_tokens": 5, "use_history": "yes",
                   "user_parts": {"template": 3}},
                  "not a mapping",
                  shared, shared,
                  {"id": "b", "max_tokens": 0}],
    }
    before = repr(data)
    model, errors = validate_lenient(Pipeline, data)

    assert repr(data) == before  # nothing dropped from the caller's data
    assert data["steps"][2] is data["steps"][3] is shared
    assert model is not None
    # every bad value reported at its path and dropped, the rest kept
    assert sorted((e.path for e in errors), key=str) == sorted([
        ("extends",), ("settings", "max_context_tokens"), ("steps", 0, "use_history"),
        ("steps", 0, "user_parts", "template"), ("steps", 1),
        ("steps", 2, "max_output_tokens"), ("steps", 3, "max_output_tokens"),
        ("steps", 4, "max_tokens")], key=str)
    assert model.extends is None
    assert model.settings is not None
    assert model.settings.max_context_tokens is None
    assert model.settings.max_history_tokens == 10
    assert model.settings.model_extra == {"extra": [1, 2]}
    assert model.steps is not None
    first, second, third, fourth, fifth = model.steps
    assert (first.id, first.max_output_tokens, first.use_history) == ("a", 5, None)
    assert first.user_parts is not None and first.user_parts.template is None
    assert second.model_dump(exclude_unset=True) == {}  # the bad item became {}
    assert (third.id, third.max_output_tokens) == ("shared", None)
    # one mapping written twice (as an alias would, were the readers to share it) is
    # dropped from once, as from a deep copy: at its second place the key is gone already,
    # so the deepest existing element of the path, the step itself, becomes {}
    assert fourth.model_dump(exclude_unset=True) == {}
    assert (fifth.id, fifth.max_tokens) == ("b", None)


# ----------------------------------------------------------------- taken over = from nothing
def _assert_same(warm: PipelineReport, cold: PipelineReport) -> None:
    assert warm.steps == cold.steps  # terms, locations and name locations included
    assert warm.diagnostics == cold.diagnostics
    assert [(d.related, to_jsonable(d.data)) for d in warm.diagnostics] == \
        [(d.related, to_jsonable(d.data)) for d in cold.diagnostics]
    assert to_jsonable(warm) == to_jsonable(cold)


def _mixed(extra: str = "") -> str:
    """Steps of every kind: inherited settings, history, max_tokens, config.json's
    model_max_tokens, a model of its own, no prompt_key, a bad template, a non-call step."""
    return ("extends: base.yaml\nsettings:\n  max_context_tokens: 3000\nsteps:\n"
            + _step(0, history=True)
            + _step(1, output="max_tokens: 300")
            + _step(2, output="note: model_max_tokens from config.json")
            + "  - id: tool\n    type: run_tool\n"
            + _step(3, "huge")
            + "  - id: own_model\n    type: call_model\n    model: gpt-4o\n"
              "    prompt_key: small\n    max_output_tokens: 400\n"
            + "  - id: no_prompt\n    type: call_model\n    max_output_tokens: 400\n"
            + "  - id: bad_template\n    type: call_model\n    prompt_key: small\n"
              "    user_parts:\n      template: \"{unclosed\"\n    max_output_tokens: 400\n"
            + _step(4) + _step(5, history=True) + extra)


EDITS: list[tuple[str, str, str]] = [
    ("a digit of a step", "max_output_tokens: 500", "max_output_tokens: 501"),
    ("a line before every step", "settings:", "# notes\nsettings:"),
    ("spaces inside a step's line", "max_tokens: 300", "max_tokens:     300"),
    ("a step's id", "id: step_0001", "id: step_one"),
    ("a step's id made a duplicate", "id: step_0004", "id: step_0005"),
    ("a key misspelt", "    prompt_key: small\n    use_history: false\n    user_parts:\n"
     "      template: \"Question {question} number 4\"",
     "    prompt_key: small\n    use_history: false\n    user_part:\n"
     "      template: \"Question {question} number 4\""),
    ("a bad value", "max_output_tokens: 400", "max_output_tokens: -4"),
    ("the steps' settings", "max_context_tokens: 3000", "max_context_tokens: 2000"),
    ("history set in the pipeline", "settings:\n", "settings:\n  max_history_tokens: 0\n"),
    ("a step inserted first", "steps:\n", "steps:\n" + _step(99)),
    ("a step removed", _step(4), ""),
    ("a model of its own", "id: step_0005\n", "id: step_0005\n    model: gpt-4o-mini\n"),
    ("a floor set", "settings:\n", "settings:\n  min_output_tokens: 450\n"),
    ("CRLF line ends", "\n", "\r\n"),
    ("a YAML error", "steps:\n", "steps:\n  - [\n"),
]


#: the settings every step's terms read, in the parent (base.yaml) or in the pipeline itself
#: (then an edit above them moves them too)
SETTINGS_HERE = "settings:\n  max_history_tokens: 350\n  min_output_tokens: 100\n"


@pytest.mark.parametrize("settings", ["parent", "pipeline"])
@pytest.mark.parametrize(("label", "old", "new"), EDITS, ids=[e[0] for e in EDITS])
def test_a_report_after_an_edit_is_the_report_from_nothing(
        tmp_path: Path, label: str, old: str, new: str, settings: str) -> None:
    path = _workspace(tmp_path)
    text = _mixed()
    if settings == "pipeline":
        text = text.replace("settings:\n", SETTINGS_HERE)
    assert old in text, label
    edited = text.replace(old, new)
    cache = BudgetCache()
    _check(path, tmp_path, cache, text)
    warm = _check(path, tmp_path, cache, edited)
    _assert_same(warm, _check(path, tmp_path, BudgetCache(), edited))
    # and back again: the first version's plans were replaced, not kept
    _assert_same(_check(path, tmp_path, cache, text), _check(path, tmp_path, BudgetCache(),
                                                              text))


def test_an_edit_of_config_json_or_a_parent_is_the_report_from_nothing(
        tmp_path: Path) -> None:
    path = _workspace(tmp_path)
    text = _mixed()
    cache = BudgetCache()
    _check(path, tmp_path, cache, text)
    config = tmp_path / "config.json"
    base = tmp_path / "pipelines" / "base.yaml"
    for overlay in ({config: config.read_text().replace("700", "650")},
                    {config: config.read_text().replace('"prompts"', '"other"')},
                    {base: "settings:\n  max_history_tokens: 300\n"},
                    {base: "settings:\n  budget_safety_margin_tokens: 90\n"
                           "  min_output_tokens: 10\n"},
                    {}):
        warm = _check(path, tmp_path, cache, text, overlay)
        _assert_same(warm, _check(path, tmp_path, BudgetCache(), text, overlay))


def _random_edit(rng: random.Random, text: str) -> str:
    """One edit as typing makes them: a character typed, deleted or replaced, a line added or
    removed, a value's spacing changed, a step block duplicated or dropped."""
    kind = rng.randrange(6)
    at = rng.randrange(len(text) + 1)
    if kind == 0:
        return text[:at] + rng.choice(" 1a:-\n#\"{") + text[at:]
    if kind == 1:
        return text[:at] + text[at + 1:]
    if kind == 2:
        return text[:at] + rng.choice("0123456789") + text[at + 1:]
    lines = text.split("\n")
    line = rng.randrange(len(lines))
    if kind == 3:
        lines.insert(line, rng.choice(["# comment", "", "  # indented comment"]))
        return "\n".join(lines)
    if kind == 4:
        return re.sub(r": ", lambda m: ":" + " " * rng.randrange(1, 4), text, count=1) \
            if rng.random() < 0.5 else "\n".join(lines[:line] + lines[line + 1:])
    blocks = re.split(r"(?m)^(?=  - )", text)
    if len(blocks) < 3:
        return text
    i = rng.randrange(1, len(blocks))
    blocks.insert(i, blocks[i]) if rng.random() < 0.5 else blocks.pop(i)
    return "".join(blocks)


@pytest.mark.parametrize("settings", ["parent", "pipeline"])
def test_random_edits_give_the_report_from_nothing(tmp_path: Path, settings: str) -> None:
    path = _workspace(tmp_path)
    rng = random.Random(12)
    cache = BudgetCache()
    good = text = _mixed() if settings == "parent" else \
        _mixed().replace("settings:\n", SETTINGS_HERE)
    compared = 0
    for _ in range(120):
        text = _random_edit(rng, text)
        warm = _check(path, tmp_path, cache, text)
        _assert_same(warm, _check(path, tmp_path, BudgetCache(), text))
        compared += bool(warm.steps)
        if not warm.steps and rng.random() < 0.3:  # back to a usable text now and then
            text = good
        elif warm.steps:
            good = text
    assert compared >= 60  # most versions were usable pipelines with steps to take over
