"""The ORM side of scheduling: load the state the pure core needs, run it, apply its decisions in one transaction."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from cluster.models import Node, NodeState
from jobs.models import Job, SchedulerLock
from jobs.services import transition
from scheduler.core import schedule
from scheduler.model import AssocLimits, AssocUsage, JobRequest, NodeView
from tenants.models import Group, Tenant
from vocab.states import JobState
from vocab.tres import ACCEL, CPU, MEM, NODE

log = logging.getLogger(__name__)


def tenant_key(tenant_id: int) -> str:
    return f"tenant:{tenant_id}"


def group_key(group_id: int) -> str:
    return f"group:{group_id}"


def load_nodes() -> list[NodeView]:
    views = {
        n.name: NodeView(
            name=n.name,
            switch=n.switch.name,
            partitions=frozenset(p.name for p in n.partitions.all()),
            accelerators=n.accelerators,
            cpus=n.cpus,
            memory_mb=n.memory_mb,
            up=n.state == NodeState.UP,
            free_accelerators=list(range(n.accelerators)),
            free_cpus=n.cpus,
            free_memory_mb=n.memory_mb,
        )
        for n in Node.objects.select_related("switch").prefetch_related("partitions")
    }
    for job in Job.objects.running().only("allocation", "cpus_per_node", "memory_per_node"):
        for node_name, indices in job.allocation.items():
            node = views.get(node_name)
            if node is None:
                continue
            node.free_accelerators = [i for i in node.free_accelerators if i not in indices]
            node.free_cpus -= job.cpus_per_node
            node.free_memory_mb -= job.memory_per_node
    return list(views.values())


def load_limits() -> tuple[dict[str, AssocLimits], dict[int, tuple[str, ...]]]:
    """Limits of every association, and for each group the chain of association keys from its tenant down."""
    limits: dict[str, AssocLimits] = {}
    for tenant in Tenant.objects.all():
        limits[tenant_key(tenant.pk)] = _assoc_limits(tenant)
    groups = list(Group.objects.all())
    by_name = {g.name: g for g in groups}
    chains: dict[int, tuple[str, ...]] = {}
    for group in groups:
        limits[group_key(group.pk)] = _assoc_limits(group)
        names = [n for n in group.path.strip("/").split("/") if n]
        chains[group.pk] = (tenant_key(group.tenant_id), *(group_key(by_name[n].pk) for n in names if n in by_name))
    return limits, chains


def _assoc_limits(assoc) -> AssocLimits:
    return AssocLimits(
        name=f"{'tenant' if isinstance(assoc, Tenant) else 'group'} {assoc.name}",
        grp_tres=dict(assoc.grp_tres or {}),
        grp_jobs=assoc.grp_jobs,
        max_tres_per_user=dict(assoc.max_tres_per_user or {}),
        grp_tres_mins=dict(assoc.grp_tres_mins or {}),
    )


def request_for(job: Job, chains: dict[int, tuple[str, ...]]) -> JobRequest:
    return JobRequest(
        id=job.pk,
        partition=job.partition.name,
        nodes=job.nodes,
        accelerators_per_node=job.accelerators_per_node,
        cpus_per_node=job.cpus_per_node,
        memory_per_node=job.memory_per_node,
        time_limit=job.time_limit,
        associations=chains.get(job.group_id, (tenant_key(job.tenant_id),)),
        user=job.user.username,
        submitted_at=job.submitted_at.timestamp(),
        topology_aware=job.topology_aware,
        max_switches=job.max_switches,
    )


def load_usage(chains: dict[int, tuple[str, ...]], limits: dict[str, AssocLimits]) -> dict[str, AssocUsage]:
    usage: dict[str, AssocUsage] = {}
    for job in Job.objects.running().select_related("partition", "user"):
        request = request_for(job, chains)
        for key in request.associations:
            usage.setdefault(key, AssocUsage()).add(request)
    _add_consumed_minutes(usage, chains, limits)
    return usage


def _add_consumed_minutes(
    usage: dict[str, AssocUsage], chains: dict[int, tuple[str, ...]], limits: dict[str, AssocLimits]
) -> None:
    """TRES-minutes of ended runs (by real elapsed time), for GrpTRESMins budgets.

    Only groups with a budget somewhere up their chain are read: most pools have none, and then this costs nothing.
    """
    budgeted_keys = {key for key, limit in limits.items() if limit.grp_tres_mins}
    budgeted = [gid for gid, chain in chains.items() if budgeted_keys.intersection(chain)]
    if not budgeted:
        return
    ended = (
        Job.objects.filter(group_id__in=budgeted)
        .exclude(state__in=[JobState.PENDING, JobState.RUNNING])
        .exclude(started_at=None)
        .exclude(ended_at=None)
        .values_list(
            "group_id", "started_at", "ended_at", "nodes", "accelerators_per_node", "cpus_per_node", "memory_per_node"
        )
    )
    for group_id, started, ended_at, nodes, apn, cpn, mpn in ended.iterator():
        minutes = max(0.0, (ended_at - started).total_seconds() / 60)
        spent = {
            CPU: nodes * cpn * minutes,
            MEM: nodes * mpn * minutes,
            NODE: nodes * minutes,
            ACCEL: nodes * apn * minutes,
        }
        for key in chains.get(group_id, ()):
            totals = usage.setdefault(key, AssocUsage()).tres_mins
            for name, value in spent.items():
                totals[name] = totals.get(name, 0) + value


def run_pass() -> list[int]:
    """One scheduling pass; returns the ids of the jobs it started. Passes never overlap (row lock)."""
    # Cleared before reading state, so a submit that lands during this pass queues the next one.
    SchedulerLock.objects.filter(pk=1).update(pass_requested=False)
    with transaction.atomic():
        SchedulerLock.objects.get_or_create(pk=1)
        lock = SchedulerLock.objects.select_for_update().get(pk=1)
        limits, chains = load_limits()
        pending = list(Job.objects.pending().select_related("partition", "user").order_by("submitted_at", "id"))
        if not pending:
            return []
        decisions = schedule(
            load_nodes(),
            [request_for(j, chains) for j in pending],
            limits,
            load_usage(chains, limits),
            timezone.now().timestamp(),
        )
        started = _apply(decisions, {j.pk: j for j in pending})
        lock.last_pass_at = timezone.now()
        lock.save(update_fields=["last_pass_at"])
    return started


def _apply(decisions, jobs_by_id: dict[int, Job]) -> list[int]:
    started = []
    now = timezone.now()
    for start in decisions.starts:
        job = jobs_by_id[start.job_id]
        nodelist = list(start.allocation)
        moved = transition(
            job,
            JobState.RUNNING,
            cause=f"allocated {','.join(nodelist)}",
            at=now,
            started_at=now,
            allocation={n: list(ix) for n, ix in start.allocation.items()},
            nodelist=nodelist,
            switches=list(start.switches),
        )
        if moved:
            started.append(job.pk)
    for block in decisions.blocked:
        job = jobs_by_id[block.job_id]
        if job.reason != block.reason:
            Job.objects.filter(pk=job.pk, state=JobState.PENDING).update(reason=block.reason)
    return started
