"""Drive jobs on the real Slurm by hand: what the worker's reconcile does, one round at a time."""

from __future__ import annotations

import time

from jobs.models import Job
from jobs.runs import dispatch_to_self_scheduling_backend, reconcile_self_scheduled
from jobs.services import job_submit
from jobs.spec import parse_job_spec


def submit(user, group, **fields) -> Job:
    data = {"name": "t", "nodes": 1, "accelerators_per_node": 1, "time_limit": "5", "command": "true", **fields}
    job, _ = job_submit(user=user, group=group, spec=parse_job_spec(data))
    return job


def tick() -> None:
    """One reconcile round of the worker with the Slurm backend: record what Slurm did, hand over what waits."""
    reconcile_self_scheduled()
    dispatch_to_self_scheduling_backend()


def drive_until(predicate, timeout: float = 60.0, interval: float = 0.3):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tick()
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"condition not reached within {timeout:g} s")


def in_state(job: Job, *states: str):
    def check():
        job.refresh_from_db()
        return job.state in states

    return check
