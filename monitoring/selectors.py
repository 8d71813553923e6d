"""Reads: a job's health (the seed's three rules on its latest samples) and its metric series for charts.

Callers pass a job they got from ``Job.objects.visible_to(user)``: scoping happens there, once.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from jobs.models import Job
from monitoring import conf, rules
from monitoring.models import MINUTE, RAW, TEN_MINUTES, IdleEpisode, MetricSample
from vocab.states import JobState

RESOLUTION_NAMES = {RAW: "raw", MINUTE: "1m", TEN_MINUTES: "10m"}
RESOLUTION_BY_NAME = {name: value for value, name in RESOLUTION_NAMES.items()}
MAX_POINTS = 5000
STAND_IN_NOTE = (
    "No accelerator telemetry on this pool: CPU utilisation stands in for accelerator utilisation "
    "(one fully busy CPU core counts as one busy accelerator)."
)
TASK_FIELDS = (
    "utilisation", "cpu_cores", "accel_util", "accel_memory_bytes", "rss_bytes", "swap_bytes", "swap_rate",
    "step_time_s", "comm_share", "compute_share", "data_share", "throughput",
)  # fmt: skip


def _latest_window(job: Job) -> tuple[int | None, list[MetricSample]]:
    """The samples of the job's last few slots, at the finest resolution that still has any (raw expires first)."""
    samples = MetricSample.objects.filter(job=job)
    for resolution in (RAW, MINUTE, TEN_MINUTES):
        latest = samples.filter(resolution=resolution).order_by("-ts").values_list("ts", flat=True).first()
        if latest is None:
            continue
        span = max(3 * conf.sample_seconds(), 30.0) if resolution == RAW else 0
        window = samples.filter(resolution=resolution, ts__gte=latest - timedelta(seconds=span))
        return resolution, list(window.order_by("ts", "rank"))
    return None, []


def _mean(values) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _window(job: Job, samples: list[MetricSample]) -> rules.Window:
    latest_by_rank = {s.rank: s for s in samples}.values()
    swaps = [s.swap_bytes for s in latest_by_rank if s.swap_bytes is not None]
    rates = [s.swap_rate for s in samples if s.swap_rate is not None]
    return rules.Window(
        utilisation=_mean(s.utilisation for s in samples),
        utilisation_source=utilisation_source(job, samples),
        comm_share=_mean(s.comm_share for s in samples),
        data_share=_mean(s.data_share for s in samples),
        step_time_s=_mean(s.step_time_s for s in samples),
        swap_bytes=sum(swaps) if swaps else None,
        swap_rate=max(rates) if rates else None,
        samples=len(samples),
    )


def utilisation_source(job: Job, samples) -> str:
    if any(s.accel_util is not None for s in samples):
        return "slurm" if job.backend == "slurm" else "nvml"
    return "cpu"


def _shape(job: Job) -> rules.Shape:
    return rules.Shape(
        nodes=job.nodes,
        accelerators=job.nodes * job.accelerators_per_node,
        switches=len(job.switches or []),
        topology_aware=job.topology_aware,
        memory_per_node_mb=job.memory_per_node,
    )


def job_health(job: Job) -> dict:
    """The health panel's content: each rule with value, status and advice; per-task numbers; the idle episode."""
    resolution, samples = _latest_window(job)
    window = _window(job, samples)
    results = rules.evaluate(window, _shape(job))
    latest = {s.rank: s for s in samples}
    source = window.utilisation_source
    return {
        "job_id": job.pk,
        "state": job.state,
        "status": rules.overall(results),
        "measured_at": samples[-1].ts if samples else None,
        "resolution": RESOLUTION_NAMES.get(resolution),
        "utilisation_source": source,
        "note": STAND_IN_NOTE if source == "cpu" else "",
        "rules": [r.as_dict() for r in results],
        "tasks": [_task(s) for s in latest.values()],
        "idle": _idle(job),
        "sampling_seconds": conf.sample_seconds(),
        "active": job.state in (JobState.PENDING, JobState.RUNNING),
    }


def _task(sample: MetricSample) -> dict:
    return {"rank": sample.rank, "node": sample.node, "at": sample.ts, **{f: getattr(sample, f) for f in TASK_FIELDS}}


def _idle(job: Job) -> dict | None:
    episode = IdleEpisode.objects.filter(job=job).order_by("-flagged_at").first()
    if episode is None:
        return None
    return {
        "flagged": episode.ended_at is None or episode.action == "cancelled",
        "idle_since": episode.idle_since,
        "flagged_at": episode.flagged_at,
        "ended_at": episode.ended_at,
        "utilisation": episode.utilisation,
        "threshold": episode.threshold,
        "action": episode.action,
        "cancel_at": episode.cancel_at,
    }


def job_series(job: Job, *, resolution: str = "auto", since: datetime | None = None, rank: int | None = None) -> dict:
    """The job's samples oldest first (at most MAX_POINTS, the newest kept), for charts and the API."""
    chosen = _resolution(job, resolution)
    samples = MetricSample.objects.filter(job=job, resolution=chosen)
    if since is not None:
        samples = samples.filter(ts__gte=since)
    if rank is not None:
        samples = samples.filter(rank=rank)
    rows = list(samples.order_by("-ts", "rank")[:MAX_POINTS])
    rows.reverse()
    return {
        "job_id": job.pk,
        "resolution": RESOLUTION_NAMES[chosen],
        "utilisation_source": utilisation_source(job, rows),
        "points": [{"ts": s.ts, "rank": s.rank, **{f: getattr(s, f) for f in TASK_FIELDS}} for s in rows],
    }


def _resolution(job: Job, name: str) -> int:
    if name != "auto":
        return RESOLUTION_BY_NAME[name]
    present = set(MetricSample.objects.filter(job=job).order_by().values_list("resolution", flat=True).distinct())
    return next((r for r in (RAW, MINUTE, TEN_MINUTES) if r in present), RAW)
