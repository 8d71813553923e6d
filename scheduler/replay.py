"""The scheduler on a virtual clock: passes run whenever something changes, jobs end at their actual run times.

Used by property tests (does backfill ever delay a reservation?) and benchmarks (placement quality over a workload);
a trace replay is the same loop fed from a file.

`Simulation` is the what-if replay: the same `Planner`, driven by one of scheduler.policies, with jobs ending at
their real run times, fair-share usage decayed as the live pass decays it, and the numbers of scheduler.metrics
collected on the way. Its state changes incrementally, so a pass costs what the live pass costs, not the history's.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from scheduler.admission import charge
from scheduler.core import Planner, paused_gc
from scheduler.metrics import JobRecord, Report, build_report
from scheduler.model import AssocLimits, AssocUsage, Decisions, JobRequest, NodeView, RunningJob
from scheduler.placement import Pool
from scheduler.policies import POLICIES, ReplayPolicy
from scheduler.policy import Policy
from scheduler.priority import Association, PriorityContext, UsageInterval, decay_usage, fairshare_factors
from vocab.tres import ACCEL, CPU


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


# --- what-if replay -------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Live:
    request: JobRequest  # as submitted: its real time limit ends it at the latest
    run: RunningJob  # as the core plans with it (a policy may plan with a predicted duration)
    end: float  # when it really ends
    planned: float  # seconds the core plans it to run
    switches: int
    ideal: int | None


def tree_of(requests: Iterable[JobRequest]) -> list[Association]:
    """Equal shares at every level, parents first, for a workload that brings no association tree."""
    tree: dict[str, Association] = {}
    for job in requests:
        parent = None
        for key in job.associations:
            if key not in tree:
                tree[key] = Association(key, parent, 1)
            parent = key
    return list(tree.values())


def violates(usage: AssocUsage, limit: AssocLimits) -> bool:
    over = any(usage.tres.get(name, 0) > cap for name, cap in limit.grp_tres.items())
    if limit.grp_jobs is not None and usage.jobs > limit.grp_jobs:
        return True
    for per_user in usage.tres_by_user.values():
        if any(per_user.get(name, 0) > cap for name, cap in limit.max_tres_per_user.items()):
            return True
    return over


def release(job: JobRequest, usage: dict[str, AssocUsage], ran_minutes: float) -> None:
    """Undo `charge` when a job ends; its TRES-minutes become what it really used instead of its time limit."""
    for key in job.associations:
        entry = usage[key]
        per_user = entry.tres_by_user[job.user]
        for name, value in job.tres.items():
            entry.tres[name] -= value
            per_user[name] -= value
            entry.tres_mins[name] += value * (ran_minutes - job.time_limit)
        entry.jobs -= 1


class Simulation:
    """One workload under one policy, from the first submission until nothing more can happen."""

    def __init__(
        self,
        nodes: Sequence[NodeView],
        requests: Sequence[JobRequest],
        runtimes: Mapping[int, float],
        *,
        replay_policy: ReplayPolicy,
        limits: Mapping[str, AssocLimits] | None = None,
        policy: Policy | None = None,
        tree: Sequence[Association] | None = None,
        partition_tier: Mapping[str, int] | None = None,
        keep_decisions: bool = False,
    ):
        self.nodes = [replace(n, free_accelerators=list(n.free_accelerators)) for n in nodes]
        self.by_name = {n.name: n for n in self.nodes}
        self.jobs = sorted(requests, key=lambda j: (j.submitted_at, j.id))
        self.runtimes = runtimes
        self.strategy = replay_policy
        self.limits = dict(limits or {})
        self.policy = policy or Policy()
        self.tree = list(tree) if tree is not None else tree_of(self.jobs)
        self.keep_decisions = keep_decisions
        self.decisions: list[tuple[float, Decisions]] = []
        self.now = self.jobs[0].submitted_at if self.jobs else 0.0
        self.passes = 0
        self.violations = 0
        self.records: dict[int, JobRecord] = {}
        self._next_arrival = 0
        self._pending: dict[int, JobRequest] = {}
        self._pending_apn: Counter[int] = Counter()
        self._running: dict[int, _Live] = {}
        self._ends: list[tuple[float, int]] = []
        self._usage: dict[str, AssocUsage] = {}
        self._free = {n.name: len(n.free_accelerators) if n.up else 0 for n in self.nodes}
        self._hist = Counter(self._free.values())
        self._reserved_at: list[float] = []
        self._planned: dict[int, JobRequest] = {}
        self._planned_ends: list[tuple[float, int]] = []  # jobs planned to end before they really do
        self._fairshare: dict[str, float] = {}
        self._fairshare_at: float | None = None
        self._rates: dict[tuple[str, ...], float] = {}
        self._ended: list[UsageInterval] = []
        self._frag_area = self._frag_time = self._busy_area = 0.0
        self._total = sum(n.accelerators for n in self.nodes if n.up)
        size: dict[str, list[int]] = {}
        for node in self.nodes:
            if node.up:
                for name in node.partitions:
                    counts = size.setdefault(name, [0, 0])
                    counts[0] += 1
                    counts[1] += node.accelerators
        tiers = dict(partition_tier or {name: 1 for name in size})
        self.context = PriorityContext(
            fairshare={}, partition_tier=tiers, partition_size={k: (v[0], v[1]) for k, v in size.items()}
        )

    # --- the loop ---------------------------------------------------------------------------------------------

    def run(self) -> dict[int, JobRecord]:
        with paused_gc():
            while True:
                self._finish_until(self.now)
                self._admit_until(self.now)
                if self._pending and self._could_start():
                    self.step()
                following = self._next_event()
                if following is None:
                    break
                self._sample_fragmentation(following - self.now)
                self.now = following
        for job in self._pending.values():
            self.records[job.id] = JobRecord(job.id, job.associations[0], job.submitted_at, None, None, 0, job.nodes)
        return self.records

    def pass_at(self, now: float) -> Decisions:
        """Move the clock to `now` (ends and arrivals up to then) and run one pass, whatever it can start."""
        self.now = now
        self._finish_until(now)
        self._admit_until(now)
        return self.step()

    def step(self) -> Decisions:
        """One pass at `now` over everything pending; starts what it starts."""
        now, strategy = self.now, self.strategy
        queue = list(self._pending.values())
        if strategy.uses_fairshare:
            self.context.fairshare = fairshare_factors(self.tree, self._decayed_usage(now))
        strategy.prioritize(queue, now, self.context, self.policy)
        planned = [self._as_planned(job, strategy.planned_minutes(job, now)) for job in queue]
        planner = strategy.planner_class(
            self.nodes, self.limits, self._usage, now, running=self._running_as_planned(), policy=self.policy
        )
        decisions = planner.run(planned)
        self.passes += 1
        by_id = {job.id: job for job in planned}
        for start in decisions.starts:
            self._start(by_id[start.job_id], start.allocation, len(start.switches), planner.pool)
        self._reserved_at = [r.start for r in decisions.reservations]
        if self.keep_decisions:
            self.decisions.append((now, decisions))
        return decisions

    def _as_planned(self, job: JobRequest, minutes: int) -> JobRequest:
        """The job as the core should plan it; copies are kept, a pass would otherwise make one per queued job."""
        if minutes == job.time_limit:
            return job
        copy = self._planned.get(job.id)
        if copy is None or copy.time_limit != minutes:
            copy = self._planned[job.id] = job.changed(time_limit=minutes)
        copy.priority = job.priority
        return copy

    def _running_as_planned(self) -> list[RunningJob]:
        overdue = self._planned_ends
        while overdue and overdue[0][0] <= self.now:
            _, job_id = heapq.heappop(overdue)
            live = self._running.get(job_id)
            if live is None or live.end <= self.now:
                continue
            # Ran past its prediction: plan it to run as long again, never past its limit.
            run = live.run
            run.ends_at = min(run.started_at + self.policy.duration(live.request.time_limit), self.now + live.planned)
            heapq.heappush(overdue, (run.ends_at, job_id))
        return [live.run for live in self._running.values()]

    def _could_start(self) -> bool:
        """A pass can start nothing while fewer accelerators are free than the smallest request: skip it (a pass
        keeps no state, so skipping one that starts nothing changes nothing)."""
        return sum(k * c for k, c in self._hist.items()) >= min(self._pending_apn)

    def _next_event(self) -> float | None:
        times = []
        if self._ends:
            times.append(self._ends[0][0])
        if self._next_arrival < len(self.jobs):
            times.append(self.jobs[self._next_arrival].submitted_at)
        times.extend(t for t in self._reserved_at if t > self.now)
        for job in self._pending.values():
            if job.topology_aware or job.max_switches:
                due = job.eligible_at + self.policy.switch_wait
                if due > self.now:
                    times.append(due)
        return min(times) if times else None

    # --- arrivals, starts and ends ----------------------------------------------------------------------------

    def _admit_until(self, now: float) -> None:
        jobs = self.jobs
        while self._next_arrival < len(jobs) and jobs[self._next_arrival].submitted_at <= now:
            job = jobs[self._next_arrival]
            self._next_arrival += 1
            self._pending[job.id] = job
            self._pending_apn[job.accelerators_per_node] += 1

    def _start(self, planned: JobRequest, allocation: dict, switches: int, pool: Pool) -> None:
        now = self.now
        request = self._pending.pop(planned.id)
        self._pending_apn[request.accelerators_per_node] -= 1
        if not self._pending_apn[request.accelerators_per_node]:
            del self._pending_apn[request.accelerators_per_node]
        limit = self.policy.duration(request.time_limit)
        run = RunningJob(planned, allocation, now + self.policy.duration(planned.time_limit), now)
        end = now + min(limit, max(0.0, self.runtimes.get(request.id, limit)))
        ideal = pool.ideal_switches(request) if request.nodes > 1 else 1
        self._running[request.id] = _Live(request, run, end, self.policy.duration(planned.time_limit), switches, ideal)
        heapq.heappush(self._ends, (end, request.id))
        self._planned.pop(request.id, None)
        if run.ends_at < end:
            heapq.heappush(self._planned_ends, (run.ends_at, request.id))
        for name, indices in allocation.items():
            self._move(name, -len(indices))
        charge(request, self._usage)
        for key in request.associations:
            limit_of = self.limits.get(key)
            if limit_of is not None and violates(self._usage[key], limit_of):
                self.violations += 1
        chain = request.associations
        self._rates[chain] = self._rates.get(chain, 0.0) + self._rate(request)

    def _finish_until(self, now: float) -> None:
        while self._ends and self._ends[0][0] <= now:
            end, job_id = heapq.heappop(self._ends)
            live = self._running.pop(job_id)
            request, run = live.request, live.run
            for name, indices in run.allocation.items():
                node = self.by_name[name]
                node.free_accelerators = sorted([*node.free_accelerators, *indices])
                node.free_cpus += request.cpus_per_node
                node.free_memory_mb += request.memory_per_node
                self._move(name, len(indices))
            ran = end - run.started_at
            release(request, self._usage, ran / self.policy.seconds_per_minute)
            chain = request.associations
            rate = self._rate(request)
            self._rates[chain] -= rate
            self._ended.append(UsageInterval(chain, rate, run.started_at, end))
            self.strategy.observe(request, ran)
            self.records[job_id] = JobRecord(
                job_id,
                chain[0],
                request.submitted_at,
                run.started_at,
                end,
                request.tres[ACCEL],
                request.nodes,
                live.switches,
                live.ideal,
            )

    def _move(self, name: str, delta: int) -> None:
        if not self.by_name[name].up:
            return
        old = self._free[name]
        self._hist[old] -= 1
        self._hist[old + delta] += 1
        self._free[name] = old + delta

    def _rate(self, job: JobRequest) -> float:
        return self.policy.billing_rate(job.tres[ACCEL], job.tres[CPU])

    # --- fair share and fragmentation -------------------------------------------------------------------------

    def _decayed_usage(self, now: float) -> dict[str, float]:
        """Usage decayed to `now`, as jobs.scheduling computes it: since the last pass, running jobs billed their
        rate and ended ones until their end (every running job started at a pass, so no later than the last)."""
        since = self._fairshare_at if self._fairshare_at is not None else now
        intervals = [UsageInterval(chain, rate, since, now) for chain, rate in self._rates.items() if rate > 0]
        intervals.extend(self._ended)
        self._fairshare = decay_usage(self._fairshare, since, now, intervals, self.policy.half_life)
        self._fairshare_at, self._ended = now, []
        return self._fairshare

    def _sample_fragmentation(self, span: float) -> None:
        """Free accelerators on nodes with fewer free than the smallest waiting request: capacity nobody waiting
        can use. Weighted by time, over the time jobs wait while something is free."""
        if not self._pending or span <= 0:
            return
        free = sum(k * c for k, c in self._hist.items())
        self._busy_area += span * (self._total - free) / self._total if self._total else 0.0
        self._frag_time += span
        if free:
            smallest = min(self._pending_apn)
            stranded = sum(k * c for k, c in self._hist.items() if k < smallest)
            self._frag_area += span * stranded / free

    @property
    def fragmentation(self) -> float:
        return self._frag_area / self._frag_time if self._frag_time else 0.0

    @property
    def busy_while_waiting(self) -> float:
        return self._busy_area / self._frag_time if self._frag_time else 0.0

    def report(self, *, labels: Mapping[str, str] | None = None, seconds: float = 0.0) -> Report:
        report = build_report(
            policy=self.strategy.name,
            title=self.strategy.title,
            records=list(self.records.values()),
            total_accelerators=sum(n.accelerators for n in self.nodes if n.up),
            fragmentation=self.fragmentation,
            quota_violations=self.violations,
            passes=self.passes,
            labels=labels,
        )
        report.seconds = seconds
        report.busy_while_waiting = self.busy_while_waiting
        return report


def simulate(
    nodes: Sequence[NodeView],
    requests: Sequence[JobRequest],
    runtimes: Mapping[int, float],
    policy_name: str,
    *,
    limits: Mapping[str, AssocLimits] | None = None,
    policy: Policy | None = None,
    tree: Sequence[Association] | None = None,
    partition_tier: Mapping[str, int] | None = None,
    labels: Mapping[str, str] | None = None,
) -> Report:
    """Replay `requests` under the named policy (scheduler.policies.POLICIES) and report; inputs are not changed."""
    started = time.process_time()
    sim = Simulation(
        nodes,
        [job.changed() for job in requests],
        runtimes,
        replay_policy=POLICIES[policy_name](),
        limits=limits,
        policy=policy,
        tree=tree,
        partition_tier=partition_tier,
    )
    sim.run()
    return sim.report(labels=labels, seconds=time.process_time() - started)
