"""Read-only inputs of a replay from the portal's own database: the pool, the limits and the job history.

Association keys are the live pass's (``tenant:<id>``, ``group:<id>``), so the replay and jobs.scheduling see the
same limit tree; `labels` turns them back into names for reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from cluster.models import Partition
from jobs.models import Job
from jobs.scheduling import Epoch, group_key, job_rows, load_limits, load_nodes, request_from_row, tenant_key
from scheduler.model import AssocLimits, JobRequest, NodeView
from scheduler.priority import Association
from tenants.models import Group, Tenant
from vocab.states import JobState


@dataclass
class PoolInputs:
    """Everything `scheduler.replay.Simulation` takes, read from the database."""

    nodes: list[NodeView]
    requests: list[JobRequest] = field(default_factory=list)
    runtimes: dict[int, float] = field(default_factory=dict)
    limits: dict[str, AssocLimits] = field(default_factory=dict)
    tree: list[Association] = field(default_factory=list)
    partition_tier: dict[str, int] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # association key → name
    notes: list[str] = field(default_factory=list)


def idle_pool() -> list[NodeView]:
    """The pool's nodes as the replay starts them: nothing allocated."""
    nodes = load_nodes()
    for node in nodes:
        node.free_accelerators = list(range(node.accelerators))
        node.free_cpus, node.free_memory_mb = node.cpus, node.memory_mb
    return nodes


def association_tree() -> tuple[list[Association], dict[str, str]]:
    tree, labels = [], {}
    for pk, name in Tenant.objects.values_list("pk", "name"):
        tree.append(Association(tenant_key(pk), None, 1))
        labels[tenant_key(pk)] = name
    for pk, name, tenant_id, parent_id, shares in Group.objects.values_list(
        "pk", "name", "tenant_id", "parent_id", "shares"
    ):
        parent = group_key(parent_id) if parent_id else tenant_key(tenant_id)
        tree.append(Association(group_key(pk), parent, shares))
        labels[group_key(pk)] = name
    return tree, labels


def history_window(start: datetime, end: datetime):
    """Jobs submitted in [start, end) that ran or still wait (one cancelled before it started never needed the pool)."""
    return (
        Job.objects.filter(submitted_at__gte=start, submitted_at__lt=end)
        .filter(Q(started_at__isnull=False) | Q(state=JobState.PENDING))
        .order_by("submitted_at", "id")
    )


def pool_inputs(*, start: datetime | None = None, end: datetime | None = None) -> PoolInputs:
    """The live pool, limits and tree; with a window, its jobs as requests and their real run times.

    A job's run time is ended - started; one still running has run until now (a lower bound); one still pending
    runs its whole time limit (what the scheduler plans with too).
    """
    limits, chains = load_limits()
    tree, labels = association_tree()
    inputs = PoolInputs(
        nodes=idle_pool(),
        limits=limits,
        tree=tree,
        partition_tier=dict(Partition.objects.values_list("name", "priority_tier")),
        labels=labels,
    )
    if start is None or end is None:
        return inputs
    now = timezone.now().timestamp()
    rows = job_rows(
        history_window(start, end).annotate(
            started=Epoch("started_at"), ended=Epoch(Coalesce("ended_at", "started_at"))
        ),
        "started",
        "ended",
        "state",
    )
    for row in rows:
        request = request_from_row(row, chains)
        started, ended, state = row[14], row[15], row[16]
        if started is None:
            runtime = float("inf")  # the replay ends it at its time limit
        elif state == JobState.RUNNING:
            runtime = max(0.0, now - started)
        else:
            runtime = max(0.0, ended - started)
        inputs.requests.append(request)
        inputs.runtimes[request.id] = runtime
    inputs.notes.append(
        f"history: {len(inputs.requests)} jobs submitted {start:%Y-%m-%d %H:%M} - {end:%Y-%m-%d %H:%M} UTC "
        "(jobs cancelled before they started are left out); the replay starts on an idle pool"
    )
    return inputs
