"""Drive the job machinery by hand, deterministically: schedule, launch, reconcile — no worker needed."""

import time

from jobs.models import Job
from jobs.runs import launch, reconcile_running
from jobs.scheduling import run_pass
from jobs.services import job_submit
from jobs.spec import parse_job_spec


def submit(user, group, **fields):
    data = {"name": "t", "nodes": 1, "accelerators_per_node": 1, "time_limit": "10", "command": "true", **fields}
    job, _ = job_submit(user=user, group=group, spec=parse_job_spec(data))
    return job


def tick() -> None:
    """One round of what the worker does: schedule, launch what was allocated, record what ended."""
    run_pass()
    for job in Job.objects.running().filter(backend_job_id=""):
        launch(job_id=job.pk, run=job.run_count)
    reconcile_running()


def drive_until(predicate, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tick()
        result = predicate()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"condition not reached within {timeout}s")


def ended(job):
    def check():
        job.refresh_from_db()
        return job.state not in ("PENDING", "RUNNING")

    return check
