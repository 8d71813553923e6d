"""What the gateway records: traffic per service per second, and the autoscaler's state between decisions."""

from __future__ import annotations

from django.db import models

from gateway.metrics import BUCKET_COUNT
from inference.models import ThroughServiceQuerySet


def empty_buckets() -> list[int]:
    return [0] * BUCKET_COUNT


class TrafficWindowQuerySet(ThroughServiceQuerySet):
    def between(self, begin: int, end: int):
        """Rows of the seconds in [begin, end)."""
        return self.filter(second__gte=begin, second__lt=end)


class TrafficWindow(models.Model):
    """One second of one service's traffic as one gateway process saw it (several gateways: several rows)."""

    service = models.ForeignKey("inference.InferenceService", on_delete=models.CASCADE, related_name="traffic")
    second = models.BigIntegerField(help_text="Unix time of the second")
    gateway = models.CharField(max_length=100, help_text="The gateway process (host:pid) that counted it")
    requests = models.PositiveIntegerField(default=0, help_text="Requests that arrived in this second")
    errors = models.PositiveIntegerField(default=0, help_text="Answers of 5xx (replica or gateway) that finished")
    retries = models.PositiveIntegerField(default=0, help_text="Attempts on another replica after one was gone")
    throttled = models.PositiveIntegerField(default=0, help_text="Requests refused by the key's rate limit (429)")
    latency_sum_ms = models.FloatField(default=0.0, help_text="Sum of the latencies of requests that finished")
    latency_buckets = models.JSONField(default=empty_buckets, help_text="Counts per bucket of gateway.metrics")

    objects = TrafficWindowQuerySet.as_manager()

    class Meta:
        ordering = ["service", "second"]
        constraints = [
            models.UniqueConstraint(fields=["service", "second", "gateway"], name="one_traffic_row_per_gateway_second")
        ]
        indexes = [models.Index(fields=["service", "second"]), models.Index(fields=["second"])]

    def __str__(self) -> str:
        return f"{self.service_id}@{self.second}: {self.requests} req"


class AutoscalerState(models.Model):
    """inference.autoscaler.ScalerState between two beat runs: whether the service panics, and since when."""

    service = models.OneToOneField(
        "inference.InferenceService", on_delete=models.CASCADE, related_name="autoscaler_state"
    )
    panic_since = models.FloatField(null=True, blank=True, help_text="Unix time panic began; empty: not panicking")
    panic_last_over = models.FloatField(null=True, blank=True, help_text="Last time the panic condition held")
    panic_max = models.PositiveIntegerField(default=0)
    recent = models.JSONField(default=list, blank=True, help_text="[[time, replicas], …] within the scale-down delay")
    decided_at = models.FloatField(default=0.0, help_text="Unix time of the last decision")

    objects = ThroughServiceQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.service_id}: {'panic' if self.panic_since is not None else 'stable'}"
