"""The pure arithmetic of monitoring: counters to rates, SDK step records to shares, samples to rollups. No ORM.

Everything here takes plain values and returns plain values, so it replays on a virtual clock and is unit-tested
without a database or processes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace

MIN_INTERVAL_S = 0.5  # two readings closer than this give rates that are mostly rounding noise


@dataclass(frozen=True)
class Previous:
    """What a rate is computed against: the task's last reading (or the job's start, with nothing used yet)."""

    at: float
    cpu_seconds: float | None = 0.0
    swap_bytes: int | None = 0


@dataclass(frozen=True)
class Point:
    """One task over one slot, as stored (MetricSample's measured fields)."""

    rank: int
    at: float
    node: str = ""
    cpu_seconds: float | None = None
    cpu_cores: float | None = None
    utilisation: float | None = None
    accel_util: float | None = None
    accel_memory_bytes: int | None = None
    rss_bytes: int | None = None
    swap_bytes: int | None = None
    swap_rate: float | None = None
    major_faults: int | None = None
    step_time_s: float | None = None
    comm_share: float | None = None
    compute_share: float | None = None
    data_share: float | None = None
    throughput: float | None = None
    steps: int | None = None
    extra: dict = field(default_factory=dict, compare=False)


def derive(usage, previous: Previous | None, *, accelerators: int) -> Point:
    """A Point from a backend reading (cluster.backends.base.TaskUsage) and the task's previous reading.

    Utilisation is the accelerators' own (NVML, Slurm gres) where the backend measures it; otherwise busy CPU cores
    per allocated accelerator, capped at 1: the local backend's stand-in, where one process drives one accelerator.
    """
    cpu_cores = swap_rate = None
    if previous is not None and usage.at - previous.at >= MIN_INTERVAL_S:
        elapsed = usage.at - previous.at
        if usage.cpu_seconds is not None and previous.cpu_seconds is not None:
            cpu_cores = max(0.0, usage.cpu_seconds - previous.cpu_seconds) / elapsed
        if usage.swap_bytes is not None and previous.swap_bytes is not None:
            swap_rate = max(0, usage.swap_bytes - previous.swap_bytes) / elapsed
    utilisation = usage.accel_util
    if utilisation is None and cpu_cores is not None:
        utilisation = min(1.0, cpu_cores / max(1, accelerators))
    return Point(
        rank=usage.rank,
        at=usage.at,
        node=usage.node,
        cpu_seconds=usage.cpu_seconds,
        cpu_cores=cpu_cores,
        utilisation=utilisation,
        accel_util=usage.accel_util,
        accel_memory_bytes=usage.accel_memory_bytes,
        rss_bytes=usage.rss_bytes,
        swap_bytes=usage.swap_bytes,
        swap_rate=swap_rate,
        major_faults=usage.major_faults,
    )


def _number(record: dict, name: str) -> float | None:
    value = record.get(name)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else None


def step_summary(records: Iterable[dict]) -> dict:
    """Shares of step time (communication, compute, data wait), mean step time and throughput of SDK step records.

    Shares are time-weighted (sum of parts / sum of step times), so one slow step counts for what it cost.
    """
    steps = [r for r in records if (_number(r, "step_time_s") or 0) > 0]
    if not steps:
        return {}
    total = sum(_number(r, "step_time_s") for r in steps)

    def share(name: str) -> float | None:
        parts = [_number(r, name) for r in steps]
        known = [p for p in parts if p is not None]
        return min(1.0, sum(known) / total) if known else None

    rates = [x for x in (_number(r, "samples_per_s") for r in steps) if x is not None]
    return {
        "step_time_s": total / len(steps),
        "comm_share": share("comm_time_s"),
        "compute_share": share("compute_time_s"),
        "data_share": share("data_time_s"),
        "throughput": sum(rates) / len(rates) if rates else None,
        "steps": len(steps),
    }


MEAN_FIELDS = (
    "cpu_cores", "utilisation", "accel_util", "swap_rate", "step_time_s", "comm_share", "compute_share", "data_share",
    "throughput",
)  # fmt: skip
MAX_FIELDS = ("accel_memory_bytes", "rss_bytes", "swap_bytes")
LAST_FIELDS = ("cpu_seconds", "major_faults", "node")


def rollup(points: Iterable[Point], seconds: int) -> list[Point]:
    """One Point per (rank, slot of `seconds`): means of rates, peaks of memory, the last of counters, steps summed.

    The rolled-up point is stamped with its slot's start.
    """
    buckets: dict[tuple[int, int], list[Point]] = defaultdict(list)
    for point in points:
        buckets[(point.rank, int(point.at // seconds))].append(point)
    rolled = []
    for (rank, slot), group in sorted(buckets.items()):
        group.sort(key=lambda p: p.at)
        values: dict = {}
        for name in MEAN_FIELDS:
            known = [getattr(p, name) for p in group if getattr(p, name) is not None]
            values[name] = sum(known) / len(known) if known else None
        for name in MAX_FIELDS:
            known = [getattr(p, name) for p in group if getattr(p, name) is not None]
            values[name] = max(known) if known else None
        for name in LAST_FIELDS:
            values[name] = next((getattr(p, name) for p in reversed(group) if getattr(p, name) is not None), None)
        steps = [p.steps for p in group if p.steps is not None]
        values["steps"] = sum(steps) if steps else None
        rolled.append(Point(rank=rank, at=float(slot * seconds), **values))
    return rolled


def with_steps(point: Point, summary: dict) -> Point:
    return replace(point, **summary) if summary else point


def slot_means(points: Iterable[Point], seconds: float) -> list[tuple[float, float]]:
    """(slot time, mean utilisation over ranks) for slots with a measured utilisation, oldest first: the job-level
    series that idle detection looks at."""
    slots: dict[int, list[float]] = defaultdict(list)
    for point in points:
        if point.utilisation is not None:
            slots[int(point.at // seconds)].append(point.utilisation)
    return [(slot * seconds, sum(values) / len(values)) for slot, values in sorted(slots.items())]


POINT_FIELDS = tuple(f.name for f in fields(Point) if f.name not in ("rank", "at", "extra"))
