"""Job metric samples (raw and rolled up), idle episodes, per-tenant idle policies, Celery latency probes."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from tenants.scoping import TenantScopedQuerySet

RAW = 0
MINUTE = 60
TEN_MINUTES = 600
RESOLUTIONS = (RAW, MINUTE, TEN_MINUTES)


class MetricSampleQuerySet(TenantScopedQuerySet):
    tenant_field = "job__tenant"

    def raw(self):
        return self.filter(resolution=RAW)


class MetricSample(models.Model):
    """One task (rank) of one job over one sampling slot: raw every AIPOOL_MONITOR_SECONDS, or a 1- or 10-minute
    rollup. `slot` (unix time // slot length) makes a sample unique, so a sampling task that runs twice writes once."""

    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="metric_samples")
    rank = models.PositiveIntegerField()
    node = models.CharField(max_length=64, blank=True)
    resolution = models.PositiveSmallIntegerField(default=RAW, help_text="0 raw, else rollup seconds")
    slot = models.BigIntegerField()
    ts = models.DateTimeField()

    cpu_seconds = models.FloatField(null=True, help_text="cumulative CPU time of the task's processes (raw only)")
    cpu_cores = models.FloatField(null=True, help_text="busy CPU cores over the slot")
    utilisation = models.FloatField(null=True, help_text="0..1: accelerator utilisation, or its CPU stand-in")
    accel_util = models.FloatField(null=True, help_text="0..1 from NVML or Slurm gres; None without telemetry")
    accel_memory_bytes = models.BigIntegerField(null=True)
    rss_bytes = models.BigIntegerField(null=True)
    swap_bytes = models.BigIntegerField(null=True)
    swap_rate = models.FloatField(null=True, help_text="bytes/s moved into swap (VmSwap growth)")
    major_faults = models.BigIntegerField(null=True)
    step_time_s = models.FloatField(null=True)
    comm_share = models.FloatField(null=True, help_text="0..1 of step time with a collective in flight")
    compute_share = models.FloatField(null=True)
    data_share = models.FloatField(null=True)
    throughput = models.FloatField(null=True, help_text="samples/s")
    steps = models.PositiveIntegerField(null=True, help_text="SDK steps reported in the slot")

    objects = MetricSampleQuerySet.as_manager()

    class Meta:
        ordering = ["ts", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["job", "rank", "resolution", "slot"], name="one_sample_per_slot"),
        ]
        indexes = [models.Index(fields=["job", "resolution", "ts"]), models.Index(fields=["resolution", "ts"])]

    def __str__(self) -> str:
        return f"job {self.job_id} rank {self.rank} @ {self.ts:%H:%M:%S} ({self.resolution or 'raw'})"


class IdleAction(models.TextChoices):
    WARN = "warn", "warn the owner only"
    CANCEL = "cancel", "warn, then cancel after the grace period"


class IdlePolicyQuerySet(TenantScopedQuerySet):
    pass


class IdlePolicy(models.Model):
    """A tenant's rule for idle accelerators; tenants without one get AIPOOL_IDLE_* defaults and a warning only."""

    tenant = models.OneToOneField("tenants.Tenant", on_delete=models.CASCADE, related_name="idle_policy")
    action = models.CharField(max_length=8, choices=IdleAction.choices, default=IdleAction.WARN)
    threshold_percent = models.FloatField(null=True, blank=True, help_text="empty: AIPOOL_IDLE_THRESHOLD")
    minutes = models.FloatField(
        null=True, blank=True, help_text="idle this long is flagged; empty: AIPOOL_IDLE_MINUTES"
    )
    grace_minutes = models.FloatField(default=15, help_text="with action cancel: time between warning and cancel")

    objects = IdlePolicyQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "idle policies"
        constraints = [
            models.CheckConstraint(condition=Q(grace_minutes__gte=0), name="idle_grace_not_negative"),
            models.CheckConstraint(
                condition=Q(threshold_percent__isnull=True) | Q(threshold_percent__gte=0, threshold_percent__lte=100),
                name="idle_threshold_is_percent",
            ),
            models.CheckConstraint(condition=Q(minutes__isnull=True) | Q(minutes__gt=0), name="idle_minutes_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.tenant}: {self.action}"


class IdleEpisodeQuerySet(TenantScopedQuerySet):
    tenant_field = "job__tenant"

    def open(self):
        return self.filter(ended_at__isnull=True)


class IdleEpisode(models.Model):
    """A stretch during which a running job's accelerators stayed below the threshold: flagged once, maybe cancelled."""

    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="idle_episodes")
    idle_since = models.DateTimeField(help_text="first sample of the idle stretch")
    flagged_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True, help_text="busy again, or the job ended")
    utilisation = models.FloatField(help_text="mean utilisation 0..1 over the stretch when flagged")
    threshold = models.FloatField(help_text="0..1")
    accelerators = models.PositiveIntegerField()
    action = models.CharField(max_length=16, default="warned", help_text="warned | cancelled")
    cancel_at = models.DateTimeField(null=True, blank=True, help_text="policy cancel: when the grace period ends")

    objects = IdleEpisodeQuerySet.as_manager()

    class Meta:
        ordering = ["-flagged_at"]
        constraints = [
            models.UniqueConstraint(fields=["job"], condition=Q(ended_at__isnull=True), name="one_open_idle_episode"),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} idle since {self.idle_since:%Y-%m-%d %H:%M}"


class CeleryProbe(models.Model):
    """The last enqueue → start delay of a probe task: how long work waits for a Celery worker now."""

    name = models.CharField(max_length=64, unique=True)
    enqueued_at = models.DateTimeField()
    started_at = models.DateTimeField()
    latency_seconds = models.FloatField()

    def __str__(self) -> str:
        return f"{self.name}: {self.latency_seconds:.3f} s"
