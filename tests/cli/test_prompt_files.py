"""`budgetlens check` on prompt files in their own formats, in a folder with no config.json:
GitHub Models (``*.prompt.yml``), Prompty (``*.prompty``), Dotprompt (``*.prompt``).

The files are written to disk as a user keeps them. Expected numbers are counted here with
tiktoken directly (``tests.core.formats.helpers``): each message costs 3 tokens, its role
and its fixed text (variables empty), and the reply 3 (OpenAI's cookbook rule).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import yaml
from tiktoken.load import load_tiktoken_bpe

from budgetlens_cli.main import main
from tests.core.formats.helpers import _ENCODINGS, CORPUS, REPO, corpus, tokens
from tests.workspaces.prompt_files import (
    DOTPROMPT,
    DOTPROMPT_UNSET,
    GITHUB,
    GITHUB_UNSET,
    clean_env,
)

__all__ = ["clean_env"]  # the autouse fixture of tests/workspaces/prompt_files.py

GPT4O_MINI_WINDOW, GPT4_WINDOW = 128_000, 8_192  # the registry's, as OpenAI publishes them
MARGIN = 128  # the default safety margin

PROMPTY = """\
---
name: Support answer
model:
  api: chat
  configuration:
    type: openai
    model: gpt-4
  parameters:
    max_tokens: 1500
inputs:
  question:
    type: string
---
system:
You answer questions about our product, politely and briefly.

user:
{{question}}
"""


@cache
def _cl100k() -> Any:
    meta = json.loads((_ENCODINGS / "encodings.json").read_text())["encodings"]["cl100k_base"]
    ranks = load_tiktoken_bpe(str(_ENCODINGS / meta["file"]), meta["sha256"])
    return tiktoken.Encoding("cl100k_base", pat_str=meta["pat_str"], mergeable_ranks=ranks,
                             special_tokens=meta["special_tokens"])


def cl100k(text: str) -> int:
    return len(_cl100k().encode(text))


def framed(messages: list[tuple[str, str]], count: Any = tokens) -> int:
    return sum(3 + count(role) + count(text) for role, text in messages) + 3


GITHUB_FIXED = framed([("system", "You summarize bug reports in three sentences."),
                       ("user", "Summarize this report: ")])
PROMPTY_FIXED = framed([("system", "You answer questions about our product, politely and"
                         " briefly."), ("user", "")], cl100k)
# Dotprompt keeps the line breaks around a {{role}} tag, as its runtime renders them
# (the file's last line break is the runtime's to drop too)
DOTPROMPT_FIXED = framed([("system", "\nYou write haiku.\n"),
                          ("user", "\nWrite a haiku about .")])
# (file, text, fixed, output, window)
CASES = {
    "github": ("bugs.prompt.yml", GITHUB, GITHUB_FIXED, 2000, GPT4O_MINI_WINDOW),
    "prompty": ("support.prompty", PROMPTY, PROMPTY_FIXED, 1500, GPT4_WINDOW),
    "dotprompt": ("haiku.prompt", DOTPROMPT, DOTPROMPT_FIXED, 800, GPT4O_MINI_WINDOW),
}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _write(name: str, text: str, folder: str = "repo/prompts") -> Path:
    path = Path(folder) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return path


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_check_finds_the_file_and_prints_its_budget_in_text(
        capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    name, text, fixed, output, window = CASES[fmt]
    _write(name, text)
    code, out, err = _run(capsys, "check", "repo")
    total = fixed + output + MARGIN
    assert code == 0, out + err
    row = next(line for line in out.splitlines() if line.rstrip().endswith("yes"))
    assert row.split()[-9:] == [str(fixed), "0", "0", str(output), str(MARGIN), str(total),
                                str(window), str(window - total), "yes"]
    assert f"repo/prompts/{name}: window {window}" in out
    assert "1 pipeline, 1 call_model step (0 not fitting): 0 errors" in out


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_check_json_gives_the_hand_counted_numbers(
        capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    name, text, fixed, output, window = CASES[fmt]
    _write(name, text)
    code, out, _ = _run(capsys, "check", "repo", "--format", "json")
    data = json.loads(out)
    [step] = data["steps"]
    budget = step["budget"]
    assert code == 0
    assert step["pipeline"] == f"repo/prompts/{name}" and step["fits"] is True
    assert (budget["fixed"], budget["output"], budget["margin"], budget["window"]) == \
        (fixed, output, MARGIN, window)
    assert budget["total"] == fixed + output + MARGIN
    assert budget["headroom"] == window - fixed - output - MARGIN


def test_a_file_that_does_not_fit_fails_with_the_contract_code_at_its_own_key(
        capsys: pytest.CaptureFixture[str]) -> None:
    """gpt-4's window is 8,192: 8,100 output tokens plus the messages and the margin are
    over it; under fail_fast the step is an error (BL050) and SARIF shows it."""
    text = PROMPTY.replace("max_tokens: 1500", "max_tokens: 8100")
    _write("support.prompty", text)
    code, out, _ = _run(capsys, "check", "repo", "--format", "sarif", "--policy", "fail_fast")
    sarif = json.loads(out)
    results = sarif["runs"][0]["results"]
    over = PROMPTY_FIXED + 8100 + MARGIN - GPT4_WINDOW
    assert code == 1
    [violation] = [r for r in results if r["ruleId"] == "BL050"]
    assert violation["level"] == "error"
    assert f"over by {over})" in violation["message"]["text"]
    region = violation["locations"][0]["physicalLocation"]["region"]
    # the step is named by the model's value: line 7 "    model: gpt-4", column 12
    assert (region["startLine"], region["startColumn"]) == (7, 12)


def test_sarif_reports_max_tokens_on_a_reasoning_model_at_the_key(
        capsys: pytest.CaptureFixture[str]) -> None:
    text = GITHUB.replace("openai/gpt-4o-mini", "openai/o3-mini")
    _write("bugs.prompt.yml", text)
    code, out, _ = _run(capsys, "check", "repo", "--format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    [bl071] = [r for r in results if r["ruleId"] == "BL071"]
    region = bl071["locations"][0]["physicalLocation"]["region"]
    assert code == 1
    assert bl071["level"] == "error"
    # line 4 "  max_tokens: 2000": the key, columns 3 to 12
    assert (region["startLine"], region["startColumn"], region["endColumn"]) == (4, 3, 13)


def test_output_unset_is_a_warning_and_counts_the_model_ceiling(
        capsys: pytest.CaptureFixture[str]) -> None:
    text = GITHUB.replace("modelParameters:\n  max_tokens: 2000\n", "")
    _write("bugs.prompt.yml", text)
    code, out, _ = _run(capsys, "check", "repo", "--format", "json")
    data = json.loads(out)
    [bl070] = [d for d in data["diagnostics"] if d["code"] == "BL070"]
    assert code == 0 and bl070["severity"] == "warning"
    assert "actions/ai-inference" in bl070["message"] and "gh models sends none" in \
        bl070["message"]
    assert data["steps"][0]["budget"]["output"] == 16_384  # gpt-4o-mini's output ceiling


def test_github_annotations_name_the_prompt_file(capsys: pytest.CaptureFixture[str]) -> None:
    _write("bugs.prompt.yml", GITHUB.replace("openai/gpt-4o-mini", "openai/o3-mini"))
    code, out, _ = _run(capsys, "check", "repo", "--format", "github")
    assert code == 1
    assert re.search(r"^::error file=repo/prompts/bugs\.prompt\.yml,line=4,", out, re.M)


def test_partials_and_other_files_are_not_checked_alone(
        capsys: pytest.CaptureFixture[str]) -> None:
    _write("haiku.prompt", DOTPROMPT)
    _write("_style.prompt", "Write briefly.\n")
    _write("notes.yml", "just: yaml\n")
    _write("node_modules/dep.prompt.yml", GITHUB, folder="repo")
    code, out, _ = _run(capsys, "check", "repo", "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert [s["pipeline"] for s in data["steps"]] == ["repo/prompts/haiku.prompt"]


def _corpus_copy(root: Path) -> list[Path]:
    """Every corpus file, GitHub Models files renamed ``*.prompt.yml`` as the runners want
    them (the corpus keeps their names from the test folders they were taken from)."""
    out = []
    for fmt in ("github_models", "prompty", "dotprompt"):
        for path in corpus(fmt):
            rel = path.relative_to(CORPUS)
            dest = root / rel
            if fmt == "github_models" and not path.name.endswith((".prompt.yml",
                                                                  ".prompt.yaml")):
                dest = dest.with_name(dest.stem + ".prompt.yml")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
            out.append(dest)
    for extra in (CORPUS / "prompty").rglob("*.json"):
        dest = root / extra.relative_to(CORPUS)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(extra, dest)
    return out


def test_every_corpus_file_is_checked_without_an_internal_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    files = _corpus_copy(Path("corpus"))
    code, out, err = _run(capsys, "check", "corpus", "--format", "json")
    data = json.loads(out)
    assert code in (0, 1), err
    assert not [d for d in data["diagnostics"] if d["code"] == "BL009"]
    checked = {s["pipeline"] for s in data["steps"]}
    expected = {str(p) for p in files if not p.name.startswith("_")}
    assert checked == expected


def test_the_pre_commit_hooks_run_on_a_change_to_a_prompt_file() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text("utf-8"))
    for hook in hooks:
        files = re.compile(hook["files"])
        for changed in ("bugs.prompt.yml", ".github/prompts/bugs.prompt.yaml",
                        "prompts/support.prompty", "src/haiku.prompt"):
            assert files.search(changed), (hook["id"], changed)
        assert not files.search("src/notes.yml")


def test_an_azure_deployment_is_mapped_by_config_json(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Prompty v1 names an Azure deployment; config.json's ``deployments`` maps it to
    gpt-3.5-turbo (window 16,385, output ceiling 4,096, as OpenAI publishes them)."""
    text = PROMPTY.replace("type: openai\n    model: gpt-4",
                           "type: azure_openai\n    azure_deployment: support-35")
    _write("support.prompty", text)
    Path("repo/config.json").write_text(json.dumps(
        {"deployments": {"support-35": "gpt-3.5-turbo"}}), "utf-8")
    code, out, _ = _run(capsys, "check", "repo", "--format", "json")
    data = json.loads(out)
    [step] = data["steps"]
    assert code == 0, data["diagnostics"]
    assert step["budget"]["window"] == 16_385
    assert not [d for d in data["diagnostics"] if d["code"] == "BL061"]


def test_the_result_cache_sees_an_edit_of_the_prompt_file(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BUDGETLENS_NO_CACHE")
    path = _write("bugs.prompt.yml", GITHUB)
    _, first, _ = _run(capsys, "check", "repo", "--format", "json")
    path.write_text(GITHUB.replace("2000", "3000"), "utf-8")
    _, second, _ = _run(capsys, "check", "repo", "--format", "json")
    assert json.loads(first)["steps"][0]["budget"]["output"] == 2000
    assert json.loads(second)["steps"][0]["budget"]["output"] == 3000
    assert Path(".budgetlens_cache").is_dir()


def _codes(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    _, out, _ = _run(capsys, "check", "repo", "--format", "json")
    return {d["code"]: d for d in json.loads(out)["diagnostics"]}


def test_an_unset_prompty_env_reference_is_bl072(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUPPORT_MODEL", raising=False)
    _write("support.prompty", PROMPTY.replace("model: gpt-4", "model: ${env:SUPPORT_MODEL}"))
    bl072 = _codes(capsys)["BL072"]
    assert bl072["severity"] == "warning" and "SUPPORT_MODEL" in bl072["message"]
    assert bl072["range"]["start"]["line"] == 6


def test_a_missing_dotprompt_partial_is_bl074(capsys: pytest.CaptureFixture[str]) -> None:
    _write("haiku.prompt", DOTPROMPT.replace("You write haiku.", "{{>style}} You write haiku."))
    bl074 = _codes(capsys)["BL074"]
    assert bl074["severity"] == "error" and "style" in bl074["message"]
    assert bl074["range"]["start"]["line"] == 9  # 0-based: the line after {{role "system"}}


def test_a_variable_the_inputs_do_not_declare_is_bl076(
        capsys: pytest.CaptureFixture[str]) -> None:
    _write("haiku.prompt", DOTPROMPT.replace("about {{topic}}", "about {{subject}}"))
    bl076 = _codes(capsys)["BL076"]
    assert bl076["severity"] == "warning" and "'subject'" in bl076["message"]


# ------------------------------------------------------- headroom, declared budgets, cases
def _json(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code, out, _ = _run(capsys, "check", "repo", "--format", "json")
    return code, json.loads(out)


def test_each_variable_gets_its_headroom(capsys: pytest.CaptureFixture[str]) -> None:
    _write("bugs.prompt.yml", GITHUB)
    code, data = _json(capsys)
    [note] = [d for d in data["diagnostics"] if d["code"] == "BL079"]
    headroom = GPT4O_MINI_WINDOW - GITHUB_FIXED - 2000 - MARGIN
    assert code == 0 and note["severity"] == "information"
    assert note["message"] == f"{{{{input}}}}: up to {headroom:,} tokens on gpt-4o-mini with" \
        " 2,000 output"
    assert note["range"]["start"]["line"] == 8  # the user message that reads it


DECLARED = GITHUB.replace("messages:", "metadata:\n  budgetlens:\n    vars:\n      input: {n}\n"
                          "messages:")


def test_a_declared_variable_budget_that_fits_is_counted(
        capsys: pytest.CaptureFixture[str]) -> None:
    _write("bugs.prompt.yml", DECLARED.replace("{n}", "6000"))
    code, data = _json(capsys)
    budget = data["steps"][0]["budget"]
    assert code == 0
    assert budget["context"] == 6000
    assert budget["total"] == GITHUB_FIXED + 6000 + 2000 + MARGIN


def test_a_declared_variable_budget_over_the_window_fails(
        capsys: pytest.CaptureFixture[str]) -> None:
    _write("bugs.prompt.yml", DECLARED.replace("{n}", "126000"))
    code, data = _json(capsys)
    over = GITHUB_FIXED + 126_000 + 2000 + MARGIN - GPT4O_MINI_WINDOW
    [bl050] = [d for d in data["diagnostics"] if d["code"] == "BL050"]
    assert code == 1 and bl050["severity"] == "error"  # fail_fast: nothing clamps it
    assert f"(over by {over})" in bl050["message"]


def test_concrete_inputs_give_exact_totals_per_case(
        capsys: pytest.CaptureFixture[str]) -> None:
    reports = ["The app crashes when I click save twice.", "Login fails."]
    cases = "".join(f"  - input: {r}\n" for r in reports)
    _write("bugs.prompt.yml", GITHUB.replace("messages:", f"testData:\n{cases}messages:"))
    code, data = _json(capsys)
    totals = [framed([("system", "You summarize bug reports in three sentences."),
                      ("user", f"Summarize this report: {r}")]) + 2000 + MARGIN
              for r in reports]
    [note] = [d for d in data["diagnostics"] if d["code"] == "BL079"
              and d["message"].startswith("input cases")]
    assert code == 0
    assert note["message"] == f"input cases, totals of 128,000: case 1 {totals[0]:,}," \
        f" case 2 {totals[1]:,}"


def test_a_sample_input_over_the_window_is_bl078(capsys: pytest.CaptureFixture[str]) -> None:
    question = "hello " * 7000
    text = PROMPTY.replace("inputs:", f"sample:\n  question: '{question}'\ninputs:")
    _write("support.prompty", text)
    code, data = _json(capsys)
    system = "You answer questions about our product, politely and briefly."
    # Prompty strips blank lines around a message, not spaces: the trailing one stays
    total = framed([("system", system), ("user", question)], cl100k) + 1500 + MARGIN
    [bl078] = [d for d in data["diagnostics"] if d["code"] == "BL078"]
    assert total > GPT4_WINDOW
    assert code == 1
    assert bl078["message"].endswith(f"= {total:,} > 8,192")


# ---------------------------------------------------------------- clamp in the format's key
def test_clamp_lowers_the_limit_in_place_in_each_format(
        capsys: pytest.CaptureFixture[str]) -> None:
    """gpt-4's window is 8,192: each file asks for 8,100 output tokens; the clamp lowers the
    number where it is written, and nothing else of the file changes."""
    files = {
        "support.prompty": PROMPTY.replace("max_tokens: 1500", "max_tokens: 8100"),
        "bugs.prompt.yml": GITHUB.replace("openai/gpt-4o-mini", "openai/gpt-4")
        .replace("2000", "8100"),
        "haiku.prompt": DOTPROMPT.replace("openai/gpt-4o-mini", "openai/gpt-4")
        .replace("800", "8100"),
    }
    fixed = {"support.prompty": PROMPTY_FIXED,
             "bugs.prompt.yml": framed([("system", "You summarize bug reports in three"
                                         " sentences."), ("user", "Summarize this report: ")],
                                       cl100k),
             "haiku.prompt": framed([("system", "\nYou write haiku.\n"),
                                     ("user", "\nWrite a haiku about .")], cl100k)}
    for name, text in files.items():
        _write(name, text)
    code, out, err = _run(capsys, "clamp", "repo", "--write")
    assert code == 0, out + err
    for name, text in files.items():
        after = GPT4_WINDOW - fixed[name] - MARGIN  # the most output that fits
        assert Path(f"repo/prompts/{name}").read_text("utf-8") == \
            text.replace("8100", str(after)), name
    code, out, _ = _run(capsys, "check", "repo", "--format", "json")
    assert code == 0 and all(s["fits"] for s in json.loads(out)["steps"])


PROMPTY_UNSET = PROMPTY.replace("  parameters:\n    max_tokens: 1500\n", "")


@pytest.mark.parametrize(("name", "unset", "expected"), [
    # no modelParameters: a top-level block at the end of the file
    ("bugs.prompt.yml", GITHUB_UNSET,
     GITHUB_UNSET + "modelParameters:\n  maxCompletionTokens: 16384\n"),
    # model: is a mapping: the key goes first in it, at its keys' indentation; gpt-4's
    # ceiling (8,192) is its whole window: half the window is what the check counts
    ("support.prompty", PROMPTY_UNSET, PROMPTY_UNSET.replace(
        "model:\n", f"model:\n  parameters:\n    max_tokens: {GPT4_WINDOW // 2}\n")),
    # no config: a top-level block at the end of the front matter
    ("haiku.prompt", DOTPROMPT_UNSET, DOTPROMPT_UNSET.replace(
        "    topic: string\n---", "    topic: string\nconfig:\n  maxOutputTokens: 16384\n---")),
])
def test_clamp_inserts_an_absent_limit_in_the_format_key(
        capsys: pytest.CaptureFixture[str], name: str, unset: str, expected: str) -> None:
    """Without a limit the check counts the model's ceiling (gpt-4o-mini 16,384, as
    published), at most half the window (gpt-4: 4,096 of 8,192); clamp writes the counted
    value in the format's own key, and BL070 is gone."""
    _write(name, unset)
    code, out, err = _run(capsys, "clamp", "repo", "--write")
    assert Path(f"repo/prompts/{name}").read_text("utf-8") == expected, out + err
    code, out, _ = _run(capsys, "check", "repo", "--format", "json")
    assert "BL070" not in {d["code"] for d in json.loads(out)["diagnostics"]}
    assert code == 0


def test_clamp_refuses_to_nest_under_a_model_name(capsys: pytest.CaptureFixture[str]) -> None:
    text = "---\nname: short\nmodel: gpt-4o\n---\nsystem:\nBe brief.\n"
    _write("short.prompty", text)
    _, _, err = _run(capsys, "clamp", "repo", "--write")
    assert Path("repo/prompts/short.prompty").read_text("utf-8") == text
    assert "model.options.maxOutputTokens" in err and "by hand" in err


def test_an_unknown_model_names_the_registry_and_a_suggestion(
        capsys: pytest.CaptureFixture[str]) -> None:
    _write("bugs.prompt.yml", GITHUB.replace("openai/gpt-4o-mini", "openai/gpt4o-mini"))
    codes = _codes(capsys)
    assert codes["BL061"]["message"].startswith("model 'openai/gpt4o-mini' is not in the model"
                                                " registry")
    assert "checked with config.json's limits" in codes["BL061"]["message"]
    assert "pipeline" not in codes["BL061"]["message"]
    assert codes["BL012"]["severity"] == "error"  # no window at all: nothing to check with


PYPROJECT = """\
[project]
name = "support-bot"

[tool.budgetlens]
deployments = {support-35 = "gpt-3.5-turbo"}

[tool.budgetlens.serving]
max_model_len = 12000
"""


@pytest.mark.skipif(sys.version_info < (3, 11), reason="pyproject.toml needs tomllib")
def test_a_pyproject_table_is_the_workspace_config(
        capsys: pytest.CaptureFixture[str]) -> None:
    """[tool.budgetlens] maps the Azure deployment to gpt-3.5-turbo (window 16,385) and caps
    the window with serving.max_model_len 12,000, placed at its TOML line (6, 0-based)."""
    Path("repo").mkdir()
    Path("repo/pyproject.toml").write_text(PYPROJECT, "utf-8")
    text = PROMPTY.replace("type: openai\n    model: gpt-4",
                           "type: azure_openai\n    azure_deployment: support-35")
    _write("support.prompty", text)
    code, data = _json(capsys)
    [step] = data["steps"]
    window = step["terms"]["window"]
    assert code == 0, data["diagnostics"]
    assert step["budget"]["window"] == 12_000
    assert window["source"].startswith("config.json serving.max_model_len")
    assert window["location"]["file"] == "repo/pyproject.toml"
    assert window["location"]["range"]["start"]["line"] == 6  # [tool.budgetlens.serving]


def test_sarif_reports_a_missing_dotprompt_partial_at_its_tag(
        capsys: pytest.CaptureFixture[str]) -> None:
    _write("haiku.prompt", DOTPROMPT.replace("You write haiku.", "{{>style}} You write haiku."))
    code, out, _ = _run(capsys, "check", "repo", "--format", "sarif")
    run = json.loads(out)["runs"][0]
    [bl074] = [r for r in run["results"] if r["ruleId"] == "BL074"]
    region = bl074["locations"][0]["physicalLocation"]["region"]
    assert code == 1 and bl074["level"] == "error"
    assert bl074["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == \
        "repo/prompts/haiku.prompt"
    assert region["startLine"] == 10  # 1-based: "{{>style}} You write haiku."
    assert "BL074" in {rule["id"] for rule in run["tool"]["driver"]["rules"]}


def test_a_prompt_file_linked_from_outside_the_workspace_is_not_read(
        capsys: pytest.CaptureFixture[str]) -> None:
    secret = Path("secret.txt")
    secret.write_text("model: openai/gpt-4o\nmessages: [{role: user, content: SECRET}]\n")
    Path("repo").mkdir()
    Path("repo/leak.prompt.yml").symlink_to(secret.resolve())
    code, out, _ = _run(capsys, "check", "repo")
    assert code == 1
    assert "error[BL007] prompt file repo/leak.prompt.yml resolves outside the workspace" in out
    assert "SECRET" not in out


def test_declared_budgets_that_cannot_be_used_are_errors(
        capsys: pytest.CaptureFixture[str]) -> None:
    meta = "metadata:\n  budgetlens:\n    vars: {input: -5}\n    margn: 64\nmessages:"
    _write("bugs.prompt.yml", GITHUB.replace("messages:", meta))
    code, data = _json(capsys)
    messages = {d["code"]: d["message"] for d in data["diagnostics"]
                if d["severity"] == "error"}
    assert code == 1
    assert messages["BL005"] == "metadata.budgetlens.vars.input must be a whole number of" \
        " tokens >= 0, got -5; not counted"
    assert messages["BL008"] == "unknown key metadata.budgetlens.margn; did you mean 'margin'?"


def test_diff_compares_a_prompt_file_at_a_revision_with_the_folder(
        capsys: pytest.CaptureFixture[str]) -> None:
    """gpt-4o -> gpt-4 with 8,100 output: the step goes over gpt-4's window of 8,192."""
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "PATH": os.environ["PATH"], "HOME": os.getcwd()}
    path = _write("bugs.prompt.yml", GITHUB.replace("2000", "8100"), folder="prompts")
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "one"]):
        subprocess.run(["git", *argv], check=True, env=env)
    path.write_text(GITHUB.replace("2000", "8100").replace("gpt-4o-mini", "gpt-4"), "utf-8")
    code, out, err = _run(capsys, "diff", "HEAD", ".")
    over = framed([("system", "You summarize bug reports in three sentences."),
                   ("user", "Summarize this report: ")], cl100k) + 8100 + MARGIN - GPT4_WINDOW
    assert code == 1, out + err
    assert "1 newly failing" in out
    assert f"(over by {over})" in out
