"""Issue 30, case 4: which side a name of ``budgetlens diff`` stands for.

A change under review controls the files of the checkout. It must not be able to put a
folder (or a symbolic link) where the CI script names a revision: a name that is both is
refused as ambiguous, ``./NAME`` is the folder, ``NAME^{commit}`` the revision, and a
symbolic link is never a side.

Every repository is real (``git init``, commits) in ``tmp_path``; the numbers come from
plain tiktoken counts (``helpers.tokens``) and the contract's sum, as in test_diff.py.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.cli.test_diff import (
    ANSWER_V1,
    ANSWER_V2,
    CONFIG,
    QA,
    QA_FIXED_1,
    QA_FIXED_2,
    QA_TOTAL_1,
    QA_TOTAL_2,
    WINDOW,
    _git,
    _step,
    _write,
    run_diff,
)

AMBIGUOUS = ("budgetlens: error: HEAD~1: both a revision and a file of this folder; write"
             " ./HEAD~1 for the folder or HEAD~1^{commit} for the revision\n")


def _workspace(root: Path, prompt: str) -> None:
    _write(root, "config.json", json.dumps(CONFIG, indent=2))
    _write(root, "pipelines/qa.yaml", QA)
    _write(root, "prompts/answer.txt", prompt)


@pytest.fixture
def grown(tmp_path: Path) -> Path:
    """Commit 1: the answer step fits; commit 2: its prompt grows until it does not."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _workspace(root, ANSWER_V1)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "1: fits")
    _write(root, "prompts/answer.txt", ANSWER_V2)
    _git(root, "commit", "-qam", "2: the prompt grows")
    return root


def test_a_symlink_named_like_the_base_revision_is_refused(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        grown: Path) -> None:
    """The attack: the change also adds ``HEAD~1``, a link to a hidden copy of its own
    files, so a folder-first reading compares the change with itself (exit 0)."""
    shutil.copytree(grown / "pipelines", grown / ".same" / "pipelines")
    shutil.copytree(grown / "prompts", grown / ".same" / "prompts")
    shutil.copy(grown / "config.json", grown / ".same" / "config.json")
    os.symlink(".same", grown / "HEAD~1")
    _git(grown, "add", "-A")
    _git(grown, "commit", "--amend", "-qm", "2: the prompt grows (and a look-alike)")

    for argv in (["HEAD~1", "HEAD"], ["HEAD~1"], ["HEAD~1", "."]):
        code, out, err = run_diff(monkeypatch, capsys, grown, *argv)
        assert (code, out, err) == (2, "", AMBIGUOUS), argv

    # the revision, said so: the grown prompt newly fails
    code, out, _ = run_diff(monkeypatch, capsys, grown, "HEAD~1^{commit}", "HEAD",
                            "--format", "json")
    assert code == 1
    answer = _step(json.loads(out), "pipelines/qa.yaml", "answer")
    assert answer["status"] == "newly_failing"
    assert (answer["before"]["total"], answer["after"]["total"]) == (QA_TOTAL_1, QA_TOTAL_2)

    # the link, said to be a folder: still no side
    code, out, err = run_diff(monkeypatch, capsys, grown, "./HEAD~1", "HEAD")
    assert (code, out) == (2, "")
    assert err == ("budgetlens: error: ./HEAD~1: a symbolic link; a side must be a folder"
                   " itself (give the folder it leads to, or a revision)\n")


def test_a_folder_named_like_a_revision_is_ambiguous(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        grown: Path) -> None:
    """A real folder (not a link) named ``HEAD~1``: refused unless written ``./HEAD~1``,
    and then it is the folder that is compared."""
    _workspace(grown / "HEAD~1", ANSWER_V2)  # the change's own files: nothing moves
    code, out, err = run_diff(monkeypatch, capsys, grown, "HEAD~1", "HEAD")
    assert (code, out, err) == (2, "", AMBIGUOUS)

    code, out, _ = run_diff(monkeypatch, capsys, grown, "./HEAD~1", "HEAD", "--format", "json")
    assert code == 0
    answer = _step(json.loads(out), "pipelines/qa.yaml", "answer")
    assert answer["status"] == "unchanged"
    expected = {"fixed": QA_FIXED_2, "total": QA_TOTAL_2, "window": WINDOW,
                "headroom": WINDOW - QA_TOTAL_2, "fits": False}
    assert answer["before"] == answer["after"] == expected

    code, out, _ = run_diff(monkeypatch, capsys, grown, "HEAD~1^{commit}", "./HEAD~1",
                            "--format", "json")
    assert code == 1
    answer = _step(json.loads(out), "pipelines/qa.yaml", "answer")
    assert answer["before"]["fixed"] == QA_FIXED_1
    assert answer["after"]["fixed"] == QA_FIXED_2


def test_a_name_that_is_only_a_folder_or_only_a_revision(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        grown: Path, tmp_path: Path) -> None:
    """No ambiguity, no refusal: a folder that names no revision is the folder, a
    revision with no such file is the revision; a link to a folder is never a side."""
    _workspace(grown / "before", ANSWER_V1)
    code, out, _ = run_diff(monkeypatch, capsys, grown, "before", "HEAD", "--format", "json")
    assert code == 1
    assert json.loads(out)["steps"][0]["before"]["fixed"] == QA_FIXED_1

    os.symlink("before", grown / "linked")
    code, out, err = run_diff(monkeypatch, capsys, grown, "linked", "HEAD")
    assert (code, out) == (2, "")
    assert err.startswith("budgetlens: error: linked: a symbolic link; a side must be a"
                          " folder itself")
    os.symlink(grown / "before", tmp_path / "abs-link")
    code, _, err = run_diff(monkeypatch, capsys, grown, str(tmp_path / "abs-link") + "/",
                            "HEAD")
    assert code == 2 and "a symbolic link" in err

    code, _, err = run_diff(monkeypatch, capsys, grown, "./no-such-folder", "HEAD")
    assert (code, err) == (2, "budgetlens: error: ./no-such-folder: no such folder\n")
