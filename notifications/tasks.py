"""Celery tasks of notifications: thin, idempotent, acks_late (style.md §3)."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from notifications import producers, sending

STALL_GRACE = timedelta(minutes=5)


@shared_task(acks_late=True, ignore_result=True)
def deliver(delivery_id: int, number: int = 1) -> None:
    wait = sending.attempt(delivery_id, number)
    if wait is not None:
        # Exponential backoff: the next attempt is its own message, claimed by number, so a duplicate is a no-op.
        deliver.apply_async((delivery_id, number + 1), countdown=wait)


@shared_task(acks_late=True, ignore_result=True)
def retry_stalled() -> None:
    """Repair drift: re-enqueue attempts whose message was lost (worker died, broker restarted)."""
    for delivery_id, attempts in sending.stalled(timezone.now(), STALL_GRACE):
        deliver.delay(delivery_id, attempts + 1)


@shared_task(acks_late=True, ignore_result=True)
def job_changed(job_id: int, from_state: str, to_state: str) -> None:
    producers.job_changed(job_id=job_id, from_state=from_state, to_state=to_state)


@shared_task(acks_late=True, ignore_result=True)
def job_idle(job_id: int, minutes: int, utilisation: float, action: str) -> None:
    producers.job_idle(job_id=job_id, minutes=minutes, utilisation=utilisation, action=action)


@shared_task(acks_late=True, ignore_result=True)
def check_thresholds() -> None:
    producers.check_thresholds()
