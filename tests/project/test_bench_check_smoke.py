"""bench/bench_check.py runs on a tiny workspace, prints its figures and cleans up."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_check.py"


def test_bench_check_runs_small_and_removes_its_workspace() -> None:
    before = {p.name for p in Path(tempfile.gettempdir()).glob("budgetlens-bench-*")}
    proc = subprocess.run([sys.executable, str(BENCH), "--pipelines", "20", "--prompts", "40",
                           "--bases", "2"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for label in ("check, cold cache:", "check, warm cache:", "check, one prompt changed:",
                  "peak memory, cold check:", "raw tiktoken encode_ordinary:",
                  "TokenCounter.count, cold:", "TokenCounter.count, warm:"):
        assert label in proc.stdout
    assert "workspace: 20 pipelines, 40 prompt files" in proc.stdout
    after = {p.name for p in Path(tempfile.gettempdir()).glob("budgetlens-bench-*")}
    assert after <= before
