"""Gang placement: all nodes of a job or none, on the fewest leaf switches, best fit to keep whole switches free."""

from __future__ import annotations

from collections import defaultdict

from scheduler.model import JobRequest, NodeView


def eligible_nodes(job: JobRequest, nodes: list[NodeView]) -> list[NodeView]:
    return [
        n
        for n in nodes
        if job.partition in n.partitions and n.fits(job.accelerators_per_node, job.cpus_per_node, job.memory_per_node)
    ]


def min_switches_needed(job: JobRequest, nodes: list[NodeView]) -> int | None:
    """Fewest leaf switches that could hold the job now; None when it does not fit at all."""
    counts = sorted((len(v) for v in _by_switch(eligible_nodes(job, nodes)).values()), reverse=True)
    total = 0
    for used, count in enumerate(counts, start=1):
        total += count
        if total >= job.nodes:
            return used
    return None


def place(job: JobRequest, nodes: list[NodeView]) -> tuple[list[NodeView], list[str]] | None:
    """Pick nodes for `job` or return None. Deterministic: ties break on names."""
    groups = _by_switch(eligible_nodes(job, nodes))
    if sum(len(v) for v in groups.values()) < job.nodes:
        return None
    # One switch if any can hold the job: the one with the fewest eligible nodes that still fits (best fit).
    fitting = [s for s, members in groups.items() if len(members) >= job.nodes]
    if fitting:
        switch = min(fitting, key=lambda s: (len(groups[s]), s))
        return _best_nodes(groups[switch], job.nodes), [switch]
    # Otherwise the biggest switches first, so the job spans as few as possible.
    chosen: list[NodeView] = []
    switches: list[str] = []
    for switch in sorted(groups, key=lambda s: (-len(groups[s]), s)):
        take = min(job.nodes - len(chosen), len(groups[switch]))
        chosen.extend(_best_nodes(groups[switch], take))
        switches.append(switch)
        if len(chosen) == job.nodes:
            break
    if job.max_switches is not None and len(switches) > job.max_switches:
        return None
    if job.topology_aware and job.max_switches is None and len(switches) > 1:
        return None
    return chosen, switches


def _best_nodes(members: list[NodeView], count: int) -> list[NodeView]:
    # Fullest nodes first: leaves emptier nodes whole for jobs that need all 8 accelerators.
    return sorted(members, key=lambda n: (len(n.free_accelerators), n.free_cpus, n.name))[:count]


def _by_switch(nodes: list[NodeView]) -> dict[str, list[NodeView]]:
    groups: dict[str, list[NodeView]] = defaultdict(list)
    for node in nodes:
        groups[node.switch].append(node)
    return groups


def allocate(job: JobRequest, chosen: list[NodeView]) -> dict[str, tuple[int, ...]]:
    """Take the resources from the chosen nodes (mutates them) and return node → accelerator indices."""
    allocation: dict[str, tuple[int, ...]] = {}
    for node in sorted(chosen, key=lambda n: n.name):
        taken = tuple(sorted(node.free_accelerators)[: job.accelerators_per_node])
        node.free_accelerators = [i for i in node.free_accelerators if i not in taken]
        node.free_cpus -= job.cpus_per_node
        node.free_memory_mb -= job.memory_per_node
        allocation[node.name] = taken
    return allocation
