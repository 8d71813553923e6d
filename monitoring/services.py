"""Monitoring's writes: idle episodes (flag, cancel by policy, end) and rollups with retention. Atomic and audited."""

from __future__ import annotations

import logging
import math
from datetime import UTC, datetime
from types import SimpleNamespace

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max, Min

from jobs.models import Job
from jobs.services import job_cancel
from monitoring import conf, core, idle
from monitoring.models import MINUTE, RAW, TEN_MINUTES, IdleAction, IdleEpisode, IdlePolicy, MetricSample
from monitoring.rules import percent
from monitoring.sampling import to_point, to_row
from monitoring.signals import accelerators_idle
from tenants.services import audit
from vocab.states import JobState

log = logging.getLogger(__name__)


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


# --- idle accelerators ------------------------------------------------------------------------------------------


def policy_for(tenant_id: int, policies: dict[int, IdlePolicy]) -> idle.Policy:
    """The tenant's policy, its empty fields filled from AIPOOL_IDLE_THRESHOLD / AIPOOL_IDLE_MINUTES."""
    row = policies.get(tenant_id)
    threshold = conf.idle_threshold()
    minutes = conf.idle_minutes()
    if row is None:
        return idle.Policy(threshold=threshold, minutes=minutes)
    return idle.Policy(
        threshold=threshold if row.threshold_percent is None else row.threshold_percent / 100.0,
        minutes=minutes if row.minutes is None else row.minutes,
        cancel=row.action == IdleAction.CANCEL,
        grace_minutes=row.grace_minutes,
    )


def evaluate_idle(*, now: float) -> dict[str, int]:
    """Flag, cancel or end idle episodes of every running job with accelerators; close episodes of ended jobs."""
    IdleEpisode.objects.open().exclude(job__state=JobState.RUNNING).update(ended_at=_at(now))
    jobs = {j.pk: j for j in Job.objects.running().filter(accelerators_per_node__gt=0).select_related("tenant")}
    policies = {p.tenant_id: p for p in IdlePolicy.objects.filter(tenant_id__in={j.tenant_id for j in jobs.values()})}
    rules = {job_id: policy_for(job.tenant_id, policies) for job_id, job in jobs.items()}
    period = conf.sample_seconds()
    longest = max(((r.minutes + r.grace_minutes) * 60 for r in rules.values()), default=0) + 3 * period
    series = _utilisation_series(list(jobs), since=now - longest, period=period)
    episodes = {e.job_id: e for e in IdleEpisode.objects.open().filter(job_id__in=list(jobs))}
    counts = {idle.FLAG: 0, idle.CANCEL: 0, idle.END: 0}
    for job_id, job in jobs.items():
        episode = episodes.get(job_id)
        open_view = None
        if episode is not None:
            cancel_at = episode.cancel_at.timestamp() if episode.cancel_at else None
            open_view = idle.OpenEpisode(episode.flagged_at.timestamp(), cancel_at)
        decision = idle.decide(series.get(job_id, []), open_view, rules[job_id], now)
        if decision.action == idle.FLAG:
            counts[idle.FLAG] += bool(flag_idle(job=job, decision=decision, policy=rules[job_id], now=now))
        elif decision.action == idle.CANCEL:
            counts[idle.CANCEL] += cancel_idle(job=job, episode=episode, decision=decision, now=now)
        elif decision.action == idle.END:
            counts[idle.END] += IdleEpisode.objects.filter(pk=episode.pk, ended_at__isnull=True).update(
                ended_at=_at(now)
            )
    return counts


def _utilisation_series(job_ids: list[int], *, since: float, period: float) -> dict[int, list[tuple[float, float]]]:
    rows = (
        MetricSample.objects.filter(job_id__in=job_ids, resolution=RAW, ts__gte=_at(since))
        .exclude(utilisation=None)
        .order_by("ts")
        .values_list("job_id", "rank", "ts", "utilisation")
    )
    points: dict[int, list[core.Point]] = {}
    for job_id, rank, ts, utilisation in rows:
        points.setdefault(job_id, []).append(core.Point(rank=rank, at=ts.timestamp(), utilisation=utilisation))
    return {job_id: core.slot_means(job_points, period) for job_id, job_points in points.items()}


def flag_idle(*, job: Job, decision: idle.Decision, policy: idle.Policy, now: float) -> IdleEpisode | None:
    """Open an idle episode and tell subscribers once, after commit; None if one is open already (a rival worker)."""
    stretch = decision.stretch
    try:
        with transaction.atomic():
            episode = IdleEpisode.objects.create(
                job=job,
                idle_since=_at(stretch.since),
                flagged_at=_at(now),
                utilisation=stretch.mean,
                threshold=policy.threshold,
                accelerators=job.nodes * job.accelerators_per_node,
                cancel_at=_at(decision.cancel_at) if decision.cancel_at else None,
            )
            changes = {"utilisation": round(stretch.mean, 4), "minutes": round(stretch.minutes, 1)}
            if decision.cancel_at:
                changes["cancel_at"] = episode.cancel_at.isoformat()
            audit(actor=None, action="job.idle", target=job, tenant=job.tenant, changes=changes)
            _send_after_commit(job, stretch, "warned")
    except IntegrityError:
        return None
    return episode


def cancel_idle(*, job: Job, episode: IdleEpisode, decision: idle.Decision, now: float) -> int:
    """Cancel a job still idle after its warning's grace (tenant policy), once: a conditional UPDATE claims it."""
    stretch = decision.stretch
    who = f"aipool-monitor: accelerators idle ({percent(stretch.mean)} for {stretch.minutes:.0f} min)"
    try:
        with transaction.atomic():
            claimed = IdleEpisode.objects.filter(pk=episode.pk, ended_at__isnull=True, action="warned").update(
                action="cancelled", ended_at=_at(now)
            )
            if not claimed:
                return 0
            # job_cancel audits and records the cause; the monitor is no user, so it signs with a name only.
            job_cancel(user=SimpleNamespace(pk=None, username=who), job=job)
            _send_after_commit(job, stretch, "cancelled")
    except ValidationError:
        return 0  # the job ended meanwhile; raising out of the block rolled the claim back
    return 1


def _send_after_commit(job: Job, stretch: idle.IdleStretch, action: str) -> None:
    def send() -> None:
        # A subscriber's failure (a mail server down) is logged, never undoes the monitor's own record.
        results = accelerators_idle.send_robust(
            sender=IdleEpisode, job=job, minutes=int(stretch.minutes), utilisation=stretch.mean, action=action
        )
        for receiver, outcome in results:
            if isinstance(outcome, Exception):
                log.error("accelerators_idle receiver %r failed for job %s: %s", receiver, job.pk, outcome)

    transaction.on_commit(send)


# --- rollups and retention --------------------------------------------------------------------------------------

ROLLUPS = ((RAW, MINUTE), (MINUTE, TEN_MINUTES))
REROLL_MARGIN_S = 600  # late samples of slots just before the last rollup still get rolled up (duplicates ignored)


def rollup_and_expire(*, now: float) -> dict[str, int]:
    """Roll complete slots up (raw → 1 min → 10 min), then drop what is past each resolution's retention."""
    result = {}
    complete = {}
    for source, target in ROLLUPS:
        lag = conf.sample_seconds() if source == RAW else source
        complete[source] = math.floor((now - lag) / target) * target
        result[f"rolled_{target}"] = _rollup(source, target, until=complete[source])
    for resolution, keep in conf.retention_seconds().items():
        cutoff = now - keep
        if resolution in complete:
            cutoff = min(cutoff, complete[resolution])  # never drop samples that are not rolled up yet
        deleted, _ = MetricSample.objects.filter(resolution=resolution, ts__lt=_at(cutoff)).delete()
        result[f"deleted_{resolution}"] = deleted
    return result


def _rollup(source: int, target: int, *, until: float) -> int:
    latest = MetricSample.objects.filter(resolution=target).aggregate(at=Max("ts"))["at"]
    if latest is not None:
        start = latest.timestamp() - REROLL_MARGIN_S
    else:
        first = MetricSample.objects.filter(resolution=source).aggregate(at=Min("ts"))["at"]
        if first is None:
            return 0
        start = first.timestamp()
    samples = (
        MetricSample.objects.filter(resolution=source, ts__gte=_at(start), ts__lt=_at(until))
        .order_by("job_id", "rank", "ts")
        .iterator(chunk_size=2000)
    )
    made, job_id, points = 0, None, []
    for sample in samples:
        if sample.job_id != job_id and points:
            made += _write_rollup(job_id, points, target)
            points = []
        job_id = sample.job_id
        points.append(to_point(sample))
    if points:
        made += _write_rollup(job_id, points, target)
    return made


def _write_rollup(job_id: int, points: list[core.Point], target: int) -> int:
    rows = [to_row(job_id, point, target, target) for point in core.rollup(points, target)]
    return len(MetricSample.objects.bulk_create(rows, ignore_conflicts=True))


# --- Celery latency ---------------------------------------------------------------------------------------------


def record_probe(*, name: str, enqueued_at: float, started_at: float) -> None:
    """Keep the latest enqueue → start delay (a retried probe simply overwrites it)."""
    from monitoring.models import CeleryProbe

    CeleryProbe.objects.update_or_create(
        name=name,
        defaults={
            "enqueued_at": _at(enqueued_at),
            "started_at": _at(started_at),
            "latency_seconds": max(0.0, started_at - enqueued_at),
        },
    )
