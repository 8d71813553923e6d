"""One scheduling pass. Same input, same decisions: the function the Celery task and a trace replay both call."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.admission import admission_block, charge
from scheduler.model import AssocLimits, AssocUsage, Block, Decisions, JobRequest, NodeView, Start
from scheduler.placement import allocate, place
from vocab.states import Reason


def queue_order(queue: Sequence[JobRequest]) -> list[JobRequest]:
    return sorted(queue, key=lambda j: (-j.priority, j.submitted_at, j.id))


def schedule(
    nodes: list[NodeView],
    queue: Sequence[JobRequest],
    limits: dict[str, AssocLimits],
    usage: dict[str, AssocUsage],
    now: float,
) -> Decisions:
    """Start what fits in priority order. A job held by a limit does not hold back others (as in Slurm); the first
    job short of resources in a partition does, so big jobs are not starved by a stream of small ones."""
    decisions = Decisions()
    blocked_partitions: set[str] = set()
    for job in queue_order(queue):
        limit = admission_block(job, limits, usage)
        if limit is not None:
            decisions.blocked.append(Block(job.id, limit[0], limit[1]))
            continue
        if job.partition in blocked_partitions:
            decisions.blocked.append(Block(job.id, Reason.PRIORITY, "a job of higher priority waits for resources"))
            continue
        placed = place(job, nodes)
        if placed is None:
            blocked_partitions.add(job.partition)
            decisions.blocked.append(Block(job.id, Reason.RESOURCES, "not enough free nodes"))
            continue
        chosen, switches = placed
        decisions.starts.append(Start(job.id, allocate(job, chosen), tuple(switches)))
        charge(job, usage)
    return decisions
