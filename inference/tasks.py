"""Celery tasks: thin, idempotent, safe to run twice (style.md §3). The logic lives in inference.reconcile."""

from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=True, ignore_result=True)
def reconcile() -> dict:
    """Periodic (every 5 s): every service's replicas towards its desired count."""
    from inference.reconcile import reconcile_all

    return reconcile_all()


@shared_task(acks_late=True, ignore_result=True)
def reconcile_service(service_id: int) -> dict | None:
    """After an apply, a scale or a failure report: that service now rather than at the next beat."""
    from inference.reconcile import reconcile_service as run

    return run(service_id)
