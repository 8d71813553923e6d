"""Before submitting: would this job start now, and if not, why and when? Nothing is created.

The submit-time checks are ``job_submit``'s own (``jobs.services.job_submit_check``). "Now or later" is the
scheduler's own answer: the pure pass runs over the current pool with the job appended to the queue at its priority,
and when it would wait, the scheduler's explainer (the one behind ``GET jobs/{id}/explain/``) says why, when the plan
starts it, and which change to the request would start it sooner.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import PermissionDenied, ValidationError

from jobs.admission import Resolved
from jobs.scheduling import load_queue, load_state, tenant_key, when
from jobs.selectors import REASON_MESSAGES
from jobs.services import job_submit_check
from jobs.spec import JobSpec
from scheduler.core import schedule
from scheduler.explain import explain
from scheduler.model import JobRequest
from scheduler.priority import Prioritizer
from tenants.models import Group
from vocab.slurmtime import format_minutes
from vocab.tres import format_memory

# Larger than any real job id, so the hypothetical job sorts after every queued job submitted at the same instant.
HYPOTHETICAL_ID = 2**62


@dataclass
class Verdict:
    outcome: str  # "start", "wait" or "reject"
    headline: str
    details: list[str] = field(default_factory=list)
    errors: dict[str, list[str]] = field(default_factory=dict)
    reason: str = ""
    nodes: list[str] = field(default_factory=list)
    switches: list[str] = field(default_factory=list)
    estimated_start: datetime | None = None
    suggestions: list[dict] = field(default_factory=list)  # the explainer's changes that would start it sooner
    summary: str = ""  # the request with every default filled in, as the scheduler will see it


def preview_submission(*, user, group: Group, spec: JobSpec) -> Verdict:
    try:
        check = job_submit_check(user=user, group=group, spec=spec)
    except PermissionDenied as exc:
        return Verdict("reject", "You cannot submit this job", [str(exc)], errors={"group": [str(exc)]})
    except ValidationError as exc:
        errors = exc.message_dict if hasattr(exc, "error_dict") else {"__all__": exc.messages}
        details = [f"{name}: {m}" if name != "__all__" else m for name, ms in errors.items() for m in ms]
        return Verdict("reject", "Would be rejected: it can never run as asked", details, errors=errors)
    return dry_run(user=user, group=group, spec=spec, resolved=check.resolved)


def summarize(spec: JobSpec, resolved: Resolved) -> str:
    nodes = f"{spec.nodes} node{'s' if spec.nodes != 1 else ''}"
    text = (
        f"{nodes} × {spec.accelerators_per_node} accelerators, {resolved.cpus_per_node} CPUs and "
        f"{format_memory(resolved.memory_per_node)} memory per node, for {format_minutes(spec.time_limit)} "
        f"on partition {resolved.partition.name}"
    )
    if spec.topology_aware:
        text += f", under at most {spec.max_switches or 1} leaf switch{'es' if (spec.max_switches or 1) != 1 else ''}"
    return text


def dry_run(*, user, group: Group, spec: JobSpec, resolved: Resolved) -> Verdict:
    verdict = _dry_run(user=user, group=group, spec=spec, resolved=resolved)
    verdict.summary = summarize(spec, resolved)
    return verdict


def _dry_run(*, user, group: Group, spec: JobSpec, resolved: Resolved) -> Verdict:
    state = load_state()
    queue, _ = load_queue(state)
    job = JobRequest(
        id=HYPOTHETICAL_ID,
        partition=resolved.partition.name,
        nodes=spec.nodes,
        accelerators_per_node=spec.accelerators_per_node,
        cpus_per_node=resolved.cpus_per_node,
        memory_per_node=resolved.memory_per_node,
        time_limit=spec.time_limit,
        associations=state.chains.get(group.pk, (tenant_key(group.tenant_id),)),
        user=user.username,
        submitted_at=state.ts,
        topology_aware=spec.topology_aware,
        max_switches=spec.max_switches,
    )
    job.priority = Prioritizer(state.priority, state.ts, state.policy).priority(job)
    queue.append(job)
    # The pass itself decides "now"; it takes what it allocates from the nodes and usage it gets, so it gets copies.
    decisions = schedule(
        copy.deepcopy(state.nodes),
        queue,
        state.limits,
        copy.deepcopy(state.usage),
        state.ts,
        running=state.running,
        policy=state.policy,
    )
    start = next((s for s in decisions.starts if s.job_id == HYPOTHETICAL_ID), None)
    if start is not None:
        switches = list(start.switches)
        on = f"on {', '.join(start.allocation)}" + (f" (switch {', '.join(switches)})" if switches else "")
        return Verdict("start", "Would start now", [on], nodes=list(start.allocation), switches=switches)
    block = next((b for b in decisions.blocked if b.job_id == HYPOTHETICAL_ID), None)
    result = explain(
        copy.deepcopy(state.nodes),
        queue,
        state.limits,
        copy.deepcopy(state.usage),
        state.ts,
        HYPOTHETICAL_ID,
        running=state.running,
        policy=state.policy,
        ctx=state.priority,
        partitions=_other_partitions(group, spec, resolved, state),
    )
    reason = block.reason if block is not None else result.reason
    details = [cause.message for cause in result.causes]
    if not details:
        details = [(block.detail if block else "") or _plain(reason, resolved.partition.name)]
    return Verdict(
        "wait",
        f"Would wait: {reason}",
        details,
        reason=reason,
        estimated_start=when(result.estimated_start),
        suggestions=[
            {"message": s.message, "change": s.change, "estimated_start": when(s.estimated_start)}
            for s in result.suggestions
        ],
    )


def _other_partitions(group: Group, spec: JobSpec, resolved: Resolved, state) -> list[str]:
    """Partitions the group may use whose MaxTime admits the time limit: the explainer tries them as suggestions."""
    allowed = [p.name for p in group.allowed_partitions.all()] or list(state.partitions)
    return [
        name
        for name in allowed
        if name != resolved.partition.name
        and name in state.partitions
        and (state.partitions[name].max_time is None or spec.time_limit <= state.partitions[name].max_time)
    ]


def _plain(reason: str, partition: str) -> str:
    return REASON_MESSAGES.get(reason, "waiting ({reason})").format(partition=partition, reason=reason)
