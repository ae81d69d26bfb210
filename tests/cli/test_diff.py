"""``budgetlens diff BASE [HEAD]`` on a temporary git repository with three commits.

1. a workspace: config.json (window 1,000, overhead 10), pipelines/qa.yaml (step ``answer``)
   and pipelines/route.yaml (step ``route``), two prompts;
2. the prompt of ``answer`` grows until the step no longer fits;
3. route.yaml's ``max_context_tokens`` goes from 100 to 300, and pipelines/summary.yaml is
   added.

Every number is computed here from plain tiktoken counts (``helpers.tokens``) and the
contract's sum, never by the code under test; the Markdown matches tests/cli/golden/diff.md,
written by hand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from budgetlens_cli.main import main
from tests.core.contract.helpers import tokens

GOLDEN = Path(__file__).parent / "golden" / "diff.md"
WINDOW, OVERHEAD, MARGIN = 1000, 10, 50
ANSWER_V1 = "You answer questions about the product manual."
ANSWER_V2 = ANSWER_V1 + " Quote the manual section you used and explain it step by step." * 40
ROUTER = "Pick the team for the question."
SUMMARY = "Summarise the conversation."

CONFIG = {"model_context_window": WINDOW, "model_max_tokens": 100, "prompts_dir": "prompts",
          "format_overhead_tokens": OVERHEAD, "tokenizer": "cl100k_base"}
QA = """settings:
  max_context_tokens: 400
  budget_safety_margin_tokens: 50
steps:
  - id: answer
    type: call_model
    prompt_key: answer
    user_parts:
      template: "Question: {question}"
    max_output_tokens: 200
"""
ROUTE = """settings:
  max_context_tokens: %d
  budget_safety_margin_tokens: 50
steps:
  - id: route
    type: call_model
    prompt_key: router
    user_parts:
      template: "Route: {question}"
    max_output_tokens: 20
"""
SUMMARY_YAML = """settings:
  max_context_tokens: 100
  budget_safety_margin_tokens: 50
steps:
  - id: summarise
    type: call_model
    prompt_key: summary
    max_output_tokens: 300
"""

# the reference numbers: fixed = prompt + template (placeholders emptied) + overhead;
# total = fixed + context + output + margin (no history); headroom = window - total
QA_FIXED_1 = tokens(ANSWER_V1) + tokens("Question: ") + OVERHEAD
QA_FIXED_2 = tokens(ANSWER_V2) + tokens("Question: ") + OVERHEAD
QA_TOTAL_1, QA_TOTAL_2 = QA_FIXED_1 + 400 + 200 + MARGIN, QA_FIXED_2 + 400 + 200 + MARGIN
ROUTE_FIXED = tokens(ROUTER) + tokens("Route: ") + OVERHEAD
ROUTE_TOTAL_1, ROUTE_TOTAL_3 = ROUTE_FIXED + 100 + 20 + MARGIN, ROUTE_FIXED + 300 + 20 + MARGIN
SUMMARY_FIXED = tokens(SUMMARY) + OVERHEAD
SUMMARY_TOTAL = SUMMARY_FIXED + 100 + 300 + MARGIN


def _git(cwd: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    done = subprocess.run(["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main",
                           *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("diffrepo")
    _git(root, "init", "-q")
    _write(root, "config.json", json.dumps(CONFIG, indent=2))
    _write(root, "pipelines/qa.yaml", QA)
    _write(root, "pipelines/route.yaml", ROUTE % 100)
    _write(root, "prompts/answer.txt", ANSWER_V1)
    _write(root, "prompts/router.txt", ROUTER)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "1: a workspace")
    _write(root, "prompts/answer.txt", ANSWER_V2)
    _git(root, "commit", "-qam", "2: the answer prompt grows")
    _write(root, "pipelines/route.yaml", ROUTE % 300)
    _write(root, "pipelines/summary.yaml", SUMMARY_YAML)
    _write(root, "prompts/summary.txt", SUMMARY)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "3: a setting changes, a pipeline is added")
    return root


def run_diff(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cwd: Path,
             *argv: str) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    code = main(["diff", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _step(data: dict[str, Any], pipeline: str, step: str) -> dict[str, Any]:
    found = [s for s in data["steps"] if s["pipeline"] == pipeline and s["step"] == step]
    assert len(found) == 1, data["steps"]
    return found[0]


def _numbers(fixed: int, total: int) -> dict[str, Any]:
    return {"fixed": fixed, "total": total, "window": WINDOW, "headroom": WINDOW - total,
            "fits": total <= WINDOW}


def test_the_reference_numbers_tell_the_story() -> None:
    """The workspace does what the commits say: only the grown prompt stops fitting."""
    assert QA_TOTAL_1 <= WINDOW < QA_TOTAL_2
    assert ROUTE_TOTAL_3 <= WINDOW and SUMMARY_TOTAL <= WINDOW


def test_a_grown_prompt_newly_fails(monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str], repo: Path) -> None:
    code, out, _ = run_diff(monkeypatch, capsys, repo, "HEAD~2", "HEAD~1", "--format", "json")
    assert code == 1
    data = json.loads(out)
    assert data["newly_failing"] == 1
    answer = _step(data, "pipelines/qa.yaml", "answer")
    assert answer["status"] == "newly_failing"
    assert answer["before"] == _numbers(QA_FIXED_1, QA_TOTAL_1)
    assert answer["after"] == _numbers(QA_FIXED_2, QA_TOTAL_2)
    assert answer["causes"] == [{"kind": "prompt", "name": "prompts/answer.txt",
                                 "before": tokens(ANSWER_V1), "after": tokens(ANSWER_V2)}]
    route = _step(data, "pipelines/route.yaml", "route")
    assert route["status"] == "unchanged" and route["causes"] == []


def test_a_setting_change_and_an_added_pipeline(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str],
                                                repo: Path) -> None:
    code, out, _ = run_diff(monkeypatch, capsys, repo, "HEAD~1", "HEAD", "--format", "json")
    assert code == 0  # the answer step fails on both sides: not newly
    data = json.loads(out)
    route = _step(data, "pipelines/route.yaml", "route")
    assert route["status"] == "changed"
    assert route["before"] == _numbers(ROUTE_FIXED, ROUTE_TOTAL_1)
    assert route["after"] == _numbers(ROUTE_FIXED, ROUTE_TOTAL_3)
    assert route["headroom_drop"] == 200
    assert route["causes"] == [{"kind": "setting", "name": "settings.max_context_tokens",
                                "before": 100, "after": 300}]
    summary = _step(data, "pipelines/summary.yaml", "summarise")
    assert summary["status"] == "added" and summary["pipeline_added"] is True
    assert summary["before"] is None
    assert summary["after"] == _numbers(SUMMARY_FIXED, SUMMARY_TOTAL)
    assert data["added_pipelines"] == ["pipelines/summary.yaml"]
    assert _step(data, "pipelines/qa.yaml", "answer")["status"] == "unchanged"


def test_markdown_matches_the_golden_file(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str],
                                          repo: Path) -> None:
    code, out, _ = run_diff(monkeypatch, capsys, repo, "HEAD~2", "HEAD", "--format", "markdown")
    assert code == 1
    assert out == GOLDEN.read_text("utf-8")


def test_the_working_tree_is_the_default_head(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str],
                                              repo: Path) -> None:
    code, out, _ = run_diff(monkeypatch, capsys, repo, "HEAD~2", "--format", "markdown")
    assert code == 1
    assert out == GOLDEN.read_text("utf-8").replace("`HEAD`", "`.`")


@pytest.mark.parametrize(("threshold", "expected"), [
    (None, 0), ("199", 1), ("200", 0),
    # the route step's base headroom is WINDOW - ROUTE_TOTAL_1; 200 tokens of it is this share
    (f"{200 * 100 / (WINDOW - ROUTE_TOTAL_1) - 0.5:.2f}%", 1),
    (f"{200 * 100 / (WINDOW - ROUTE_TOTAL_1) + 0.5:.2f}%", 0),
])
def test_headroom_thresholds(monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str], repo: Path,
                             threshold: str | None, expected: int) -> None:
    extra = ["--max-headroom-drop", threshold] if threshold is not None else []
    code, _, _ = run_diff(monkeypatch, capsys, repo, "HEAD~1", "HEAD", *extra)
    assert code == expected


def test_a_shallow_clone_works(repo: Path, tmp_path: Path) -> None:
    """A real process in a ``git clone --depth 2``: HEAD~1 is there, HEAD~2 is not."""
    clone = tmp_path / "shallow"
    _git(tmp_path, "clone", "-q", "--depth", "2", repo.as_uri(), str(clone))
    command = [sys.executable, "-m", "budgetlens_cli", "diff", "HEAD~1", "HEAD"]
    done = subprocess.run(command, cwd=clone, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert (f"changed: pipelines/route.yaml route: fixed {ROUTE_FIXED:,}, total"
            f" {ROUTE_TOTAL_1:,} → {ROUTE_TOTAL_3:,} (+200)") in done.stdout
    assert "caused by setting settings.max_context_tokens 100 → 300 (+200)" in done.stdout
    done = subprocess.run([*command[:-2], "HEAD~2"], cwd=clone, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("budgetlens: error: HEAD~2: unknown revision")


def test_an_unknown_revision_is_bad_usage(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str],
                                          repo: Path) -> None:
    code, out, err = run_diff(monkeypatch, capsys, repo, "no-such-branch")
    assert (code, out) == (2, "")
    assert err.startswith("budgetlens: error: no-such-branch: unknown revision and no such"
                          " folder")
    assert err.count("\n") == 1


def test_a_folder_that_is_not_a_workspace(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str], repo: Path,
                                          tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run_diff(monkeypatch, capsys, repo, "HEAD", str(empty))
    assert (code, out) == (2, "")
    assert err == (f"budgetlens: error: {empty}: not a workspace (no pipelines/*.yaml under"
                   " this folder)\n")
    code, _, err = run_diff(monkeypatch, capsys, repo, "HEAD", "config.json")
    assert code == 2
    assert err == ("budgetlens: error: config.json: a file; expected a workspace folder or a"
                   " git revision\n")


def test_a_revision_without_the_workspace(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str], repo: Path) -> None:
    """Read from a subfolder with no pipelines at that revision: a clear error."""
    (repo / "prompts").mkdir(exist_ok=True)
    code, _, err = run_diff(monkeypatch, capsys, repo / "prompts", "HEAD", "HEAD~1")
    assert code == 2
    assert err == ("budgetlens: error: HEAD: not a workspace at this revision (no"
                   " pipelines/*.yaml under prompts)\n")


def test_the_change_backwards_removes_a_pipeline(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str],
                                                 repo: Path) -> None:
    code, out, _ = run_diff(monkeypatch, capsys, repo, "HEAD", "HEAD~2")
    assert code == 0  # a step that starts fitting and a removed one fail nothing
    assert out.splitlines() == [
        "budget diff HEAD -> HEAD~2: 0 newly failing, 2 changed, 0 added, 1 removed,"
        " 0 unchanged",
        f"changed: pipelines/qa.yaml answer: fixed {QA_FIXED_2} → {QA_FIXED_1}"
        f" ({QA_FIXED_1 - QA_FIXED_2}), total {QA_TOTAL_2:,} → {QA_TOTAL_1}"
        f" ({QA_TOTAL_1 - QA_TOTAL_2}), headroom {WINDOW - QA_TOTAL_2} →"
        f" {WINDOW - QA_TOTAL_1} (+{QA_TOTAL_2 - QA_TOTAL_1}), fits no → yes",
        f"    caused by prompt prompts/answer.txt {tokens(ANSWER_V2)} → {tokens(ANSWER_V1)}"
        f" ({tokens(ANSWER_V1) - tokens(ANSWER_V2)}) tokens",
        f"changed: pipelines/route.yaml route: fixed {ROUTE_FIXED}, total {ROUTE_TOTAL_3} →"
        f" {ROUTE_TOTAL_1} (-200), headroom {WINDOW - ROUTE_TOTAL_3} → {WINDOW - ROUTE_TOTAL_1}"
        " (+200), fits yes",
        "    caused by setting settings.max_context_tokens 300 → 100 (-200)",
        f"removed (pipeline removed): pipelines/summary.yaml summarise: fixed {SUMMARY_FIXED},"
        f" total {SUMMARY_TOTAL}, headroom {WINDOW - SUMMARY_TOTAL}, fits yes",
    ]


def test_the_documented_example_is_the_golden_file() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "cli.md").read_text("utf-8")
    assert ("$ budgetlens diff HEAD~2 HEAD --format markdown\n" + GOLDEN.read_text("utf-8")
            + "$ echo $?\n1\n") in doc


def test_a_folder_side_reads_like_the_revision(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str], repo: Path,
                                               tmp_path: Path) -> None:
    """Commit 1 exported to a folder outside the repository, diffed against HEAD."""
    folder = tmp_path / "commit1"
    folder.mkdir()
    archive = subprocess.run(["git", "archive", "HEAD~2"], cwd=repo, capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    code, out, _ = run_diff(monkeypatch, capsys, repo, str(folder), "HEAD",
                            "--format", "markdown")
    assert code == 1
    assert out == GOLDEN.read_text("utf-8").replace("`HEAD~2`", f"`{folder}`")


def test_a_symlinked_prompt_in_a_revision(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    """A prompt that is a symlink inside the tree is read through it; one out of the
    repository is not read (the step's prompt is unreadable, so it counts 0, and its
    BL041 error, new at HEAD, fails the diff as it fails ``check``)."""
    root = tmp_path / "links"
    root.mkdir()
    _git(root, "init", "-q")
    _write(root, "config.json", json.dumps(CONFIG))
    _write(root, "pipelines/qa.yaml", QA)
    _write(root, "shared/answer.txt", ANSWER_V1)
    (root / "prompts").mkdir()
    os.symlink("../shared/answer.txt", root / "prompts" / "answer.txt")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "1")
    (root / "prompts" / "answer.txt").unlink()
    os.symlink("/etc/hostname", root / "prompts" / "answer.txt")
    _git(root, "commit", "-qam", "2")
    code, out, _ = run_diff(monkeypatch, capsys, root, "HEAD~1", "HEAD", "--format", "json")
    answer = _step(json.loads(out), "pipelines/qa.yaml", "answer")
    assert code == 1  # was 0: a new error at HEAD (issue 30, case 5)
    assert answer["before"] == _numbers(QA_FIXED_1, QA_TOTAL_1)
    assert answer["after"]["fixed"] == tokens("Question: ") + OVERHEAD
