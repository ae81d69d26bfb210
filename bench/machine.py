"""How much of the machine a benchmark had: the share of CPU time the hypervisor gave to
other guests ("steal", the eighth figure of the ``cpu`` line of Linux's ``/proc/stat``).

On a virtual machine with two cores, a few per cent of steal is enough to put the p95 of a
5 ms round trip over 10 ms: a guest that is descheduled for a few milliseconds delays
whatever request is in flight, and the more time a request takes, the more often that
happens to it. The benchmarks print the steal of each measurement next to its figures so a
reader can tell a slow run from a slow machine. Elsewhere (no ``/proc/stat``) it is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

_PROC_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class CpuTimes:
    """The machine's CPU time so far, in clock ticks, over all cores."""

    total: int
    steal: int


def cpu_times() -> CpuTimes | None:
    try:
        line = _PROC_STAT.read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    label, *fields = line.split()
    if label != "cpu" or len(fields) < 8:
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
    ticks = [int(f) for f in fields[:8]]
    return CpuTimes(total=sum(ticks), steal=ticks[7])


#: Fewer clock ticks than this between two readings (half a second of one core at the usual
#: 100 ticks a second) say too little: one tick of steal would be several per cent.
MIN_TICKS = 50


def steal_percent(before: CpuTimes | None, after: CpuTimes | None) -> float | None:
    """The share of all CPU time between the two readings that was stolen, in per cent;
    None for a span too short to tell (:data:`MIN_TICKS`)."""
    if before is None or after is None or after.total - before.total < MIN_TICKS:
        return None
    return 100.0 * (after.steal - before.steal) / (after.total - before.total)


def fmt_steal(percent: float | None) -> str:
    return "—" if percent is None else f"{percent:.1f}%"
