"""Signals other apps listen to (notifications), so jobs imports none of them."""

from django.db import transaction
from django.dispatch import Signal

# Sent after commit when a job changed state. kwargs: job (jobs.Job), from_state (str), to_state (str).
job_state_changed = Signal()


def send_state_changed_after_commit(job, from_state: str, to_state: str) -> None:
    transaction.on_commit(
        lambda: job_state_changed.send(sender=type(job), job=job, from_state=from_state, to_state=to_state)
    )
