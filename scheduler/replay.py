"""The scheduler on a virtual clock: passes run whenever something changes, jobs end at their actual run times.

Used by property tests (does backfill ever delay a reservation?) and benchmarks (placement quality over a workload);
a trace replay is the same loop fed from a file.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field

from scheduler.admission import charge
from scheduler.core import Planner
from scheduler.model import AssocLimits, AssocUsage, Decisions, JobRequest, NodeView, RunningJob
from scheduler.placement import Pool
from scheduler.policy import Policy


@dataclass
class Pass:
    at: float
    decisions: Decisions
    pending: list[JobRequest]  # the queue the pass saw, in its order


@dataclass
class Replay:
    nodes: list[NodeView]  # live: passes take resources from them, ends give them back
    limits: dict[str, AssocLimits] = field(default_factory=dict)
    policy: Policy = field(default_factory=Policy)
    now: float = 0.0
    pool_class: type[Pool] = Pool  # how nodes are chosen (benchmarks compare against a first-fit baseline)
    running: dict[int, tuple[RunningJob, float]] = field(default_factory=dict)  # id → (job, actual end)
    started: dict[int, float] = field(default_factory=dict)
    consumed: dict[str, dict[str, float]] = field(default_factory=dict)
    passes: list[Pass] = field(default_factory=list)
    _arrivals: list[tuple[float, int, JobRequest]] = field(default_factory=list)
    _pending: dict[int, JobRequest] = field(default_factory=dict)
    _runtime: dict[int, float] = field(default_factory=dict)
    _by_name: dict[str, NodeView] = field(default_factory=dict)

    def submit(self, jobs: Iterable[JobRequest], runtimes: dict[int, float] | None = None) -> None:
        """Queue jobs at their `submitted_at`; each runs `runtimes[id]` seconds (default: its whole time limit)."""
        for job in jobs:
            heapq.heappush(self._arrivals, (job.submitted_at, job.id, job))
            limit = self.policy.duration(job.time_limit)
            self._runtime[job.id] = min(limit, (runtimes or {}).get(job.id, limit))

    @property
    def pending(self) -> list[JobRequest]:
        return list(self._pending.values())

    def usage(self) -> dict[str, AssocUsage]:
        usage: dict[str, AssocUsage] = {}
        for run, _ in self.running.values():
            charge(run.job, usage)
        for key, minutes in self.consumed.items():
            totals = usage.setdefault(key, AssocUsage()).tres_mins
            for name, value in minutes.items():
                totals[name] = totals.get(name, 0) + value
        return usage

    def step(self) -> Decisions:
        """Admit arrivals, run one pass at `now`, start what it starts."""
        while self._arrivals and self._arrivals[0][0] <= self.now:
            _, _, job = heapq.heappop(self._arrivals)
            self._pending[job.id] = job
        queue = list(self._pending.values())
        running = [run for run, _ in self.running.values()]
        planner = Planner(
            self.nodes,
            self.limits,
            self.usage(),
            self.now,
            running=running,
            policy=self.policy,
            pool_class=self.pool_class,
        )
        decisions = planner.run(queue)
        for start in decisions.starts:
            job = self._pending.pop(start.job_id)
            end = self.now + self.policy.duration(job.time_limit)
            run = RunningJob(job, start.allocation, end, self.now)
            self.running[job.id] = (run, self.now + self._runtime[job.id])
            self.started[job.id] = self.now
        self.passes.append(Pass(self.now, decisions, sorted(queue, key=lambda j: j.order_key)))
        return decisions

    def advance(self) -> bool:
        """Move the clock to the next event (an end, an arrival, a reservation or switch wait falling due)."""
        times = [end for _, end in self.running.values()]
        if self._arrivals:
            times.append(self._arrivals[0][0])
        if self.passes:
            times.extend(r.start for r in self.passes[-1].decisions.reservations)
        for job in self._pending.values():
            if job.topology_aware or job.max_switches:
                times.append(job.eligible_at + self.policy.switch_wait)
        future = [t for t in times if t > self.now]
        if not future:
            return False
        self.now = min(future)
        for job_id, (run, end) in list(self.running.items()):
            if end <= self.now:
                self._finish(run, end)
                del self.running[job_id]
        return True

    def _finish(self, run: RunningJob, end: float) -> None:
        by_name = self._by_name or {n.name: n for n in self.nodes}
        self._by_name = by_name
        for name, indices in run.allocation.items():
            node = by_name[name]
            node.free_accelerators = sorted([*node.free_accelerators, *indices])
            node.free_cpus += run.job.cpus_per_node
            node.free_memory_mb += run.job.memory_per_node
        minutes = (end - (run.started_at or 0.0)) / self.policy.seconds_per_minute
        for key in run.job.associations:
            totals = self.consumed.setdefault(key, {})
            for name, value in run.job.tres.items():
                totals[name] = totals.get(name, 0.0) + value * minutes

    def run(self, max_passes: int = 100_000) -> None:
        for _ in range(max_passes):
            self.step()
            if not self.advance():
                return
