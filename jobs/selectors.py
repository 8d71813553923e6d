"""Read helpers over jobs (style.md §2): usage of groups and users against their limits, and node allocations.

Each function answers for many groups or nodes with a fixed number of queries, so list endpoints and pages never
issue one query per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import Count, DurationField, ExpressionWrapper, F, Sum

from jobs.models import Job
from tenants.models import Group
from vocab.states import ACTIVE_STATES, JobState, Reason
from vocab.tres import ACCEL, CPU, KNOWN_TRES, MEM, NODE


def _zero_tres() -> dict[str, int]:
    return dict.fromkeys(KNOWN_TRES, 0)


@dataclass
class Usage:
    """What is charged to an association now: TRES and job counts, running and pending, and TRES-minutes spent."""

    running_tres: dict[str, int] = field(default_factory=_zero_tres)
    pending_tres: dict[str, int] = field(default_factory=_zero_tres)
    running_jobs: int = 0
    pending_jobs: int = 0
    tres_minutes: dict[str, int] = field(default_factory=_zero_tres)

    def add_active(self, row: dict) -> None:
        tres = self.running_tres if row["state"] == JobState.RUNNING else self.pending_tres
        for name, key in ((CPU, "cpu"), (MEM, "mem"), (NODE, "node"), (ACCEL, "accel")):
            tres[name] += row[key] or 0
        if row["state"] == JobState.RUNNING:
            self.running_jobs += row["jobs"]
        else:
            self.pending_jobs += row["jobs"]


@dataclass
class GroupQuota:
    group: Group
    usage: Usage
    user_usage: Usage


def _active_rows(tenant_ids, *, by_user: bool):
    fields = ["group__path", "state", *(["user_id"] if by_user else [])]
    return (
        Job.objects.active()
        .filter(tenant_id__in=tenant_ids)
        .values(*fields)
        .annotate(
            jobs=Count("id"),
            cpu=Sum(F("nodes") * F("cpus_per_node")),
            mem=Sum(F("nodes") * F("memory_per_node")),
            node=Sum("nodes"),
            accel=Sum(F("nodes") * F("accelerators_per_node")),
        )
        .order_by()
    )


def group_usage(groups: Sequence[Group]) -> dict[int, Usage]:
    """Running and pending usage of each group's subtree (limits bind a group and everything below it). One query.

    Counts every job charged to the subtree, whoever submitted it: that is what the limits and the scheduler count.
    """
    usage = {g.pk: Usage() for g in groups}
    if not groups:
        return usage
    rows = list(_active_rows({g.tenant_id for g in groups}, by_user=False))
    for group in groups:
        for row in rows:
            if row["group__path"].startswith(group.path):
                usage[group.pk].add_active(row)
    return usage


def _ended_shapes(tenant_ids):
    """Elapsed time of ended runs, summed per (group, user, job shape): far fewer rows than jobs."""
    elapsed = ExpressionWrapper(F("ended_at") - F("started_at"), output_field=DurationField())
    return (
        Job.objects.filter(tenant_id__in=tenant_ids)
        .exclude(state__in=[s.value for s in ACTIVE_STATES])
        .exclude(started_at=None)
        .exclude(ended_at=None)
        .values("group__path", "user_id", "nodes", "accelerators_per_node", "cpus_per_node", "memory_per_node")
        .annotate(elapsed=Sum(elapsed))
        .order_by()
    )


def _add_minutes(totals: dict[str, float], row: dict) -> None:
    minutes = max(0.0, row["elapsed"].total_seconds() / 60) if row["elapsed"] else 0.0
    nodes = row["nodes"]
    totals[CPU] += nodes * row["cpus_per_node"] * minutes
    totals[MEM] += nodes * row["memory_per_node"] * minutes
    totals[NODE] += nodes * minutes
    totals[ACCEL] += nodes * row["accelerators_per_node"] * minutes


def quota_for(user) -> list[GroupQuota]:
    """``quota -u USER``: every group of `user` with its subtree's usage and the user's own share. Three queries.

    TRES-minutes count ended runs by their real elapsed time, as the scheduler does for GrpTRESMins.
    """
    groups = list(
        Group.objects.visible_to(user)
        .filter(members__user=user)
        .select_related("tenant", "parent", "default_partition")
        .order_by("tenant__name", "name")
    )
    if not groups:
        return []
    tenant_ids = {g.tenant_id for g in groups}
    group_totals = {g.pk: Usage() for g in groups}
    user_totals = {g.pk: Usage() for g in groups}
    minutes = {g.pk: dict.fromkeys(KNOWN_TRES, 0.0) for g in groups}
    user_minutes = {g.pk: dict.fromkeys(KNOWN_TRES, 0.0) for g in groups}
    active = list(_active_rows(tenant_ids, by_user=True))
    ended = list(_ended_shapes(tenant_ids))
    for group in groups:
        for row in active:
            if row["group__path"].startswith(group.path):
                group_totals[group.pk].add_active(row)
                if row["user_id"] == user.pk:
                    user_totals[group.pk].add_active(row)
        for row in ended:
            if row["group__path"].startswith(group.path):
                _add_minutes(minutes[group.pk], row)
                if row["user_id"] == user.pk:
                    _add_minutes(user_minutes[group.pk], row)
    for group in groups:
        group_totals[group.pk].tres_minutes = {k: round(v) for k, v in minutes[group.pk].items()}
        user_totals[group.pk].tres_minutes = {k: round(v) for k, v in user_minutes[group.pk].items()}
    return [GroupQuota(group=g, usage=group_totals[g.pk], user_usage=user_totals[g.pk]) for g in groups]


@dataclass
class NodeAllocation:
    accelerators: int = 0
    cpus: int = 0
    memory_mb: int = 0
    jobs: int = 0


def node_allocations() -> dict[str, NodeAllocation]:
    """What running jobs hold on each node, by node name (``sinfo``'s allocated counts). One query."""
    held: dict[str, NodeAllocation] = {}
    for allocation, cpus, memory in Job.objects.running().values_list("allocation", "cpus_per_node", "memory_per_node"):
        for node_name, indices in (allocation or {}).items():
            node = held.setdefault(node_name, NodeAllocation())
            node.accelerators += len(indices)
            node.cpus += cpus
            node.memory_mb += memory
            node.jobs += 1
    return held


# Plain words for a reason code, where no cause with numbers is at hand (the reason a past pass recorded).
REASON_MESSAGES = {
    Reason.NONE: "waiting for the next scheduling pass",
    Reason.PRIORITY: "jobs ahead of it in the queue wait for the same resources",
    Reason.RESOURCES: "not enough free nodes or accelerators in partition '{partition}' yet",
    Reason.ASSOC_GRP_GRES: "its group or tenant has reached its GrpTRES accelerator limit",
    Reason.ASSOC_GRP_CPU: "its group or tenant has reached its GrpTRES cpu limit",
    Reason.ASSOC_GRP_MEM: "its group or tenant has reached its GrpTRES memory limit",
    Reason.ASSOC_GRP_NODE: "its group or tenant has reached its GrpTRES node limit",
    Reason.ASSOC_GRP_JOBS: "its group or tenant has reached its GrpJobs limit of running jobs",
    Reason.ASSOC_GRP_GRES_MINUTES: "its group or tenant has used up its GrpTRESMins accelerator-minutes budget",
    Reason.QOS_MAX_GRES_PER_USER: "you have reached the MaxTRESPerUser accelerator limit",
    Reason.PARTITION_DOWN: "partition '{partition}' is down",
    Reason.NODE_DOWN: "the nodes it needs are down or drained",
    Reason.DEPENDENCY: "it waits for another job to finish",
    Reason.BEGIN_TIME: "its start time has not come yet",
    Reason.JOB_HELD: "an administrator holds it",
    Reason.BACKEND_UNAVAILABLE: "the cluster backend cannot be reached; the job keeps its place until it is back",
}


def job_explanation(job: Job) -> dict:
    """``GET jobs/{id}/explain/``: every cause that keeps a job waiting, with numbers; its estimated start from the
    scheduler's plan; and changes to its request that would start it sooner, each with its own estimated start."""
    from jobs.explain import job_explanation as explain
    from jobs.runs import backend_estimated_start

    answer = explain(job)
    # A backend that places jobs itself (Slurm) knows better when: its own estimate (squeue --start) wins.
    if job.backend_job_id and (estimate := backend_estimated_start(job)) is not None:
        answer["estimated_start"] = estimate
    return answer


def priority_factors(job: Job) -> dict:
    """``sprio -l -j ID``: the job's multifactor priority, each factor raw and weighted, and its fair-share usage."""
    from jobs.explain import priority_factors as factors

    return factors(job)


def pending_priority_factors(jobs) -> list[dict]:
    """``sprio -l``: `priority_factors` of each job, from one load of the pool's state."""
    from jobs.explain import load_state
    from jobs.explain import priority_factors as factors

    jobs = list(jobs)
    state = load_state() if jobs else None
    return [factors(job, state) for job in jobs]


def queue_priorities(jobs) -> dict[int, int]:
    """``squeue -o %Q``: job id → priority now, for a queryset of jobs, with a fixed number of queries."""
    from jobs.explain import queue_priorities as priorities

    return priorities(jobs)
