"""Near-miss keys (BL008) and duplicate step ids (BL044).

A typo corpus: each misspelling is written into a small workspace by hand, and the warning
must sit at the key's own characters (0-based line and code-point columns, counted here by
hand from the texts below) with the right suggestion; renaming the key as the quick-fix data
says makes the warning go away. Then legitimate runtime keys that no check may flag.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetlens import codes
from budgetlens.contract.near_miss import osa_distance, suggest
from budgetlens.source import Range, RenameKey, Severity, TextEdit, apply_text_edits
from budgetlens_cli.main import main
from tests.core.contract.helpers import check, make_workspace

SYSTEM = "You answer questions.\n"

# config.json with the typo on line 3 (0-based); a key there starts at column 3 (after
# two spaces and the opening quote).
CONFIG = """\
{
  "model_context_window": 8192,
  "format_overhead_tokens": 20,
  "%s": %s
}
"""
GOOD_CONFIG = '{\n  "model_context_window": 8192,\n  "model_max_tokens": 300\n}\n'

# settings typo on line 2, column 2
SETTINGS = """\
settings:
  max_context_tokens: 2000
  %s: 100
steps:
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 500
"""

# step typo on line 5, column 4 (the output limit is config.json's model_max_tokens)
STEP = """\
settings:
  max_context_tokens: 2000
steps:
  - id: answer
    type: call_model
    %s: %s
"""

# user_parts typo on line 8, column 6
USER_PARTS = """\
settings:
  max_context_tokens: 2000
steps:
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 500
    user_parts:
      %s: "Question: {question}"
"""

NO_DEV = (" Until then development mode is not set: the policy is auto_clamp unless"
          " PIPELINE_LIMITS_POLICY or APP_DEVELOPMENT says otherwise")
OUT_OF_BUDGET = (" Until then the step is not a call_model step and is left out of the"
                 " budget")


def _write(tmp_path: Path, *, config: str = GOOD_CONFIG, pipeline: str,
           name: str = "p.yaml") -> Path:
    make_workspace(tmp_path, config=config, pipelines={name: pipeline},
                   prompts={"sys.txt": SYSTEM})
    return tmp_path / "pipelines" / name


def _bl008(report: object) -> list:
    return [d for d in report.diagnostics if d.code == codes.NEAR_MISS_KEY]  # type: ignore[attr-defined]


#: Keys that set a budget term (docs/diagnostics.md, BL008): a near miss of one is an error
#: with this note (issue 30, case 15); of the others (development, id, name, type) a warning.
BUDGET_KEYS = {
    "model", "model_context_window", "model_max_tokens", "model_max_output_tokens",
    "prompts_dir", "format_overhead_tokens", "tokenizer", "min_context_tokens",
    "min_output_tokens", "serving", "max_model_len", "num_ctx", "extends", "settings", "steps",
    "max_context_tokens", "max_history_tokens", "budget_safety_margin_tokens", "injection",
    "prompt_key", "user_parts", "max_output_tokens", "max_tokens", "use_history", "template"}
BUDGET_NOTE = " It sets a budget term: until it is renamed, the budget ignores this value"


def _assert_one_warning(tmp_path: Path, pipeline: Path, file: Path, key: str, suggestion: str,
                        line: int, start: int, end: int, extra: str = "") -> None:
    report = check(pipeline)
    [diag] = _bl008(report)
    assert diag.file == str(file)
    budget = suggestion in BUDGET_KEYS
    assert diag.severity is (Severity.ERROR if budget else Severity.WARNING)
    assert diag.message == (f"unknown key {key!r}: did you mean {suggestion!r}?{extra}"
                            + (BUDGET_NOTE if budget else ""))
    assert diag.range == Range.at(line, start, line, end)
    # the range covers exactly the key's characters
    text = file.read_text("utf-8")
    assert text.split("\n")[line][start:end] == key
    # renaming as the quick-fix data says removes the warning
    rename = diag.data
    assert isinstance(rename, RenameKey)
    assert (rename.key, rename.suggestion, rename.range) == (key, suggestion, diag.range)
    assert rename.new_text == suggestion
    fixed = apply_text_edits(text, [TextEdit(str(file), diag.range, suggestion)])
    file.write_text(fixed, "utf-8")
    assert _bl008(check(pipeline)) == []


# ----------------------------------------------------------------------- config.json
@pytest.mark.parametrize(("key", "value", "suggestion", "end", "extra"), [
    ("model_max_token", "300", "model_max_tokens", 18, ""),  # from the issue
    ("develpment", "true", "development", 13, NO_DEV),  # from the issue
    ("developmnet", "true", "development", 14, NO_DEV),
    ("model_max_ouput_tokens", "4096", "model_max_output_tokens", 25, ""),
    ("prompt_dir", '"prompts"', "prompts_dir", 13, ""),
    ("tokeniser", '"cl100k_base"', "tokenizer", 12, ""),
    ("model-max-output-tokens", "4096", "model_max_output_tokens", 26, ""),
    ("Model_Max_Tokens", "300", "model_max_tokens", 19, ""),
])
def test_config_typos(tmp_path: Path, key: str, value: str, suggestion: str, end: int,
                      extra: str) -> None:
    pipeline = _write(tmp_path, config=CONFIG % (key, value),
                      pipeline=STEP % ("max_tokens", "300"))
    _assert_one_warning(tmp_path, pipeline, tmp_path / "config.json", key, suggestion,
                        3, 3, end, extra)


def test_a_misspelled_development_says_what_the_policy_does_and_is_ignored(
        tmp_path: Path) -> None:
    pipeline = _write(tmp_path, config=CONFIG % ("develpment", "true"),
                      pipeline=SETTINGS % "retrieval_top_k")
    report = check(pipeline)
    assert report.policy.value == "auto_clamp"  # what the warning says
    [diag] = _bl008(report)
    assert diag.message.endswith(NO_DEV)


def test_the_policy_sentence_is_left_out_when_development_is_set_too(tmp_path: Path) -> None:
    config = CONFIG % ("develpment", "true")
    config = config.replace('"format_overhead_tokens": 20,', '"developement": false,')
    pipeline = _write(tmp_path, config=config, pipeline=SETTINGS % "retrieval_top_k")
    [diag] = _bl008(check(pipeline))
    assert diag.message == "unknown key 'develpment': did you mean 'development'?"


# -------------------------------------------------------------------------- settings
@pytest.mark.parametrize(("key", "suggestion", "end"), [
    ("max_histroy_tokens", "max_history_tokens", 20),  # from the issue
    ("budget_safety_margin", "budget_safety_margin_tokens", 22),  # from the issue
    ("max_history", "max_history_tokens", 13),
    ("max-history-tokens", "max_history_tokens", 20),
    ("Max_History_Tokens", "max_history_tokens", 20),
    ("budget_safety_margin_token", "budget_safety_margin_tokens", 28),
    ("budget_saftey_margin_tokens", "budget_safety_margin_tokens", 29),
    ("min_context_token", "min_context_tokens", 19),
    ("injections", "injection", 12),
])
def test_settings_typos(tmp_path: Path, key: str, suggestion: str, end: int) -> None:
    pipeline = _write(tmp_path, pipeline=SETTINGS % key)
    _assert_one_warning(tmp_path, pipeline, pipeline, key, suggestion, 2, 2, end)


def test_max_context_token_in_a_child_leaves_the_inherited_value_in_use(
        tmp_path: Path) -> None:
    """The issue's first case: the child's 11000 is a typo, the parent's 10000 is used."""
    make_workspace(tmp_path, config={"model_context_window": 16384, "model_max_tokens": 300},
                   pipelines={
                       "base.yaml": ("settings:\n  max_context_tokens: 10000\nsteps:\n"
                                     "  - id: answer\n    type: call_model\n"
                                     "    prompt_key: sys\n"),
                       "child.yaml": ("extends: base.yaml\nsettings:\n"
                                      "  max_context_token: 11000\n")},
                   prompts={"sys.txt": SYSTEM})
    child = tmp_path / "pipelines" / "child.yaml"
    report = check(child)
    assert report.context is not None and report.context.value == 10000
    _assert_one_warning(tmp_path, child, child, "max_context_token", "max_context_tokens",
                        2, 2, 19)
    report = check(child)
    assert report.context is not None and report.context.value == 11000


# ----------------------------------------------------------------------------- steps
@pytest.mark.parametrize(("key", "value", "suggestion", "end"), [
    ("use_histroy", "false", "use_history", 15),  # from the issue
    ("max_output_token", "400", "max_output_tokens", 20),
    ("max_otuput_tokens", "400", "max_output_tokens", 21),
    ("max_output", "400", "max_output_tokens", 14),
    ("maxOutputTokens", "400", "max_output_tokens", 19),
    ("max_token", "400", "max_tokens", 13),
    ("promt_key", "sys", "prompt_key", 13),
    ("prompt-key", "sys", "prompt_key", 14),
    ("promptKey", "sys", "prompt_key", 13),
    ("user_part", "{}", "user_parts", 13),
    ("useHistory", "false", "use_history", 14),
])
def test_step_typos(tmp_path: Path, key: str, value: str, suggestion: str, end: int) -> None:
    pipeline = _write(tmp_path, pipeline=STEP % (key, value))
    _assert_one_warning(tmp_path, pipeline, pipeline, key, suggestion, 5, 4, end)


@pytest.mark.parametrize(("key", "end"), [
    ("templte", 13),  # from the issue
    ("tempalte", 14),
    ("Template", 14),
    ("templates", 15),
])
def test_user_parts_typos(tmp_path: Path, key: str, end: int) -> None:
    pipeline = _write(tmp_path, pipeline=USER_PARTS % key)
    _assert_one_warning(tmp_path, pipeline, pipeline, key, "template", 8, 6, end)


@pytest.mark.parametrize(("text", "key", "suggestion", "line", "start", "end"), [
    ("extend: base.yaml\nsettings:\n  max_context_tokens: 2000\n", "extend", "extends",
     0, 0, 6),
    ("setings:\n  max_context_tokens: 2000\n", "setings", "settings", 0, 0, 7),
    ("settings:\n  max_context_tokens: 2000\nstep: []\n", "step", "steps", 2, 0, 4),
])
def test_top_level_typos(tmp_path: Path, text: str, key: str, suggestion: str, line: int,
                         start: int, end: int) -> None:
    if key == "extend":
        make_workspace(tmp_path, pipelines={"base.yaml": "steps: []\n"})
    pipeline = _write(tmp_path, pipeline=text)
    _assert_one_warning(tmp_path, pipeline, pipeline, key, suggestion, line, start, end)


def test_a_quoted_key_is_reported_and_renamed_inside_its_quotes(tmp_path: Path) -> None:
    pipeline = _write(tmp_path, pipeline=SETTINGS % "'max_histroy_tokens'")
    [diag] = _bl008(check(pipeline))
    assert diag.range == Range.at(2, 3, 2, 21)
    assert diag.data.new_text == "max_history_tokens"


def test_no_rename_when_the_right_key_is_there_too(tmp_path: Path) -> None:
    pipeline = _write(tmp_path, pipeline=SETTINGS % "max_context_token")
    [diag] = _bl008(check(pipeline))
    assert diag.message == ("unknown key 'max_context_token': did you mean"
                            " 'max_context_tokens'?")
    assert diag.data.new_text is None  # a rename would make a duplicate key


# ------------------------------------------------------------------ the step type
@pytest.mark.parametrize(("value", "end"), [
    ("call-model", 20),  # from the issue
    ("callmodel", 19),
    ("call_modle", 20),
    ("Call_Model", 20),
    ('"call-model"', 21),
])
def test_a_step_type_close_to_call_model(tmp_path: Path, value: str, end: int) -> None:
    text = STEP.replace("type: call_model", f"type: {value}") % ("max_output_tokens", "99999")
    pipeline = _write(tmp_path, pipeline=text)
    report = check(pipeline)
    assert report.steps == []  # the step is out of the budget ...
    [diag] = _bl008(report)  # ... and the user is told
    shown = value.strip('"')
    start = 11 if value.startswith('"') else 10
    assert diag.message == (f"unknown step type {shown!r}: did you mean 'call_model'?"
                            + OUT_OF_BUDGET)
    assert diag.range == Range.at(4, start, 4, end)
    assert diag.step == "answer"
    assert diag.data.new_text == "call_model"
    pipeline.write_text(apply_text_edits(text, [TextEdit(str(pipeline), diag.range,
                                                         "call_model")]), "utf-8")
    report = check(pipeline)
    assert _bl008(report) == [] and [s.output.value for s in report.steps] == [99999]


def test_a_misspelled_type_key(tmp_path: Path) -> None:
    text = STEP.replace("    type: call_model\n", "    tpye: call_model\n") % ("top_p", "1")
    pipeline = _write(tmp_path, pipeline=text)
    _assert_one_warning(tmp_path, pipeline, pipeline, "tpye", "type", 4, 4, 8,
                        " Without a type the step is not a call_model step and is left out"
                        " of the budget")


# ------------------------------------------------------------------ duplicate step ids
def test_duplicate_step_ids_are_an_error_at_the_second_id(tmp_path: Path) -> None:
    text = """\
settings:
  max_context_tokens: 2000
steps:
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 500
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 600
  - name: answer
    type: retrieve
"""
    pipeline = _write(tmp_path, pipeline=text)
    report = check(pipeline)
    dups = [d for d in report.diagnostics if d.code == codes.DUPLICATE_STEP_ID]
    assert [(d.severity, d.range) for d in dups] == [
        (Severity.ERROR, Range.at(7, 8, 7, 14)), (Severity.ERROR, Range.at(11, 10, 11, 16))]
    assert dups[0].message == ("duplicate step id 'answer': steps[0] has it too; give each"
                               " step its own (reports, clamps and fixes find a step by it)")
    assert dups[1].message.startswith("duplicate step name 'answer': steps[0] has it too")
    assert dups[0].related[0].location.range == Range.at(3, 8, 3, 14)
    assert [d.step for d in dups] == ["answer", "answer"]


def test_distinct_ids_and_unnamed_steps_are_fine(tmp_path: Path) -> None:
    text = ("settings:\n  max_context_tokens: 2000\nsteps:\n  - type: retrieve\n"
            "  - type: retrieve\n  - id: a\n    type: retrieve\n  - id: b\n"
            "    type: retrieve\n")
    report = check(_write(tmp_path, pipeline=text))
    assert report.diagnostics == []


# --------------------------------------------------------------- legitimate keys
RUNTIME_CONFIG = """\
{
  "model_context_window": 8192,
  "model_max_tokens": 300,
  "model": "gpt-4o-mini",
  "context_window": 8192,
  "api_base": "http://localhost:8080",
  "timeout_s": 30,
  "max_retries": 3,
  "cache": true,
  "log_level": "info"
}
"""

RUNTIME_PIPELINE = """\
name: support
description: Answers support questions
version: 3
tags: [support, en]
settings:
  max_context_tokens: 2000
  max_history_tokens: 300
  min_context_tokens: 1000
  retrieval_top_k: 8
  max_history_turns: 10
  max_input_tokens: 6000
  rerank_top_k: 4
  cache: true
steps:
  - id: retrieve
    type: retrieve
    top_k: 8
    max_token: 3
    max_chunks: 10
  - id: answer
    type: call_model
    prompt_key: sys
    max_tokens: 400
    use_history: true
    temperature: 0.2
    top_p: 0.9
    top_k: 40
    stop: ["\\n\\n"]
    seed: 7
    retry: 2
    timeout_s: 20
    tools: []
    model: gpt-4o-mini
    min_tokens: 1
    max_new_tokens: 400
    max_completion_tokens: 400
    response_format: json
    description: the answer
    tags: [main]
    user_parts:
      template: "Question: {question}"
      role: user
      prefix: ">"
"""


def test_legitimate_runtime_keys_produce_nothing(tmp_path: Path) -> None:
    pipeline = _write(tmp_path, config=RUNTIME_CONFIG, pipeline=RUNTIME_PIPELINE)
    report = check(pipeline)
    assert report.diagnostics == []
    assert [s.step for s in report.steps] == ["answer"]


@pytest.mark.parametrize("key", [
    "temperature", "retry", "retries", "timeout_s", "tools", "stop", "top_p", "top_k",
    "description", "tags", "retrieval_top_k", "cache", "model", "seed", "stream",
    "min_tokens", "max_new_tokens", "max_input_tokens", "max_history_turns",
    "max_completion_tokens", "response_format", "presence_penalty", "max_retries",
    "context_window", "output_schema", "depends_on", "min_output_tokens", "min_history_tokens",
])
def test_runtime_keys_are_close_to_no_known_key(tmp_path: Path, key: str) -> None:
    for text in (SETTINGS % key, STEP % (key, "1"), USER_PARTS % key):
        pipeline = _write(tmp_path, pipeline=text)
        assert _bl008(check(pipeline)) == [], text
    pipeline = _write(tmp_path, config=CONFIG % (key, "1"), pipeline=SETTINGS % "cache")
    assert _bl008(check(pipeline)) == []


def test_other_step_types_keep_their_own_keys(tmp_path: Path) -> None:
    text = STEP.replace("type: call_model", "type: call_tool") % ("max_token", "3")
    pipeline = _write(tmp_path, pipeline=text)
    assert check(pipeline).diagnostics == []


# ------------------------------------------------------------------- the matcher
def test_distance_counts_a_transposition_as_one_edit() -> None:
    assert osa_distance("histroy", "history", 2) == 1
    assert osa_distance("templte", "template", 2) == 1
    assert osa_distance("min_tokens", "max_tokens", 5) == 2
    assert osa_distance("abcdef", "uvwxyz", 2) == 3  # capped at limit + 1


def test_short_keys_need_an_exact_fold_and_long_keys_allow_two_edits() -> None:
    assert suggest("ID", ("id", "name")) == "id"
    assert suggest("ix", ("id",)) is None  # under 4 characters: no edit distance
    assert suggest("min_tokens", ("max_tokens",)) is None  # 2 edits in 10 characters
    assert suggest("min_output_tokens", ("max_output_tokens",)) is None  # min is not max
    assert suggest("min_ouptut_tokens", ("max_output_tokens",)) is None
    assert suggest("max_contxt_tokns", ("max_context_tokens",)) == "max_context_tokens"
    assert suggest("development", ("development",)) is None  # known keys are not typos
    assert suggest("developmen", ("development", "developement")) == "development"


# ----------------------------------------------------------------------------- CLI
def test_check_prints_the_warning_and_exits_0_for_warnings_1_for_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    pipeline = _write(tmp_path, config=CONFIG % ("develpment", "true"),
                      pipeline=SETTINGS % "retrieval_top_k")
    assert main(["check", str(pipeline), "--no-table"]) == 0
    out = capsys.readouterr().out
    assert (f"{tmp_path / 'config.json'}:4:4: warning[BL008] unknown key 'develpment': did"
            " you mean 'development'?") in out
    pipeline = _write(tmp_path, pipeline=SETTINGS % "max_histroy_tokens")
    assert main(["check", str(pipeline), "--no-table"]) == 1  # a budget key: an error
    out = capsys.readouterr().out
    assert (f"{pipeline}:3:3: error[BL008] unknown key 'max_histroy_tokens': did you mean"
            " 'max_history_tokens'?" + BUDGET_NOTE) in out
    dup = SETTINGS % "cache" + "  - id: answer\n    type: retrieve\n"
    pipeline.write_text(dup, "utf-8")
    assert main(["check", str(pipeline), "--no-table"]) == 1
    assert f"{pipeline}:9:9: error[BL044] duplicate step id 'answer'" in capsys.readouterr().out
