"""Typos and values that changed the verdict of ``budgetlens check`` (issue 30, cases 14-17
and the minor ones): each reproduced on a workspace on disk, through the CLI.

The prompts are empty and ``format_overhead_tokens`` is 10, so a step's fixed cost is 10 and
its total is 10 + context + output + margin (128 by default), summed by hand below.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from budgetlens.tokens.core import get_tokenizer
from budgetlens.yamldoc import incremental
from budgetlens.yamldoc import parse as yaml_parse
from budgetlens_cli.main import main
from tests.core.contract.helpers import make_workspace

POLICIES = ("fail_fast", "auto_clamp")
BUDGET_NOTE = " It sets a budget term: until it is renamed, the budget ignores this value"


@pytest.fixture(autouse=True)
def _no_policy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["check", "--no-cache", *argv])
    return code, capsys.readouterr().out


# ------------------------------------------------------------- case 14: serving keys
# 10 + 3000 + 1000 + 128 = 4138: fits gpt-4o's 128,000, not a server limit of 4,096
SERVED = """\
settings:
  max_context_tokens: 3000
steps:
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 1000
"""


def _served(root: Path, key: str) -> Path:
    make_workspace(root, config={"model": "gpt-4o", "format_overhead_tokens": 10,
                                 "serving": {key: 4096}},
                   pipelines={"p.yaml": SERVED}, prompts={"sys.txt": ""})
    return root / "pipelines" / "p.yaml"


@pytest.mark.parametrize(("key", "meant"), [
    ("max-model-len", "max_model_len"),  # vLLM's flag, spelt as on the command line
    ("max_model_length", "max_model_len"),
    ("num-ctx", "num_ctx"),
    ("num_context", "num_ctx"),
])
@pytest.mark.parametrize("policy", POLICIES)
def test_a_misspelt_serving_key_is_an_error_naming_the_key_meant(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, meant: str,
        policy: str) -> None:
    pipeline = _served(tmp_path, key)
    code, out = _run(capsys, str(pipeline), "--policy", policy)
    assert code == 1
    # config.json as make_workspace writes it (indent 2): "serving" on line 4, the key on 5
    config = tmp_path / "config.json"
    line = config.read_text("utf-8").splitlines().index(f'    "{key}": 4096') + 1
    assert (f"{config}:{line}:6: error[BL008] unknown key {key!r}: did you mean {meant!r}?"
            + BUDGET_NOTE) in out


def test_the_serving_key_spelt_right_binds_the_window(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = _served(tmp_path, "max_model_len")
    code, out = _run(capsys, str(pipeline), "--policy", "fail_fast", "--format", "json")
    assert code == 1
    [step] = json.loads(out)["steps"]
    assert (step["budget"]["window"], step["budget"]["total"]) == (4096, 4138)
    assert "BL008" not in out


# --------------------------------------------------- case 15: a budget key's near miss
# as written: 10 + 2000 + 2048 + 128 = 4186 > 4096; with model_max_tokens 500 it "fits"
OUTPUT_TYPO = """\
settings:
  max_context_tokens: 2000
steps:
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_token: 2048
"""


@pytest.mark.parametrize("policy", POLICIES)
def test_a_near_miss_of_an_output_limit_is_an_error_under_both_policies(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str) -> None:
    make_workspace(tmp_path, config={"model_context_window": 4096, "model_max_tokens": 500,
                                     "format_overhead_tokens": 10},
                   pipelines={"p.yaml": OUTPUT_TYPO}, prompts={"sys.txt": ""})
    pipeline = tmp_path / "pipelines" / "p.yaml"
    code, out = _run(capsys, str(pipeline), "--policy", policy)
    assert code == 1
    assert (f"{pipeline}:7:5: error[BL008] unknown key 'max_output_token': did you mean"
            " 'max_output_tokens'?" + BUDGET_NOTE) in out
    # renamed, the step is over budget as written (4186 > 4096)
    pipeline.write_text(OUTPUT_TYPO.replace("max_output_token:", "max_output_tokens:"),
                        "utf-8")
    code, out = _run(capsys, str(pipeline), "--policy", policy, "--format", "json")
    [step] = json.loads(out)["steps"]
    assert (step["budget"]["total"], step["fits"]) == (4186, False)


def test_a_near_miss_of_a_key_that_sets_no_budget_term_stays_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = OUTPUT_TYPO.replace("max_output_token: 2048", "nmae: first")
    make_workspace(tmp_path, config={"model_context_window": 4096, "model_max_tokens": 500,
                                     "format_overhead_tokens": 10},
                   pipelines={"p.yaml": text}, prompts={"sys.txt": ""})
    pipeline = tmp_path / "pipelines" / "p.yaml"
    code, out = _run(capsys, str(pipeline), "--policy", "fail_fast")
    assert code == 0
    assert (f"{pipeline}:7:5: warning[BL008] unknown key 'nmae': did you mean 'name'?\n"
            in out)


# ------------------------------------- case 16: an anchor outside settings is not lowered
# 10 + 990 + 400 + 128 = 1528 > 1500: auto_clamp wants max_context_tokens 962
ANCHORED_OUTSIDE = """\
defaults: &lim 990
retry:
  timeout_ms: *lim
settings:
  max_context_tokens: *lim
steps:
  - id: a
    type: call_model
    prompt_key: sys
    max_output_tokens: 400
"""
ANCHORED_INSIDE = """\
settings:
  defaults: &lim 990
  max_context_tokens: *lim
retry:
  timeout_ms: *lim
steps:
  - id: a
    type: call_model
    prompt_key: sys
    max_output_tokens: 400
"""


def _anchored(root: Path, text: str) -> Path:
    make_workspace(root, config={"model_context_window": 1500, "model_max_tokens": 300,
                                 "format_overhead_tokens": 10},
                   pipelines={"p.yaml": text}, prompts={"sys.txt": ""})
    return root / "pipelines" / "p.yaml"


@pytest.mark.parametrize(("text", "line", "holder"), [
    (ANCHORED_OUTSIDE, 1, "defaults"),  # the case
    (ANCHORED_INSIDE, 2, "settings.defaults"),  # the documented one, refused before too
    # the anchor in settings, read by a runtime value nested elsewhere
    (ANCHORED_OUTSIDE.replace("defaults: &lim 990\n", "").replace(
        "max_context_tokens: *lim", "max_context_tokens: &lim 990").replace(
        "retry:\n  timeout_ms: *lim\n", "") + "retry:\n  timeout_ms: *lim\n", 2,
     "retry.timeout_ms"),
])
def test_clamp_write_refuses_a_shared_anchor_that_sets_another_value(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int,
        holder: str) -> None:
    pipeline = _anchored(tmp_path, text)
    before = pipeline.read_bytes()
    code = main(["clamp", str(pipeline), "--write", "--policy", "auto_clamp"])
    captured = capsys.readouterr()
    assert code == 1  # still not fitting: nothing was lowered
    assert pipeline.read_bytes() == before
    assert (f"settings.max_context_tokens not lowered to 962: the value comes from anchor"
            f" &lim at line {line}, which also sets {holder}; change it there by hand"
            ) in captured.err
    assert "0 changes applied in 0 files" in captured.out


def test_clamp_still_lowers_an_anchor_whose_other_users_are_holders(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = ANCHORED_OUTSIDE.replace("defaults: &lim 990\nretry:\n  timeout_ms: *lim\n", "")
    text = text.replace("max_context_tokens: *lim", "max_context_tokens: &lim 990")
    text += "x-limit: *lim\n"  # a top-level holder the contract does not read
    pipeline = _anchored(tmp_path, text)
    assert main(["clamp", str(pipeline), "--write", "--policy", "auto_clamp"]) == 0
    assert pipeline.read_text("utf-8") == text.replace("&lim 990", "&lim 962")


# --------------------------------------- case 17: tokens counts with the model's tokenizer
PROMPT = "Привет, мир! こんにちは世界。 Überprüfung der Größenordnung."


def test_tokens_counts_with_the_tokenizer_of_the_config_model_as_check_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    o200k, cl100k = (get_tokenizer(name).count(PROMPT) for name in ("o200k_base",
                                                                      "cl100k_base"))
    assert o200k != cl100k  # the two tokenizers tell apart on this text
    make_workspace(tmp_path, config={"model": "gpt-4o", "format_overhead_tokens": 10},
                   pipelines={"p.yaml": SERVED}, prompts={"sys.txt": PROMPT})
    prompt = tmp_path / "prompts" / "sys.txt"
    assert main(["tokens", str(prompt)]) == 0
    out = capsys.readouterr().out
    assert out == (f"{o200k}  {prompt}\n"
                   f"tokenizer: o200k_base (model gpt-4o of {tmp_path / 'config.json'})\n")
    _, out = _run(capsys, str(tmp_path / "pipelines" / "p.yaml"), "--format", "json")
    [step] = json.loads(out)["steps"]
    assert step["budget"]["system_prompt"] == o200k  # what check counts
    # a tokenizer in config.json still wins over the model's
    (tmp_path / "config.json").write_text(json.dumps(
        {"model": "gpt-4o", "tokenizer": "cl100k_base"}), "utf-8")
    assert main(["tokens", str(prompt), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["tokenizer"], data["total"]) == ("cl100k_base", cl100k)


# -------------------------------------------------- minor: a nested field in a format spec
@pytest.mark.parametrize(("template", "filled"), [
    ("Q: {q:>{w}}!", "Q: !"),  # str.format("Q: {q:>{w}}!", q="", w="") by hand
    ("{q:{fill}^{width}} end", " end"),
])
def test_a_nested_field_in_a_format_spec_is_a_valid_template(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], template: str,
        filled: str) -> None:
    assert template.format(q="", w="", fill="", width="") == filled
    text = SERVED + f"    user_parts:\n      template: {json.dumps(template)}\n"
    make_workspace(tmp_path, config={"model_context_window": 8192, "format_overhead_tokens": 10},
                   pipelines={"p.yaml": text}, prompts={"sys.txt": ""})
    code, out = _run(capsys, str(tmp_path / "pipelines" / "p.yaml"), "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert [d["code"] for d in data["diagnostics"]] == []
    [step] = data["steps"]
    assert step["budget"]["template"] == get_tokenizer("cl100k_base").count(filled)


# ----------------------------------- minor: BL030 on an unquoted number with a leading zero
@pytest.mark.parametrize(("written", "hint"), [
    # yaml.safe_load("a: 0990") == {"a": "0990"}: not octal, so a string, quotes or not
    ("0990", "(it is not quoted: YAML reads a number with a leading zero as octal, and 0990"
             " is not octal, so it reads a string; write 990)"),
    # unquoted, 0777 would be 511 (octal): removing the quotes alone is wrong too
    ('"0777"', "(write 777 without the quotes and the leading zero: unquoted, YAML reads"
               " 0777 as the octal number 511)"),
    ('"990"', "(remove the quotes)"),
])
def test_bl030_on_digits_read_as_a_string_says_what_yaml_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], written: str, hint: str) -> None:
    text = SERVED.replace("max_context_tokens: 3000", f"max_context_tokens: {written}")
    make_workspace(tmp_path, config={"model_context_window": 8192, "format_overhead_tokens": 10},
                   pipelines={"p.yaml": text}, prompts={"sys.txt": ""})
    pipeline = tmp_path / "pipelines" / "p.yaml"
    code, out = _run(capsys, str(pipeline), "--no-table")
    assert code == 1
    shown = written.strip('"')
    assert (f"{pipeline}:2:23: error[BL030] settings.max_context_tokens: expected an integer,"
            f" got the string {shown!r} {hint}\n") in out


# ---------------------------------------------- minor: the verdict does not depend on libyaml
LOADERS = {"python": yaml.SafeLoader}
if getattr(yaml, "__with_libyaml__", False):
    LOADERS["libyaml"] = yaml.CSafeLoader


@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_a_tab_after_a_colon_is_refused_as_yaml_safe_load_refuses_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        loader: str) -> None:
    monkeypatch.setattr(yaml_parse, "_LOADER", LOADERS[loader])
    incremental.clear()
    text = SERVED.replace("max_context_tokens: 3000", "max_context_tokens:\t3000")
    with pytest.raises(yaml.YAMLError):  # what a runner reading it with safe_load gets
        yaml.safe_load(text)
    make_workspace(tmp_path, config={"model_context_window": 8192, "format_overhead_tokens": 10},
                   pipelines={"p.yaml": text}, prompts={"sys.txt": ""})
    pipeline = tmp_path / "pipelines" / "p.yaml"
    code, out = _run(capsys, str(pipeline), "--no-table")
    assert code == 1
    assert (f"{pipeline}:2:22: error[BL001] YAML syntax error: while scanning for the next"
            " token found character '\\t' that cannot start any token\n") in out


# ------------------------------ minor: a step whose own model counts approximately shows ≈
STEP_MODELS = SERVED + """\
  - id: claude
    type: call_model
    prompt_key: sys
    max_output_tokens: 1000
    model: claude-sonnet-4-5
  - id: llama
    type: call_model
    prompt_key: sys
    max_output_tokens: 1000
    model: llama-3.1-8b-instruct
"""
# a user without the llama extra: quicktok cannot be found (as when it is not installed)
WITHOUT_LLAMA = """\
import sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "quicktok":
            raise ImportError("not installed")
        return None
sys.meta_path.insert(0, Hide())
from budgetlens_cli.main import main
sys.exit(main(["check", "--no-cache", "pipelines/p.yaml"]))
"""


def test_approximate_step_counts_show_and_say_how_to_count_exactly(tmp_path: Path) -> None:
    make_workspace(tmp_path, config={"model": "gpt-4o", "format_overhead_tokens": 10},
                   pipelines={"p.yaml": STEP_MODELS}, prompts={"sys.txt": ""})
    env = {k: v for k, v in os.environ.items()
           if k not in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT")}
    done = subprocess.run([sys.executable, "-c", WITHOUT_LLAMA], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    # 10 + 3000 + 1000 + 128 = 4138 for the exact row; windows 128,000, 200,000 and
    # 131,072. The approximate rows get the default proportional margin (issue 32,
    # docs/pipeline-format.md "Margins"): 128 + ceil(12% of 10 + 3000 = 361.2) = 490, so
    # 10 + 3000 + 1000 + 490 = 4500

    def row(*cells: object) -> str:
        return "  " + f"{cells[0]:<6}" + "".join(f"{c:>10}" for c in cells[1:-1]) + \
            f"  {cells[-1]}"
    assert done.stdout.splitlines()[1:7] == [
        row("step", "fixed", "history", "context", "output", "margin", "total", "window",
            "headroom", "fits"),
        row("answer", 10, 0, 3000, 1000, 128, 4138, 128000, 123862, "yes"),
        row("claude", "≈10", 0, 3000, 1000, 490, "≈4500", 200000, "≈195500", "yes"),
        row("llama", "≈10", 0, 3000, 1000, 490, "≈4500", 131072, "≈126572", "yes"),
        "  ≈ approximate counts (claude-sonnet-4-5: no exact offline tokenizer exists for it)",
        "  ≈ approximate counts (llama-3.1-8b-instruct: its tokenizer (llama3) is not"
        " installed: pip install 'budgetlens[llama]' counts it exactly)"]


# ---------------------------------------- case 14: every block where a key is read
def test_a_misspelt_step_model_is_an_error_naming_model(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # modle: gpt-4 is ignored: the step would be checked with gpt-4o's window, not gpt-4's
    text = SERVED + "    modle: gpt-4\n"
    make_workspace(tmp_path, config={"model": "gpt-4o", "format_overhead_tokens": 10},
                   pipelines={"p.yaml": text}, prompts={"sys.txt": ""})
    pipeline = tmp_path / "pipelines" / "p.yaml"
    code, out = _run(capsys, str(pipeline), "--no-table")
    assert code == 1
    assert (f"{pipeline}:8:5: error[BL008] unknown key 'modle': did you mean 'model'?"
            + BUDGET_NOTE) in out


def test_a_misspelt_injection_key_says_which_key_was_meant(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = SERVED.replace("  max_context_tokens: 3000\n", "  max_context_tokens: 3000\n"
                          "  injection:\n    min_knowledge_card_token: 100\n")
    make_workspace(tmp_path, config={"model": "gpt-4o", "format_overhead_tokens": 10},
                   pipelines={"p.yaml": text}, prompts={"sys.txt": ""})
    pipeline = tmp_path / "pipelines" / "p.yaml"
    code, out = _run(capsys, str(pipeline), "--no-table")
    assert code == 1
    assert (f"{pipeline}:4:5: error[BL101] settings.injection: unknown key"
            " 'min_knowledge_card_token'; did you mean 'min_knowledge_card_tokens'?\n") in out


def test_tokens_says_when_the_config_model_counts_approximately(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_workspace(tmp_path, config={"model": "claude-sonnet-4-5"},
                   prompts={"sys.txt": PROMPT})
    prompt = tmp_path / "prompts" / "sys.txt"
    assert main(["tokens", str(prompt)]) == 0
    # claude_approx counts with o200k_base (docs/tokenizers.md, approximate families)
    assert capsys.readouterr().out == (
        f"{get_tokenizer('o200k_base').count(PROMPT)}  {prompt}\n"
        f"tokenizer: claude_approx (model claude-sonnet-4-5 of {tmp_path / 'config.json'};"
        " ≈ approximate counts)\n")


def test_clamp_write_refuses_an_output_limit_anchored_outside_the_steps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the context may not go lower (its floor is 990): 10 + 990 + 400 + 128 = 1528, so the
    # clamp wants the output at 400 - 28 = 372, which defaults and retry.timeout_ms share
    text = ("defaults: &out 400\nretry:\n  timeout_ms: *out\nsettings:\n"
            "  max_context_tokens: 990\n  min_context_tokens: 990\nsteps:\n  - id: a\n"
            "    type: call_model\n    prompt_key: sys\n    max_output_tokens: *out\n")
    pipeline = _anchored(tmp_path, text)
    code = main(["clamp", str(pipeline), "--write", "--policy", "auto_clamp"])
    assert code == 1
    assert pipeline.read_text("utf-8") == text
    assert ("steps[0].max_output_tokens not lowered to 372: the value comes from anchor &out"
            " at line 1, which also sets defaults; change it there by hand"
            ) in capsys.readouterr().err
