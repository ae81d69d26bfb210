"""bench/bench_engine.py runs on a tiny workspace, prints its figures and cleans up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_engine.py"


def test_bench_engine_runs_small_and_removes_its_workspace(tmp_path: Path) -> None:
    # a private temporary folder: other runs on the machine make bench folders too
    private = tmp_path / "tmp"
    private.mkdir()
    env = {**os.environ, "TMPDIR": str(private)}
    out = tmp_path / "engine.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--steps", "20", "--levels", "3",
                           "--pipelines", "12", "--dependents", "4", "--edits", "2",
                           "--json", str(out)], capture_output=True, text=True, timeout=300,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    assert "20-step pipeline, 3-level extends, one-character edit" in proc.stdout
    assert "prompt used by 4 of 12 pipelines edited" in proc.stdout
    data = json.loads(out.read_text())
    # the work one edit does, counted: the edited prompt is encoded once for its 4 users,
    # and none of their YAML or templates is parsed again
    assert data["dependents"]["work_per_round"] == {"yaml_parses": 0, "template_parses": 0,
                                                    "encodes": 1}
    # the edited pipeline is parsed again, its unchanged templates are not
    assert data["big"]["work_per_edit"] == {"yaml_parses": 1, "template_parses": 0,
                                            "encodes": 0}
    assert list(private.glob("budgetlens-bench-engine-*")) == []
