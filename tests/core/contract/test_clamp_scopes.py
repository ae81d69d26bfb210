"""The two quick-fix scopes of the clamp plan: the context alone, or one step's output alone."""

from __future__ import annotations

from pathlib import Path

from budgetlens.contract.plan import apply_plan, context_clamp_plan, output_clamp_plan
from budgetlens.files import DiskFiles
from tests.core.contract.helpers import check, make_workspace, tokens

SYSTEM = "You are a careful assistant."
WINDOW = 4096
MARGIN = 128  # the default budget_safety_margin_tokens
CONFIG = {"model_context_window": WINDOW, "model_max_tokens": 600,
          "format_overhead_tokens": 0, "development": False}
PIPELINE = """\
settings:
  max_context_tokens: {context}   # retrieval budget
steps:
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 400
"""


def _pipeline(tmp_path: Path, context: int) -> Path:
    make_workspace(tmp_path, config=CONFIG, pipelines={"p.yaml": PIPELINE.format(context=context)},
                   prompts={"sys.txt": SYSTEM})
    return tmp_path / "pipelines" / "p.yaml"


def test_context_scope_lowers_only_max_context_tokens(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, 3800)
    plan = context_clamp_plan(check(path), files=DiskFiles())
    # the context that makes the step fit exactly, with the output held at 400
    after = WINDOW - tokens(SYSTEM) - 400 - MARGIN
    assert [(c.key, c.before, c.after) for c in plan.changes] == [
        ("settings.max_context_tokens", 3800, after)]
    (text,) = apply_plan(plan, DiskFiles()).values()
    assert text == PIPELINE.format(context=after)


def test_output_scope_lowers_only_the_steps_output_holding_the_context(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, 3700)
    report = check(path)
    plan = output_clamp_plan(report, 0, files=DiskFiles())
    after = WINDOW - tokens(SYSTEM) - 3700 - MARGIN
    assert 0 < after < 400
    assert [(c.key, c.before, c.after, c.step) for c in plan.changes] == [
        ("steps[0].max_output_tokens", 400, after, "answer")]
    (text,) = apply_plan(plan, DiskFiles()).values()
    assert text == PIPELINE.format(context=3700).replace("max_output_tokens: 400",
                                                         f"max_output_tokens: {after}")


def test_output_scope_is_empty_when_the_context_alone_leaves_no_room(tmp_path: Path) -> None:
    # context 4000: even an output of 1 does not fit without lowering the context first
    path = _pipeline(tmp_path, 4000)
    assert WINDOW - tokens(SYSTEM) - 4000 - MARGIN < 1
    assert output_clamp_plan(check(path), 0, files=DiskFiles()).empty
    assert not context_clamp_plan(check(path), files=DiskFiles()).empty


def test_both_scopes_are_empty_for_a_fitting_pipeline(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, 1000)
    report = check(path)
    assert context_clamp_plan(report, files=DiskFiles()).empty
    assert output_clamp_plan(report, 0, files=DiskFiles()).empty
