"""Issue 30, case 6: ``budgetlens diff`` reads only the objects the checks need.

A repository holds a small workspace and 60 large JSON files the checks never need (each
256 KiB, compressible: the ``.git`` stays small). The bytes that ``git`` hands to
``budgetlens diff`` are counted by a ``git`` on ``PATH`` that runs the real one and counts
its standard output as it passes it on (a counting mechanism, not time or memory):
reading the revision reads the workspace's few files, never the JSON. A revision whose
needed files pass the total cap is refused with one line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from budgetlens_cli import git_source
from tests.cli.test_diff import (
    ANSWER_V1,
    ANSWER_V2,
    CONFIG,
    QA,
    QA_TOTAL_1,
    QA_TOTAL_2,
    _git,
    _step,
    _write,
    run_diff,
)

BIG_FILES, BIG_BYTES = 60, 256 * 1024

COUNTING_GIT = """\
import os, subprocess, sys
done = subprocess.Popen([os.environ["REAL_GIT"], *sys.argv[1:]], stdout=subprocess.PIPE)
n = 0
while True:
    chunk = os.read(done.stdout.fileno(), 1 << 16)
    if not chunk:
        break
    n += len(chunk)
    view = memoryview(chunk)
    while view:
        view = view[os.write(1, view):]
code = done.wait()
with open(os.environ["GIT_COUNT_LOG"], "a") as log:
    log.write(f"{n} {sys.argv[1] if len(sys.argv) > 1 else ''}\\n")
sys.exit(code)
"""


def _big_json(i: int) -> str:
    row = json.dumps({"id": i, "text": "the same words again and again " * 3}) + ",\n"
    return "[\n" + row * (BIG_BYTES // len(row)) + "{}]\n"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reads")
    _git(root, "init", "-q")
    _write(root, "config.json", json.dumps(CONFIG, indent=2))
    _write(root, "pipelines/qa.yaml", QA)
    _write(root, "prompts/answer.txt", ANSWER_V1)
    for i in range(BIG_FILES):
        _write(root, f"data/records-{i:02}.json", _big_json(i))
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "1: a workspace and its data")
    _write(root, "prompts/answer.txt", ANSWER_V2)
    _git(root, "commit", "-qam", "2: the prompt grows")
    return root


def _counting_git(tmp_path: Path) -> dict[str, str]:
    """An environment whose ``git`` counts the bytes it writes, in ``GIT_COUNT_LOG``."""
    real = shutil.which("git")
    assert real is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(f"#!{sys.executable}\n{COUNTING_GIT}", "utf-8")
    wrapper.chmod(0o755)
    return dict(os.environ, REAL_GIT=real, GIT_COUNT_LOG=str(tmp_path / "git.log"),
                PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_the_unrelated_blobs_are_never_read(repo: Path, tmp_path: Path) -> None:
    env = _counting_git(tmp_path)
    data = sum(len(_big_json(i).encode()) for i in range(BIG_FILES))
    assert data > BIG_FILES * BIG_BYTES * 0.99
    done = subprocess.run([sys.executable, "-m", "budgetlens_cli", "diff", "HEAD~1", "HEAD",
                           "--format", "json"], cwd=repo, env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 1, done.stderr
    answer = _step(json.loads(done.stdout), "pipelines/qa.yaml", "answer")
    assert (answer["before"]["total"], answer["after"]["total"]) == (QA_TOTAL_1, QA_TOTAL_2)

    calls = (tmp_path / "git.log").read_text("utf-8").splitlines()
    read = sum(int(line.split()[0]) for line in calls)
    objects = sum(int(line.split()[0]) for line in calls if line.endswith(" cat-file"))
    # per side: the listing (a line per file) and three small files; never a JSON file
    needed = 2 * sum(len(t.encode()) for t in (json.dumps(CONFIG, indent=2), QA))
    needed += len(ANSWER_V1.encode()) + len(ANSWER_V2.encode())
    assert objects <= needed + 2 * 3 * 60  # and each object's header line
    assert read < 100_000, calls


def test_a_revision_past_the_total_cap_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str],
                                                  repo: Path) -> None:
    """A cap below what the checks need: one line, exit status 2, no report."""
    monkeypatch.setattr(git_source, "MAX_TOTAL_BYTES", 100)  # below QA alone
    code, out, err = run_diff(monkeypatch, capsys, repo, "HEAD~1", "HEAD")
    assert (code, out) == (2, "")
    assert len(QA.encode()) > 100
    assert err == ("budgetlens: error: HEAD~1: the files the check needs pass 100 bytes in"
                   " total, the cap for a revision; compare two checked-out folders"
                   " instead\n")
