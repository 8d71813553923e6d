"""How many more replicas of a given shape the GrpTRES / GrpJobs limits up a group's tree admit right now.

Usage counts running and queued jobs of the whole subtree (what the scheduler will have to fit), so a replica the
autoscaler asks for is one the limits can actually run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, F, Sum

from jobs.models import Job
from jobs.selectors import Usage, group_usage
from tenants.models import Group, Tenant
from vocab.tres import ACCEL, CPU, MEM, NODE, format_memory


@dataclass(frozen=True)
class ReplicaShape:
    accelerators: int
    cpus: int
    memory_mb: int

    @classmethod
    def of(cls, service) -> ReplicaShape:
        cpus = int((service.spec.get("resources") or {}).get("cpus") or 1)
        return cls(accelerators=service.accelerators_per_replica, cpus=cpus, memory_mb=service.memory_mb)

    def tres(self) -> dict[str, int]:
        return {ACCEL: self.accelerators, CPU: self.cpus, MEM: self.memory_mb, NODE: 1}


@dataclass(frozen=True)
class Headroom:
    replicas: int | None  # None: no limit binds
    message: str = ""


_LABELS = {ACCEL: "accelerators", CPU: "CPUs", NODE: "nodes"}


def _describe(owner: str, name: str, used: int, cap: int) -> str:
    if name == MEM:
        return f"{owner} uses {format_memory(used)}/{format_memory(cap)} memory"
    return f"{owner} uses {used}/{cap} {_LABELS.get(name, name)}"


def _room(assoc, usage: Usage, shape: ReplicaShape, owner: str) -> tuple[int, str] | None:
    """The tightest of `assoc`'s limits for this shape: (replicas it still admits, a phrase), or None."""
    best: tuple[int, str] | None = None
    used = {k: usage.running_tres[k] + usage.pending_tres[k] for k in usage.running_tres}
    for name, need in shape.tres().items():
        cap = (assoc.grp_tres or {}).get(name)
        if cap is None or need <= 0:
            continue
        room = max(0, cap - used.get(name, 0)) // need
        if best is None or room < best[0]:
            best = (room, _describe(owner, name, used.get(name, 0), cap))
    if assoc.grp_jobs is not None:
        jobs = usage.running_jobs + usage.pending_jobs
        room = max(0, assoc.grp_jobs - jobs)
        if best is None or room < best[0]:
            best = (room, f"{owner} runs {jobs}/{assoc.grp_jobs} jobs (GrpJobs)")
    return best


def _tenant_usage(tenant_ids: set[int]) -> dict[int, Usage]:
    usage = {pk: Usage() for pk in tenant_ids}
    rows = (
        Job.objects.active()
        .filter(tenant_id__in=tenant_ids)
        .values("tenant_id", "state")
        .annotate(
            jobs=Count("id"),
            cpu=Sum(F("nodes") * F("cpus_per_node")),
            mem=Sum(F("nodes") * F("memory_per_node")),
            node=Sum("nodes"),
            accel=Sum(F("nodes") * F("accelerators_per_node")),
        )
        .order_by()
    )
    for row in rows:
        usage[row["tenant_id"]].add_active(row)
    return usage


def headroom_for(items: Iterable[tuple[Group, ReplicaShape]]) -> dict[tuple[int, ReplicaShape], Headroom]:
    """Headroom for each (group, shape), reading every association of every chain in four queries."""
    items = list(items)
    if not items:
        return {}
    names = {n for group, _ in items for n in group.path.strip("/").split("/") if n}
    chain_groups = {g.name: g for g in Group.objects.filter(name__in=names)}
    tenants = {t.pk: t for t in Tenant.objects.filter(pk__in={g.tenant_id for g, _ in items})}
    usage = group_usage(list(chain_groups.values()))
    tenant_usage = _tenant_usage(set(tenants))
    result = {}
    for group, shape in items:
        chain = [(tenants[group.tenant_id], tenant_usage[group.tenant_id], f"tenant {tenants[group.tenant_id].name}")]
        for name in [n for n in group.path.strip("/").split("/") if n]:
            if name in chain_groups:
                g = chain_groups[name]
                chain.append((g, usage[g.pk], f"group {g.name}"))
        result[(group.pk, shape)] = _tightest(chain, shape)
    return result


def _tightest(chain, shape: ReplicaShape) -> Headroom:
    best: tuple[int, str] | None = None
    for assoc, usage, owner in chain:
        room = _room(assoc, usage, shape, owner)
        if room is not None and (best is None or room[0] < best[0]):
            best = room
    return Headroom(replicas=None, message="") if best is None else Headroom(replicas=best[0], message=best[1])
