"""bench/bench_yaml.py runs on a small pipeline and prints its figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_yaml.py"


def test_bench_yaml_runs_small_and_prints_every_measure(tmp_path: Path) -> None:
    out = tmp_path / "yaml.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--steps", "20", "--rounds", "2",
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "pipeline: 20 steps," in proc.stdout
    for label in ("new:", "old:", "new, pure Python:", "yaml.load(CSafeLoader):",
                  "libyaml events:", "yaml.safe_load:", "faster than old"):
        assert label in proc.stdout
    figures = json.loads(out.read_text())
    assert figures["steps"] == 20 and set(figures["ms"]) >= {"new", "old", "yaml.safe_load"}
