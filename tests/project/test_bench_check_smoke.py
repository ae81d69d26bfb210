"""bench/bench_check.py runs on a tiny workspace, prints its figures and cleans up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_check.py"


def test_bench_check_runs_small_and_removes_its_workspace(tmp_path: Path) -> None:
    # a private temporary folder: other runs on the machine make bench folders too
    private = tmp_path / "tmp"
    private.mkdir()
    env = {**os.environ, "TMPDIR": str(private)}
    proc = subprocess.run([sys.executable, str(BENCH), "--pipelines", "20", "--prompts", "40",
                           "--bases", "2"], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    for label in ("check, cold cache:", "check, warm cache:", "check, one prompt changed:",
                  "peak memory, cold check:", "raw tiktoken encode_ordinary:",
                  "TokenCounter.count, cold:", "TokenCounter.count, warm:"):
        assert label in proc.stdout
    assert "workspace: 20 pipelines, 40 prompt files" in proc.stdout
    assert list(private.glob("budgetlens-bench-*")) == []


def test_bench_check_keeps_every_round_and_reports_the_best(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--sizes", "12", "--rounds", "2",
                           "--no-in-process", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "best of 2 interleaved rounds" in proc.stdout
    assert "-j 1 / floor by round (wall):" in proc.stdout
    row = json.loads(out.read_text("utf-8"))["command"]["sizes"][0]
    rounds = row["rounds"]
    assert len(rounds) == 2 and len(row["first_over_floor_per_round"]) == 2
    # the figure is the round with the least wall time, for each side on its own
    assert row["floor_s"] == min(r["floor"]["wall_s"] for r in rounds)
    assert row["first_s"] == min(r["first"]["wall_s"] for r in rounds)
    assert row["first_over_floor"] == row["first_s"] / row["floor_s"]
