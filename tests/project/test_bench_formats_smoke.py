"""bench/bench_formats.py runs quick on generated prompt files of three formats, the floor and
the check both see every file, and the workspace is removed (no timing is asserted here: the
figures are for the issue's note)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_bench_formats_quick_prints_every_row_and_cleans_up(tmp_path: Path) -> None:
    # a private temporary folder: other runs on the machine make bench folders too
    private = tmp_path / "tmp"
    private.mkdir()
    out = tmp_path / "figures.json"
    env = {**os.environ, "TMPDIR": str(private)}
    proc = subprocess.run([sys.executable, str(BENCH / "bench_formats.py"), "--quick",
                           "--json", str(out)], capture_output=True, text=True, timeout=600,
                          env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text("utf-8"))["command"]["sizes"]
    assert [r["files"] for r in rows] == [30, 60]
    for row, folders in zip(rows, (2, 3), strict=True):
        n = row["files"]
        # every file is a step: a third of each format, 25 to a folder with two partials
        assert row["check_totals"].startswith(f"{n} pipelines, {n} call_model steps")
        assert "(0 not fitting): 0 errors" in row["check_totals"]
        assert row["floor_totals"].startswith(
            f"{n} prompt files, {2 * folders} partials, {2 * n} messages")
        for key in ("floor_s", "first_s", "second_s", "jobs_s", "floor_cpu_s", "first_cpu_s",
                    "first_over_floor", "first_over_floor_cpu", "growth_vs_smallest"):
            assert row[key] > 0
        assert f"check saw: {row['check_totals']}" in proc.stdout
        assert len(row["rounds"]) == 1
    assert proc.stdout.count("floor saw:") == 2
    assert "seconds per 1,000 files" in proc.stdout
    assert list(private.iterdir()) == []


def test_generated_files_are_each_format_in_its_own_spelling(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import bench_formats
    finally:
        sys.path.remove(str(BENCH))
    bench_formats.generate(tmp_path / "ws", 9)
    files = sorted(p.name for p in (tmp_path / "ws").rglob("*") if p.is_file())
    assert sum(n.endswith(".prompt.yml") for n in files) == 3
    assert sum(n.endswith(".prompty") for n in files) == 3
    assert sum(n.endswith(".prompt") and not n.startswith("_") for n in files) == 3
    assert {"_style.prompt", "_safety.prompt"} <= set(files)
    again = tmp_path / "again"
    bench_formats.generate(again, 9)
    for path in (tmp_path / "ws").rglob("*.prompt*"):
        assert (again / path.relative_to(tmp_path / "ws")).read_text("utf-8") == \
            path.read_text("utf-8")
