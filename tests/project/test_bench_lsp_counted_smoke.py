"""bench/bench_lsp_counted.py runs small: a server and the floor under callgrind, counted
between two points of their run.

It needs valgrind (scripts/run_tests.sh installs Debian's when missing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_lsp_counted.py"


def test_bench_lsp_counted_quick_counts_the_edits_alone(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "instructions per edit (callgrind), start-up left out" in proc.stdout
    figures = json.loads(out.read_text("utf-8"))
    assert figures["edits"] == 2
    ours = figures["instructions_per_edit"]["example"]["budgetlens"]
    floor = figures["instructions_per_edit"]["example"]["floor"]
    # an edit is counted alone: more than the floor's (budgetlens checks the pipeline), and
    # not a start-up (a Python start alone is tens of millions of instructions; a server's
    # start-up under callgrind, hundreds)
    assert 100_000 < floor < ours < 50_000_000
