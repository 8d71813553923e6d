"""Celery tasks: thin, idempotent, safe to run twice (style.md §3). The logic lives in services and jobs.runs."""

from __future__ import annotations

from celery import shared_task

from cluster.backends.base import BackendUnavailable


@shared_task(acks_late=True, ignore_result=True)
def schedule_pass() -> list[int]:
    from jobs.runs import launch_started
    from jobs.scheduling import run_pass

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
    from jobs.runs import launch_started, reconcile_running
    from jobs.scheduling import run_pass

    summary = reconcile_running()
    started = run_pass()
    launch_started(started)
    summary["started"] = len(started)
    return summary
