"""Measured accelerator utilisation per job, from the monitoring app's samples.

Monitoring keeps ``MetricSample.utilisation`` (0..1: NVML or Slurm gres telemetry, or the CPU stand-in where a pool
has none) raw for a short while and rolled up to 1 and 10 minutes for longer. A job's mean is taken at the coarsest
resolution it has (10-minute rollups outlive the raw samples); a job without samples is "not measured".

If monitoring offers ``monitoring.selectors.mean_accelerator_utilisation(job_ids) -> {job_id: 0..1}``, that wins.
"""

from __future__ import annotations

import importlib

from django.db.models import Avg, QuerySet


def mean_utilisation(jobs: QuerySet) -> dict[int, float]:
    """{job id: mean utilisation 0..1} for the jobs of `jobs` that monitoring sampled."""
    try:
        source = getattr(importlib.import_module("monitoring.selectors"), "mean_accelerator_utilisation", None)
    except ImportError:
        source = None
    if source is not None:
        measured = source(list(jobs.values_list("pk", flat=True))) or {}
    else:
        measured = _from_samples(jobs)
    return {int(job_id): min(1.0, max(0.0, float(value))) for job_id, value in measured.items() if value is not None}


def _from_samples(jobs: QuerySet) -> dict[int, float]:
    try:
        from monitoring.models import MetricSample
    except ImportError:
        return {}
    best: dict[int, tuple[int, float]] = {}
    rows = (
        # A subquery, not a list of ids: a report over 20,000 jobs sends one short statement.
        MetricSample.objects.filter(job__in=jobs.order_by().values("pk"), utilisation__isnull=False)
        .values("job_id", "resolution")
        .annotate(mean=Avg("utilisation"))
        .order_by()
    )
    for row in rows:
        current = best.get(row["job_id"])
        if current is None or row["resolution"] > current[0]:
            best[row["job_id"]] = (row["resolution"], row["mean"])
    return {job_id: mean for job_id, (_, mean) in best.items()}
