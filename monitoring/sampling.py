"""Take one sample of every running job: backend counters and SDK step records in, MetricSample rows out.

Idempotent: a sample's slot (unix time // AIPOOL_MONITOR_SECONDS) is unique per task, so a task that runs twice in
one period (a retry, two beats) writes nothing the second time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime

from cluster.backends.base import BackendUnavailable, ClusterBackend
from cluster.backends.registry import get_backend
from jobs.models import Job
from monitoring import conf, core
from monitoring.models import RAW, MetricSample

log = logging.getLogger(__name__)
PREVIOUS_LOOKBACK_S = 3600  # older readings are not worth a scan: the job's start is then the reference


def sample_running_jobs(*, backend_for: Callable[[str], ClusterBackend] | None = None) -> dict:
    """Sample every running job once; returns counts. `backend_for` lets tests hand in a fake backend."""
    backend_for = backend_for or (lambda name: get_backend(name or None))
    period = conf.sample_seconds()
    jobs = list(
        Job.objects.running()
        .exclude(backend_job_id="")
        .only("id", "backend", "backend_job_id", "started_at", "accelerators_per_node")
    )
    previous = _previous_readings([job.pk for job in jobs], since=time.time() - PREVIOUS_LOOKBACK_S)
    rows, skipped = [], 0
    for job in jobs:
        try:
            points = job_points(job, backend_for(job.backend), previous)
        except BackendUnavailable as exc:
            log.warning("monitoring: job %s not sampled: %s", job.pk, exc)
            skipped += 1
            continue
        except Exception:
            # One job's unreadable counters (sstat refusing a step, a run directory half gone) must not cost every
            # other job its sample.
            log.exception("monitoring: job %s not sampled", job.pk)
            skipped += 1
            continue
        rows.extend(to_row(job.pk, point, RAW, period) for point in points)
    created = MetricSample.objects.bulk_create(rows, ignore_conflicts=True)
    return {"jobs": len(jobs), "samples": len(created), "skipped": skipped}


def job_points(job: Job, backend: ClusterBackend, previous: dict) -> list[core.Point]:
    readings = backend.usage(job.backend_job_id)
    if not readings:
        return []
    started = job.started_at.timestamp() if job.started_at else None
    references = {r.rank: previous.get((job.pk, r.rank)) or _from_start(started) for r in readings}
    since = min((ref.at for ref in references.values() if ref is not None), default=started or 0.0)
    steps = backend.step_metrics(job.backend_job_id, since=since)
    points = []
    for reading in readings:
        reference = references[reading.rank]
        point = core.derive(reading, reference, accelerators=job.accelerators_per_node)
        after = reference.at if reference is not None else since
        records = [r for r in steps.get(reading.rank, []) if r["time"] > after]
        points.append(core.with_steps(point, core.step_summary(records)))
    return points


def _from_start(started: float | None) -> core.Previous | None:
    # Before the first reading, the job's start is a reading of zero CPU time: the first sample already has a rate.
    return None if started is None else core.Previous(at=started, cpu_seconds=0.0, swap_bytes=0)


def _previous_readings(job_ids: list[int], *, since: float) -> dict[tuple[int, int], core.Previous]:
    rows = (
        MetricSample.objects.filter(job_id__in=job_ids, resolution=RAW, ts__gte=datetime.fromtimestamp(since, UTC))
        .order_by("ts")
        .values_list("job_id", "rank", "ts", "cpu_seconds", "swap_bytes")
    )
    return {(job_id, rank): core.Previous(ts.timestamp(), cpu, swap) for job_id, rank, ts, cpu, swap in rows}


def to_row(job_id: int, point: core.Point, resolution: int, period: float) -> MetricSample:
    length = resolution or period
    return MetricSample(
        job_id=job_id,
        rank=point.rank,
        resolution=resolution,
        slot=int(point.at // length),
        ts=datetime.fromtimestamp(point.at, UTC),
        **{name: getattr(point, name) for name in core.POINT_FIELDS},
    )


def to_point(sample: MetricSample) -> core.Point:
    return core.Point(
        rank=sample.rank, at=sample.ts.timestamp(), **{name: getattr(sample, name) for name in core.POINT_FIELDS}
    )
