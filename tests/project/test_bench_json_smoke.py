"""bench/bench_json.py runs small, timed and by instructions, and writes its figures.

The instruction count needs valgrind (scripts/run_tests.sh installs Debian's when missing).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_json.py"


def test_bench_json_quick_times_every_shape(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(out.read_text("utf-8"))
    assert {c["shape"] for c in figures["cells"]} == {"report", "records", "numbers",
                                                       "strings", "text"}
    assert "worst of all:" in proc.stdout


def test_bench_json_counts_instructions_per_call(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--instructions", "--sizes", "5K",
                           "--shapes", "report", "--budgets", "200", "--cuts", "2",
                           "--repeat", "2", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "by instructions (callgrind, least of 2 rounds)" in proc.stdout
    cell = json.loads(out.read_text("utf-8"))["cells"][0]
    loads = cell["json_loads_instructions"]
    counts = cell["get_contexts"]["200"]["instructions"]
    assert len(counts) == 2 and loads > 10_000 and min(counts) > 10_000
    # a call of get_contexts on a cut is counted alone: more than nothing, and not the whole
    # program (a Python start alone is tens of millions of instructions)
    assert max(counts) < 20_000_000
    assert cell["get_contexts"]["200"]["worst_ratio"] == max(counts) / loads


def test_bench_json_measures_the_other_layouts_on_request(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--quick", "--shapes", "report",
                           "--more-layouts", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(out.read_text("utf-8"))
    assert [c["shape"] for c in figures["cells"]] == ["report", "minified", "indent4", "tabs",
                                                       "nested"]
    docs = {c["shape"]: c["chars"] for c in figures["cells"]}
    assert docs["minified"] < docs["report"] < docs["indent4"]  # the same value, relaid
