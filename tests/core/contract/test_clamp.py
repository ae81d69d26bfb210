"""The clamp plan as minimal text edits: only the numbers change, inserted lines follow the
file's own style, inherited values are overridden in the child, and clamping is idempotent."""

from __future__ import annotations

from pathlib import Path

from budgetlens.contract.plan import ClampPlan, apply_plan, clamp_plan
from budgetlens.contract.results import PipelineReport
from budgetlens.files import DiskFiles
from budgetlens.serialize import to_jsonable
from tests.core.contract.helpers import check, make_workspace, tokens

SYSTEM = "You are a careful assistant."
WINDOW = 4096
CONFIG = {"model_context_window": WINDOW, "model_max_tokens": 600,
          "format_overhead_tokens": 0, "development": False}


def fixed() -> int:
    return tokens(SYSTEM)


def _ws(tmp_path: Path, pipelines: dict[str, str], config: dict | None = None) -> Path:
    make_workspace(tmp_path, config={**CONFIG, **(config or {})}, pipelines=pipelines,
                   prompts={"sys.txt": SYSTEM})
    return tmp_path / "pipelines"


def _plan(path: Path, **kw: bool) -> tuple[PipelineReport, ClampPlan]:
    report = check(path)
    return report, clamp_plan(report, files=DiskFiles(), **kw)


def _apply(plan: ClampPlan) -> dict[str, str]:
    texts = apply_plan(plan, DiskFiles())
    for file, text in texts.items():
        Path(file).write_bytes(text.encode("utf-8"))
    return texts


def _assert_settled(path: Path) -> None:
    report, plan = _plan(path)
    assert all(s.fits for s in report.steps), [to_jsonable(s.numbers) for s in report.steps]
    assert "BL050" not in [d.code for d in report.diagnostics]
    assert plan.empty


ONE_STEP = """\
# budget of the answer flow
settings:
  max_context_tokens: 3800   # the retrieval budget
  label: "keep 'quotes'"
steps:
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 400
"""


def test_lowering_the_context_changes_only_that_number(tmp_path: Path) -> None:
    folder = _ws(tmp_path, {"p.yaml": ONE_STEP})
    _report, plan = _plan(folder / "p.yaml")
    expected = WINDOW - (fixed() + 400 + 128)
    (change,) = plan.changes
    assert (change.key, change.before, change.after) == (
        "settings.max_context_tokens", 3800, expected)
    assert change.file == str(folder / "p.yaml")
    texts = _apply(plan)
    assert texts[str(folder / "p.yaml")] == ONE_STEP.replace("3800", str(expected))
    _assert_settled(folder / "p.yaml")


def test_a_fitting_pipeline_has_an_empty_plan(tmp_path: Path) -> None:
    folder = _ws(tmp_path, {"p.yaml": ONE_STEP.replace("3800", "1000")})
    assert _plan(folder / "p.yaml")[1].empty


def test_an_unknown_budget_has_an_empty_plan(tmp_path: Path) -> None:
    folder = _ws(tmp_path, {"p.yaml": ONE_STEP.replace("max_context_tokens: 3800", "x: 1")})
    assert _plan(folder / "p.yaml")[1].empty


# the context held at 3800; the output floor (default: half of the step's own limit, 200 of
# 400 and 300 of 600) set lower, so that these tests can lower the output to 162
FLOORS_3800 = "max_context_tokens: 3800\n  min_context_tokens: 3800\n  min_output_tokens: 100"

BASE = """\
settings:
  max_context_tokens: 3800
steps:
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 400
"""


def test_inherited_context_is_overridden_in_the_child_with_a_new_settings_block(
        tmp_path: Path) -> None:
    child_text = "# child\nextends: base.yaml   # shared settings\nname: child\n"
    folder = _ws(tmp_path, {"base.yaml": BASE, "child.yaml": child_text})
    _, plan = _plan(folder / "child.yaml")
    expected = WINDOW - (fixed() + 400 + 128)
    texts = _apply(plan)
    assert list(texts) == [str(folder / "child.yaml")]  # the parent is untouched
    assert texts[str(folder / "child.yaml")] == (
        "# child\nextends: base.yaml   # shared settings\n"
        f"settings:\n  max_context_tokens: {expected}\nname: child\n")
    assert (folder / "base.yaml").read_text() == BASE
    _assert_settled(folder / "child.yaml")


def test_new_settings_block_follows_the_files_indentation(tmp_path: Path) -> None:
    child_text = "extends: base.yaml\nmeta:\n    owner: team-a\n"
    folder = _ws(tmp_path, {"base.yaml": BASE, "child.yaml": child_text})
    _, plan = _plan(folder / "child.yaml")
    expected = WINDOW - (fixed() + 400 + 128)
    texts = _apply(plan)
    assert texts[str(folder / "child.yaml")] == (
        f"extends: base.yaml\nsettings:\n    max_context_tokens: {expected}\n"
        "meta:\n    owner: team-a\n")
    _assert_settled(folder / "child.yaml")


def test_existing_child_settings_get_a_new_line_in_their_style(tmp_path: Path) -> None:
    child_text = "extends: base.yaml\nsettings:\n    max_history_tokens: 0  # none\n"
    folder = _ws(tmp_path, {"base.yaml": BASE, "child.yaml": child_text})
    _, plan = _plan(folder / "child.yaml")
    expected = WINDOW - (fixed() + 400 + 128)
    assert _apply(plan)[str(folder / "child.yaml")] == (
        "extends: base.yaml\nsettings:\n    max_history_tokens: 0  # none\n"
        f"    max_context_tokens: {expected}\n")
    _assert_settled(folder / "child.yaml")


def test_flow_style_settings_get_an_entry(tmp_path: Path) -> None:
    child_text = "extends: base.yaml\nsettings: {max_history_tokens: 0}\n"
    folder = _ws(tmp_path, {"base.yaml": BASE, "child.yaml": child_text})
    _, plan = _plan(folder / "child.yaml")
    expected = WINDOW - (fixed() + 400 + 128)
    assert _apply(plan)[str(folder / "child.yaml")] == (
        "extends: base.yaml\n"
        f"settings: {{max_history_tokens: 0, max_context_tokens: {expected}}}\n")
    _assert_settled(folder / "child.yaml")


def test_edit_parent_changes_the_file_that_sets_the_value(tmp_path: Path) -> None:
    folder = _ws(tmp_path, {"base.yaml": BASE, "child.yaml": "extends: base.yaml\n"})
    _, plan = _plan(folder / "child.yaml", edit_parent=True)
    expected = WINDOW - (fixed() + 400 + 128)
    texts = _apply(plan)
    assert texts == {str(folder / "base.yaml"): BASE.replace("3800", str(expected))}
    _assert_settled(folder / "child.yaml")


def test_inherited_step_output_is_overridden_by_copying_the_steps(tmp_path: Path) -> None:
    base = BASE.replace("max_context_tokens: 3800",
                        FLOORS_3800)
    folder = _ws(tmp_path, {"base.yaml": base, "child.yaml": "extends: base.yaml\n"})
    _report, plan = _plan(folder / "child.yaml")
    expected = WINDOW - (fixed() + 3800 + 128)
    (change,) = plan.changes
    assert (change.key, change.before, change.after, change.step) == (
        "steps[0].max_output_tokens", 400, expected, "answer")
    texts = _apply(plan)
    steps_block = base[base.index("steps:"):].replace("400", str(expected))
    assert texts == {str(folder / "child.yaml"): f"extends: base.yaml\n\n{steps_block}"}
    _assert_settled(folder / "child.yaml")


def test_output_from_the_config_default_inserts_a_step_limit(tmp_path: Path) -> None:
    text = ONE_STEP.replace("    max_output_tokens: 400\n", "").replace(
        "max_context_tokens: 3800", FLOORS_3800)
    folder = _ws(tmp_path, {"p.yaml": text})
    _, plan = _plan(folder / "p.yaml")
    expected = WINDOW - (fixed() + 3800 + 128)
    assert expected < 600
    assert _apply(plan)[str(folder / "p.yaml")] == text.replace(
        "    prompt_key: sys\n", f"    prompt_key: sys\n    max_output_tokens: {expected}\n")
    _assert_settled(folder / "p.yaml")


def test_output_above_the_ceiling_is_clamped_to_it(tmp_path: Path) -> None:
    folder = _ws(tmp_path, {"p.yaml": ONE_STEP.replace("3800", "1000")},
                 config={"model_max_output_tokens": 300})
    _, plan = _plan(folder / "p.yaml")
    (change,) = plan.changes
    assert (change.before, change.after) == (400, 300)
    _apply(plan)
    report = check(folder / "p.yaml")
    assert "BL051" not in [d.code for d in report.diagnostics]
    _assert_settled(folder / "p.yaml")


def test_crlf_line_endings_are_kept(tmp_path: Path) -> None:
    folder = _ws(tmp_path, {"base.yaml": BASE})
    child = folder / "child.yaml"
    child.write_bytes(b"extends: base.yaml\r\nmeta:\r\n  a: 1\r\n")
    _, plan = _plan(child)
    expected = WINDOW - (fixed() + 400 + 128)
    _apply(plan)
    assert child.read_bytes() == (
        f"extends: base.yaml\r\nsettings:\r\n  max_context_tokens: {expected}\r\n"
        "meta:\r\n  a: 1\r\n").encode()
    _assert_settled(child)


def test_two_steps_context_then_outputs(tmp_path: Path) -> None:
    text = """\
settings:
  max_context_tokens: 3000
  min_context_tokens: 2500
steps:
  - {id: small, type: call_model, prompt_key: sys, max_output_tokens: 100}
  - {id: big, type: call_model, prompt_key: sys, max_output_tokens: 1800}
"""
    folder = _ws(tmp_path, {"p.yaml": text})
    _report, plan = _plan(folder / "p.yaml")
    f = fixed()
    # worst step 'big' needs f + 1800 + 128 besides the context: context would go to
    # WINDOW - that, which is below the floor 2500, so the context stops at 2500 and
    # 'big' gets the rest
    assert WINDOW - (f + 1800 + 128) < 2500
    big_after = WINDOW - (f + 2500 + 128)
    assert [(c.key, c.before, c.after) for c in plan.changes] == [
        ("settings.max_context_tokens", 3000, 2500),
        ("steps[1].max_output_tokens", 1800, big_after)]
    new_text = _apply(plan)[str(folder / "p.yaml")]
    assert new_text == text.replace("max_context_tokens: 3000", "max_context_tokens: 2500") \
        .replace("max_output_tokens: 1800", f"max_output_tokens: {big_after}")
    _assert_settled(folder / "p.yaml")


def test_entries_go_after_the_last_value_not_after_a_following_comment(
        tmp_path: Path) -> None:
    child_text = ("extends: base.yaml\nsettings:\n  extra:\n    a: 1\n"
                  "# about the owner\nowner: me\n")
    folder = _ws(tmp_path, {"base.yaml": BASE, "child.yaml": child_text})
    _, plan = _plan(folder / "child.yaml")
    expected = WINDOW - (fixed() + 400 + 128)
    assert _apply(plan)[str(folder / "child.yaml")] == (
        "extends: base.yaml\nsettings:\n  extra:\n    a: 1\n"
        f"  max_context_tokens: {expected}\n# about the owner\nowner: me\n")
    _assert_settled(folder / "child.yaml")


def test_copied_steps_stop_before_a_trailing_comment(tmp_path: Path) -> None:
    base = BASE.replace("max_context_tokens: 3800",
                        FLOORS_3800) + \
        "# notes for maintainers\nowner: platform\n"
    folder = _ws(tmp_path, {"base.yaml": base, "child.yaml": "extends: base.yaml\n"})
    _, plan = _plan(folder / "child.yaml")
    expected = WINDOW - (fixed() + 3800 + 128)
    steps_block = BASE[BASE.index("steps:"):].replace("400", str(expected))
    assert _apply(plan)[str(folder / "child.yaml")] == f"extends: base.yaml\n\n{steps_block}"
    _assert_settled(folder / "child.yaml")
