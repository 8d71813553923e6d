"""Celery tasks of the gateway app: thin (style.md §3); the work is in gateway.autoscaling."""

from __future__ import annotations

import time

from celery import shared_task


@shared_task(acks_late=True, ignore_result=True)
def autoscale() -> dict:
    """Beat, every AIPOOL_AUTOSCALE_SECONDS: one decision per scaling service. Safe to run twice: a duplicate run
    within half a period claims nothing (gateway.services.claim_decision)."""
    from gateway.autoscaling import run_autoscaler

    decided = run_autoscaler(now=time.time())
    return {str(service_id): desired for service_id, desired in decided.items()}
