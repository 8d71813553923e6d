"""Running jobs on the backend: launch after allocation, and reconcile what the backend reports.

Two paths. A backend that runs what aipool's scheduler placed (local): `launch` after allocation, `reconcile_running`.
A backend that places jobs itself (Slurm, `schedules_itself`): pending jobs are handed over as they are
(`dispatch_to_self_scheduling_backend`), and `reconcile_self_scheduled` copies Slurm's state, reason, nodes and exit
code back into the job.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from cluster.backends.base import BackendStatus, BackendUnavailable, ClusterBackend, JobRejected, LaunchSpec
from cluster.backends.registry import get_backend
from cluster.models import PosixAccount
from jobs import hooks
from jobs.models import Job, SchedulerLock
from jobs.services import PASS_REQUEST_ROW, job_finish, transition
from vocab.states import FINAL_STATES, JobState, Reason, can_transition

log = logging.getLogger(__name__)

# A RUNNING job without a backend id this long after allocation lost its launch task (worker died): launch again.
RELAUNCH_AFTER = timedelta(seconds=30)


def launch_spec(job: Job) -> LaunchSpec:
    runtime = job.runtime
    environment = {**(runtime.environment if runtime else {}), **hooks.launch_environment(job), **job.environment}
    return LaunchSpec(
        job_id=job.pk,
        run=job.run_count,
        name=job.name,
        user=job.user.username,
        nodes=tuple(job.nodelist),
        accelerators={node: tuple(ix) for node, ix in job.allocation.items()},
        time_limit_seconds=job.time_limit * settings.AIPOOL_SECONDS_PER_MINUTE,
        command=job.command,
        script=job.script,
        environment={str(k): str(v) for k, v in environment.items()},
        prologue=runtime.prologue if runtime else "",
        partition=job.partition.name,
        account=job.group.name,
        cpus_per_node=job.cpus_per_node,
        memory_per_node_mb=job.memory_per_node,
        node_count=job.nodes,
        accelerators_per_node=job.accelerators_per_node,
        topology_aware=job.topology_aware,
        max_switches=job.max_switches,
    )


def launch(*, job_id: int, run: int, final_attempt: bool = False) -> str:
    """Start the allocated job on the backend once. A second call for the same run is a no-op."""
    job = Job.objects.select_related("user", "group", "partition", "runtime").filter(pk=job_id).first()
    if job is None or job.state != JobState.RUNNING or job.run_count != run or job.backend_job_id:
        return "noop"
    backend = get_backend()
    try:
        backend_job_id = backend.submit(launch_spec(job))
    except BackendUnavailable:
        if not final_attempt:
            raise
        with transaction.atomic():
            transition(job, JobState.NODE_FAIL, cause="backend unreachable, launch gave up", reason=Reason.NODE_FAIL)
        return "gave-up"
    recorded = Job.objects.filter(pk=job_id, state=JobState.RUNNING, run_count=run, backend_job_id="").update(
        backend=backend.name, backend_job_id=backend_job_id
    )
    if not recorded:
        # Cancelled or requeued while we launched: stop what we just started.
        current = Job.objects.filter(pk=job_id).values_list("backend_job_id", flat=True).first()
        if current != backend_job_id:
            backend.cancel(backend_job_id)
        return "raced"
    return backend_job_id


def launch_started(job_ids: list[int]) -> None:
    """Launch what a pass just allocated, in the same task: one broker message per pass instead of one per job.

    A launch that finds the backend down is handed to `launch_job` for retries with backoff; a worker that dies here
    leaves RUNNING jobs without a backend id, which reconcile relaunches after RELAUNCH_AFTER.
    """
    from jobs.tasks import launch_job

    for job_id, run in Job.objects.filter(pk__in=job_ids).values_list("pk", "run_count"):
        try:
            launch(job_id=job_id, run=run)
        except BackendUnavailable:
            launch_job.delay(job_id, run)


def reconcile_running() -> dict:
    """Bring RUNNING jobs in line with the backend: record ends, notice lost jobs, relaunch lost launches."""
    from jobs.tasks import launch_job

    running = list(Job.objects.running().only("pk", "state", "run_count", "backend", "backend_job_id", "started_at"))
    summary = {"ended": 0, "relaunched": 0}
    now = timezone.now()
    for job in running:
        if not job.backend_job_id and job.started_at and now - job.started_at > RELAUNCH_AFTER:
            launch_job.delay(job.pk, job.run_count)
            summary["relaunched"] += 1
    launched = [j for j in running if j.backend_job_id]
    if not launched:
        return summary
    try:
        statuses = get_backend().poll([j.backend_job_id for j in launched])
    except BackendUnavailable:
        log.warning("backend unreachable during reconcile; will try again")
        return summary
    for job in launched:
        status = statuses.get(job.backend_job_id)
        if status is None or status.state not in FINAL_STATES:
            continue
        with transaction.atomic():
            ended = datetime.fromtimestamp(status.ended_at, tz=UTC) if status.ended_at else None
            if job_finish(
                job=job,
                state=status.state,
                exit_code=status.exit_code,
                reason=_reason(status.state, status.reason),
                cause=f"backend: {status.reason or status.state.lower()}",
                ended_at=ended,
            ):
                summary["ended"] += 1
    return summary


def _reason(state: str, backend_reason: str) -> str:
    return {
        JobState.TIMEOUT: Reason.TIME_LIMIT,
        JobState.FAILED: Reason.NON_ZERO_EXIT,
        JobState.NODE_FAIL: Reason.NODE_FAIL,
    }.get(JobState(state), Reason.NONE)


# --- backends that schedule themselves (Slurm) ------------------------------------------------------------------

REASON_LENGTH = Job._meta.get_field("reason").max_length


def posix_identity(user) -> tuple[str, int | None]:
    """The POSIX account `user`'s jobs run as: the mapped one, else the account of the same name."""
    account = PosixAccount.objects.filter(user=user).values_list("username", "uid").first()
    return account if account else (user.username, None)


def dispatch(*, job_id: int, run: int, backend: ClusterBackend | None = None) -> str:
    """Hand one pending job to the backend, once: the row lock keeps two dispatchers apart, the backend's lookup
    by name covers a dispatcher that died between sbatch and recording the id. BackendUnavailable propagates."""
    backend = backend or get_backend()
    with transaction.atomic():
        job = (
            Job.objects.select_for_update(of=("self",))  # the runtime join is nullable: lock the job row only
            .select_related("user", "group", "partition", "runtime")
            .filter(pk=job_id)
            .first()
        )
        if job is None or job.state != JobState.PENDING or job.run_count != run or job.backend_job_id:
            return "noop"
        posix_user, posix_uid = posix_identity(job.user)
        spec = replace(launch_spec(job), posix_user=posix_user, posix_uid=posix_uid)
        try:
            backend_job_id = _submit_syncing_limits_once(backend, spec)
        except JobRejected as exc:
            transition(job, JobState.FAILED, cause=str(exc)[:200], reason=Reason.NONE)
            return "rejected"
        Job.objects.filter(pk=job.pk).update(backend=backend.name, backend_job_id=backend_job_id, reason=Reason.NONE)
    return backend_job_id


def _submit_syncing_limits_once(backend: ClusterBackend, spec: LaunchSpec) -> str:
    """A group or member added moments ago may not be in Slurm yet (the sync runs after commit, in another task):
    sync now and try once more before calling the job refused."""
    try:
        return backend.submit(spec)
    except JobRejected as exc:
        if not exc.limits_out_of_date:
            raise
        from jobs.slurm_sync import sync

        log.info("job %s: %s; syncing limits and trying again", spec.job_id, exc)
        sync(backend=backend)
        return backend.submit(spec)


def dispatch_to_self_scheduling_backend() -> list[int]:
    """Hand every pending job without a backend id to the backend, oldest first; returns the ids handed over.

    The backend being down stops the round at once (one timeout, not one per job) and marks the jobs still waiting
    with reason BackendUnavailable; the next reconcile tries again, so they go out by themselves when it is back.
    """
    # This pass stands in for the scheduler's: clear its "pass requested" flag so the next submit queues another.
    SchedulerLock.objects.filter(pk=PASS_REQUEST_ROW).update(pass_requested=False)
    backend = get_backend()
    waiting = list(
        Job.objects.pending().filter(backend_job_id="").order_by("submitted_at", "id").values_list("pk", "run_count")
    )
    dispatched = []
    for index, (job_id, run) in enumerate(waiting):
        try:
            result = dispatch(job_id=job_id, run=run, backend=backend)
        except BackendUnavailable as exc:
            log.warning("backend unreachable, %d jobs wait: %s", len(waiting) - index, exc)
            _mark_unavailable(Job.objects.filter(pk__in=[pk for pk, _ in waiting[index:]], backend_job_id=""))
            break
        if result not in ("noop", "rejected"):
            dispatched.append(job_id)
    return dispatched


def _mark_unavailable(jobs) -> None:
    jobs.filter(state__in=[JobState.PENDING, JobState.RUNNING]).exclude(reason=Reason.BACKEND_UNAVAILABLE).update(
        reason=Reason.BACKEND_UNAVAILABLE
    )


def reconcile_self_scheduled() -> dict:
    """Copy what the backend says of every active job it holds into the job: start, nodes, reason, end."""
    backend = get_backend()
    active = list(
        Job.objects.active()
        .filter(backend=backend.name)
        .exclude(backend_job_id="")
        .only("pk", "state", "reason", "run_count", "backend", "backend_job_id", "accelerators_per_node", "nodelist")
    )
    summary = {"started": 0, "ended": 0, "unavailable": False}
    if not active:
        return summary
    try:
        statuses = backend.poll([job.backend_job_id for job in active])
    except BackendUnavailable as exc:
        log.warning("backend unreachable during reconcile; jobs keep their state: %s", exc)
        _mark_unavailable(Job.objects.filter(pk__in=[job.pk for job in active]))
        summary["unavailable"] = True
        return summary
    for job in active:
        status = statuses.get(job.backend_job_id)
        if status is not None:
            for outcome in _apply_status(job, status):
                summary[outcome] += 1
    return summary


def _apply_status(job: Job, status: BackendStatus) -> list[str]:
    """Each step in its own transaction: a job row updated twice in one transaction has PostgreSQL re-check its
    foreign keys at commit (KEY SHARE on tenant and group), which deadlocks against job_submit's row locks."""
    if status.state == JobState.PENDING:
        _set_reason(job, status.reason)
        return []
    outcomes = []
    if job.state == JobState.PENDING and status.started_at is not None:
        with transaction.atomic():
            if _start(job, status):
                outcomes.append("started")
    if status.state == JobState.RUNNING:
        if job.state == JobState.RUNNING and not outcomes:
            _set_reason(job, Reason.NONE)
        return outcomes
    with transaction.atomic():
        if _end(job, status):
            outcomes.append("ended")
    return outcomes


def _set_reason(job: Job, backend_reason: str) -> None:
    reason = (backend_reason or Reason.NONE)[:REASON_LENGTH]
    if job.reason != reason:
        Job.objects.filter(pk=job.pk, state=job.state, run_count=job.run_count).update(reason=reason)


def _start(job: Job, status: BackendStatus) -> bool:
    at = datetime.fromtimestamp(status.started_at, tz=UTC)
    nodes = list(status.nodelist)
    return transition(
        job,
        JobState.RUNNING,
        cause=f"{job.backend} started it on {','.join(nodes) or 'its nodes'}",
        at=at,
        started_at=at,
        nodelist=nodes,
        # The backend places accelerators itself and does not say which: counts are what the portal shows.
        allocation={node: list(range(job.accelerators_per_node)) for node in nodes},
    )


def _end(job: Job, status: BackendStatus) -> bool:
    state = JobState(status.state)
    if job.state == JobState.PENDING and not can_transition(job.state, state):
        state = JobState.FAILED  # ended without ever starting, in a way only a started job can (TIMEOUT, OOM)
    detail = status.reason if status.reason not in ("", Reason.NONE) else state.lower()
    return job_finish(
        job=job,
        state=state,
        exit_code=status.exit_code,
        reason=_reason(state, status.reason),
        cause=f"{job.backend}: {detail}"[:200],
        ended_at=datetime.fromtimestamp(status.ended_at, tz=UTC) if status.ended_at else None,
    )


def backend_estimated_start(job: Job) -> datetime | None:
    """The backend's own start estimate for a pending job it holds (Slurm: what ``squeue --start`` shows), asked
    live; None when it has none, or for backends that do not place jobs themselves."""
    if job.state != JobState.PENDING or not job.backend_job_id or not job.backend:
        return None
    backend = get_backend(job.backend)
    if not backend.schedules_itself:
        return None
    try:
        status = backend.poll([job.backend_job_id]).get(job.backend_job_id)
    except BackendUnavailable:
        return None
    if status is None or status.estimated_start is None:
        return None
    return datetime.fromtimestamp(status.estimated_start, tz=UTC)
