"""Standard output closed by its reader before the output is written whole (``budgetlens
check | head -1``): exit status 141, as a process ended by SIGPIPE, and nothing on standard
error. It was 0, so ``set -o pipefail; budgetlens check | head`` passed a workspace with
errors. Real processes, their standard output a pipe whose reading end is already closed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE (13), as a shell reports a process SIGPIPE ended
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _closed_output(args: list[str], cwd: Path) -> tuple[int, str]:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-m", "budgetlens_cli", *args], cwd=cwd,
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    return tmp_path


@pytest.mark.parametrize("args", [
    ["check", "ws", "--no-cache"],  # the output of many pipelines
    ["check", "ws/pipelines/chat.yaml", "--no-cache"],  # a few lines, written at exit
    ["check", "ws", "--format", "json", "--no-cache"],
])
def test_a_closed_output_is_exit_status_141_never_0(workspace: Path, args: list[str]) -> None:
    full = subprocess.run([sys.executable, "-m", "budgetlens_cli", *args], cwd=workspace,
                          capture_output=True, text=True, timeout=120)
    assert full.stdout  # there is output to lose
    assert _closed_output(args, workspace) == (EXIT_BROKEN_PIPE, "")


def test_a_replayed_answer_to_a_closed_output_is_141(workspace: Path) -> None:
    env_args = ["check", "ws", "--cache-dir", str(workspace / "cache")]
    first = subprocess.run([sys.executable, "-m", "budgetlens_cli", *env_args], cwd=workspace,
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 1
    for _ in range(3):  # the answer may be recorded by the first or the second run (racy)
        subprocess.run([sys.executable, "-m", "budgetlens_cli", *env_args], cwd=workspace,
                       capture_output=True, timeout=120)
    assert list((workspace / "cache").glob("*/*.answer"))
    assert _closed_output(env_args, workspace) == (EXIT_BROKEN_PIPE, "")
