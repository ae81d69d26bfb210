"""bench/process_timing.py: the timing bench_check.py and bench_formats.py share. The best
round per side, the ratios and the table text are those the two benches printed before they
shared it (the heads below are copied from their output)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _process_timing() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        import process_timing
    finally:
        sys.path.remove(str(BENCH))
    return process_timing


def test_each_side_takes_its_least_wall_round_and_every_round_is_kept() -> None:
    timing = _process_timing()
    measured = timing.Rounds()
    for side, rounds in {"floor": [(0.5, 0.4), (0.4, 0.45)], "first": [(1.0, 0.8), (0.9, 0.9)],
                         "second": [(0.1, 0.05), (0.2, 0.04)],
                         "jobs": [(0.6, 1.0), (0.7, 1.1)]}.items():
        measured.runs[side].extend(rounds)
        measured.steal[side].extend([None, 2.5])
    row = timing.best_figures(measured)
    # the CPU figure is the one of the round with the least wall time, not the least CPU
    assert (row["floor_s"], row["floor_cpu_s"]) == (0.4, 0.45)
    assert (row["second_s"], row["second_cpu_s"]) == (0.1, 0.05)
    assert row["first_over_floor"] == pytest.approx(2.25)
    assert row["first_over_floor_cpu"] == pytest.approx(2.0)
    assert row["jobs_over_floor"] == pytest.approx(1.5)
    assert row["second_over_first"] == pytest.approx(1 / 9)
    assert row["first_over_floor_per_round"] == pytest.approx([2.0, 2.25])
    assert row["rounds"][1]["jobs"] == {"wall_s": 0.7, "cpu_s": 1.1, "steal_percent": 2.5}
    assert row["rounds"][0]["floor"]["steal_percent"] is None


def test_rows_print_as_the_benches_printed_them() -> None:
    timing = _process_timing()
    assert timing.header_text("pipelines", 9) == (
        "pipelines         floor    -j 1 first   -j 1 second    jobs first       j1/floor"
        "     jobs/floor    second/first   s/1k -j 1      growth")
    assert timing.header_text("files", 6) == (
        " files         floor    -j 1 first   -j 1 second    jobs first       j1/floor"
        "     jobs/floor    second/first   s/1k -j 1      growth")
    row = {"files": 30, "floor_s": 0.8, "floor_cpu_s": 0.5, "first_s": 1.0, "first_cpu_s": 0.6,
           "second_s": 0.05, "second_cpu_s": 0.03, "jobs_s": 1.2, "jobs_cpu_s": 0.6,
           "first_over_floor": 1.25, "first_over_floor_cpu": 1.2, "jobs_over_floor": 1.5,
           "jobs_over_floor_cpu": 1.2, "second_over_first": 0.05, "second_over_first_cpu": 0.05}
    timing.add_growth(row, 30, None)
    assert row["first_s_per_1000"] == pytest.approx(1000 / 30)
    assert row["growth_vs_smallest"] == 1.0
    assert timing.row_text(row, "files", 6) == (
        "    30   0.80/0.50     1.00/0.60     0.05/0.03     1.20/0.60  "
        "  1.25x (1.20x)  1.50x (1.20x)   5.0% ( 5.0%) 33.33/20.00  1.00/1.00 ")
    bigger = {**row, "files": 60, "first_s": 1.5, "first_cpu_s": 0.9, "jobs_s": 1.8}
    timing.add_growth(bigger, 60, row)
    assert bigger["growth_vs_smallest"] == pytest.approx(0.75)
    assert bigger["jobs_growth_vs_smallest"] == pytest.approx(0.75)


def test_a_child_gives_its_last_line_only_when_kept_and_must_succeed(tmp_path: Path) -> None:
    timing = _process_timing()
    script = [sys.executable, "-c", "print('checked'); print('3 pipelines, 6 steps')"]
    wall, cpu, last = timing.run_child(script, tmp_path, keep_output=True)
    assert last == "3 pipelines, 6 steps" and wall > 0 and cpu >= 0
    assert timing.run_child(script, tmp_path)[2] == ""
    # exit 1 is a check's findings; exit 2 is a failure, with its error in the message
    timing.run_child([sys.executable, "-c", "raise SystemExit(1)"], tmp_path)
    with pytest.raises(RuntimeError, match="exit 2: boom"):
        timing.run_child([sys.executable, "-c",
                          "import sys; sys.stderr.write('boom'); sys.exit(2)"], tmp_path)


@pytest.mark.parametrize("bench", ["bench_check.py", "bench_formats.py"])
def test_the_process_benches_time_through_the_shared_module(bench: str) -> None:
    tree = ast.parse((BENCH / bench).read_text("utf-8"))
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    shared = {"run_child", "warm_up", "measure_rounds", "best_figures", "add_growth",
              "header_text", "row_text", "steal_text", "usable_cpus", "scratch_folder",
              "write_figures", "prose"}
    assert defined & shared == set()
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    assert "subprocess" not in imported
