"""bench/machine.py: the share of CPU time stolen by the hypervisor, from /proc/stat, as
the benchmarks print it next to their figures."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _machine() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_machine", BENCH / "machine.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up
    spec.loader.exec_module(module)
    return module


def test_steal_is_the_stolen_share_of_all_ticks_between_two_readings(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch
                                                                     ) -> None:
    machine = _machine()
    stat = tmp_path / "stat"
    monkeypatch.setattr(machine, "_PROC_STAT", stat)
    #          user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text("cpu  1000 10 300 5000 20 0 10 60 0 0\ncpu0 500 5 150 2500 10 0 5 30 0 0\n")
    before = machine.cpu_times()
    assert before == machine.CpuTimes(total=6400, steal=60)
    stat.write_text("cpu  1150 10 330 5180 20 0 10 90 0 0\ncpu0 575 5 165 2590 10 0 5 45 0 0\n")
    after = machine.cpu_times()
    # 150 + 30 + 180 + 30 = 390 ticks, 30 of them stolen
    assert machine.steal_percent(before, after) == pytest.approx(100 * 30 / 390)
    assert machine.fmt_steal(machine.steal_percent(before, after)) == "7.7%"


def test_a_span_too_short_or_an_unreadable_stat_gives_no_figure(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    machine = _machine()
    a = machine.CpuTimes(total=1000, steal=0)
    assert machine.steal_percent(a, machine.CpuTimes(total=1049, steal=49)) is None
    assert machine.steal_percent(a, machine.CpuTimes(total=1050, steal=5)) == 10.0
    assert machine.steal_percent(None, a) is None and machine.fmt_steal(None) == "—"
    monkeypatch.setattr(machine, "_PROC_STAT", tmp_path / "missing")
    assert machine.cpu_times() is None
    (tmp_path / "odd").write_text("intr 1 2 3\n")
    monkeypatch.setattr(machine, "_PROC_STAT", tmp_path / "odd")
    assert machine.cpu_times() is None


def test_bench_check_writes_the_steal_of_every_run(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    proc = subprocess.run([sys.executable, str(BENCH / "bench_check.py"), "--sizes", "12",
                           "--rounds", "2", "--no-in-process", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "steal (floor/-j 1) by round:" in proc.stdout
    rounds = json.loads(out.read_text("utf-8"))["command"]["sizes"][0]["rounds"]
    for run in (r[name] for r in rounds for name in ("floor", "first", "second", "jobs")):
        assert "steal_percent" in run
        assert run["steal_percent"] is None or 0.0 <= run["steal_percent"] <= 100.0
