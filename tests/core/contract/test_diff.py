"""``budget_diff`` on two workspaces on disk, and the headroom thresholds.

Numbers come from plain tiktoken counts (``helpers.tokens``) and the contract's sum."""

from __future__ import annotations

from pathlib import Path

from budgetlens.contract.check import check_pipeline
from budgetlens.contract.diff import (
    ChangeKind,
    DiffSide,
    HeadroomThreshold,
    InputChange,
    StepDiff,
    StepNumbers,
    StepStatus,
    budget_diff,
)
from budgetlens.contract.discovery import find_pipelines
from budgetlens.contract.results import CheckOptions
from budgetlens.files import DiskFiles
from tests.core.contract.helpers import make_workspace, tokens

PIPE = """steps:
  - id: a
    type: call_model
    prompt_key: p
    user_parts:
      template: "%s"
    max_output_tokens: 100
  - id: a
    type: call_model
    prompt_key: p
    max_output_tokens: 50
settings:
  max_context_tokens: 200
"""


def _side(root: Path) -> DiffSide:
    options = CheckOptions(environ={})
    reports = [check_pipeline(p, files=DiskFiles(), options=options)
               for p in find_pipelines(root)]
    return DiffSide(str(root), reports, DiskFiles())


def _workspace(root: Path, window: int, template: str, prompt: str) -> Path:
    return make_workspace(root, config={"model_context_window": window,
                                        "format_overhead_tokens": 0},
                          pipelines={"x.yaml": PIPE % template}, prompts={"p.txt": prompt})


def test_template_and_config_changes_are_named(tmp_path: Path) -> None:
    old = _workspace(tmp_path / "old", 1000, "Hi {q}", "Be short.")
    new = _workspace(tmp_path / "new", 900, "Hello there, {q}", "Be short.")
    diff = budget_diff(_side(old), _side(new))
    first, second = diff.steps  # two steps named "a": matched in order
    assert (first.step, second.step) == ("a", "a")
    assert first.causes == (
        InputChange(ChangeKind.TEMPLATE, "template", tokens("Hi "), tokens("Hello there, ")),
        InputChange(ChangeKind.SETTING, "config.json model_context_window", 1000, 900))
    assert second.causes == (
        InputChange(ChangeKind.SETTING, "config.json model_context_window", 1000, 900),)
    fixed = tokens("Be short.") + tokens("Hello there, ")
    total = fixed + 200 + 100 + 128  # no history, default margin 128
    assert first.after == StepNumbers(fixed, total, 900, 900 - total, True)
    assert first.headroom_drop == 100 + tokens("Hello there, ") - tokens("Hi ")


def test_a_prompt_with_the_same_tokens_but_new_text_is_a_cause(tmp_path: Path) -> None:
    old = _workspace(tmp_path / "old", 1000, "Hi {q}", "Be short.")
    new = _workspace(tmp_path / "new", 1000, "Hi {q}", "Be brief.")
    assert tokens("Be short.") == tokens("Be brief.")
    diff = budget_diff(_side(old), _side(new))
    assert [s.status for s in diff.steps] == [StepStatus.CHANGED] * 2
    n = tokens("Be short.")
    assert diff.steps[0].causes == (InputChange(ChangeKind.PROMPT, "prompts/p.txt", n, n),)


def _step(before: int, after: int) -> StepDiff:
    return StepDiff("p.yaml", "s", StepStatus.CHANGED, StepNumbers(0, 0, 1000, before, True),
                    StepNumbers(0, 0, 1000, after, True), ())


def test_thresholds() -> None:
    assert HeadroomThreshold(tokens=100).exceeded_by(_step(500, 399))
    assert not HeadroomThreshold(tokens=100).exceeded_by(_step(500, 400))
    assert HeadroomThreshold(percent=10).exceeded_by(_step(500, 449))
    assert not HeadroomThreshold(percent=10).exceeded_by(_step(500, 450))
    assert not HeadroomThreshold(percent=10).exceeded_by(_step(500, 600))  # a gain
    assert HeadroomThreshold(percent=50).exceeded_by(_step(0, -1))  # nothing left to lose
    assert not HeadroomThreshold(tokens=0).exceeded_by(_step(-5, -5))
