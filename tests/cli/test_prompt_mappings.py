"""`budgetlens check` on in-house agent YAML read through config.json's ``prompt_mappings``.

The workspace is written to disk as a team keeps it: config.json names the files by a glob
and the dotted paths of their model, output limit and system prompt file. Expected numbers
are counted here with tiktoken directly: each message costs 3 tokens, its role and its
text, and the reply 3 (OpenAI's cookbook rule, as for the other prompt formats).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetlens_cli.main import main
from tests.cli.test_prompt_files import cl100k, framed
from tests.core.formats.helpers import tokens
from tests.workspaces.prompt_files import clean_env

__all__ = ["clean_env"]  # the autouse fixture of tests/workspaces/prompt_files.py

MARGIN = 128  # the default safety margin
OVERHEAD = 32  # config.json's format_overhead_tokens default, added to a step's fixed cost
GPT4O_MINI_WINDOW, GPT4_WINDOW = 128_000, 8_192  # the registry's, as OpenAI publishes them

CONFIG = {"prompt_mappings": [{"glob": "agents/*.yaml", "model": "model.name",
                               "output": "model.max_tokens",
                               "system_file": "instructions.file"}]}
AGENT = """\
name: triage
model:
  name: gpt-4o-mini
  max_tokens: 500
instructions:
  file: a.md
"""
INSTRUCTIONS = "You triage incoming support tickets.\nAnswer with one label only.\n"


def _workspace(agent: str = AGENT, config: object = CONFIG) -> None:
    Path("repo/agents").mkdir(parents=True)
    Path("repo/config.json").write_text(json.dumps(config, indent=2), "utf-8")
    Path("repo/agents/a.yaml").write_text(agent, "utf-8")
    Path("repo/agents/a.md").write_text(INSTRUCTIONS, "utf-8")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_finds_a_mapped_agent_file_and_gives_hand_counted_totals(
        capsys: pytest.CaptureFixture[str]) -> None:
    _workspace()
    code, out, err = _run(capsys, "check", "repo", "--format", "json")
    data = json.loads(out)
    [step] = data["steps"]
    budget = step["budget"]
    # gpt-4o-mini counts with o200k_base
    fixed = framed([("system", INSTRUCTIONS)], tokens) + OVERHEAD
    assert code == 0, out + err
    assert step["pipeline"] == "repo/agents/a.yaml" and step["fits"] is True
    assert (budget["fixed"], budget["output"], budget["margin"], budget["window"]) == \
        (fixed, 500, MARGIN, GPT4O_MINI_WINDOW)
    assert budget["total"] == fixed + 500 + MARGIN
    assert budget["headroom"] == GPT4O_MINI_WINDOW - fixed - 500 - MARGIN


def test_a_mapped_file_over_the_window_is_bl050_with_its_max_tokens_key_related(
        capsys: pytest.CaptureFixture[str]) -> None:
    """gpt-4's window is 8,192: 8,100 output tokens plus the instructions and the margin
    are over it; under fail_fast the step is an error (BL050) at the output key."""
    _workspace(AGENT.replace("gpt-4o-mini", "gpt-4").replace("500", "8100"))
    code, out, _ = _run(capsys, "check", "repo", "--format", "sarif", "--policy", "fail_fast")
    results = json.loads(out)["runs"][0]["results"]
    fixed = framed([("system", INSTRUCTIONS)], cl100k) + OVERHEAD  # gpt-4: cl100k_base
    over = fixed + 8100 + MARGIN - GPT4_WINDOW
    assert code == 1
    [violation] = [r for r in results if r["ruleId"] == "BL050"]
    assert violation["level"] == "error"
    assert f"over by {over})" in violation["message"]["text"]
    assert violation["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] \
        .endswith("agents/a.yaml")
    region = violation["locations"][0]["physicalLocation"]["region"]
    # the step is named by the model's value, as for every prompt format: line 3
    # "  name: gpt-4", columns 9 to 13
    assert (region["startLine"], region["startColumn"], region["endColumn"]) == (3, 9, 14)
    # the output term points at the max_tokens value: line 4 "  max_tokens: 8100"
    [output] = [r for r in violation["relatedLocations"]
                if r["message"]["text"] == "output: 8100"]
    spot = output["physicalLocation"]["region"]
    assert (spot["startLine"], spot["startColumn"], spot["endColumn"]) == (4, 15, 19)


def test_a_file_no_mapping_matches_is_not_checked(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The glob names another folder: agents/a.yaml is neither a pipeline nor mapped."""
    _workspace(config={"prompt_mappings": [dict(CONFIG["prompt_mappings"][0],
                                                glob="bots/*.yaml")]})
    code, out, err = _run(capsys, "check", "repo", "--format", "json")
    assert code == 2
    assert "agents/a.yaml" not in out + err and "no pipelines" in err



def test_a_near_miss_key_in_a_mapping_is_an_error_at_config_json(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``ouput`` for ``output``: the output limit the author meant is not read (BL008)."""
    entry = dict(CONFIG["prompt_mappings"][0], glob="bots/*.yaml")
    entry["ouput"] = entry.pop("output")
    _workspace(config={"prompt_mappings": [entry, CONFIG["prompt_mappings"][0]]})
    code, out, err = _run(capsys, "check", "repo", "--format", "json")
    data = json.loads(out)
    [bl008] = [d for d in data["diagnostics"] if d["code"] == "BL008"]
    assert code == 1, out + err
    assert bl008["severity"] == "error" and bl008["file"] == "repo/config.json"
    assert "'ouput'" in bl008["message"] and "'output'" in bl008["message"]


def test_a_mapping_value_of_the_wrong_type_is_reported(
        capsys: pytest.CaptureFixture[str]) -> None:
    entry = dict(CONFIG["prompt_mappings"][0], glob="bots/*.yaml", output=500)
    _workspace(config={"prompt_mappings": [entry, CONFIG["prompt_mappings"][0]]})
    code, out, err = _run(capsys, "check", "repo", "--format", "json")
    data = json.loads(out)
    assert code == 1, out + err
    assert any(d["code"] == "BL013" and "prompt_mappings" in d["message"]
               for d in data["diagnostics"]), data["diagnostics"]


def test_clamp_writes_the_mapped_output_key_and_the_check_then_passes(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The clamp lowers ``model.max_tokens`` in place to what fits gpt-4's 8,192."""
    _workspace(AGENT.replace("gpt-4o-mini", "gpt-4").replace("500", "8100"))
    fixed = framed([("system", INSTRUCTIONS)], cl100k) + OVERHEAD
    fitting = GPT4_WINDOW - fixed - MARGIN
    code, out, err = _run(capsys, "clamp", "--write", "repo/agents/a.yaml")
    assert code == 0, out + err
    assert Path("repo/agents/a.yaml").read_text("utf-8") == \
        AGENT.replace("gpt-4o-mini", "gpt-4").replace("500", str(fitting))
    code, out, err = _run(capsys, "check", "repo", "--policy", "fail_fast")
    assert code == 0, out + err


def test_an_entry_without_output_is_reported_and_not_used(
        capsys: pytest.CaptureFixture[str]) -> None:
    broken = {"glob": "bots/*.yaml", "model": "model.name"}
    _workspace(config={"prompt_mappings": [broken, CONFIG["prompt_mappings"][0]]})
    Path("repo/bots").mkdir()
    Path("repo/bots/b.yaml").write_text(AGENT, "utf-8")
    code, out, err = _run(capsys, "check", "repo", "--format", "json")
    data = json.loads(out)
    assert code == 1, out + err
    assert [s["pipeline"] for s in data["steps"]] == ["repo/agents/a.yaml"]
    [bl013] = [d for d in data["diagnostics"] if d["code"] == "BL013"]
    assert bl013["file"] == "repo/config.json"
    assert "prompt_mappings[0] needs output" in bl013["message"]


def test_a_json_agent_with_system_text_and_a_template(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A JSON file: the system prompt inline, a mustache user template counted with its
    variable empty; the model and output limit from the file."""
    Path("repo/bots").mkdir(parents=True)
    Path("repo/config.json").write_text(json.dumps({"prompt_mappings": [{
        "glob": "bots/*.json", "model": "llm", "output": "limits.out",
        "system_text": "prompt", "template": "user"}]}), "utf-8")
    Path("repo/bots/b.json").write_text(json.dumps({
        "llm": "gpt-4o-mini", "limits": {"out": 300}, "prompt": "Be brief.",
        "user": "Question: {{q}}"}), "utf-8")
    code, out, err = _run(capsys, "check", "repo", "--format", "json")
    [step] = json.loads(out)["steps"]
    fixed = framed([("system", "Be brief."), ("user", "Question: ")], tokens) + OVERHEAD
    assert code == 0, out + err
    assert (step["budget"]["fixed"], step["budget"]["output"]) == (fixed, 300)


def test_a_recursive_glob_reads_a_file_at_the_config_folder_too(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``**/*.yaml`` finds repo/top.yaml (as ``Path.glob`` does); the check reads it by
    the mapping, not as a pipeline."""
    _workspace(config={"prompt_mappings": [dict(CONFIG["prompt_mappings"][0],
                                                glob="**/*.yaml")]})
    Path("repo/top.yaml").write_text(AGENT.replace("file: a.md", "file: agents/a.md"), "utf-8")
    code, out, err = _run(capsys, "check", "repo", "--format", "json")
    steps = json.loads(out)["steps"]
    fixed = framed([("system", INSTRUCTIONS)], tokens) + OVERHEAD
    assert code == 0, out + err
    assert [(s["pipeline"], s["budget"]["fixed"], s["budget"]["output"]) for s in steps] == \
        [("repo/agents/a.yaml", fixed, 500), ("repo/top.yaml", fixed, 500)]
