"""The autoscaler on a virtual clock over a request trace: what would it have cost, and how fast were requests served?

Pure: no Django, no wall clock. The decision is inference.autoscaler.decide, the one the beat task runs.

The model of a service:

- A replica holds ``slots`` requests at once; each request takes ``service_time_s``. Its capacity is
  slots / service_time_s requests per second.
- The gateway sends each request, as it arrives, to the ready replica where it starts soonest (least outstanding
  work); a replica that is still starting gets nothing. Requests wait in their replica's queue (FIFO).
- Every ``tick_s`` the autoscaler sees the metric averaged over its stable and panic windows and decides. A new
  replica is ready ``cold_start_s`` after it is asked for (job start, model load); it holds its accelerators from the
  moment it is asked for. A replica scaled away finishes what it holds (drains), newest first.
- Replica-hours: from the request for a replica to the end of its drain (or the end of the trace). The baseline is a
  fixed fleet, always warm, provisioned for the peak: enough replicas for the busiest second of the trace at full
  capacity, ceil(peak req/s / capacity) (or ``fixed_replicas``). It does not depend on the autoscaler's settings,
  so savings compare across settings. A second baseline is the smallest fixed fleet that serves as large a share
  of requests within the SLO as the autoscaler did: what autoscaling saves at no cost in service.

A request is served within the SLO when it finishes no later than ``slo_s`` after it arrived.
"""

from __future__ import annotations

import csv
import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from inference.autoscaler import CONCURRENCY, QPS, Inputs, Policy, ScalerState, decide


@dataclass(frozen=True)
class ReplaySettings:
    min_replicas: int = 2
    max_replicas: int = 20
    metric: str = QPS
    target: float = 3.0  # metric per replica the autoscaler aims for
    service_time_s: float = 0.5  # one request on one slot
    slots: int = 2  # requests a replica serves at once
    cold_start_s: float = 30.0
    slo_s: float = 2.0
    tick_s: float = 2.0  # the beat task's period
    quota_replicas: int | None = None  # the most replicas the group's quota admits; None: no limit
    fixed_replicas: int | None = None  # the baseline fleet; None: provisioned for the trace's busiest second
    policy: Policy = field(default_factory=Policy)

    def __post_init__(self):
        problems = []
        if self.min_replicas < 1:
            problems.append("min_replicas must be at least 1 (the gateway needs a ready replica to route to)")
        if self.max_replicas < self.min_replicas:
            problems.append("max_replicas must be at least min_replicas")
        if self.metric not in (QPS, CONCURRENCY):
            problems.append(f"metric must be {QPS!r} or {CONCURRENCY!r}")
        if self.target <= 0 or self.service_time_s <= 0 or self.slots < 1 or self.tick_s <= 0 or self.slo_s <= 0:
            problems.append("target, service_time_s, slo_s and tick_s must be positive; slots at least 1")
        if self.cold_start_s < 0:
            problems.append("cold_start_s cannot be negative")
        if self.quota_replicas is not None and self.quota_replicas < self.min_replicas:
            problems.append("quota_replicas must admit at least min_replicas")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def capacity(self) -> float:
        """Requests per second one replica can serve."""
        return self.slots / self.service_time_s

    def describe(self) -> dict:
        data = asdict(self)
        data["capacity_rps"] = self.capacity
        return data


@dataclass(frozen=True)
class FleetResult:
    replica_hours: float
    peak_replicas: int
    within_slo: float  # share of requests served within the SLO
    p50_s: float
    p99_s: float


@dataclass(frozen=True)
class ReplayReport:
    settings: ReplaySettings
    requests: int
    duration_s: float
    peak_rps: int  # most requests in one second
    autoscaled: FleetResult
    fixed: FleetResult
    fixed_replicas: int
    equal_slo_replicas: int  # the smallest fixed fleet that serves as large a share within the SLO as the autoscaler
    equal_slo: FleetResult
    decisions: int  # decisions that changed the count
    panics: int  # times the autoscaler entered panic
    blocked: int  # decisions the quota capped
    timeline: tuple[tuple[float, int], ...] = ()  # (time, replicas) at each change of the autoscaled fleet

    @property
    def saving(self) -> float:
        """Replica-hours saved against the fixed fleet, as a share of the fixed fleet's."""
        if self.fixed.replica_hours == 0:
            return 0.0
        return 1 - self.autoscaled.replica_hours / self.fixed.replica_hours

    @property
    def saving_at_equal_slo(self) -> float:
        """Against the smallest fixed fleet that is as good on the SLO: the saving that costs no service quality."""
        if self.equal_slo.replica_hours == 0:
            return 0.0
        return 1 - self.autoscaled.replica_hours / self.equal_slo.replica_hours

    def as_dict(self) -> dict:
        return {
            "settings": self.settings.describe(),
            "requests": self.requests,
            "duration_s": round(self.duration_s, 1),
            "peak_rps": self.peak_rps,
            "autoscaled": asdict(self.autoscaled),
            "fixed": asdict(self.fixed),
            "fixed_replicas": self.fixed_replicas,
            "saving": round(self.saving, 4),
            "equal_slo_replicas": self.equal_slo_replicas,
            "equal_slo": asdict(self.equal_slo),
            "saving_at_equal_slo": round(self.saving_at_equal_slo, 4),
            "decisions": self.decisions,
            "panics": self.panics,
            "blocked": self.blocked,
        }


# --- the fleet ---------------------------------------------------------------------------------------------------


@dataclass
class _Replica:
    asked_at: float
    ready_at: float
    slots: list[float]  # heap of the times each slot is free
    removed_at: float | None = None

    def start_time(self, t: float) -> float:
        return max(t, self.ready_at, self.slots[0])

    def busy_until(self) -> float:
        return max(self.slots)


class _Fleet:
    def __init__(self, count: int, slots: int):
        self.slots = slots
        self.live: list[_Replica] = [self._replica(0.0, 0.0) for _ in range(count)]
        self.gone: list[_Replica] = []

    def _replica(self, asked_at: float, ready_at: float) -> _Replica:
        return _Replica(asked_at=asked_at, ready_at=ready_at, slots=[0.0] * self.slots)

    def ready(self, now: float) -> int:
        return sum(1 for r in self.live if r.ready_at <= now)

    def resize(self, desired: int, now: float, cold_start_s: float) -> None:
        while len(self.live) < desired:
            self.live.append(self._replica(now, now + cold_start_s))
        # Newest first: a replica still starting goes before one that serves.
        while len(self.live) > desired:
            replica = self.live.pop()
            replica.removed_at = now
            self.gone.append(replica)

    def serve(self, t: float, service_time_s: float) -> float:
        """Send one request arriving at `t` where it starts soonest among ready replicas; returns its finish time."""
        ready = [r for r in self.live if r.ready_at <= t] or self.live
        replica = min(ready, key=lambda r: r.start_time(t))
        start = replica.start_time(t)
        finish = start + service_time_s
        heapq.heapreplace(replica.slots, finish)
        return finish

    def replica_seconds(self, end: float) -> float:
        total = 0.0
        for replica in self.live + self.gone:
            until = end if replica.removed_at is None else min(end, max(replica.removed_at, replica.busy_until()))
            total += max(0.0, until - replica.asked_at)
        return total


class _Metric:
    """Per-second sums of the metric, so each window's average is a difference of prefix sums."""

    def __init__(self, seconds: int):
        self.per_second = [0.0] * (seconds + 2)

    def add_arrival(self, t: float) -> None:
        self.per_second[min(int(t), len(self.per_second) - 1)] += 1

    def add_in_flight(self, start: float, end: float) -> None:
        """A request in flight from `start` to `end` adds its share of each second to that second's concurrency."""
        second = int(start)
        while second < end and second < len(self.per_second):
            overlap = min(end, second + 1) - max(start, second)
            self.per_second[second] += max(0.0, overlap)
            second += 1

    def average(self, now: float, window_s: float) -> float:
        # Only whole seconds that have passed: the gateway flushes a second once it is over.
        end = min(int(now), len(self.per_second))
        begin = max(0, end - int(window_s))
        if end <= begin:
            return 0.0
        return sum(self.per_second[begin:end]) / window_s


# --- the replay --------------------------------------------------------------------------------------------------


def replay(arrivals: Sequence[float], settings: ReplaySettings) -> ReplayReport:
    """Replay `arrivals` (seconds from the start, sorted) with the autoscaler, then with the fixed fleet."""
    if not arrivals:
        raise ValueError("the trace has no requests")
    times = sorted(arrivals)
    base = times[0]
    times = [t - base for t in times]
    auto_latencies, fleet, stats, end = _autoscaled(times, settings)
    peak = max(stats["peak"], settings.min_replicas)
    fixed_count = settings.fixed_replicas or max(
        settings.min_replicas, math.ceil(_peak_per_second(times) / settings.capacity)
    )
    fixed_latencies, fixed_fleet, fixed_end = _fixed(times, settings, fixed_count)
    horizon = max(end, fixed_end)
    autoscaled = _result(auto_latencies, fleet.replica_seconds(horizon), peak, settings.slo_s)
    equal_count, equal = _smallest_fixed_fleet(times, settings, autoscaled.within_slo, max(peak, fixed_count))
    horizon = max(horizon, equal[2])
    return ReplayReport(
        settings=settings,
        requests=len(times),
        duration_s=horizon,
        peak_rps=_peak_per_second(times),
        autoscaled=_result(auto_latencies, fleet.replica_seconds(horizon), peak, settings.slo_s),
        fixed=_result(fixed_latencies, fixed_fleet.replica_seconds(horizon), fixed_count, settings.slo_s),
        fixed_replicas=fixed_count,
        equal_slo_replicas=equal_count,
        equal_slo=_result(equal[0], equal[1].replica_seconds(horizon), equal_count, settings.slo_s),
        decisions=stats["changes"],
        panics=stats["panics"],
        blocked=stats["blocked"],
        timeline=tuple(stats["timeline"]),
    )


def _autoscaled(times: list[float], settings: ReplaySettings):
    fleet = _Fleet(settings.min_replicas, settings.slots)
    metric = _Metric(int(times[-1]) + 1)
    state = ScalerState()
    stats = {"peak": settings.min_replicas, "changes": 0, "panics": 0, "blocked": 0, "timeline": []}
    latencies: list[float] = []
    next_tick = settings.tick_s
    last_finish = 0.0
    for t in times:
        while next_tick <= t:
            state = _tick(fleet, metric, state, next_tick, settings, stats)
            next_tick += settings.tick_s
        finish = fleet.serve(t, settings.service_time_s)
        if settings.metric == QPS:
            metric.add_arrival(t)
        else:
            metric.add_in_flight(t, finish)
        latencies.append(finish - t)
        last_finish = max(last_finish, finish)
    return latencies, fleet, stats, last_finish


def _tick(
    fleet: _Fleet, metric: _Metric, state: ScalerState, now: float, settings: ReplaySettings, stats
) -> ScalerState:
    current = len(fleet.live)
    headroom = 10**6 if settings.quota_replicas is None else max(0, settings.quota_replicas - current)
    policy = settings.policy
    decision = decide(
        Inputs(
            now=now,
            min_replicas=settings.min_replicas,
            max_replicas=settings.max_replicas,
            target=settings.target,
            current=current,
            ready=fleet.ready(now),
            stable_value=metric.average(now, policy.stable_window_s),
            panic_value=metric.average(now, policy.panic_window_s),
            quota_headroom=headroom,
            quota_message=f"the replay's quota admits {settings.quota_replicas} replicas",
            metric=settings.metric,
        ),
        state,
        policy,
    )
    if decision.panic and state.panic_since is None:
        stats["panics"] += 1
    if decision.blocked_by_quota:
        stats["blocked"] += 1
    if decision.desired != current:
        stats["changes"] += 1
        fleet.resize(decision.desired, now, settings.cold_start_s)
        stats["timeline"].append((now, decision.desired))
        stats["peak"] = max(stats["peak"], decision.desired)
    return decision.state


def _fixed(times: list[float], settings: ReplaySettings, count: int):
    fleet = _Fleet(count, settings.slots)
    latencies = []
    last_finish = 0.0
    for t in times:
        finish = fleet.serve(t, settings.service_time_s)
        latencies.append(finish - t)
        last_finish = max(last_finish, finish)
    return latencies, fleet, last_finish


def _smallest_fixed_fleet(times: list[float], settings: ReplaySettings, share: float, upper: int):
    """Bisect on the fleet size: a larger fixed fleet never serves a smaller share within the SLO."""
    low, high = 1, upper
    best = _fixed(times, settings, high)
    while low < high:
        middle = (low + high) // 2
        run = _fixed(times, settings, middle)
        if _share_within(run[0], settings.slo_s) >= share:
            high, best = middle, run
        else:
            low = middle + 1
    return high, best


def _share_within(latencies: list[float], slo_s: float) -> float:
    return round(sum(1 for x in latencies if x <= slo_s + 1e-9) / len(latencies), 4)


def _result(latencies: list[float], replica_seconds: float, peak: int, slo_s: float) -> FleetResult:
    ordered = sorted(latencies)
    return FleetResult(
        replica_hours=round(replica_seconds / 3600, 3),
        peak_replicas=peak,
        within_slo=_share_within(ordered, slo_s),
        p50_s=round(_quantile(ordered, 0.50), 3),
        p99_s=round(_quantile(ordered, 0.99), 3),
    )


def _quantile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _peak_per_second(times: Iterable[float]) -> int:
    counts: dict[int, int] = {}
    for t in times:
        counts[int(t)] = counts.get(int(t), 0) + 1
    return max(counts.values(), default=0)


# --- traces ------------------------------------------------------------------------------------------------------

TIME_COLUMNS = ("timestamp", "time", "ts", "arrival", "arrival_time", "start_time")


def load_arrivals(path: str | Path, column: str | None = None) -> list[float]:
    """Arrival times in seconds from a CSV: the Azure LLM trace's TIMESTAMP, or any column of seconds or datetimes.

    The column is `column`, else the first whose header is a usual name for a time, else the first. A file without
    a header (its first cell is a number) is read as seconds in the first column.
    """
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    rows = [row for row in rows if row and any(cell.strip() for cell in row)]
    if not rows:
        raise ValueError(f"{path}: no rows")
    index, data = _time_column(rows, column, path)
    values = []
    for line, row in enumerate(data, start=2 if data is not rows else 1):
        if index >= len(row):
            raise ValueError(f"{path}:{line}: no column {index + 1}")
        values.append(_seconds(row[index].strip(), f"{path}:{line}"))
    return sorted(values)


def _time_column(rows: list[list[str]], column: str | None, path) -> tuple[int, list[list[str]]]:
    header = [cell.strip() for cell in rows[0]]
    if _is_number(header[0]) and column is None:
        return 0, rows
    names = [cell.lower() for cell in header]
    if column is not None:
        if column.lower() not in names:
            raise ValueError(f"{path}: no column {column!r}; the columns are {', '.join(header)}")
        return names.index(column.lower()), rows[1:]
    for name in TIME_COLUMNS:
        if name in names:
            return names.index(name), rows[1:]
    return 0, rows[1:]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _seconds(text: str, where: str) -> float:
    if _is_number(text):
        value = float(text)
        if math.isfinite(value):
            return value
    try:
        # The Azure trace writes seven fractional digits; datetime takes at most six.
        head, dot, fraction = text.partition(".")
        cleaned = f"{head}.{fraction[:6]}" if dot else head
        moment = datetime.fromisoformat(cleaned)
    except ValueError:
        raise ValueError(f"{where}: {text!r} is neither seconds nor a date and time") from None
    # A trace without a zone is read as UTC: local time would put an hour's hole or overlap in at a DST change.
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def format_report(report: ReplayReport) -> str:
    """The figures a person reads: the saving against the fixed fleet, and the SLO share of each."""
    s = report.settings
    auto, fixed, equal = report.autoscaled, report.fixed, report.equal_slo
    lines = [
        f"trace: {report.requests} requests over {report.duration_s / 60:.1f} min, peak {report.peak_rps} req/s",
        f"replicas: min {s.min_replicas}, max {s.max_replicas}, target {s.target:g} {s.metric} per replica,"
        f" capacity {s.capacity:g} req/s ({s.slots} x {s.service_time_s:g} s), cold start {s.cold_start_s:g} s,"
        f" decision every {s.tick_s:g} s, windows {s.policy.stable_window_s:g} s / {s.policy.panic_window_s:g} s",
        f"SLO: a request finishes within {s.slo_s:g} s of its arrival",
        "",
        f"{'fleet':<32}{'replica-hours':>14}{'peak':>6}{'within SLO':>12}{'p50 s':>8}{'p99 s':>9}",
        _row("autoscaled", auto),
        _row(f"fixed at the peak ({report.fixed_replicas})", fixed),
        _row(f"fixed, as good on SLO ({report.equal_slo_replicas})", equal),
        "",
        f"saved against fixed at the peak: {report.saving:.1%}",
        f"saved against the fixed fleet that is as good on the SLO: {report.saving_at_equal_slo:.1%}",
        f"scaling decisions: {report.decisions}, panics: {report.panics}, capped by quota: {report.blocked}",
    ]
    return "\n".join(lines)


def _row(name: str, fleet: FleetResult) -> str:
    return (
        f"{name:<32}{fleet.replica_hours:>14.2f}{fleet.peak_replicas:>6}{fleet.within_slo:>12.2%}"
        f"{fleet.p50_s:>8.2f}{fleet.p99_s:>9.2f}"
    )
