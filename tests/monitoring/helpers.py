"""Monitoring test helpers: a backend whose readings the test writes, and jobs put in RUNNING without processes."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from cluster.backends.base import TaskUsage
from jobs.models import Job
from jobs.scheduling import run_pass
from monitoring.models import IdleEpisode, IdlePolicy, MetricSample
from tests.jobs.helpers import submit


class FakeBackend:
    """Hands out the readings and SDK records a test set; counts calls."""

    name = "fake"

    def __init__(self):
        self.readings: list[TaskUsage] = []
        self.steps: dict[int, list[dict]] = {}
        self.calls = 0

    def usage(self, backend_job_id):
        self.calls += 1
        return list(self.readings)

    def step_metrics(self, backend_job_id, *, since, limit_bytes=1 << 16):
        return {rank: [r for r in records if r["time"] > since] for rank, records in self.steps.items()}


def running_job(user, group, *, started_at: float, **fields) -> Job:
    """A job in RUNNING as the scheduler leaves it, with a start time the test chooses. Its backend id names no run
    directory, so a cancel reaches the local backend and finds nothing to stop; tests sample it with FakeBackend."""
    job = submit(user, group, **fields)
    run_pass()
    Job.objects.filter(pk=job.pk).update(
        backend="local", backend_job_id=f"{job.pk}.0", started_at=datetime.fromtimestamp(started_at, UTC)
    )
    job.refresh_from_db()
    assert job.state == "RUNNING"
    return job


def usage(at: float, cpu: float, *, rank: int = 0, swap: int = 0, rss: int = 1 << 30) -> TaskUsage:
    return TaskUsage(rank=rank, node="node1", at=at, cpu_seconds=cpu, rss_bytes=rss, swap_bytes=swap)


def populate(world) -> None:
    """One row of every monitoring model for each tenant, for the scoping walkers."""
    now = time.time()
    for user, group in ((world.alice, world.ai_team), (world.mallory, world.rivals)):
        job = submit(user, group, name="monitored")
        at = datetime.fromtimestamp(now, UTC)
        MetricSample.objects.create(job=job, rank=0, slot=int(now // 10), ts=at, utilisation=0.5)
        IdleEpisode.objects.create(
            job=job, idle_since=at, flagged_at=at, utilisation=0.0, threshold=0.1, accelerators=1
        )
    for tenant in (world.acme, world.globex):
        IdlePolicy.objects.create(tenant=tenant)
