"""Inference services, their replicas (long-running jobs), gateway keys and scaling events.

Who sees what is decided once, in :class:`ServiceQuerySet`; everything below a service delegates to it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from tenants.models import Role
from tenants.scoping import CHANGE, TenantScopedQuerySet, member_group_ids, member_tenant_ids


class ServiceState(models.TextChoices):
    # PENDING → READY ⇄ UPDATING / DEGRADED; see inference/states.py for the allowed transitions.
    PENDING = "PENDING", "pending (no replica ready yet)"
    READY = "READY", "ready (serving the current generation)"
    UPDATING = "UPDATING", "updating (rolling to a new generation)"
    DEGRADED = "DEGRADED", "degraded (fewer ready replicas than the minimum)"


class ScaleMetric(models.TextChoices):
    QPS = "qps", "requests per second"
    CONCURRENCY = "concurrency", "requests in flight"


class ReplicaState(models.TextChoices):
    PENDING = "PENDING", "pending (job queued)"
    STARTING = "STARTING", "starting (job running, not ready yet)"
    READY = "READY", "ready (passes the readiness check, receives traffic)"
    DRAINING = "DRAINING", "draining (no new traffic, job cancelled soon)"
    TERMINATED = "TERMINATED", "terminated"
    FAILED = "FAILED", "failed"


LIVE_REPLICA_STATES = (ReplicaState.PENDING, ReplicaState.STARTING, ReplicaState.READY)
ENDED_REPLICA_STATES = (ReplicaState.TERMINATED, ReplicaState.FAILED)


class ServiceQuerySet(TenantScopedQuerySet):
    def _restrict(self, user, action):
        # As for jobs: tenant admins see and change every service of their tenant; members and viewers see their
        # groups' services; members (never viewers) change them.
        admin_of = Q(tenant__in=member_tenant_ids(user, roles=(Role.ADMIN,)))
        in_group = Q(group__in=member_group_ids(user))
        if action == CHANGE:
            return self.filter(admin_of | (in_group & Q(tenant__in=member_tenant_ids(user, roles=(Role.MEMBER,)))))
        return self.filter(admin_of | (in_group & Q(tenant__in=member_tenant_ids(user))))


class InferenceService(models.Model):
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.PROTECT, related_name="inference_services")
    group = models.ForeignKey("tenants.Group", on_delete=models.PROTECT, related_name="inference_services")
    name = models.SlugField(max_length=63, help_text="Unique in the tenant; the gateway path /serve/<tenant>/<name>/")
    spec = models.JSONField(default=dict, help_text="The normalised spec, as `aipool get isvc NAME` prints it")
    model_ref = models.CharField(max_length=300, help_text="As written: namespace/name:version or :alias")
    # Nullable: the repository may delete a version no job reads any more; the service then says so and starts no
    # replicas until it is applied again with another version.
    model_version = models.ForeignKey(
        "registry.Version", null=True, blank=True, on_delete=models.SET_NULL, related_name="inference_services"
    )
    state = models.CharField(max_length=10, choices=ServiceState.choices, default=ServiceState.PENDING)
    min_replicas = models.PositiveIntegerField(default=1)
    max_replicas = models.PositiveIntegerField(default=1)
    scale_metric = models.CharField(max_length=12, choices=ScaleMetric.choices, default=ScaleMetric.QPS)
    scale_target = models.PositiveIntegerField(default=100, help_text="Per replica")
    accelerator_type = models.SlugField(max_length=64)
    accelerators_per_replica = models.PositiveIntegerField(default=1)
    memory_mb = models.PositiveBigIntegerField(help_text="Per replica, MiB")
    rate_limit_rps = models.PositiveIntegerField(default=100, help_text="Per key")
    desired_replicas = models.PositiveIntegerField(default=1, help_text="Set by the autoscaler within [min, max]")
    conditions = models.JSONField(default=list, blank=True, help_text='[{"type","status","reason","message","since"}]')
    generation = models.PositiveIntegerField(default=1, help_text="Bumped when the spec or the model changes")
    run_as = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Replica jobs are submitted as this user: the last one who applied the service",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ServiceQuerySet.as_manager()

    class Meta:
        ordering = ["tenant", "name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="one_inference_service_per_name"),
            models.CheckConstraint(condition=Q(min_replicas__lte=models.F("max_replicas")), name="isvc_min_le_max"),
            models.CheckConstraint(condition=Q(max_replicas__gte=1), name="isvc_max_at_least_one"),
        ]

    def __str__(self) -> str:
        return self.name

    def condition(self, type_: str) -> dict | None:
        return next((c for c in self.conditions if c.get("type") == type_), None)


class ThroughServiceQuerySet(TenantScopedQuerySet):
    """Rows below a service: visible and changeable exactly when their service is."""

    tenant_field = "service__tenant"

    def _restrict(self, user, action):
        return self.filter(service__in=InferenceService.objects.visible_to(user, action))


class ReplicaQuerySet(ThroughServiceQuerySet):
    def live(self):
        return self.filter(state__in=LIVE_REPLICA_STATES)

    def ready(self):
        return self.filter(state=ReplicaState.READY)


class Replica(models.Model):
    service = models.ForeignKey(InferenceService, on_delete=models.CASCADE, related_name="replicas")
    job = models.ForeignKey("jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    generation = models.PositiveIntegerField()
    state = models.CharField(max_length=10, choices=ReplicaState.choices, default=ReplicaState.PENDING)
    url = models.CharField(max_length=200, blank=True, help_text="e.g. http://127.0.0.1:41234, blank until known")
    message = models.CharField(max_length=300, blank=True, help_text="Why it failed or drains")
    ready_at = models.DateTimeField(null=True, blank=True)
    drain_started_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ReplicaQuerySet.as_manager()

    class Meta:
        ordering = ["service", "id"]
        indexes = [models.Index(fields=["service", "state"])]

    def __str__(self) -> str:
        return f"{self.service_id}/replica-{self.pk}"


class ServiceKeyQuerySet(TenantScopedQuerySet):
    def _restrict(self, user, action):
        return self.filter(service__in=InferenceService.objects.visible_to(user, action))

    def active(self):
        return self.filter(revoked_at__isnull=True)


class ServiceKey(models.Model):
    """A gateway key for one service. Only its hash is stored; the raw key (``isk_…``) is shown once."""

    service = models.ForeignKey(InferenceService, on_delete=models.CASCADE, related_name="keys")
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=64)
    prefix = models.CharField(max_length=16, help_text="First characters of the key, to tell keys apart")
    key_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ServiceKeyQuerySet.as_manager()

    class Meta:
        ordering = ["service", "-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class ScalingEventQuerySet(ThroughServiceQuerySet):
    pass


class ScalingEvent(models.Model):
    """One scaling decision of the autoscaler (or a manual scale), with the inputs it was made from."""

    service = models.ForeignKey(InferenceService, on_delete=models.CASCADE, related_name="scaling_events")
    at = models.DateTimeField(db_index=True)
    from_replicas = models.PositiveIntegerField()
    to_replicas = models.PositiveIntegerField()
    wanted = models.PositiveIntegerField(help_text="What the metric asked for before min/max and quota caps")
    reason = models.CharField(max_length=300)
    inputs = models.JSONField(default=dict, blank=True)
    blocked_by_quota = models.BooleanField(default=False)

    objects = ScalingEventQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.service_id}: {self.from_replicas} → {self.to_replicas} ({self.reason})"
