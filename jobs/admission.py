"""Submit-time checks: reject what can never run, naming the limit and the numbers (api-contract.md)."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db.models import Count, Max, Q

from cluster.models import NodeState, Partition
from jobs.models import Runtime
from jobs.spec import JobSpec
from tenants.models import Group, Tenant
from vocab.slurmtime import format_minutes
from vocab.tres import MEM, format_memory, job_tres, tres_label

DEFAULT_MEMORY_NO_ACCEL = 4096


@dataclass(frozen=True)
class Resolved:
    """A spec with every default filled in and every name resolved to a row."""

    partition: Partition
    runtime: Runtime | None
    cpus_per_node: int
    memory_per_node: int


def _shape(nodes: str = "") -> dict:
    """A partition's shape over its nodes in service: the largest of each resource and how many nodes there are."""
    up = ~Q(**{f"{nodes}state": NodeState.DOWN})
    return {
        "acc": Max(f"{nodes}accelerators", filter=up),
        "cpus": Max(f"{nodes}cpus", filter=up),
        "mem": Max(f"{nodes}memory_mb", filter=up),
        "count": Count(f"{nodes}id", filter=up),
    }


def resolve(*, group: Group, spec: JobSpec) -> Resolved:
    partition, shape = _partition(group, spec)
    if shape is None:
        shape = partition.nodes.aggregate(**_shape())
    count = shape["count"]
    errors: dict[str, list[str]] = {}
    if count == 0:
        raise ValidationError({"partition": [f"partition {partition.name} has no nodes in service"]})
    if spec.nodes > count:
        errors["nodes"] = [f"{spec.nodes} requested, partition '{partition.name}' has {count} nodes"]
    if spec.accelerators_per_node > shape["acc"]:
        errors["accelerators_per_node"] = [
            f"{spec.accelerators_per_node} requested, nodes in partition '{partition.name}' have {shape['acc']}"
        ]
    cpus, memory = _defaults(spec, shape)
    if cpus > shape["cpus"]:
        errors["cpus_per_node"] = [f"{cpus} requested, nodes in partition '{partition.name}' have {shape['cpus']}"]
    if memory > shape["mem"]:
        errors["memory_per_node"] = [
            f"{format_memory(memory)} requested, "
            f"nodes in partition '{partition.name}' have {format_memory(shape['mem'])}"
        ]
    if partition.max_time is not None and spec.time_limit > partition.max_time:
        errors["time_limit"] = [
            f"{format_minutes(spec.time_limit)} requested, partition '{partition.name}' MaxTime is "
            f"{format_minutes(partition.max_time)} (over by {format_minutes(spec.time_limit - partition.max_time)})"
        ]
    if spec.max_switches is not None and spec.max_switches < 1:
        errors["max_switches"] = ["must be at least 1"]
    runtime = _runtime(spec, errors)
    if errors:
        raise ValidationError(errors)
    return Resolved(partition=partition, runtime=runtime, cpus_per_node=cpus, memory_per_node=memory)


def _partition(group: Group, spec: JobSpec) -> tuple[Partition, dict | None]:
    """The partition the job runs in, with its shape when the group's partition list already had it (one query
    on the submit path instead of two); None when it must be read."""
    allowed = list(group.allowed_partitions.annotate(**_shape("nodes__")))
    if spec.partition is None:
        partition = group.default_partition or next((p for p in allowed if p.is_default), None)
        if partition is None:
            partition = allowed[0] if allowed else Partition.objects.filter(is_default=True).first()
        if partition is None:
            raise ValidationError({"partition": ["no partition given and the group has no default partition"]})
    else:
        partition = Partition.objects.filter(name=spec.partition).first()
        if partition is None:
            raise ValidationError({"partition": [f"unknown partition '{spec.partition}'"]})
    if allowed and partition not in allowed:
        names = ", ".join(p.name for p in allowed)
        raise ValidationError(
            {"partition": [f"group {group.name} may not use partition '{partition.name}' (allowed: {names})"]}
        )
    listed = next((p for p in allowed if p.pk == partition.pk), None)
    return partition, None if listed is None else {key: getattr(listed, key) for key in ("acc", "cpus", "mem", "count")}


def _defaults(spec: JobSpec, shape: dict) -> tuple[int, int]:
    """CPUs and memory not given: the job's share of a node in proportion to its accelerators (DefCpuPerGPU)."""
    if spec.accelerators_per_node and shape["acc"]:
        # Capped at a whole node, so a request for too many accelerators is refused for that alone.
        share = min(1.0, spec.accelerators_per_node / shape["acc"])
        cpus = spec.cpus_per_node or max(1, int(shape["cpus"] * share))
        memory = spec.memory_per_node or max(1, int(shape["mem"] * share))
    else:
        cpus = spec.cpus_per_node or 1
        memory = spec.memory_per_node or min(DEFAULT_MEMORY_NO_ACCEL, shape["mem"])
    return cpus, memory


def _runtime(spec: JobSpec, errors: dict) -> Runtime | None:
    if spec.runtime is None:
        return None
    runtime = Runtime.objects.filter(name=spec.runtime).first()
    if runtime is None:
        known = ", ".join(Runtime.objects.values_list("name", flat=True)) or "none defined"
        errors["runtime"] = [f"unknown runtime '{spec.runtime}' (available: {known})"]
    return runtime


def check_association_limits(*, chain: list[Tenant | Group], spec: JobSpec, resolved: Resolved) -> None:
    """Per-job limits up the tree: MaxWall, MaxTRESPerJob, and GrpTRES / MaxTRESPerUser a job alone would exceed."""
    request = job_tres(
        nodes=spec.nodes,
        accelerators_per_node=spec.accelerators_per_node,
        cpus_per_node=resolved.cpus_per_node,
        memory_per_node=resolved.memory_per_node,
    )
    errors: dict[str, list[str]] = {}
    for assoc in chain:
        owner = f"{'tenant' if isinstance(assoc, Tenant) else 'group'} {assoc.name}"
        if assoc.max_wall is not None and spec.time_limit > assoc.max_wall:
            errors.setdefault("time_limit", []).append(
                f"{format_minutes(spec.time_limit)} requested, {owner} MaxWall is {format_minutes(assoc.max_wall)}"
            )
        for label, limits in (
            ("MaxTRESPerJob", assoc.max_tres_per_job),
            ("GrpTRES", assoc.grp_tres),
            ("MaxTRESPerUser", assoc.max_tres_per_user),
        ):
            for name, cap in (limits or {}).items():
                if request.get(name, 0) > cap:
                    errors.setdefault(_field_for(name), []).append(_over(owner, label, name, request[name], cap))
    if errors:
        raise ValidationError(errors)


def _field_for(tres_name: str) -> str:
    return {"gres/accelerator": "accelerators_per_node", "cpu": "cpus_per_node", "mem": "memory_per_node"}.get(
        tres_name, "nodes"
    )


def _over(owner: str, label: str, name: str, requested: int, cap: int) -> str:
    if name == MEM:
        return f"{format_memory(requested)} memory requested in total, {owner} {label} is {format_memory(cap)}"
    return f"{requested} {tres_label(name)} requested in total, {owner} {label} is {cap} (over by {requested - cap})"
