"""The commit-msg check: ``scripts/check_commit_msg.py``, alone and run by the real pre-commit.

The script runs as git runs the hook: a separate process given the message file. Then
``pre-commit run --hook-stage commit-msg`` runs it through ``.pre-commit-config.yaml`` in a
temporary git repository holding a copy of the config and the script.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_commit_msg.py"

SUBJECT_72 = "Split the continuation scanner into syntax, runs and cut, each under 720"
assert len(SUBJECT_72) == 72  # the longest subject allowed
BODY = "cut.py held 1,405 lines; the largest part now holds 716.\n"
# As git writes the message file when the editor opens (comments and the scissors line).
EDITOR_TEMPLATE = ("\n# Please enter the commit message for your changes.\n#\n"
                   "# ------------------------ >8 ------------------------\n"
                   "diff --git a/x b/x\n")


def _check(tmp_path: Path, message: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message, encoding="utf-8")
    return subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("message", [
    f"{SUBJECT_72}\n\n{BODY}",
    "Fix the typo in the README\n",
    "Fix the typo in the README",
    # 72 characters, 144 bytes in UTF-8: characters are counted
    "é" * 72 + "\n",
    # the editor's template below a subject, and blank lines before it
    "\n\nAdd a commit-msg check\n" + EDITOR_TEMPLATE,
    # a line after the scissors is not the message
    "Add a commit-msg check\n\n# ------------------------ >8 ------------------------\nx\n",
    # a comment line right after the subject is dropped, as git drops it
    "Add a commit-msg check\n# a comment\n\nWhy, with figures.\n",
    # nothing but the template: git refuses the commit itself
    EDITOR_TEMPLATE,
])
def test_good_messages_pass(tmp_path: Path, message: str) -> None:
    done = _check(tmp_path, message)
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize(("message", "expected"), [
    (SUBJECT_72 + "s\n\n" + BODY,
     "commit message: the subject has 73 characters (at most 72): put the details in the body\n"),
    ("Fix the typo in the README.\n",
     "commit message: the subject ends with a period\n"),
    ("Fix the typo in the README\nThe word was misspelt.\n",
     "commit message: the second line is not blank: leave one blank line after the subject\n"),
    ("Fix the typo in the README\n" + EDITOR_TEMPLATE.replace("\n#", "Body\n#", 1),
     "commit message: the second line is not blank: leave one blank line after the subject\n"),
    ("x" * 100 + ".\nbody\n",
     "commit message: the subject has 101 characters (at most 72): put the details in the body\n"
     "commit message: the subject ends with a period\n"
     "commit message: the second line is not blank: leave one blank line after the subject\n"),
])
def test_bad_messages_fail_with_the_broken_rules(
        tmp_path: Path, message: str, expected: str) -> None:
    done = _check(tmp_path, message)
    assert (done.returncode, done.stderr) == (1, expected)


def _git_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    # Never read the user's or the machine's git configuration (hooks, signing, templates).
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0",
               PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", NO_COLOR="1")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(name, None)
    # the hook's `python3` is this interpreter
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository holding the config and the script, committed (pre-commit refuses an
    unstaged config)."""
    repo = tmp_path_factory.mktemp("repo")
    env = _git_env(tmp_path_factory.mktemp("pre-commit-home"))
    (repo / "scripts").mkdir()
    shutil.copy2(ROOT / ".pre-commit-config.yaml", repo / ".pre-commit-config.yaml")
    shutil.copy2(SCRIPT, repo / "scripts" / "check_commit_msg.py")
    for args in (["init", "-q"], ["config", "user.name", "budgetlens test"],
                 ["config", "user.email", "test@budgetlens.invalid"],
                 ["config", "commit.gpgsign", "false"], ["add", "-A"],
                 ["commit", "-q", "--no-verify", "-m", "snapshot"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)
    return repo


def _pre_commit(repo: Path, message: str) -> subprocess.CompletedProcess[str]:
    path = repo.parent / f"{repo.name}-COMMIT_EDITMSG"
    path.write_text(message, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--hook-stage", "commit-msg",
         "--commit-msg-filename", str(path), "--color", "never"],
        cwd=repo, capture_output=True, text=True, timeout=300,
        env=_git_env(repo.parent / "pre-commit-home"))


def test_pre_commit_fails_a_long_subject(repo: Path) -> None:
    done = _pre_commit(repo, SUBJECT_72 + "s\n\n" + BODY)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "commit message format" in output and "Failed" in output, output
    assert "the subject has 73 characters (at most 72)" in output, output


def test_pre_commit_passes_a_good_message(repo: Path) -> None:
    done = _pre_commit(repo, f"{SUBJECT_72}\n\n{BODY}")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    # "Passed", not "(no files to check)Skipped": the hook really ran
    assert "commit message format" in output and "Passed" in output, output
    assert "Skipped" not in output, output
