"""Celery tasks: thin, idempotent, safe to run twice (style.md §3). The logic lives in services and jobs.runs."""

from __future__ import annotations

from celery import shared_task

from cluster.backends.base import BackendUnavailable


def _backend_schedules_itself() -> bool:
    from cluster.backends.registry import get_backend

    return get_backend().schedules_itself


@shared_task(bind=True, acks_late=True, ignore_result=True)
def schedule_pass(self) -> list[int]:
    from jobs.runs import dispatch_to_self_scheduling_backend, launch_started
    from jobs.scheduling import run_pass, wait_for_min_interval

    if _backend_schedules_itself():
        # Slurm places jobs itself: hand the pending ones over instead of allocating them here.
        return dispatch_to_self_scheduling_backend()
    if not (self.request.called_directly or self.request.is_eager):
        # In a worker only: run inline (tests, AIPOOL_CELERY_EAGER) the task is part of a request, which must not
        # sleep, and has no burst to gather.
        wait_for_min_interval()
    started = run_pass()
    launch_started(started)
    return started


@shared_task(
    bind=True,
    acks_late=True,
    ignore_result=True,
    autoretry_for=(BackendUnavailable,),
    retry_backoff=1,
    retry_backoff_max=60,
    max_retries=8,
)
def launch_job(self, job_id: int, run: int) -> str:
    from jobs.runs import launch

    return launch(job_id=job_id, run=run, final_attempt=self.request.retries >= self.max_retries)


@shared_task(acks_late=True, ignore_result=True, autoretry_for=(BackendUnavailable,), retry_backoff=1, max_retries=8)
def cancel_on_backend(backend: str, backend_job_id: str) -> None:
    from cluster.backends.registry import get_backend

    get_backend(backend).cancel(backend_job_id)


@shared_task(acks_late=True, ignore_result=True)
def reconcile() -> dict:
    """Periodic: sync backend state into the database, relaunch lost launches, then schedule what freed up."""
    from jobs.runs import (
        dispatch_to_self_scheduling_backend,
        launch_started,
        reconcile_running,
        reconcile_self_scheduled,
    )
    from jobs.scheduling import run_pass

    if _backend_schedules_itself():
        summary = reconcile_self_scheduled()
        summary["dispatched"] = len(dispatch_to_self_scheduling_backend())
        return summary
    summary = reconcile_running()
    started = run_pass()
    launch_started(started)
    summary["started"] = len(started)
    return summary


@shared_task(acks_late=True, ignore_result=True)
def sync_backend_limits() -> dict:
    """After a limit, group or membership change, and periodically: repair the drift between aipool's limits and
    the backend's associations (Slurm). A backend that is down is left for the next run; nothing is retried here."""
    from jobs.slurm_sync import sync

    if not _backend_schedules_itself():
        return {"skipped": "the backend enforces no limits of its own"}
    return sync().summary()
