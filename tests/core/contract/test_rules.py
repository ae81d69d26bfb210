"""Every rule of the budget contract, with numbers derived in the test.

Token counts of prompt and template texts come from plain tiktoken (``tokens``); the emptied
templates are written out by hand, and every sum below is done here, not by budgetlens.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetlens.contract.discovery import find_pipelines
from budgetlens.contract.policy import Policy
from budgetlens.serialize import to_jsonable
from budgetlens.source import Severity
from tests.core.contract.helpers import check, codes_of, make_workspace, only, text_at, tokens

SYSTEM = "You answer questions about the fleet.\nBe brief.\n"
WINDOW = 4096


def _ws(tmp_path: Path, pipeline: str, *, config: dict | None = None,
        prompts: dict | None = None, name: str = "p.yaml") -> Path:
    cfg = {"model_context_window": WINDOW, "model_max_tokens": 300,
           "format_overhead_tokens": 20, "development": True}
    if config is not None:
        cfg.update(config)
    make_workspace(tmp_path, config=cfg, pipelines={name: pipeline},
                   prompts=prompts if prompts is not None else {"sys.txt": SYSTEM})
    return tmp_path / "pipelines" / name


BASIC = """\
settings:
  max_context_tokens: 2000
steps:
  - id: answer
    type: call_model
    prompt_key: sys
    user_parts:
      template: "Context: {context}\\nQuestion: {question}\\nUse {{braces}}."
    max_output_tokens: 500
"""


def test_every_term_of_a_fitting_step_is_the_hand_computed_number(tmp_path: Path) -> None:
    path = _ws(tmp_path, BASIC)
    report = check(path)
    assert report.diagnostics == []
    (step,) = report.steps
    system = tokens(SYSTEM)
    template = tokens("Context: \nQuestion: \nUse {braces}.")  # emptied and unescaped by hand
    fixed = system + template + 20
    total = fixed + 0 + 2000 + 500 + 128
    assert to_jsonable(step.numbers) == {
        "system_prompt": system, "template": template, "format_overhead": 20, "fixed": fixed,
        "history": 0, "context": 2000, "output": 500, "output_source": "max_output_tokens",
        "margin": 128, "total": total, "window": WINDOW, "headroom": WINDOW - total}
    assert step.fits and step.step == "answer"
    assert step.prompt_file == str(tmp_path / "prompts" / "sys.txt")


def test_terms_carry_the_place_that_set_them(tmp_path: Path) -> None:
    path = _ws(tmp_path, BASIC)
    (step,) = check(path).steps
    assert step.context.location is not None
    assert step.context.location.file == str(path)
    assert text_at(path, step.context.location.range) == "2000"
    assert text_at(path, step.output.location.range) == "500"
    assert step.window.location.file == str(tmp_path / "config.json")
    assert step.system_prompt.location.file == str(tmp_path / "prompts" / "sys.txt")
    assert step.margin.location is None and step.margin.source == "default"


@pytest.mark.parametrize(("step_keys", "expected", "source"), [
    ("max_output_tokens: 111\n    max_tokens: 222", 111, "max_output_tokens"),
    ("max_tokens: 222", 222, "max_tokens"),
    ("", 300, "model_max_tokens"),
])
def test_output_limit_precedence(tmp_path: Path, step_keys: str, expected: int,
                                 source: str) -> None:
    text = ("settings:\n  max_context_tokens: 1000\nsteps:\n  - id: s\n    type: call_model\n"
            f"    prompt_key: sys\n    {step_keys}\n")
    (step,) = check(_ws(tmp_path, text)).steps
    assert (step.output.value, step.output_source) == (expected, source)


def test_safety_margin_setting_replaces_the_default(tmp_path: Path) -> None:
    text = BASIC.replace("max_context_tokens: 2000",
                         "max_context_tokens: 2000\n  budget_safety_margin_tokens: 256")
    (step,) = check(_ws(tmp_path, text)).steps
    fixed = tokens(SYSTEM) + tokens("Context: \nQuestion: \nUse {braces}.") + 20
    assert step.margin.value == 256
    assert step.total == fixed + 2000 + 500 + 256


def test_history_counts_only_for_use_history_steps(tmp_path: Path) -> None:
    text = """\
settings:
  max_context_tokens: 1000
  max_history_tokens: 700
steps:
  - id: with
    type: call_model
    prompt_key: sys
    use_history: true
    max_output_tokens: 100
  - id: without
    type: call_model
    prompt_key: sys
    max_output_tokens: 100
"""
    with_h, without = check(_ws(tmp_path, text)).steps
    fixed = tokens(SYSTEM) + 20
    assert with_h.history.value == 700 and with_h.total == fixed + 700 + 1000 + 100 + 128
    assert without.history.value == 0 and without.total == fixed + 1000 + 100 + 128


HISTORY_ZERO = """\
settings:
  max_context_tokens: 1000
  max_history_tokens: 0
steps:
  - id: chat
    type: call_model
    prompt_key: sys
    use_history: true
    max_output_tokens: 100
"""


@pytest.mark.parametrize(("policy", "severity"), [
    ("fail_fast", Severity.ERROR), ("auto_clamp", Severity.WARNING)])
def test_use_history_without_history_budget(tmp_path: Path, policy: str,
                                            severity: Severity) -> None:
    path = _ws(tmp_path, HISTORY_ZERO)
    report = check(path, policy=policy)
    diag = only(report, "BL031")
    assert diag.severity is severity
    assert text_at(path, diag.range) == "true"
    assert report.steps[0].history.value == 0


def test_use_history_with_history_unset_is_reported(tmp_path: Path) -> None:
    text = HISTORY_ZERO.replace("  max_history_tokens: 0\n", "")
    diag = only(check(_ws(tmp_path, text)), "BL031")
    assert "is not set" in diag.message


@pytest.mark.parametrize("value", ["0", "-5", "'2000'", "2000.0", "true", "[1]"])
def test_invalid_max_context_tokens_is_reported_at_the_value(tmp_path: Path,
                                                             value: str) -> None:
    path = _ws(tmp_path, BASIC.replace("max_context_tokens: 2000",
                                       f"max_context_tokens: {value}"))
    report = check(path)
    diag = only(report, "BL030")
    assert diag.severity is Severity.ERROR
    assert text_at(path, diag.range) == value
    assert report.steps[0].fits is False


def test_missing_max_context_tokens_is_an_error(tmp_path: Path) -> None:
    path = _ws(tmp_path, BASIC.replace("  max_context_tokens: 2000\n", "  other: 1\n"))
    diag = only(check(path), "BL030")
    assert "missing" in diag.message
    assert text_at(path, diag.range) == "settings"


@pytest.mark.parametrize("config", [
    {"model_max_tokens": 300},
    {"model_context_window": 0, "model_max_tokens": 300},
    {"model_context_window": "8k", "model_max_tokens": 300},
])
def test_missing_or_invalid_model_context_window(tmp_path: Path, config: dict) -> None:
    make_workspace(tmp_path, config=config, pipelines={"p.yaml": BASIC},
                   prompts={"sys.txt": SYSTEM})
    report = check(tmp_path / "pipelines" / "p.yaml")
    diag = only(report, "BL012")
    assert diag.file == str(tmp_path / "config.json")
    assert report.steps[0].fits is False and report.window is None


def test_no_config_json_at_all(tmp_path: Path) -> None:
    make_workspace(tmp_path, pipelines={"p.yaml": BASIC})
    report = check(tmp_path / "pipelines" / "p.yaml", workspace_root=tmp_path)
    assert "BL010" in codes_of(report)


def test_invalid_config_value_is_reported_in_config_json(tmp_path: Path) -> None:
    path = _ws(tmp_path, BASIC, config={"format_overhead_tokens": -1})
    diag = only(check(path), "BL013")
    assert diag.file == str(tmp_path / "config.json")
    assert text_at(tmp_path / "config.json", diag.range) == "-1"


def test_missing_prompt_file(tmp_path: Path) -> None:
    path = _ws(tmp_path, BASIC, prompts={})
    diag = only(check(path), "BL040")
    assert text_at(path, diag.range) == "sys"
    assert diag.step == "answer"


def test_unclosed_brace_in_template_points_at_the_brace(tmp_path: Path) -> None:
    text = BASIC.replace('"Context: {context}\\nQuestion: {question}\\nUse {{braces}}."',
                         '"Answer {question and stop"')
    path = _ws(tmp_path, text)
    diag = only(check(path), "BL043")
    line = path.read_text().split("\n")[diag.range.start.line]
    assert line[diag.range.start.character] == "{"
    assert line[diag.range.start.character:].startswith("{question and")


def test_template_error_in_a_literal_block_points_at_the_brace(tmp_path: Path) -> None:
    text = BASIC.replace(
        '"Context: {context}\\nQuestion: {question}\\nUse {{braces}}."',
        "|\n        Context: {context}\n        Broken } here\n")
    path = _ws(tmp_path, text)
    diag = only(check(path), "BL043")
    line = path.read_text().split("\n")[diag.range.start.line]
    assert line.strip() == "Broken } here"
    assert line[diag.range.start.character:diag.range.end.character] == "}"


def test_output_above_the_models_ceiling(tmp_path: Path) -> None:
    path = _ws(tmp_path, BASIC, config={"model_max_output_tokens": 400})
    diag = only(check(path), "BL051")
    assert text_at(path, diag.range) == "500"


def test_step_that_cannot_fit_even_with_no_context_is_an_error_under_both_policies(
        tmp_path: Path) -> None:
    big = "word " * 5000
    path = _ws(tmp_path, BASIC, prompts={"sys.txt": big})
    fixed = tokens(big) + tokens("Context: \nQuestion: \nUse {braces}.") + 20
    assert fixed + 0 + 128 + 1 > WINDOW  # the premise, by hand
    for policy in ("fail_fast", "auto_clamp"):
        report = check(path, policy=policy)
        diag = only(report, "BL052")
        assert diag.severity is Severity.ERROR
        assert f"at least {fixed + 128 + 1}" in diag.message
        assert "BL050" not in codes_of(report)


def test_no_output_limit_anywhere(tmp_path: Path) -> None:
    text = BASIC.replace("    max_output_tokens: 500\n", "")
    make_workspace(tmp_path, config={"model_context_window": WINDOW},
                   pipelines={"p.yaml": text}, prompts={"sys.txt": SYSTEM})
    diag = only(check(tmp_path / "pipelines" / "p.yaml"), "BL053")
    assert diag.step == "answer"


VIOLATING = BASIC.replace("max_context_tokens: 2000", "max_context_tokens: 3500")


def test_violation_is_an_error_under_fail_fast(tmp_path: Path) -> None:
    path = _ws(tmp_path, VIOLATING)
    report = check(path, policy="fail_fast")
    fixed = tokens(SYSTEM) + tokens("Context: \nQuestion: \nUse {braces}.") + 20
    total = fixed + 3500 + 500 + 128
    assert total > WINDOW
    diag = only(report, "BL050")
    assert diag.severity is Severity.ERROR
    assert f"= {total} > {WINDOW} (over by {total - WINDOW})" in diag.message
    assert text_at(path, diag.range) == "answer"
    assert report.steps[0].headroom == WINDOW - total


def test_violation_is_a_warning_under_auto_clamp_that_says_what_is_clamped(
        tmp_path: Path) -> None:
    path = _ws(tmp_path, VIOLATING)
    report = check(path, policy="auto_clamp")
    fixed = tokens(SYSTEM) + tokens("Context: \nQuestion: \nUse {braces}.") + 20
    new_context = WINDOW - (fixed + 500 + 128)  # the worst (only) step fits exactly
    assert new_context >= 3500 // 2  # above the default floor: only the context moves
    diag = only(report, "BL050")
    assert diag.severity is Severity.WARNING
    assert f"max_context_tokens 3500 -> {new_context}" in diag.message
    assert report.clamp.context_after == new_context and report.clamp.outputs == ()


def test_clamp_lowers_outputs_below_the_context_floor(tmp_path: Path) -> None:
    text = VIOLATING.replace("max_context_tokens: 3500",
                             "max_context_tokens: 3500\n  min_context_tokens: 3480")
    report = check(_ws(tmp_path, text), policy="auto_clamp")
    fixed = tokens(SYSTEM) + tokens("Context: \nQuestion: \nUse {braces}.") + 20
    assert WINDOW - (fixed + 500 + 128) < 3480  # fitting by context alone would pass the floor
    assert report.clamp.context_after == 3480
    (out,) = report.clamp.outputs
    assert (out.before, out.after) == (500, WINDOW - (fixed + 3480 + 128))


@pytest.mark.parametrize(("config", "environ", "override", "expected"), [
    ({"development": True}, {}, None, Policy.FAIL_FAST),
    ({"developement": True}, {}, None, Policy.FAIL_FAST),
    ({"development": False}, {}, None, Policy.AUTO_CLAMP),
    ({"development": True}, {"PIPELINE_LIMITS_POLICY": "auto_clamp"}, None, Policy.AUTO_CLAMP),
    ({"development": False}, {"PIPELINE_LIMITS_POLICY": "fail_fast"}, None, Policy.FAIL_FAST),
    ({"development": False}, {"PIPELINE_LIMITS_POLICY": "fail_fast"}, "auto_clamp",
     Policy.AUTO_CLAMP),
    ({}, {"APP_DEVELOPMENT": "1"}, None, Policy.FAIL_FAST),
    ({}, {}, None, Policy.AUTO_CLAMP),
])
def test_policy_resolution(tmp_path: Path, config: dict, environ: dict,
                           override: str | None, expected: Policy) -> None:
    cfg = {"model_context_window": WINDOW, **config}
    make_workspace(tmp_path, config=cfg, pipelines={"p.yaml": BASIC},
                   prompts={"sys.txt": SYSTEM})
    report = check(tmp_path / "pipelines" / "p.yaml", policy=override, environ=environ)
    assert report.policy is expected


def test_bad_policy_env_value_is_a_warning_and_ignored(tmp_path: Path) -> None:
    path = _ws(tmp_path, BASIC)
    report = check(path, environ={"PIPELINE_LIMITS_POLICY": "yolo"})
    assert report.policy is Policy.FAIL_FAST
    assert only(report, "BL015").severity is Severity.WARNING


def test_wrong_types_are_errors_at_the_value_and_unknown_keys_are_kept(
        tmp_path: Path) -> None:
    text = BASIC.replace("max_output_tokens: 500", "max_output_tokens: lots\n    retries: 3")
    path = _ws(tmp_path, "owner: team-a\n" + text)
    report = check(path)
    diag = only(report, "BL005")
    assert text_at(path, diag.range) == "lots"
    assert "max_output_tokens" in diag.message
    # the bad value is dropped: the step falls back to the config default
    assert report.steps[0].output_source == "model_max_tokens"


def test_steps_are_named_by_id_then_name_then_index(tmp_path: Path) -> None:
    text = """\
settings: {max_context_tokens: 100}
steps:
  - {id: a, name: ignored, type: call_model, prompt_key: sys}
  - {name: b, type: call_model, prompt_key: sys}
  - {type: retrieve}
  - {type: call_model, prompt_key: sys}
"""
    assert [s.step for s in check(_ws(tmp_path, text)).steps] == ["a", "b", "#3"]


def test_tokenizer_from_config_changes_the_counts(tmp_path: Path) -> None:
    from budgetlens.tokens.core import get_tokenizer
    path = _ws(tmp_path, BASIC, config={"tokenizer": "gpt-4o"})
    report = check(path)
    assert report.tokenizer == "o200k_base"
    o200k = get_tokenizer("o200k_base")
    assert report.steps[0].system_prompt.value == len(o200k.encode(SYSTEM))


def test_unknown_tokenizer_is_reported_at_the_config_value(tmp_path: Path) -> None:
    path = _ws(tmp_path, BASIC, config={"tokenizer": "no-such-model"})
    report = check(path)
    diag = only(report, "BL014")
    assert text_at(tmp_path / "config.json", diag.range) == '"no-such-model"'
    assert report.tokenizer == "cl100k_base"


def test_nearest_config_wins_and_prompts_dir_is_relative_to_it(tmp_path: Path) -> None:
    make_workspace(tmp_path, config={"model_context_window": 100000})
    team = tmp_path / "team"
    make_workspace(team, config={"model_context_window": WINDOW, "prompts_dir": "p",
                                 "format_overhead_tokens": 0},
                   pipelines={"x.yaml": BASIC})
    (team / "p").mkdir()
    (team / "p" / "sys.txt").write_text("hello world", "utf-8")
    report = check(team / "pipelines" / "x.yaml")
    assert report.config == str(team / "config.json")
    assert report.window is not None and report.window.value == WINDOW
    assert report.steps[0].system_prompt.value == 2  # "hello world" = [15339, 1917]


def test_inputs_list_every_file_the_report_depends_on(tmp_path: Path) -> None:
    make_workspace(tmp_path, config={"model_context_window": WINDOW},
                   pipelines={"base.yaml": BASIC, "child.yaml": "extends: base.yaml\n"},
                   prompts={"sys.txt": SYSTEM})
    report = check(tmp_path / "pipelines" / "child.yaml")
    assert report.inputs == {str(tmp_path / "pipelines" / "child.yaml"),
                             str(tmp_path / "pipelines" / "base.yaml"),
                             str(tmp_path / "prompts" / "sys.txt"),
                             str(tmp_path / "config.json")}


def test_find_pipelines_searches_pipelines_folders(tmp_path: Path) -> None:
    make_workspace(tmp_path, pipelines={"b.yaml": "", "a.yml": ""})
    make_workspace(tmp_path / "sub", pipelines={"c.yaml": ""})
    (tmp_path / "pipelines" / "notes.txt").write_text("x")
    (tmp_path / ".hidden" / "pipelines").mkdir(parents=True)
    (tmp_path / ".hidden" / "pipelines" / "z.yaml").write_text("")
    assert find_pipelines(tmp_path) == [tmp_path / "pipelines" / "a.yml",
                                        tmp_path / "pipelines" / "b.yaml",
                                        tmp_path / "sub" / "pipelines" / "c.yaml"]
    assert find_pipelines(tmp_path / "pipelines" / "b.yaml") == [
        tmp_path / "pipelines" / "b.yaml"]


def test_an_explicit_config_path_wins_over_discovery(tmp_path: Path) -> None:
    path = _ws(tmp_path, BASIC)
    other = tmp_path / "elsewhere.json"
    other.write_text('{"model_context_window": 3000, "model_max_tokens": 10}')
    report = check(path, config_path=other)
    assert report.config == str(other)
    assert report.steps[0].window.value == 3000


def test_config_discovery_stops_at_the_workspace_root(tmp_path: Path) -> None:
    make_workspace(tmp_path, config={"model_context_window": WINDOW})
    inner = tmp_path / "project"
    make_workspace(inner, pipelines={"p.yaml": BASIC}, prompts={"sys.txt": SYSTEM})
    assert check(inner / "pipelines" / "p.yaml").config == str(tmp_path / "config.json")
    report = check(inner / "pipelines" / "p.yaml", workspace_root=inner)
    assert report.config is None and "BL010" in codes_of(report)


def test_an_explicit_null_setting_is_as_if_unset(tmp_path: Path) -> None:
    make_workspace(tmp_path, config={"model_context_window": WINDOW, "model_max_tokens": 10},
                   prompts={"sys.txt": SYSTEM},
                   pipelines={"base.yaml": BASIC,
                              "child.yaml": "extends: base.yaml\nsettings:\n"
                                            "  max_context_tokens: ~\n"
                                            "  budget_safety_margin_tokens: null\n",
                              "alone.yaml": "settings: {max_context_tokens: null}\n"})
    child = check(tmp_path / "pipelines" / "child.yaml")
    assert child.diagnostics == [] and child.steps[0].context.value == 2000
    assert child.steps[0].margin.value == 128
    assert "missing" in only(check(tmp_path / "pipelines" / "alone.yaml"), "BL030").message
