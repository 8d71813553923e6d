"""Why a job waits, when it will start, and which change to its request would start it sooner.

All three come from the scheduler's own pass, run with `plan_ahead`: the queue is walked in priority order exactly as
the pass walks it, and every job that cannot start now is planned into the future, assuming running and planned jobs
run to their time limits and nothing new arrives. The job's estimated start is where that plan puts it. Each
suggestion is the same job with one field changed (fewer accelerators per node, fewer nodes, a shorter time limit,
another partition), re-prioritised and evaluated at its own place in the same walk, so the jobs ahead of it are
planned once for all of them.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter

from scheduler.admission import TRES_MINS_REASON, Cause, violations
from scheduler.core import DEFAULT_POLICY, START, Outcome, Planner, format_duration, paused_gc, queue_order
from scheduler.model import AssocLimits, AssocUsage, JobRequest, NodeView, RunningJob
from scheduler.policy import Policy
from scheduler.priority import Prioritizer, PriorityContext
from vocab.slurmtime import format_minutes
from vocab.states import Reason
from vocab.tres import ACCEL, NODE, format_memory

SOONER = 1.0  # seconds: a suggestion must win at least this much to be worth a change
MAX_NODE_PROBES = 12


@dataclass(frozen=True)
class Suggestion:
    message: str
    change: dict
    estimated_start: float | None


@dataclass
class Explanation:
    job_id: int
    reason: str  # what a pass would record now
    estimated_start: float | None
    causes: list[Cause] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    ahead: int = 0  # jobs ahead of it in the queue


@dataclass
class _Probe:
    kind: str  # "job", "accelerators_per_node", "nodes", "time_limit", "partition"
    job: JobRequest
    change: dict
    value: object = None
    outcome: Outcome | None = None

    @property
    def key(self) -> tuple:
        return (-self.job.priority, self.job.submitted_at, self.job.id)


def explain(
    nodes: list[NodeView],
    queue: Sequence[JobRequest],
    limits: dict[str, AssocLimits],
    usage: dict[str, AssocUsage],
    now: float,
    job_id: int,
    *,
    running: Sequence[RunningJob] = (),
    policy: Policy = DEFAULT_POLICY,
    ctx: PriorityContext | None = None,
    partitions: Sequence[str] = (),
) -> Explanation:
    """Explain pending job `job_id` of `queue`. `partitions`: other partitions it may be submitted to."""
    ordered = queue_order(queue)
    target = next((j for j in ordered if j.id == job_id), None)
    if target is None:
        raise ValueError(f"job {job_id} is not in the queue")
    nodes = [_copy(node) for node in nodes]  # the walk allocates on them; the caller's stay as they were
    prioritizer = Prioritizer(ctx, now, policy) if ctx is not None else None
    probes = _variants(target, prioritizer, partitions)
    head = _Probe("job", target, {})
    probes.append(head)
    probes.sort(key=lambda p: p.key)
    planner = Planner(nodes, limits, usage, now, running=running, policy=policy, plan_ahead=True)
    result = Explanation(job_id, Reason.NONE, None)
    walked = 0
    with paused_gc():
        for probe in list(probes):
            # Each probe is evaluated after exactly the jobs that sort before it (the target itself is not one).
            ahead = bisect.bisect_left(ordered, probe.key, lo=walked, key=attrgetter("order_key"))
            for job in ordered[walked:ahead]:
                if job.id != job_id:
                    planner.advance(job)
            walked = max(walked, ahead)
            _evaluate(planner, probe, target, result, probes)
    result.suggestions = _choose(head, probes, now)
    return result


def _copy(node: NodeView) -> NodeView:
    return NodeView(
        node.name,
        node.switch,
        node.partitions,
        node.accelerators,
        node.cpus,
        node.memory_mb,
        node.up,
        list(node.free_accelerators),
        node.free_cpus,
        node.free_memory_mb,
    )


def _evaluate(planner: Planner, probe: _Probe, target: JobRequest, result: Explanation, probes: list) -> None:
    probe.outcome = planner.evaluate(probe.job)
    if probe.kind != "job":
        return
    outcome = probe.outcome
    result.reason = Reason.NONE if outcome.kind == START else outcome.reason
    result.estimated_start = outcome.start
    result.ahead = sum(len(jobs) for jobs in planner.waiting.values()) + len(planner.decisions.starts)
    result.causes = causes(planner, target, outcome)
    # Shorter time limits keep the job's place in the queue: evaluate them here, against the same plan.
    for minutes, why in _time_limits(planner, target, outcome):
        variant = _Probe("time_limit", target.changed(time_limit=minutes), {"time_limit": format_minutes(minutes)})
        variant.value = (minutes, why)
        variant.job.priority = target.priority
        variant.outcome = planner.evaluate(variant.job)
        probes.append(variant)


def _variants(target: JobRequest, prioritizer: Prioritizer | None, partitions: Sequence[str]) -> list[_Probe]:
    probes = []

    def probe(kind: str, change: dict, value, **fields) -> None:
        job = target.changed(**fields)
        job.priority = prioritizer.priority(job) if prioritizer else target.priority
        probes.append(_Probe(kind, job, change, value))

    apn = target.accelerators_per_node
    for fewer in range(apn - 1, 0, -1):
        cpus = max(1, target.cpus_per_node * fewer // apn)
        memory = max(1, target.memory_per_node * fewer // apn)
        fields = {"accelerators_per_node": fewer, "cpus_per_node": cpus, "memory_per_node": memory}
        probe("accelerators_per_node", {**fields, "memory_per_node": format_memory(memory)}, fewer, **fields)
    for fewer in _node_counts(target.nodes):
        probe("nodes", {"nodes": fewer}, fewer, nodes=fewer)
    for name in partitions:
        if name != target.partition:
            probe("partition", {"partition": name}, name, partition=name)
    return probes


def _node_counts(nodes: int) -> list[int]:
    if nodes - 1 <= MAX_NODE_PROBES:
        return list(range(nodes - 1, 0, -1))
    picks = {nodes - 1, nodes * 3 // 4, nodes // 2, nodes // 4, nodes // 8, 1}
    picks.update(nodes - 1 - k * (nodes - 1) // MAX_NODE_PROBES for k in range(MAX_NODE_PROBES))
    return sorted((n for n in picks if 1 <= n < nodes), reverse=True)


def _time_limits(planner: Planner, job: JobRequest, outcome: Outcome) -> list[tuple[int, str]]:
    """Time limits worth trying: ending before a reservation (backfill), or within what is left of a budget."""
    if outcome.kind == START:
        return []
    minute = planner.policy.seconds_per_minute
    limits = []
    for held in planner.reservations:
        if held.job.id == job.id:
            continue
        minutes = math.floor((held.start - planner.now) / minute)
        if 1 <= minutes < job.time_limit:
            limits.append((minutes, f"it would end before job {held.job.id}'s reserved start (backfill)"))
    budget = _budget_minutes(planner, job)
    if budget is not None and 1 <= budget < job.time_limit:
        limits.append((budget, "it would fit what is left of the GrpTRESMins budget"))
    return sorted(set(limits), reverse=True)


def _budget_minutes(planner: Planner, job: JobRequest) -> int | None:
    best = None
    for cause in violations(job, planner.limits, planner.usage):
        if cause.code not in TRES_MINS_REASON.values():
            continue
        (name,) = cause.requested
        per_minute = job.tres.get(name, 0)
        left = (cause.limit[name] - cause.in_use[name]) // per_minute if per_minute else None
        if left is not None:
            best = left if best is None else min(best, left)
    return best


def _choose(head: _Probe, probes: list[_Probe], now: float) -> list[Suggestion]:
    base = head.outcome.start if head.outcome else None
    best: dict[str, _Probe] = {}
    for probe in probes:
        if probe.kind == "job" or probe.outcome is None or probe.outcome.start is None:
            continue
        if base is not None and probe.outcome.start > base - SOONER:
            continue
        current = best.get(probe.kind)
        if current is None or _rank(probe) < _rank(current):
            best[probe.kind] = probe
    chosen = sorted(best.values(), key=lambda p: (p.outcome.start, p.kind))
    return [Suggestion(_message(p, head.job, base, now), p.change, p.outcome.start) for p in chosen]


def _rank(probe: _Probe) -> tuple:
    # Earliest start first; among equal starts the smallest change (most accelerators, nodes or minutes kept).
    value = probe.value[0] if isinstance(probe.value, tuple) else probe.value
    keep = -value if isinstance(value, int) else value
    return (probe.outcome.start, keep)


def _message(probe: _Probe, job: JobRequest, base: float | None, now: float) -> str:
    when = _when(probe.outcome.start, now)
    instead = f"instead of {_when(base, now)}" if base is not None else "instead of not within the current plan"
    if probe.kind == "accelerators_per_node":
        what = f"ask for {probe.value} accelerators per node instead of {job.accelerators_per_node}"
        if probe.change["cpus_per_node"] != job.cpus_per_node:
            what += " (with cpus and memory scaled alike)"
    elif probe.kind == "nodes":
        what = f"ask for {probe.value} node{'s' if probe.value != 1 else ''} instead of {job.nodes}"
    elif probe.kind == "time_limit":
        minutes, why = probe.value
        what = f"lower the time limit to {format_minutes(minutes)} (from {format_minutes(job.time_limit)}): {why}"
    else:
        what = f"submit to partition {probe.value} instead of {job.partition}"
    return f"{what}; estimated start {when} {instead}"


def _when(at: float | None, now: float) -> str:
    if at is None:
        return "unknown"
    return "now" if at <= now + SOONER else f"in {format_duration(at - now)}"


# --- causes ----------------------------------------------------------------------------------------------------------


def causes(planner: Planner, job: JobRequest, outcome: Outcome) -> list[Cause]:
    """Every reason `job` cannot start now, with numbers: limits up the tree, resources, the queue ahead."""
    if outcome.kind == START:
        return []
    found = list(violations(job, planner.limits, planner.usage))
    pool, now = planner.pool, planner.now
    bound = planner.switch_limit(job, now)
    fits_now = pool.find(job, max_switches=bound) is not None
    if outcome.reason == Reason.NODE_DOWN:
        found.append(_not_in_service(planner, job))
    elif not fits_now:
        found.append(_resources(planner, job, bound))
    elif not found:
        found.extend(_held_for_reservations(planner, job))
    held = planner.reserved_in.get(job.partition)
    if held is not None and held.job.id != job.id and not any(c.code == Reason.PRIORITY for c in found):
        ahead = len(planner.waiting.get(job.partition, ()))
        more = ""
        if ahead > 1:
            more = f"; {ahead - 1} more job{'s' if ahead != 2 else ''} of higher priority wait behind it"
        found.append(
            Cause(
                Reason.PRIORITY,
                f"job {held.job.id} (priority {held.job.priority}, this job {job.priority}) is first in line for "
                f"partition {job.partition} and is reserved to start {_when(held.start, now)} on "
                f"{len(held.chosen)} node{'s' if len(held.chosen) != 1 else ''}{more}",
                requested={"priority": job.priority},
                in_use={"jobs_ahead": ahead},
            )
        )
    return found


def _resources(planner: Planner, job: JobRequest, bound: int | None) -> Cause:
    summary = planner.pool.summary(job)
    each = f"{job.accelerators_per_node} free accelerator{'s' if job.accelerators_per_node != 1 else ''}"
    text = (
        f"partition {job.partition} has {summary.free_accelerators} of {summary.accelerators} accelerators free; "
        f"{summary.eligible_nodes} of its {summary.nodes} nodes have {each} (and the cpus and memory); this job needs "
        f"{job.nodes} such node{'s' if job.nodes != 1 else ''}"
    )
    if bound is not None and summary.eligible_nodes >= job.nodes:
        until = job.eligible_at + planner.policy.switch_wait
        text += (
            f" on at most {bound} leaf switch{'es' if bound != 1 else ''} (the most on one switch is "
            f"{summary.best_switch}); it waits for that until {_when(until, planner.now)}, then accepts more switches"
        )
    in_use = {NODE: summary.nodes - summary.eligible_nodes, ACCEL: summary.accelerators - summary.free_accelerators}
    return Cause(
        Reason.RESOURCES,
        text,
        limit={NODE: summary.nodes, ACCEL: summary.accelerators},
        in_use=in_use,
        requested={NODE: job.nodes, ACCEL: job.tres[ACCEL]},
    )


def _not_in_service(planner: Planner, job: JobRequest) -> Cause:
    summary = planner.pool.summary(job)
    return Cause(
        Reason.NODE_DOWN,
        f"partition {job.partition} has {summary.nodes} nodes in service; even with all of them free this job "
        f"({job.nodes} nodes with {job.accelerators_per_node} accelerators each) could not start until more nodes "
        "are back",
        limit={NODE: summary.nodes},
        requested={NODE: job.nodes},
    )


def _held_for_reservations(planner: Planner, job: JobRequest) -> list[Cause]:
    """It fits on what is free now, yet the pass holds it: starting it would delay a reserved job."""
    end = planner.now + planner.policy.duration(job.time_limit)
    found = []
    for held in planner.reservations:
        if held.job.id == job.id:
            continue
        if not held.associations.isdisjoint(job.associations) and not planner.spares_reservations(job):
            found.append(
                Cause(
                    Reason.PRIORITY,
                    f"starting it now would leave job {held.job.id} (higher priority, reserved to start "
                    f"{_when(held.start, planner.now)}) short of the limits it shares with this job",
                )
            )
        elif held.start < end:
            minutes = math.floor((held.start - planner.now) / planner.policy.seconds_per_minute)
            fix = f"; with a time limit of at most {format_minutes(minutes)} it could start now" if minutes >= 1 else ""
            found.append(
                Cause(
                    Reason.PRIORITY,
                    f"it fits on free nodes now, but it would still be running when job {held.job.id} (higher "
                    f"priority) is reserved to start on nodes this job would need, {_when(held.start, planner.now)}"
                    f"{fix}",
                )
            )
    return found[:1] if found else [Cause(Reason.PRIORITY, "jobs of higher priority hold what it needs")]
