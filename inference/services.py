"""Write operations on inference services (style.md §2): keyword-only, atomic, audited; Celery work after commit."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from inference import conditions as cond
from inference.keys import hash_key, new_raw_key, shown_prefix
from inference.models import (
    LIVE_REPLICA_STATES,
    InferenceService,
    Replica,
    ReplicaState,
    ScalingEvent,
    ServiceKey,
)
from inference.placement import Placement, place
from inference.spec import ServiceSpec
from tenants.models import Group, GroupMember, Membership, Role
from tenants.scoping import CHANGE
from tenants.services import audit

# What a new generation is made of: changing any of these starts new replicas (a rolling update).
REPLICA_FIELDS = ("model_version_id", "accelerator_type", "accelerators_per_replica", "memory_mb")
SETTABLE_FIELDS = (
    "spec",
    "model_ref",
    "model_version_id",
    "min_replicas",
    "max_replicas",
    "scale_metric",
    "scale_target",
    "accelerator_type",
    "accelerators_per_replica",
    "memory_mb",
    "rate_limit_rps",
)


def _after_commit_reconcile(service_id: int) -> None:
    from inference.tasks import reconcile_service

    transaction.on_commit(lambda: reconcile_service.delay(service_id))


# --- apply / delete ---------------------------------------------------------------------------------------------------


def resolve_group(*, user, spec: ServiceSpec, group: Group | None) -> Group:
    """The group named in the document, else the one given, else the user's only group; else a field error."""
    if spec.group and group is not None and spec.group != group.name:
        raise ValidationError({"metadata.group": [f"the document says {spec.group}, the request says {group.name}"]})
    if group is not None:
        return group
    from inference.selectors import groups_for_apply

    mine = groups_for_apply(user)
    if spec.group:
        found = mine.filter(name=spec.group).first()
        if found is None:
            raise ValidationError({"metadata.group": [f"unknown group {spec.group!r} (or you are not a member)"]})
        return found
    names = list(mine.values_list("name", flat=True)[:10])
    if len(names) == 1:
        return mine.get()
    hint = f"one of {', '.join(names)}" if names else "you belong to no group"
    raise ValidationError({"metadata.group": [f"name the group that runs the service ({hint})"]})


def _check_may_run(user, group: Group) -> None:
    """Replicas are jobs submitted as `user` in `group`: the same rule as job_submit, said up front."""
    if user.is_staff:
        return
    role = Membership.objects.filter(user=user, tenant_id=group.tenant_id).values_list("role", flat=True).first()
    if role is None or not GroupMember.objects.filter(user=user, group=group).exists():
        raise PermissionDenied(f"you are not a member of group {group.name}")
    if role == Role.VIEWER:
        raise PermissionDenied("viewers cannot run inference services")


@transaction.atomic
def service_apply(*, user, spec: ServiceSpec, group: Group | None = None) -> tuple[InferenceService, bool]:
    """Create the service or update it in place (``kubectl apply``); returns (service, created).

    A change of model version or replica resources bumps the generation: the reconcile starts new replicas and
    drains the old ones only once the new ones are ready (a rolling update).
    """
    group = resolve_group(user=user, spec=spec, group=group)
    _check_may_run(user, group)
    placement = place(user=user, group=group, spec=spec)
    existing = InferenceService.objects.select_for_update().filter(tenant_id=group.tenant_id, name=spec.name).first()
    if existing is None:
        return _create(user=user, group=group, spec=spec, placement=placement), True
    if not InferenceService.objects.visible_to(user, CHANGE).filter(pk=existing.pk).exists():
        raise PermissionDenied(f"you may not change service {spec.name}")
    if existing.group_id != group.pk:
        raise ValidationError(
            {"metadata.group": [f"service {spec.name} belongs to group {existing.group.name}; delete it to move it"]}
        )
    return _update(user=user, service=existing, spec=spec, placement=placement), False


def _fields(spec: ServiceSpec, placement: Placement) -> dict:
    stored = spec.normalised()
    stored["spec"]["resources"]["cpus"] = placement.cpus_per_replica
    return {
        "spec": stored,
        "model_ref": stored["spec"]["model"],
        "model_version_id": placement.version.pk,
        "min_replicas": spec.min_replicas,
        "max_replicas": spec.max_replicas,
        "scale_metric": spec.scale_metric,
        "scale_target": spec.scale_target,
        "accelerator_type": spec.accelerator_type,
        "accelerators_per_replica": spec.accelerators,
        "memory_mb": spec.memory_mb,
        "rate_limit_rps": spec.rate_limit_rps,
    }


def _create(*, user, group: Group, spec: ServiceSpec, placement: Placement) -> InferenceService:
    service = InferenceService.objects.create(
        tenant_id=group.tenant_id,
        group=group,
        name=spec.name,
        run_as=user,
        desired_replicas=spec.min_replicas,
        **_fields(spec, placement),
    )
    audit(actor=user, action="isvc.create", target=service, tenant=group.tenant, changes={"spec": [None, service.spec]})
    _after_commit_reconcile(service.pk)
    return service


def _update(*, user, service: InferenceService, spec: ServiceSpec, placement: Placement) -> InferenceService:
    wanted = _fields(spec, placement)
    changes = {f: [getattr(service, f), v] for f, v in wanted.items() if getattr(service, f) != v}
    if not changes and service.run_as_id == user.pk:
        return service
    new_generation = any(f in changes for f in REPLICA_FIELDS)
    for field, value in wanted.items():
        setattr(service, field, value)
    service.run_as = user
    service.desired_replicas = min(max(service.desired_replicas, service.min_replicas), service.max_replicas)
    if new_generation:
        service.generation += 1
        changes["generation"] = [service.generation - 1, service.generation]
    service.save()
    audit(actor=user, action="isvc.update", target=service, tenant=service.tenant, changes=_jsonable(changes))
    _after_commit_reconcile(service.pk)
    return service


def _jsonable(changes: dict) -> dict:
    return {k: v for k, v in changes.items() if k != "spec"} | ({"spec": "changed"} if "spec" in changes else {})


@transaction.atomic
def service_delete(*, user, service: InferenceService) -> None:
    """Delete the service now; its replica jobs are cancelled (in-flight requests to them end)."""
    service = InferenceService.objects.select_for_update().get(pk=service.pk)
    jobs = [r.job for r in service.replicas.filter(state__in=[*LIVE_REPLICA_STATES, ReplicaState.DRAINING]) if r.job]
    for job in jobs:
        _cancel_job(job)
    audit(actor=user, action="isvc.delete", target=service, tenant=service.tenant)
    service.delete()


def _cancel_job(job) -> None:
    from jobs.services import job_cancel
    from vocab.states import FINAL_STATES

    if job.state not in FINAL_STATES:
        job_cancel(user=job.user, job=job)


# --- keys -------------------------------------------------------------------------------------------------------------


@transaction.atomic
def key_create(*, user, service: InferenceService, name: str) -> tuple[ServiceKey, str]:
    """A new gateway key; returns (key, raw). The raw key is never stored: show it once."""
    name = (name or "").strip()
    if not name or len(name) > 64:
        raise ValidationError({"name": ["give the key a name of 1-64 characters"]})
    raw = new_raw_key()
    key = ServiceKey.objects.create(
        service=service,
        tenant_id=service.tenant_id,
        name=name,
        prefix=shown_prefix(raw),
        key_hash=hash_key(raw),
        created_by=user,
    )
    audit(actor=user, action="isvc.key_create", target=key, tenant=service.tenant, changes={"service": service.name})
    return key, raw


@transaction.atomic
def key_revoke(*, user, key: ServiceKey) -> ServiceKey:
    revoked = ServiceKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    key.refresh_from_db()
    if revoked:
        audit(actor=user, action="isvc.key_revoke", target=key, tenant=key.tenant)
    return key


# --- scaling (the autoscaler and people) ------------------------------------------------------------------------------


@transaction.atomic
def service_scale(
    *,
    service_id: int,
    desired: int,
    wanted: int,
    reason: str,
    inputs: dict,
    blocked_by_quota: bool,
    blocked_message: str = "",
) -> None:
    """Set desired replicas (within [min, max]); an event when it changes or when a quota block appears or clears."""
    service = InferenceService.objects.select_for_update().filter(pk=service_id).first()
    if service is None:
        return  # deleted since the autoscaler read it
    desired = min(max(int(desired), service.min_replicas), service.max_replicas)
    was_blocked = cond.is_true(service.conditions, cond.SCALE_UP_BLOCKED)
    now = timezone.now()
    conditions = _blocked_condition(service.conditions, blocked_by_quota, blocked_message, now)
    changed = desired != service.desired_replicas
    if not changed and conditions == service.conditions:
        return
    previous = service.desired_replicas
    InferenceService.objects.filter(pk=service.pk).update(
        desired_replicas=desired, conditions=conditions, updated_at=now
    )
    if changed or was_blocked != blocked_by_quota:
        ScalingEvent.objects.create(
            service=service,
            at=now,
            from_replicas=previous,
            to_replicas=desired,
            wanted=max(0, int(wanted)),
            reason=(reason or "")[:300],
            inputs=inputs or {},
            blocked_by_quota=blocked_by_quota,
        )
    if changed:
        audit(
            actor=None,
            action="isvc.scale",
            target=service,
            tenant=service.tenant,
            changes={"desired_replicas": [previous, desired], "reason": reason[:200]},
        )
        _after_commit_reconcile(service.pk)


def _blocked_condition(conditions: list[dict], blocked: bool, message: str, now) -> list[dict]:
    if blocked:
        text = f"scale-up blocked: {message}" if message else "scale-up blocked by quota"
        return cond.set_condition(
            conditions, type_=cond.SCALE_UP_BLOCKED, status=cond.TRUE, reason="QuotaExceeded", message=text, now=now
        )
    if cond.find(conditions, cond.SCALE_UP_BLOCKED) is None:
        return conditions
    return cond.set_condition(
        conditions, type_=cond.SCALE_UP_BLOCKED, status=cond.FALSE, reason="WithinQuota", message="", now=now
    )


@transaction.atomic
def scale_manually(*, user, service: InferenceService, replicas: int) -> None:
    """A person pins desired replicas (within [min, max]); the autoscaler may move it again."""
    service_scale(
        service_id=service.pk,
        desired=replicas,
        wanted=replicas,
        reason=f"set by {user.username}",
        inputs={"manual": True},
        blocked_by_quota=cond.is_true(service.conditions, cond.SCALE_UP_BLOCKED),
        blocked_message=(cond.find(service.conditions, cond.SCALE_UP_BLOCKED) or {})
        .get("message", "")
        .removeprefix("scale-up blocked: "),
    )


# --- replicas ---------------------------------------------------------------------------------------------------------


@transaction.atomic
def replica_failed(*, replica_id: int, reason: str) -> None:
    """The gateway could not reach a replica: mark it FAILED (once) and stop its job; the reconcile replaces it."""
    replica = Replica.objects.select_related("job", "service").filter(pk=replica_id).first()
    if replica is None:
        return
    claimed = Replica.objects.filter(pk=replica_id, state__in=[*LIVE_REPLICA_STATES, ReplicaState.DRAINING]).update(
        state=ReplicaState.FAILED, message=(reason or "unreachable")[:300], updated_at=timezone.now()
    )
    if not claimed:
        return  # already ended: a retry of the report, or another gateway worker reported it first
    if replica.job is not None:
        _cancel_job(replica.job)
    audit(
        actor=None,
        action="isvc.replica_failed",
        target=replica,
        tenant=replica.service.tenant,
        changes={"reason": (reason or "")[:200]},
    )
    _after_commit_reconcile(replica.service_id)
