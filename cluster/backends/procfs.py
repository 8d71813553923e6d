"""What the local backend measures of a task's processes, read from /proc. Pure stdlib, no Django.

The /proc root is a parameter so that tests can hand in a fake tree: the machine that runs the tests may have no swap
at all, and swapping must still be tested honestly through the same parsing code.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class ProcessCounters:
    cpu_seconds: float  # own CPU time plus that of children it has waited for (so short-lived helpers count)
    major_faults: int
    rss_bytes: int
    swap_bytes: int


@dataclass(frozen=True)
class TaskCounters:
    cpu_seconds: float
    major_faults: int
    rss_bytes: int
    swap_bytes: int
    processes: int


class ProcFS:
    def __init__(self, root: str | Path = "/proc", clock_ticks: int = CLOCK_TICKS) -> None:
        self.root = Path(root)
        self.clock_ticks = clock_ticks

    def counters(self, pid: int) -> ProcessCounters | None:
        """One process's counters, or None if it is gone (it may exit between the scan and the read)."""
        try:
            stat = (self.root / str(pid) / "stat").read_bytes()
            status = (self.root / str(pid) / "status").read_text()
        except OSError:
            return None
        fields = stat[stat.rindex(b")") + 2 :].split()
        # Fields after the command name, counted from `state` (field 3 of proc(5)): majflt 12, cmajflt 13, utime 14,
        # stime 15, cutime 16, cstime 17.
        ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
        faults = int(fields[9]) + int(fields[10])
        memory = _status_kib(status)
        return ProcessCounters(
            cpu_seconds=ticks / self.clock_ticks,
            major_faults=faults,
            rss_bytes=memory.get("VmRSS", 0) * 1024,
            swap_bytes=memory.get("VmSwap", 0) * 1024,
        )

    def task_counters(self, pids: list[int]) -> TaskCounters:
        readings = [c for c in (self.counters(pid) for pid in pids) if c is not None]
        return TaskCounters(
            cpu_seconds=sum(c.cpu_seconds for c in readings),
            major_faults=sum(c.major_faults for c in readings),
            rss_bytes=sum(c.rss_bytes for c in readings),
            swap_bytes=sum(c.swap_bytes for c in readings),
            processes=len(readings),
        )


def _status_kib(text: str) -> dict[str, int]:
    values = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmSwap"):
            parts = rest.split()
            if parts and parts[0].isdigit():
                values[name] = int(parts[0])
    return values


def tail_records(path: Path, *, since: float, limit_bytes: int) -> list[dict]:
    """JSON-lines records with ``time`` after `since`, from the last `limit_bytes` of the file (a partial first line
    and lines that are not JSON objects are skipped: the writer may be mid-line)."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            start = max(0, size - limit_bytes)
            handle.seek(start)
            data = handle.read(limit_bytes)
    except OSError:
        return []
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("time"), int | float) and record["time"] > since:
            records.append(record)
    return records
