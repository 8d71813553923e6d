"""Running jobs on the backend: launch after allocation, and reconcile what the backend reports."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from cluster.backends.base import BackendUnavailable, LaunchSpec
from cluster.backends.registry import get_backend
from jobs.models import Job
from jobs.services import job_finish, transition
from vocab.states import FINAL_STATES, JobState, Reason

log = logging.getLogger(__name__)

# A RUNNING job without a backend id this long after allocation lost its launch task (worker died): launch again.
RELAUNCH_AFTER = timedelta(seconds=30)


def launch_spec(job: Job) -> LaunchSpec:
    runtime = job.runtime
    environment = {**(runtime.environment if runtime else {}), **job.environment}
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
