"""Write operations on jobs (style.md §2): atomic, audited, Celery work enqueued after commit."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from jobs import hooks
from jobs.admission import Resolved, check_association_limits, resolve
from jobs.models import Job, JobEvent
from jobs.signals import send_state_changed_after_commit
from jobs.spec import JobSpec
from tenants.models import Group, Role, Tenant
from tenants.scoping import memberships_of
from tenants.services import audit
from vocab.states import FINAL_STATES, JobState, Reason, can_transition


class IdempotencyConflict(Exception):
    """The Idempotency-Key was used before with a different request body (HTTP 409)."""

    def __init__(self, job: Job):
        super().__init__(f"Idempotency-Key already used for job {job.pk} with a different request")
        self.job = job


def request_hash(*, group: Group, spec: JobSpec) -> str:
    body = json.dumps({"group": group.name, **spec.canonical()}, sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()


@dataclass(frozen=True)
class SubmitCheck:
    """What passed the submit-time checks: the resolved request and the association chain, tenant first."""

    resolved: Resolved
    chain: list[Tenant | Group]


def job_submit_check(*, user, group: Group, spec: JobSpec) -> SubmitCheck:
    """Every check ``job_submit`` makes, without creating anything: may `user` submit to `group`, can the request ever
    run (partition, node shape, MaxTime, runtime), does it alone exceed a limit up the tree, and would it pass
    GrpSubmitJobs now. Raises PermissionDenied or ValidationError (field → messages). Reads only: no lock is taken.
    """
    check = _static_checks(user=user, group=group, spec=spec)
    _enforce_submit_limit(check.chain)
    return check


def _static_checks(*, user, group: Group, spec: JobSpec) -> SubmitCheck:
    """The checks that do not count jobs: their answer cannot change while a submit runs."""
    _check_may_submit(user, group)
    resolved = resolve(group=group, spec=spec)
    chain = _association_chain(group)
    check_association_limits(chain=chain, spec=spec, resolved=resolved)
    return SubmitCheck(resolved=resolved, chain=chain)


def _association_chain(group: Group) -> list[Tenant | Group]:
    """The tenant, then the group's ancestors root first, then the group: read fresh, in one query."""
    names = [n for n in group.path.strip("/").split("/") if n]
    groups = Group.objects.filter(tenant_id=group.tenant_id, name__in=names).select_related("tenant").order_by()
    by_name = {g.name: g for g in groups}
    chain = [by_name[name] for name in names if name in by_name]
    if not chain:  # the group was deleted meanwhile
        raise ValidationError({"group": [f"group {group.name} no longer exists"]})
    return [chain[0].tenant, *chain]


def _check_may_submit(user, group: Group) -> None:
    if settings.AIPOOL_BACKEND == "local" and not settings.AIPOOL_LOCAL_BACKEND_OPEN and not user.is_staff:
        # The local backend runs commands as the portal's OS user: an operator may keep it to staff.
        raise PermissionDenied("the local backend is restricted to staff on this pool (AIPOOL_LOCAL_BACKEND_OPEN)")
    # The user's memberships are read once per request by the scoping layer (tenants.scoping): no query here.
    memberships = memberships_of(user)
    role = memberships.roles.get(group.tenant_id)
    if user.is_staff and role is None:
        return
    if role is None or group.pk not in memberships.group_tenants:
        raise PermissionDenied(f"you are not a member of group {group.name}")
    if role == Role.VIEWER:
        raise PermissionDenied(f"viewers cannot submit jobs (your role in {group.tenant.name} is viewer)")


def _enforce_submit_limit(chain, *, created: Job | None = None) -> None:
    """GrpSubmitJobs up the chain. With `created` (a job this transaction just inserted, so counted), race-free:
    the tenant's row is locked first, so every submit to the tenant counts after the one before it committed."""
    limited = [assoc for assoc in chain if assoc.grp_submit_jobs is not None]
    if not limited:
        return  # nothing is counted, so nothing needs the lock: submits of the tenant run in parallel
    if created is not None:
        # Taken last in the transaction and held only for the counts and the commit, not for the inserts.
        list(Tenant.objects.select_for_update().filter(pk=created.tenant_id).values_list("pk"))
    for assoc in limited:
        if isinstance(assoc, Group):
            subtree = Group.objects.filter(path__startswith=assoc.path).values("pk")
            # group IN (subtree): an index range on (group, state), not a LIKE on every active job's group row.
            active = Job.objects.active().filter(group__in=subtree).count()
        else:
            active = Job.objects.active().filter(tenant=assoc).count()
        others = active - 1 if created is not None else active
        if others + 1 > assoc.grp_submit_jobs:
            raise ValidationError(
                {
                    "group": [
                        f"{assoc.name} has {others} of {assoc.grp_submit_jobs} jobs pending or running (GrpSubmitJobs)"
                    ]
                }
            )


def job_submit(*, user, group: Group, spec: JobSpec, idempotency_key: str | None = None) -> tuple[Job, bool]:
    """Create a PENDING job; returns (job, created). Same key and body → the existing job, created False."""
    digest = request_hash(group=group, spec=spec)
    if idempotency_key:
        existing = Job.objects.filter(user=user, idempotency_key=idempotency_key).first()
        if existing is not None:
            return _replay(existing, digest)
    try:
        return _submit(user=user, group=group, spec=spec, idempotency_key=idempotency_key, digest=digest), True
    except IntegrityError:
        # A concurrent request with the same key won the race: answer like a replay.
        existing = Job.objects.filter(user=user, idempotency_key=idempotency_key).first()
        if existing is None:
            raise
        return _replay(existing, digest)


def _replay(existing: Job, digest: str) -> tuple[Job, bool]:
    if existing.request_hash != digest:
        raise IdempotencyConflict(existing)
    return existing, False


@transaction.atomic
def _submit(*, user, group: Group, spec: JobSpec, idempotency_key: str | None, digest: str) -> Job:
    check = _static_checks(user=user, group=group, spec=spec)
    resolved, tenant = check.resolved, check.chain[0]
    now = timezone.now()
    job = Job.objects.create(
        tenant=tenant,
        group=group,
        user=user,
        partition=resolved.partition,
        name=spec.name,
        nodes=spec.nodes,
        accelerators_per_node=spec.accelerators_per_node,
        cpus_per_node=resolved.cpus_per_node,
        memory_per_node=resolved.memory_per_node,
        time_limit=spec.time_limit,
        topology_aware=spec.topology_aware,
        max_switches=spec.max_switches,
        command=spec.command,
        script=spec.script,
        environment=spec.environment,
        runtime=resolved.runtime,
        eligible_at=now,
        idempotency_key=idempotency_key or None,
        request_hash=digest,
        reason=Reason.NONE,
    )
    event = JobEvent.objects.create(
        job=job, at=now, from_state="", to_state=JobState.PENDING, cause=f"submitted by {user.username}"
    )
    _attach_history(job, [event])
    audit(actor=user, action="job.submit", target=job, tenant=tenant)
    hooks.job_submitted(job=job, spec=spec, user=user)
    # Counted with the new job in place; over the limit, the transaction (job, event, audit) is rolled back.
    _enforce_submit_limit(check.chain, created=job)
    _after_commit_schedule()
    return job


def _attach_history(job: Job, events: list[JobEvent]) -> None:
    """Hand the new job back with its history as if prefetched: the submit answer shows it without reading it back."""
    history = JobEvent.objects.filter(job=job)
    history._result_cache, history._prefetch_done = events, True
    job._prefetched_objects_cache = {"events": history}


def _after_commit_schedule() -> None:
    transaction.on_commit(request_schedule_pass)


PASS_REQUEST_ROW = 2


def request_schedule_pass() -> None:
    """Queue a scheduling pass unless one is queued already (a conditional UPDATE claims the right to enqueue)."""
    from jobs.models import SchedulerLock
    from jobs.tasks import schedule_pass

    # Row 2 only carries the flag: row 1 is locked for a whole pass, and submits must not wait for it.
    # Under a burst the flag is almost always set already (a pass is queued): one read answers that. Reading it
    # true is as good as failing the claim, since a pass clears the flag before it reads the queue.
    requested = SchedulerLock.objects.filter(pk=PASS_REQUEST_ROW).values_list("pass_requested", flat=True).first()
    if requested:
        return
    claimed = SchedulerLock.objects.filter(pk=PASS_REQUEST_ROW, pass_requested=False).update(pass_requested=True)
    if claimed or requested is None:  # no flag row (a flushed test database): always enqueue
        schedule_pass.delay()


def transition(job: Job, to_state: str, *, cause: str, reason: str = Reason.NONE, **fields) -> bool:
    """Move `job` from the state it was read in to `to_state` with a conditional UPDATE; False if it moved meanwhile."""
    if not can_transition(job.state, to_state):
        raise ValueError(f"job {job.pk}: {job.state} → {to_state} is not a valid transition")
    now = fields.pop("at", None) or timezone.now()
    if to_state in FINAL_STATES:
        fields.setdefault("ended_at", now)
    updated = Job.objects.filter(pk=job.pk, state=job.state, run_count=job.run_count).update(
        state=to_state, reason=reason, **fields
    )
    if not updated:
        return False
    JobEvent.objects.create(job=job, at=now, from_state=job.state, to_state=to_state, reason=reason, cause=cause)
    send_state_changed_after_commit(job, job.state, to_state)
    job.state, job.reason = to_state, reason
    for key, value in fields.items():
        setattr(job, key, value)
    return True


@transaction.atomic
def job_cancel(*, user, job: Job) -> Job:
    job = Job.objects.select_for_update().get(pk=job.pk)
    if job.state in FINAL_STATES:
        raise ValidationError({"state": [f"job {job.pk} has already ended ({job.state})"]})
    backend_job_id = job.backend_job_id
    transition(job, JobState.CANCELLED, cause=f"cancelled by {user.username}")
    audit(actor=user, action="job.cancel", target=job, tenant=job.tenant)
    # Whatever the backend holds, running or (Slurm) still queued there, is stopped.
    if backend_job_id:
        from jobs.tasks import cancel_on_backend

        transaction.on_commit(lambda: cancel_on_backend.delay(job.backend, backend_job_id))
    _after_commit_schedule()
    return job


@transaction.atomic
def job_requeue(*, user, job: Job) -> Job:
    """Put a job back in the queue (``scontrol requeue``): a RUNNING job is stopped first; its next run is new."""
    job = Job.objects.select_for_update().get(pk=job.pk)
    if job.state == JobState.PENDING:
        raise ValidationError({"state": [f"job {job.pk} is already pending"]})
    backend, backend_job_id = job.backend, job.backend_job_id
    was_running = job.state == JobState.RUNNING
    transition(
        job,
        JobState.PENDING,
        cause=f"requeued by {user.username}",
        run_count=job.run_count + 1,
        allocation={},
        nodelist=[],
        switches=[],
        backend_job_id="",
        exit_code=None,
        started_at=None,
        ended_at=None,
        eligible_at=timezone.now(),
    )
    audit(actor=user, action="job.requeue", target=job, tenant=job.tenant)
    if was_running and backend_job_id:
        from jobs.tasks import cancel_on_backend

        transaction.on_commit(lambda: cancel_on_backend.delay(backend, backend_job_id))
    _after_commit_schedule()
    return job


def job_finish(
    *, job: Job, state: str, exit_code: int | None, reason: str, cause: str, ended_at: datetime | None
) -> bool:
    """Record the end of a run the backend reported (called by reconcile, inside its transaction)."""
    return transition(job, state, cause=cause, reason=reason, exit_code=exit_code, at=ended_at or timezone.now())
