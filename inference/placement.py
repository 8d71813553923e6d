"""Where a service's replicas run and as what job: the checks that need the database, with per-field messages.

A replica is a one-node job of the service's accelerators and memory in a partition whose nodes all have the asked
accelerator type (the scheduler places by count, not type, so a mixed partition could land on the wrong kind).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db.models import Count, F, Q

from cluster.models import Node, NodeState, Partition
from jobs.admission import check_association_limits, resolve
from jobs.spec import JobSpec
from registry.jobio import resolve_version
from registry.models import Version
from registry.names import NameError_
from tenants.models import Group
from tenants.services import lock_association_chain

DEFAULT_TIME_LIMIT = 7 * 1440  # minutes, where neither the partition nor MaxWall bounds it
# Job-spec fields in admission messages → the YAML path a person edits.
_FIELD_MAP = {
    "accelerators_per_node": "spec.resources.accelerators",
    "memory_per_node": "spec.resources.memory",
    "cpus_per_node": "spec.resources",
    "nodes": "spec.resources",
    "partition": "spec.resources.accelerator",
    "time_limit": "spec.resources",
}


@dataclass(frozen=True)
class Placement:
    version: Version
    partition: Partition
    cpus_per_replica: int
    time_limit: int  # minutes: the longest a replica may run; it is replaced before then


def known_accelerator_types() -> list[str]:
    return sorted(set(Node.objects.exclude(state=NodeState.DOWN).values_list("accelerator_type", flat=True)))


def _partition_for(group: Group, accelerator_type: str) -> Partition:
    known = known_accelerator_types()
    if accelerator_type not in known:
        raise ValidationError(
            {
                "spec.resources.accelerator": [
                    f"unknown accelerator type {accelerator_type!r} (this pool has: {', '.join(known) or 'none'})"
                ]
            }
        )
    allowed = group.allowed_partitions.all()
    candidates = Partition.objects.filter(pk__in=allowed) if allowed.exists() else Partition.objects.all()
    homogeneous = candidates.annotate(
        up=Count("nodes", filter=~Q(nodes__state=NodeState.DOWN)),
        typed=Count("nodes", filter=~Q(nodes__state=NodeState.DOWN) & Q(nodes__accelerator_type=accelerator_type)),
    ).filter(up__gt=0, typed=F("up"))
    chosen = sorted(homogeneous, key=lambda p: (p.pk != group.default_partition_id, not p.is_default, p.name))
    if not chosen:
        raise ValidationError(
            {
                "spec.resources.accelerator": [
                    f"group {group.name} may use no partition made of {accelerator_type} nodes"
                ]
            }
        )
    return chosen[0]


def _time_limit(group: Group, partition: Partition) -> int:
    limits = [partition.max_time or DEFAULT_TIME_LIMIT]
    tenant, groups = group.tenant, Group.objects.filter(name__in=[n for n in group.path.strip("/").split("/") if n])
    limits += [a.max_wall for a in [tenant, *groups] if a.max_wall is not None]
    return min(limits)


def replica_job_spec(*, name: str, partition: str, accelerators: int, memory_mb: int, time_limit: int, **extra):
    return JobSpec(
        name=name,
        nodes=1,
        accelerators_per_node=accelerators,
        memory_per_node=memory_mb,
        time_limit=time_limit,
        partition=partition,
        **extra,
    )


def place(*, user, group: Group, spec) -> Placement:
    """Check everything a replica needs, naming the field to fix; raises ValidationError."""
    errors: dict[str, list[str]] = {}
    version = None
    try:
        version = resolve_version(spec.model, user)
    except NameError_ as exc:
        errors["spec.model"] = [str(exc)]
    try:
        partition = _partition_for(group, spec.accelerator_type)
    except ValidationError as exc:
        errors.update(exc.message_dict)
        partition = None
    placement = None
    if partition is not None:
        try:
            placement = _fit(group, spec, partition, version)
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                errors.setdefault(_FIELD_MAP.get(field, "spec.resources"), []).extend(messages)
    if errors or placement is None:
        raise ValidationError(errors)
    return placement


def _fit(group: Group, spec, partition: Partition, version) -> Placement | None:
    time_limit = _time_limit(group, partition)
    job_spec = replica_job_spec(
        name=spec.name,
        partition=partition.name,
        accelerators=spec.accelerators,
        memory_mb=spec.memory_mb,
        time_limit=time_limit,
    )
    resolved = resolve(group=group, spec=job_spec)
    tenant, groups = lock_association_chain(group)
    check_association_limits(chain=[tenant, *groups], spec=job_spec, resolved=resolved)
    if version is None:
        return None
    return Placement(
        version=version, partition=partition, cpus_per_replica=resolved.cpus_per_node, time_limit=time_limit
    )


def partition_for_service(service) -> tuple[Partition, int]:
    """Where the next replica of `service` goes and its time limit; ValidationError if nowhere any more."""
    partition = _partition_for(service.group, service.accelerator_type)
    return partition, _time_limit(service.group, partition)
