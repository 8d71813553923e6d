"""Signal receivers: each hands the event to a Celery task and returns, so the sender's work never waits on a mail
server or a webhook (and never fails because of one)."""

from __future__ import annotations

import logging

from django.dispatch import receiver

from jobs.signals import job_state_changed
from monitoring.signals import accelerators_idle
from vocab.states import FINAL_STATES, JobState

log = logging.getLogger(__name__)


def _enqueue(task, *args) -> None:
    try:
        task.delay(*args)
    except Exception:  # a broker outage must not break the job transition that sent the signal
        log.exception("notifications: could not enqueue %s%r", task.name, args)


@receiver(job_state_changed, dispatch_uid="notifications.job_state_changed")
def on_job_state_changed(sender, job, from_state: str, to_state: str, **kwargs) -> None:
    from notifications.tasks import job_changed

    # Only a start after waiting and an end can produce a notice: the other transitions of a burst of 1,000 jobs
    # must not put thousands of no-op messages in front of the scheduler's on the broker.
    if (from_state, to_state) == (JobState.PENDING, JobState.RUNNING) or to_state in FINAL_STATES:
        _enqueue(job_changed, job.pk, str(from_state), str(to_state))


@receiver(accelerators_idle, dispatch_uid="notifications.accelerators_idle")
def on_accelerators_idle(sender, job, minutes: int, utilisation: float, action: str, **kwargs) -> None:
    from notifications.tasks import job_idle

    _enqueue(job_idle, job.pk, int(minutes), float(utilisation), str(action))
