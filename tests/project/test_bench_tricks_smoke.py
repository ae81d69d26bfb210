"""bench/bench_tricks.py's rows still measure something: each plain version finds what it
replaces and each workload runs with it (natively, timed once; valgrind counts only in the
bench itself). A trick that moves or is renamed fails here, not silently in the ledger."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import bench_tricks  # noqa: E402


@pytest.mark.parametrize("row", bench_tricks.CALL_ROWS, ids=lambda r: f"{r.name}-{r.workload}")
def test_each_call_row_runs_without_its_trick(row: bench_tricks.Row, tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    (tmp_path / "cache").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, str(BENCH / "bench_tricks.py"), bench_tricks.CHILD,
                           row.workload, row.name, "1", "time"],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "cpu_s " in proc.stdout


def test_every_plain_version_has_a_row() -> None:
    assert {r.name for r in bench_tricks.CALL_ROWS} == set(bench_tricks.PLAIN)
