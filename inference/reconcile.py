"""Replica reconcile (Celery beat, idempotent): make each service's replicas match its desired count.

One pass per service: probe the replicas' readiness over HTTP (outside any transaction), then, under the service's
row lock, record what the jobs and probes say, follow the pure plan (inference.rollout) — submit replica jobs,
drain extras and old generations — finish drains, and set the service's state and conditions.

A replica job runs ``python -m ai_platform.serving``, which writes its URL to ``url_file(replica)`` (under the data
dir: on a Slurm pool, a filesystem the nodes share, as for registry outputs) once the model is loaded.
"""

from __future__ import annotations

import logging
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import httpx
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from inference import conditions as cond
from inference.models import (
    ENDED_REPLICA_STATES,
    LIVE_REPLICA_STATES,
    InferenceService,
    Replica,
    ReplicaState,
    ServiceState,
)
from inference.placement import replica_job_spec
from inference.rollout import ReplicaView, crash_backoff_s, plan, service_state
from portal.env import env_int, env_str
from registry.models import Alias
from tenants.services import audit
from vocab.states import FINAL_STATES, JobState

log = logging.getLogger(__name__)
PROBE_TIMEOUT = 1.0


def drain_seconds() -> int:
    # Longer than the gateway takes to notice a replica left its routes, so no request is sent to a stopped one.
    return env_int("AIPOOL_INFERENCE_DRAIN_SECONDS", 5)


def url_file(replica_id: int) -> Path:
    return Path(settings.DATA_DIR) / "inference" / "replicas" / str(replica_id) / "url"


def replace_before_seconds(time_limit_minutes: int) -> float:
    """A replica is replaced this long before its job's time limit: a tenth of it, at most 30 (scaled) minutes."""
    minute = float(settings.AIPOOL_SECONDS_PER_MINUTE)
    return min(time_limit_minutes * minute * 0.1, 30 * minute)


# --- probes (no transaction) ------------------------------------------------------------------------------------------


def _read_url(replica_id: int) -> str:
    try:
        return url_file(replica_id).read_text().strip()
    except OSError:
        return ""


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=PROBE_TIMEOUT).status_code == 200
    except httpx.HTTPError:
        return False


def _probe_one(replica: Replica) -> tuple[int, str, bool]:
    url = replica.url or _read_url(replica.pk)
    if not url:
        return replica.pk, "", False
    # A ready replica gets a second chance before it is declared failed: one slow answer is not a dead replica.
    healthy = _healthy(url) or (replica.state == ReplicaState.READY and _healthy(url))
    return replica.pk, url, healthy


def probe(replicas: list[Replica]) -> dict[int, tuple[str, bool]]:
    targets = [r for r in replicas if r.state in (ReplicaState.STARTING, ReplicaState.READY)]
    if not targets:
        return {}
    with ThreadPoolExecutor(max_workers=min(8, len(targets))) as pool:
        return {pk: (url, ok) for pk, url, ok in pool.map(_probe_one, targets)}


# --- the pass ---------------------------------------------------------------------------------------------------------


def reconcile_all() -> dict:
    summary = {"services": 0}
    for service_id in InferenceService.objects.order_by("pk").values_list("pk", flat=True):
        reconcile_service(service_id)
        summary["services"] += 1
    return summary


def reconcile_service(service_id: int) -> dict | None:
    replicas = list(Replica.objects.filter(service_id=service_id).exclude(state__in=ENDED_REPLICA_STATES))
    probes = probe(replicas)
    with transaction.atomic():
        service = InferenceService.objects.select_for_update().filter(pk=service_id).first()
        if service is None:
            return None
        replicas = list(service.replicas.exclude(state__in=ENDED_REPLICA_STATES).select_related("job"))
        now = timezone.now()
        _follow_alias(service)
        failures = [msg for r in replicas if (msg := _sync(r, probes.get(r.pk), now))]
        _finish_drains(replicas, now)
        decided = plan(
            desired=service.desired_replicas,
            generation=service.generation,
            replicas=[_view(r, now) for r in replicas if r.state in LIVE_REPLICA_STATES],
            replace_before_s=_replace_before(service, replicas),
        )
        _drain(replicas, decided.drain, now)
        wait = _crash_wait(service, now)
        started, submit_error = (0, wait) if wait and decided.start else _start(service, decided.start)
        _set_status(service, now, failures, submit_error)
        return {"started": started, "drained": len(decided.drain), "failed": len(failures)}


def _follow_alias(service: InferenceService) -> None:
    """A service that names an alias (``:production``, or no version: ``latest``) follows it: when the alias moves,
    the new version rolls out like a re-apply would."""
    alias = service.model_ref.rsplit(":", 1)[-1] if ":" in service.model_ref else Alias.LATEST
    if not alias or alias.isdigit() or service.model_version is None:
        return
    target = (
        Alias.objects.filter(collection_id=service.model_version.collection_id, name=alias)
        .values_list("version_id", flat=True)
        .first()
    )
    if target is None or target == service.model_version_id:
        return
    previous = service.model_version_id
    service.model_version_id, service.generation = target, service.generation + 1
    InferenceService.objects.filter(pk=service.pk).update(
        model_version_id=target, generation=service.generation, updated_at=timezone.now()
    )
    audit(
        actor=None,
        action="isvc.follow_alias",
        target=service,
        tenant=service.tenant,
        changes={"model_version_id": [previous, target], "generation": [service.generation - 1, service.generation]},
    )


def _view(replica: Replica, now) -> ReplicaView:
    left = None
    job = replica.job
    if job is not None and job.started_at is not None and job.state == JobState.RUNNING:
        limit = job.time_limit * float(settings.AIPOOL_SECONDS_PER_MINUTE)
        left = limit - (now - job.started_at).total_seconds()
    return ReplicaView(id=replica.pk, generation=replica.generation, state=replica.state, seconds_left=left)


def _replace_before(service: InferenceService, replicas: list[Replica]) -> float:
    limits = [r.job.time_limit for r in replicas if r.job is not None]
    return replace_before_seconds(min(limits)) if limits else 0.0


def _move(replica: Replica, to_state: str, **fields) -> bool:
    """A conditional UPDATE from the state the replica was read in: a concurrent report (the gateway) wins."""
    fields["updated_at"] = timezone.now()
    moved = Replica.objects.filter(pk=replica.pk, state=replica.state).update(state=to_state, **fields)
    if moved:
        replica.state = to_state
        for key, value in fields.items():
            setattr(replica, key, value)
    return bool(moved)


def _sync(replica: Replica, probed: tuple[str, bool] | None, now) -> str:
    """Record what the job and the probe say; returns a failure message, or ""."""
    job = replica.job
    if job is None or job.state in FINAL_STATES:
        ended = "its job is gone" if job is None else f"its job {job.pk} ended {job.state} (aipool logs {job.pk})"
        if replica.state == ReplicaState.DRAINING:
            _move(replica, ReplicaState.TERMINATED)
            return ""
        _move(replica, ReplicaState.FAILED, message=ended[:300])
        return f"replica {replica.pk}: {ended}"
    if replica.state == ReplicaState.PENDING and job.state == JobState.RUNNING:
        _move(replica, ReplicaState.STARTING)
    url, healthy = probed or ("", False)
    if replica.state == ReplicaState.STARTING and healthy:
        _move(replica, ReplicaState.READY, url=url, ready_at=now)
    elif replica.state == ReplicaState.READY and probed is not None and not healthy:
        message = f"replica {replica.pk} stopped answering its readiness check at {url or 'an unknown address'}"
        _move(replica, ReplicaState.FAILED, message=message[:300])
        _cancel(job)
        return message
    return ""


def _cancel(job) -> None:
    from jobs.services import job_cancel

    if job is not None and job.state not in FINAL_STATES:
        job.refresh_from_db()
        if job.state not in FINAL_STATES:
            job_cancel(user=job.user, job=job)


def _drain(replicas: list[Replica], ids: tuple[int, ...], now) -> None:
    by_id = {r.pk: r for r in replicas}
    for pk in ids:
        replica = by_id[pk]
        if replica.state == ReplicaState.READY:
            _move(replica, ReplicaState.DRAINING, drain_started_at=now)
        else:
            # Never received traffic: nothing to drain.
            _move(replica, ReplicaState.TERMINATED, message="not needed")
            _cancel(replica.job)


def _finish_drains(replicas: list[Replica], now) -> None:
    cutoff = now - timedelta(seconds=drain_seconds())
    for replica in replicas:
        if replica.state == ReplicaState.DRAINING and replica.drain_started_at and replica.drain_started_at <= cutoff:
            _cancel(replica.job)
            _move(replica, ReplicaState.TERMINATED)


CRASH_WINDOW = timedelta(minutes=10)


def _crash_wait(service: InferenceService, now) -> str:
    """Why no replica is started now (a crash loop's backoff), or ""."""
    crashes = list(
        service.replicas.filter(
            generation=service.generation,
            state=ReplicaState.FAILED,
            ready_at__isnull=True,
            updated_at__gte=now - CRASH_WINDOW,
        )
        .order_by("-updated_at")
        .values_list("updated_at", "message")[:20]
    )
    if not crashes:
        return ""
    left = crash_backoff_s(len(crashes)) - (now - crashes[0][0]).total_seconds()
    if left <= 0:
        return ""
    return (
        f"{len(crashes)} replicas failed before they were ready in the last 10 minutes; next attempt in "
        f"{left:.0f} s. Last: {crashes[0][1]}"
    )


def _start(service: InferenceService, count: int) -> tuple[int, str]:
    """Submit `count` replica jobs; stops at the first refusal and returns (started, why it stopped)."""
    if count and service.run_as is None:
        return 0, "no user to run replicas as (the last one who applied it was deleted): apply the service again"
    for index in range(count):
        try:
            with transaction.atomic():
                _submit_replica(service)
        except (ValidationError, PermissionDenied) as exc:
            detail = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
            return index, f"cannot submit a replica job: {detail}"
    return count, ""


def _submit_replica(service: InferenceService) -> Replica:
    from jobs.services import job_submit

    replica = Replica.objects.create(service=service, generation=service.generation)
    job, _ = job_submit(user=service.run_as, group=service.group, spec=_job_spec(service, replica))
    Replica.objects.filter(pk=replica.pk).update(job=job)
    replica.job = job
    return replica


def _job_spec(service: InferenceService, replica: Replica):
    from inference.placement import partition_for_service

    partition, time_limit = partition_for_service(service)
    version = service.model_version
    if version is None:
        raise ValidationError(f"the model version it served ({service.model_ref}) was deleted: apply it again")
    python = env_str("AIPOOL_INFERENCE_PYTHON", sys.executable)
    bind = env_str("AIPOOL_INFERENCE_BIND", "127.0.0.1")
    command = (
        f'exec {python} -m ai_platform.serving --model-dir "$AIPOOL_MODEL_SERVE_PATH" --name {service.name} '
        f"--host {bind} --port 0 --url-file {url_file(replica.pk)}"
    )
    return replica_job_spec(
        name=f"isvc-{service.name}-r{replica.pk}"[:128],
        partition=partition.name,
        accelerators=service.accelerators_per_replica,
        memory_mb=service.memory_mb,
        time_limit=time_limit,
        command=command,
        environment={"AIPOOL_INFERENCE_SERVICE": service.name, "AIPOOL_INFERENCE_REPLICA": str(replica.pk)},
        extensions={
            "inputs": [{"ref": f"model:{version.collection.full_name}@{version.number}", "as": "SERVE"}],
        },
    )


def _set_status(service: InferenceService, now, failures: list[str], submit_error: str) -> None:
    live = list(service.replicas.filter(state__in=LIVE_REPLICA_STATES).values_list("generation", "state"))
    ready_current = sum(1 for g, s in live if g == service.generation and s == ReplicaState.READY)
    ready_total = sum(1 for _, s in live if s == ReplicaState.READY)
    retiring = sum(1 for g, _ in live if g != service.generation)
    state = service_state(
        previous=service.state,
        desired=service.desired_replicas,
        min_replicas=service.min_replicas,
        ready_current=ready_current,
        ready_total=ready_total,
        retiring=retiring,
    )
    conditions = cond.set_condition(
        service.conditions,
        type_=cond.READY,
        status=cond.TRUE if state in (ServiceState.READY, ServiceState.UPDATING) and ready_total else cond.FALSE,
        reason=state.title(),
        message=f"{ready_current}/{service.desired_replicas} replicas of generation {service.generation} ready"
        + (f", {retiring} of older generations still serving" if retiring else ""),
        now=now,
    )
    problem = submit_error or (failures[-1] if failures else "")
    if problem:
        conditions = cond.set_condition(
            conditions, type_=cond.REPLICA_FAILURE, status=cond.TRUE, reason="ReplicaFailed", message=problem, now=now
        )
    elif cond.is_true(conditions, cond.REPLICA_FAILURE) and ready_current >= service.desired_replicas:
        conditions = cond.set_condition(
            conditions, type_=cond.REPLICA_FAILURE, status=cond.FALSE, reason="Recovered", message="", now=now
        )
    if state != service.state or conditions != service.conditions:
        InferenceService.objects.filter(pk=service.pk).update(state=state, conditions=conditions, updated_at=now)
