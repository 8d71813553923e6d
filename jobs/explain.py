"""The ORM side of explanations (``GET jobs/{id}/explain/``) and of priorities (``sprio``).

Loads the same state a scheduling pass loads, with the same fixed number of queries, and asks the pure core
(scheduler.explain) why the job waits, when the plan starts it and which change would start it sooner. Read-only: no
lock is taken, so it answers while a pass runs, from the state committed before it.
"""

from __future__ import annotations

from django.db.models import QuerySet

from jobs.models import Job
from jobs.scheduling import PoolState, job_rows, load_queue, load_state, request_for, request_from_row, when
from scheduler.admission import Cause
from scheduler.explain import SOONER, explain
from scheduler.priority import Prioritizer
from vocab.states import JobState, Reason


def job_explanation(job: Job) -> dict:
    """The contract's shape: state, reason, causes with numbers, estimated start and suggestions."""
    answer = {"state": job.state, "reason": job.reason, "causes": [], "estimated_start": None, "suggestions": []}
    if job.state != JobState.PENDING:
        return answer
    state = load_state()
    queue, _ = load_queue(state)
    if not any(request.id == job.pk for request in queue):
        job.refresh_from_db(fields=["state", "reason"])  # a pass started (or someone cancelled) it meanwhile
        return {**answer, "state": job.state, "reason": job.reason}
    result = explain(
        state.nodes,
        queue,
        state.limits,
        state.usage,
        state.ts,
        job.pk,
        running=state.running,
        policy=state.policy,
        ctx=state.priority,
        partitions=alternative_partitions(job, state),
    )
    causes = [cause_dict(c) for c in result.causes]
    starts_now = result.estimated_start is not None and result.estimated_start <= state.ts + SOONER
    if not causes and starts_now and job.reason != Reason.NONE:
        causes.append(_stale(job))
    answer.update(
        causes=causes,
        estimated_start=when(result.estimated_start),
        suggestions=[
            {"message": s.message, "change": s.change, "estimated_start": when(s.estimated_start)}
            for s in result.suggestions
        ],
    )
    return answer


def cause_dict(cause: Cause) -> dict:
    return {
        "code": cause.code,
        "message": cause.message,
        "limit": cause.limit,
        "in_use": cause.in_use,
        "requested": cause.requested,
    }


def _stale(job: Job) -> dict:
    """The last pass held it for a reason that no longer holds: say so, and that the next pass starts it."""
    from jobs.selectors import REASON_MESSAGES

    template = REASON_MESSAGES.get(job.reason, "waiting ({reason})")
    said = template.format(partition=job.partition.name, reason=job.reason)
    return {
        "code": job.reason,
        "message": f"at the last scheduling pass {said}; that no longer holds, so the next pass should start it",
        "limit": None,
        "in_use": None,
        "requested": job.tres,
    }


def alternative_partitions(job: Job, state: PoolState) -> list[str]:
    """Partitions the job's group may use whose MaxTime admits its time limit."""
    allowed = [p.name for p in job.group.allowed_partitions.all()] or list(state.partitions)
    return [
        name
        for name in allowed
        if name != job.partition.name
        and name in state.partitions
        and (state.partitions[name].max_time is None or job.time_limit <= state.partitions[name].max_time)
    ]


# --- sprio ---------------------------------------------------------------------------------------------------------


def priority_factors(job: Job, state: PoolState | None = None) -> dict:
    """``sprio -l -j ID``: the job's priority and each factor, raw (0..1) and weighted, with its fair-share inputs.

    A pending job's age counts until now; a job that started is shown as it stood when it started.
    """
    state = state or load_state()
    request = request_for(job, state.chains)
    at = state.now if job.state == JobState.PENDING else (job.started_at or job.ended_at or state.now)
    prioritizer = Prioritizer(state.priority, at.timestamp(), state.policy)
    factors = prioritizer.factors(request)
    weights = state.policy.weights
    weighted = factors.weighted(weights)
    raw = {
        "age": factors.age,
        "fairshare": factors.fairshare,
        "job_size": factors.job_size,
        "partition": factors.partition,
    }
    leaf = request.associations[-1] if request.associations else None
    return {
        "job_id": job.pk,
        "priority": prioritizer.priority(request),
        "factors": {
            name: {"factor": round(raw[name], 6), "weight": getattr(weights, name), "value": round(weighted[name], 2)}
            for name in raw
        },
        "fairshare": {
            "association": state.limits[leaf].name if leaf in state.limits else leaf,
            "usage": round(state.fairshare_usage.get(leaf, 0.0), 1),
            "tenant_usage": round(state.fairshare_usage.get(request.associations[0], 0.0), 1),
            "half_life_seconds": state.policy.half_life,
        },
    }


def queue_priorities(jobs: QuerySet[Job]) -> dict[int, int]:
    """Priority of each job of a queryset now (``squeue -o %Q``): one state load and one query for all of them."""
    state = load_state()
    prioritizer = Prioritizer(state.priority, state.ts, state.policy)
    return {row[0]: prioritizer.priority(request_from_row(row, state.chains)) for row in job_rows(jobs)}
