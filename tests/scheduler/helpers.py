"""Builders for pure-core tests: a pool of nodes on leaf switches, jobs, running jobs and their usage."""

from scheduler.admission import charge
from scheduler.model import AssocUsage, JobRequest, NodeView, RunningJob

GIB = 1024


def pool(switches=2, per_switch=2, accelerators=8, partitions=("main",), cpus=64, memory=512 * GIB, prefix=""):
    return [
        NodeView(
            name=f"{prefix}n{s}{i}",
            switch=f"{prefix}leaf{s}",
            partitions=frozenset(partitions),
            accelerators=accelerators,
            cpus=cpus,
            memory_mb=memory,
            free_accelerators=list(range(accelerators)),
            free_cpus=cpus,
            free_memory_mb=memory,
        )
        for s in range(switches)
        for i in range(per_switch)
    ]


def job(job_id, nodes=1, apn=8, assoc=("tenant:a", "group:g"), user="u", time_limit=60, partition="main", **kw):
    return JobRequest(
        id=job_id,
        partition=partition,
        nodes=nodes,
        accelerators_per_node=apn,
        cpus_per_node=max(1, apn),
        memory_per_node=max(1, apn) * GIB,
        time_limit=time_limit,
        associations=assoc,
        user=user,
        submitted_at=kw.pop("submitted_at", job_id),
        **kw,
    )


def occupy(nodes, request, names, ends_at, started_at=0.0):
    """Put `request` on the named nodes as a running job; returns the RunningJob."""
    allocation = {}
    for node in nodes:
        if node.name in names:
            taken = tuple(sorted(node.free_accelerators)[: request.accelerators_per_node])
            node.free_accelerators = [i for i in node.free_accelerators if i not in taken]
            node.free_cpus -= request.cpus_per_node
            node.free_memory_mb -= request.memory_per_node
            allocation[node.name] = taken
    return RunningJob(request, allocation, ends_at, started_at)


def usage_of(running, consumed=None) -> dict[str, AssocUsage]:
    usage: dict[str, AssocUsage] = {}
    for run in running:
        charge(run.job, usage)
    for key, minutes in (consumed or {}).items():
        totals = usage.setdefault(key, AssocUsage()).tres_mins
        for name, value in minutes.items():
            totals[name] = totals.get(name, 0) + value
    return usage
