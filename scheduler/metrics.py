"""What a replay is judged by, from the record of every job. Pure arithmetic on plain data."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True, slots=True)
class JobRecord:
    id: int
    tenant: str
    submitted: float
    started: float | None  # None: never started (it could never fit, or the replay ended first)
    ended: float | None
    accelerators: int
    nodes: int
    switches: int = 0
    ideal_switches: int | None = None

    @property
    def wait(self) -> float:
        return (self.started or 0.0) - self.submitted

    @property
    def jct(self) -> float:
        return (self.ended or 0.0) - self.submitted

    @property
    def runtime(self) -> float:
        return (self.ended or 0.0) - (self.started or 0.0)


@dataclass
class Summary:
    mean: float
    median: float
    p99: float


@dataclass
class Report:
    policy: str
    title: str
    jobs: int
    never_started: int
    jct: Summary
    wait: Summary
    utilisation: float  # accelerator-seconds used / (accelerators x makespan)
    makespan: float
    fragmentation: float  # time-weighted share of free accelerators no waiting job can use (while jobs wait)
    multi_node_jobs: int
    switch_span: float  # mean leaf switches per multi-node job
    on_fewest_switches: float  # share of multi-node jobs on the fewest switches that could hold them
    tenant_wait: dict[str, float]
    jain_fairness: float  # Jain's index over tenants' mean slowdown
    quota_violations: int
    passes: int
    seconds: float = 0.0  # CPU time the replay took
    busy_while_waiting: float = 0.0  # time-weighted share of accelerators allocated while jobs wait
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: a value that occurred."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100.0 * len(ordered)) - 1)]


def summarize(values: Sequence[float]) -> Summary:
    if not values:
        return Summary(0.0, 0.0, 0.0)
    return Summary(statistics.fmean(values), statistics.median(values), percentile(values, 99))


def slowdown(record: JobRecord, floor: float = 60.0) -> float:
    """JCT over run time (bounded below: a 1-second job waiting a minute is not 60 times worse off)."""
    return record.jct / max(record.runtime, floor)


def jain(values: Sequence[float]) -> float:
    """(sum x)^2 / (n sum x^2): 1 when all are equal, 1/n when one takes all."""
    square = sum(v * v for v in values)
    if not values or square == 0:
        return 1.0
    return sum(values) ** 2 / (len(values) * square)


def build_report(
    *,
    policy: str,
    title: str,
    records: Sequence[JobRecord],
    total_accelerators: int,
    fragmentation: float,
    quota_violations: int,
    passes: int,
    labels: Mapping[str, str] | None = None,
) -> Report:
    done = [r for r in records if r.ended is not None]
    first = min((r.submitted for r in records), default=0.0)
    last = max((r.ended for r in done), default=first)
    makespan = last - first
    busy = sum(r.accelerators * r.runtime for r in done)
    multi = [r for r in done if r.nodes > 1]
    by_tenant: dict[str, list[JobRecord]] = {}
    for record in done:
        by_tenant.setdefault(record.tenant, []).append(record)
    labels = labels or {}
    return Report(
        policy=policy,
        title=title,
        jobs=len(records),
        never_started=sum(1 for r in records if r.started is None),
        jct=summarize([r.jct for r in done]),
        wait=summarize([r.wait for r in done]),
        utilisation=busy / (total_accelerators * makespan) if total_accelerators and makespan > 0 else 0.0,
        makespan=makespan,
        fragmentation=fragmentation,
        multi_node_jobs=len(multi),
        switch_span=statistics.fmean([r.switches for r in multi]) if multi else 0.0,
        on_fewest_switches=(
            sum(1 for r in multi if r.ideal_switches and r.switches <= r.ideal_switches) / len(multi) if multi else 1.0
        ),
        tenant_wait={
            labels.get(t, t.removeprefix("tenant:")): statistics.fmean(r.wait for r in rs)
            for t, rs in sorted(by_tenant.items())
        },
        jain_fairness=jain([statistics.fmean(slowdown(r) for r in rs) for rs in by_tenant.values()]),
        quota_violations=quota_violations,
        passes=passes,
    )
