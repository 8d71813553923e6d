"""Celery tasks of monitoring: thin, idempotent, safe to retry (acks_late). The work is in sampling and services."""

from __future__ import annotations

import time

from celery import shared_task


@shared_task(acks_late=True, ignore_result=True)
def sample() -> dict:
    """Every AIPOOL_MONITOR_SECONDS: one sample of every running job, then idle-accelerator decisions."""
    from monitoring.sampling import sample_running_jobs
    from monitoring.services import evaluate_idle

    summary = sample_running_jobs()
    summary["idle"] = evaluate_idle(now=time.time())
    return summary


@shared_task(acks_late=True, ignore_result=True)
def rollup() -> dict:
    """Every minute: raw samples → 1-minute → 10-minute rollups, and retention."""
    from monitoring.services import rollup_and_expire

    return rollup_and_expire(now=time.time())


@shared_task(acks_late=True, ignore_result=True)
def send_latency_probe() -> None:
    """Beat starts this; the probe it enqueues measures how long a task waits for a worker."""
    latency_probe.delay(enqueued_at=time.time())


@shared_task(acks_late=True, ignore_result=True)
def latency_probe(enqueued_at: float) -> None:
    from monitoring.services import record_probe

    record_probe(name="celery", enqueued_at=enqueued_at, started_at=time.time())
