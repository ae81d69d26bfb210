"""bench/bench_runtime.py runs quick, checks its counts against the floor's tokens and writes
its figures (no timing is asserted here: the figures are for the issue's note)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_runtime.py"


def test_bench_runtime_quick_prints_and_writes_both_sizes(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text("utf-8"))["rows"]
    assert [r["size"] for r in rows] == ["4k", "100k"]
    assert 4_000 <= rows[0]["input_tokens"] < 6_000
    assert 100_000 <= rows[1]["input_tokens"] < 130_000
    for row in rows:
        assert row["fit_ms"] > 0 and row["floor_ms"] > 0
        assert row["ratio"] > 0 and row["target_ms"] > row["floor_ms"]
        assert "next_turn_fit_ms" in row and "within_target" in row
    assert proc.stdout.count("floor (tiktoken)") == 2
    assert proc.stdout.count("next turn with the caller's counter") == 2
