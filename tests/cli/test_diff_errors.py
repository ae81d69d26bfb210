"""Issue 30, case 5: ``budgetlens diff`` fails where ``budgetlens check`` fails.

A step fails on a side when that side's check has an error for it; the errors are listed
in every format; the diff exits 1 when HEAD has an error (new ones make the step "newly
failing"). A pipeline that does not load fails, it is not "removed". Symbolic links to
folders of a revision's tree are followed in the tree (one out of it is the check's
outside-the-workspace error); a submodule is reported, never read as 0 tokens.

Every repository is real (``git init``, commits) in ``tmp_path``; every number comes from
plain tiktoken counts (``helpers.tokens``) and the contract's sum.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from budgetlens_cli.main import main
from tests.cli.test_diff import (
    ANSWER_V1,
    ANSWER_V2,
    CONFIG,
    OVERHEAD,
    QA,
    QA_FIXED_1,
    QA_FIXED_2,
    _git,
    _step,
    _write,
    run_diff,
)
from tests.core.contract.helpers import tokens

PARENT = """settings:
  max_context_tokens: 400
  budget_safety_margin_tokens: 50
steps:
  - id: answer
    type: call_model
    prompt_key: answer
    max_output_tokens: 200
"""
CHILD = """extends: parent.yaml
steps:
  - id: short
    type: call_model
    prompt_key: answer
    max_output_tokens: 100
"""


def _repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    _git(root, "init", "-q")
    _write(root, "config.json", json.dumps(CONFIG, indent=2))
    for rel, text in files.items():
        _write(root, rel, text)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    return root


def _commit(root: Path, message: str) -> None:
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", message)


def _check(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
           root: Path) -> int:
    """``budgetlens check .`` on the working tree (HEAD), for comparison."""
    monkeypatch.chdir(root)
    code = main(["check", ".", "--no-cache"])
    capsys.readouterr()
    return code


def _diff_json_of(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                  root: Path, base: str, head: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run_diff(monkeypatch, capsys, root, base, head, "--format", "json")
    return code, json.loads(out)


def _diff_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
               root: Path) -> tuple[int, dict[str, Any]]:
    return _diff_json_of(monkeypatch, capsys, root, "HEAD~1", "HEAD")


def _all_formats(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                 root: Path) -> tuple[int, str, str]:
    """The exit status of the text, markdown and json formats (all the same) and the text
    and markdown outputs."""
    codes, outs = set(), []
    for fmt in ("text", "markdown", "json"):
        code, out, _ = run_diff(monkeypatch, capsys, root, "HEAD~1", "HEAD", "--format", fmt)
        codes.add(code)
        outs.append(out)
    assert len(codes) == 1, codes
    return codes.pop(), outs[0], outs[1]


def test_a_parent_that_no_longer_parses(monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    root = _repo(tmp_path / "r", {"pipelines/parent.yaml": PARENT,
                                  "pipelines/child.yaml": CHILD,
                                  "prompts/answer.txt": ANSWER_V1})
    _write(root, "pipelines/parent.yaml", PARENT + "  - [unclosed\n")
    _commit(root, "the parent breaks")
    assert _check(monkeypatch, capsys, root) == 1

    code, data = _diff_json(monkeypatch, capsys, root)
    assert code == 1
    answer = _step(data, "pipelines/parent.yaml", "answer")
    assert answer["status"] == "newly_failing"  # not "removed": it fails to load
    assert answer["pipeline_removed"] is False and answer["unknown_after"] is True
    assert answer["before"]["fixed"] == QA_FIXED_1 - tokens("Question: ")
    assert answer["after"] is None
    assert _step(data, "pipelines/child.yaml", "short")["status"] == "newly_failing"
    errors = {e["pipeline"]: e for e in data["pipeline_errors"]}
    assert errors.keys() == {"pipelines/parent.yaml", "pipelines/child.yaml"}
    assert errors["pipelines/parent.yaml"]["before"] == []
    [syntax] = errors["pipelines/parent.yaml"]["after"]
    # line 10: the end of the 9-line file, where YAML finds the list unclosed
    assert (syntax["code"], syntax["file"], syntax["line"]) == ("BL001",
                                                                "pipelines/parent.yaml", 10)
    assert {e["code"] for e in errors["pipelines/child.yaml"]["after"]} == {"BL001", "BL023"}
    assert data["errors_at_head"] == data["new_errors_at_head"] == 3

    code, text, markdown = _all_formats(monkeypatch, capsys, root)
    assert code == 1
    assert "newly failing: pipelines/parent.yaml answer: fixed" in text
    assert "pipeline pipelines/parent.yaml (every step):\n" \
           "    new error BL001 pipelines/parent.yaml:10: " in text
    assert "- **new error** `pipelines/parent.yaml` (every step): `BL001`" \
           " `pipelines/parent.yaml:10` " in markdown
    assert "| **newly failing** | `pipelines/parent.yaml` | `answer` |" in markdown


def test_a_budget_setting_written_as_a_string(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    """``max_context_tokens: "99999"`` is BL030. The step did not fit before either (a
    warning under auto_clamp), so only the error tells the change apart."""
    big = QA.replace("max_context_tokens: 400", "max_context_tokens: 99999")
    root = _repo(tmp_path / "r", {"pipelines/qa.yaml": big, "prompts/answer.txt": ANSWER_V1})
    _write(root, "pipelines/qa.yaml", big.replace("99999", '"99999"'))
    _commit(root, "quoted")
    assert _check(monkeypatch, capsys, root) == 1

    code, data = _diff_json(monkeypatch, capsys, root)
    assert code == 1
    answer = _step(data, "pipelines/qa.yaml", "answer")
    assert answer["status"] == "newly_failing"
    assert answer["before"]["fits"] is False  # failing by its numbers on both sides
    [pipeline] = data["pipeline_errors"]
    assert pipeline["before"] == []
    [bl030] = pipeline["after"]
    assert (bl030["code"], bl030["file"], bl030["line"]) == ("BL030", "pipelines/qa.yaml", 2)
    assert "'99999'" in bl030["message"]

    code, text, markdown = _all_formats(monkeypatch, capsys, root)
    assert code == 1
    assert "    new error BL030 pipelines/qa.yaml:2: settings.max_context_tokens" in text
    assert "`BL030` `pipelines/qa.yaml:2`" in markdown


def test_a_deleted_prompt(monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = _repo(tmp_path / "r", {"pipelines/qa.yaml": QA, "prompts/answer.txt": ANSWER_V1})
    _git(root, "rm", "-q", "prompts/answer.txt")
    _commit(root, "the prompt goes")
    assert _check(monkeypatch, capsys, root) == 1

    code, data = _diff_json(monkeypatch, capsys, root)
    assert code == 1
    answer = _step(data, "pipelines/qa.yaml", "answer")
    assert answer["status"] == "newly_failing"
    assert answer["errors_before"] == []
    [bl040] = answer["errors_after"]
    assert bl040 == {"code": "BL040", "file": "pipelines/qa.yaml", "line": 7,
                     "message": "prompt file prompts/answer.txt of step 'answer' does not"
                                " exist"}

    code, text, markdown = _all_formats(monkeypatch, capsys, root)
    assert code == 1
    assert ("    new error BL040 pipelines/qa.yaml:7: prompt file prompts/answer.txt of step"
            " 'answer' does not exist\n") in text
    assert ("- **new error** `pipelines/qa.yaml` step `answer`: `BL040` `pipelines/qa.yaml:7`"
            " prompt file prompts/answer\\.txt of step 'answer' does not exist\n") in markdown

    # the same error on both sides: listed (not new), and it fails the diff as it fails
    # check; the step is unchanged
    code, data = _diff_json_of(monkeypatch, capsys, root, "HEAD", "HEAD")
    assert code == 1
    assert _step(data, "pipelines/qa.yaml", "answer")["status"] == "unchanged"
    assert (data["errors_at_head"], data["new_errors_at_head"]) == (1, 0)
    code, out, _ = run_diff(monkeypatch, capsys, root, "HEAD", "HEAD")
    assert code == 1
    assert ("    error BL040 pipelines/qa.yaml:7: prompt file prompts/answer.txt of step"
            " 'answer' does not exist\n") in out

    # and the way back: the error is fixed, nothing fails
    code, out, _ = run_diff(monkeypatch, capsys, root, "HEAD", "HEAD~1")
    assert code == 0
    assert ("    fixed BL040 pipelines/qa.yaml:7: prompt file prompts/answer.txt of step"
            " 'answer' does not exist\n") in out


def _linked_prompts(tmp_path: Path) -> Path:
    """``prompts`` is a link to the folder ``shared/prompts`` of the tree."""
    root = _repo(tmp_path / "r", {"pipelines/qa.yaml": QA,
                                  "shared/prompts/answer.txt": ANSWER_V1})
    os.symlink("shared/prompts", root / "prompts")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "--amend", "-m", "base, prompts linked")
    return root


def test_a_prompt_through_a_folder_link(monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    """The link is followed in the tree: the prompt is counted on both sides, and its
    growth newly fails the step (it was 0 tokens and missing on both sides)."""
    root = _linked_prompts(tmp_path)
    _write(root, "shared/prompts/answer.txt", ANSWER_V2)
    _commit(root, "the prompt grows")
    assert _check(monkeypatch, capsys, root) == 0  # auto_clamp: a warning on disk

    code, data = _diff_json(monkeypatch, capsys, root)
    assert code == 1
    answer = _step(data, "pipelines/qa.yaml", "answer")
    assert answer["status"] == "newly_failing"
    assert (answer["before"]["fixed"], answer["after"]["fixed"]) == (QA_FIXED_1, QA_FIXED_2)
    assert answer["errors_before"] == answer["errors_after"] == []
    assert answer["causes"] == [{"kind": "prompt", "name": "prompts/answer.txt",
                                 "before": tokens(ANSWER_V1), "after": tokens(ANSWER_V2)}]


def test_a_folder_link_out_of_the_tree(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    """A folder link that leaves the repository: the check's outside-the-workspace error
    (BL041, as on disk), nothing outside read."""
    root = _linked_prompts(tmp_path)
    outside = tmp_path / "outside"
    _write(outside, "answer.txt", ANSWER_V1)
    (root / "prompts").unlink()
    os.symlink(os.path.relpath(outside, root), root / "prompts")
    _commit(root, "prompts linked out")
    assert _check(monkeypatch, capsys, root) == 1

    code, data = _diff_json(monkeypatch, capsys, root)
    assert code == 1
    answer = _step(data, "pipelines/qa.yaml", "answer")
    assert answer["status"] == "newly_failing"
    assert answer["before"]["fixed"] == QA_FIXED_1
    assert answer["after"]["fixed"] == tokens("Question: ") + OVERHEAD  # not read
    [bl041] = answer["errors_after"]
    assert (bl041["code"], bl041["line"]) == ("BL041", 7)
    assert "resolves outside the workspace root" in bl041["message"]


def _gitlink(root: Path, path: str) -> str:
    """Put a submodule entry (a gitlink, mode 160000) at ``path`` in the index, as
    ``git submodule add`` does; the commit id is made up (it is never read)."""
    sha = "1234567890abcdef1234567890abcdef12345678"
    _git(root, "update-index", "--add", "--cacheinfo", f"160000,{sha},{path}")
    return sha


def test_a_prompt_in_a_submodule(monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The prompts folder becomes a submodule: the revision cannot be read there, which
    is an error naming the submodule (and a note), never a prompt of 0 tokens."""
    root = _repo(tmp_path / "r", {"pipelines/qa.yaml": QA, "prompts/answer.txt": ANSWER_V1})
    _git(root, "rm", "-q", "-r", "--cached", "prompts")
    shutil.rmtree(root / "prompts")
    sha = _gitlink(root, "prompts")
    _git(root, "commit", "-qm", "prompts in a submodule")

    code, data = _diff_json(monkeypatch, capsys, root)
    assert code == 1
    answer = _step(data, "pipelines/qa.yaml", "answer")
    assert answer["status"] == "newly_failing"
    [error] = answer["errors_after"]
    assert (error["code"], error["line"]) == ("BL041", 7)
    assert f"in the submodule prompts (commit {sha[:12]})" in error["message"]
    assert data["notes"] == [f"HEAD: prompts is a submodule (commit {sha[:12]}): not read,"
                             " a pipeline or prompt in it is not checked"]

    # a submodule on both sides: not "0 tokens, unchanged", but an error at HEAD
    code, out, _ = run_diff(monkeypatch, capsys, root, "HEAD", "HEAD")
    assert code == 1
    assert "    error BL041 pipelines/qa.yaml:7: prompt file of step 'answer' cannot be" \
           " used: prompts/answer.txt: in the submodule prompts" in out
    assert f"note: HEAD: prompts is a submodule (commit {sha[:12]})" in out


def test_a_pipeline_replaced_by_a_link(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    """A checkout's glob finds a pipeline that is a link, and a ``pipelines`` folder that
    is one: so does the revision (it was "removed", exit 0). The linked file is checked:
    its quoted setting is BL030; a link out of the repository is the check's BL007."""
    root = _repo(tmp_path / "r", {"pipelines/qa.yaml": QA, "prompts/answer.txt": ANSWER_V1,
                                  "pipelines/other.yaml": QA.replace("id: answer", "id: x")})
    _write(root, "hidden/other.yaml", QA.replace("id: answer", "id: x"))
    _write(root, "hidden/qa.yaml", QA.replace("max_context_tokens: 400",
                                              'max_context_tokens: "400"'))
    (root / "pipelines" / "qa.yaml").unlink()
    os.symlink("../hidden/qa.yaml", root / "pipelines" / "qa.yaml")
    _commit(root, "the pipeline is a link")
    assert _check(monkeypatch, capsys, root) == 1
    code, data = _diff_json(monkeypatch, capsys, root)
    assert code == 1
    assert data["removed_pipelines"] == []
    assert _step(data, "pipelines/qa.yaml", "answer")["status"] == "newly_failing"
    [pipeline] = data["pipeline_errors"]
    assert pipeline["pipeline"] == "pipelines/qa.yaml"
    assert [(e["code"], e["file"], e["line"]) for e in pipeline["after"]] == [
        ("BL030", "pipelines/qa.yaml", 2)]

    shutil.rmtree(root / "pipelines")
    os.symlink("hidden", root / "pipelines")
    _commit(root, "the pipelines folder is a link")
    code, out, _ = run_diff(monkeypatch, capsys, root, "HEAD~2", "HEAD")
    assert code == 1
    assert "    new error BL030 pipelines/qa.yaml:2: " in out

    outside = tmp_path / "outside.yaml"
    outside.write_text(QA, "utf-8")
    (root / "pipelines").unlink()
    (root / "pipelines").mkdir()
    os.symlink(outside, root / "pipelines" / "qa.yaml")
    _write(root, "pipelines/other.yaml", QA.replace("id: answer", "id: x"))
    _commit(root, "the pipeline is a link out")
    code, data = _diff_json(monkeypatch, capsys, root)
    assert code == 1
    [pipeline] = data["pipeline_errors"]
    assert pipeline["after"][0]["code"] == "BL007"
    assert "resolves outside the workspace root" in pipeline["after"][0]["message"]
