"""``budgetlens clamp --diff`` exits 1 while changes are pending and 0 when there are none,
as ``ruff format --diff`` does (issue 35), so a CI step fails until the plan is applied."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from budgetlens_cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    return Path("ws")


def test_diff_exits_1_while_changes_are_pending_then_0(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # examples/pipelines/long_report.yaml does not fit: its context must come down
    original = (ws / "pipelines" / "long_report.yaml").read_text("utf-8")
    assert main(["clamp", "ws", "--diff"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("--- a/ws/pipelines/long_report.yaml\n"
                          "+++ b/ws/pipelines/long_report.yaml\n")
    assert "-  max_context_tokens: 6144\n" in out
    assert (ws / "pipelines" / "long_report.yaml").read_text("utf-8") == original
    assert main(["clamp", "ws", "--write"]) == 0  # applying the plan is a success
    capsys.readouterr()
    assert main(["clamp", "ws", "--diff"]) == 0  # nothing pending
    assert capsys.readouterr().out == ""


def test_diff_of_a_fitting_pipeline_exits_0_and_listing_is_unchanged(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clamp", "ws/pipelines/chat.yaml", "--diff"]) == 0
    assert capsys.readouterr().out == ""
    # without --diff the listing keeps its status: 0 when the plan leaves no violation
    assert main(["clamp", "ws"]) == 0


def test_diff_exit_status_in_a_real_process(ws: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT")}
    proc = subprocess.run([sys.executable, "-m", "budgetlens_cli", "clamp", "ws", "--diff"],
                          capture_output=True, text=True, check=False, env=env)
    assert proc.returncode == 1, proc.stderr
    assert "+++ b/ws/pipelines/long_report.yaml" in proc.stdout
