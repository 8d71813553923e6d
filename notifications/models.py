"""Per-user notification settings, webhook endpoints, the delivery log, and the thresholds already announced."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from notifications.events import SUBSCRIBABLE
from tenants.scoping import TenantScopedQuerySet

DEFAULT_LONG_WAIT_MINUTES = 60


def all_events() -> list[str]:
    return [str(event) for event in SUBSCRIBABLE]


class OwnedQuerySet(models.QuerySet):
    """Settings, endpoints and deliveries are personal, like API tokens: their owner sees them, nobody else (not
    even staff, here): another user's endpoint or delivery is a 404."""

    def visible_to(self, user, action: str = "view"):
        if user is None or not user.is_authenticated or not user.is_active:
            return self.none()
        return self.filter(user=user)


class NotificationSettings(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    events = models.JSONField(default=all_events, blank=True, help_text="event names to be told about")
    email = models.BooleanField(default=True, help_text="mail to the user's address (if it has one)")
    long_wait_minutes = models.PositiveIntegerField(
        default=DEFAULT_LONG_WAIT_MINUTES, help_text="job.started_after_wait: only after waiting at least this long"
    )

    objects = OwnedQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "notification settings"

    def __str__(self) -> str:
        return f"notification settings of {self.user}"

    def wants(self, event: str) -> bool:
        return event in (self.events or [])


class WebhookEndpoint(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    url = models.URLField(max_length=500)
    # Kept readable: every delivery is signed with it (HMAC-SHA256). Shown to its owner once, at creation.
    secret = models.CharField(max_length=64)
    events = models.JSONField(default=list, blank=True, help_text="empty: every event the user's settings enable")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return self.url

    def wants(self, event: str) -> bool:
        return self.active and (not self.events or event in self.events)


class Channel(models.TextChoices):
    EMAIL = "email"
    WEBHOOK = "webhook"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    RETRYING = "retrying"
    DELIVERED = "delivered"
    FAILED = "failed"  # gave up after the last attempt


class Delivery(models.Model):
    """One notification to one destination; its attempts say what happened each time."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    endpoint = models.ForeignKey(WebhookEndpoint, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    channel = models.CharField(max_length=8, choices=Channel.choices)
    event = models.CharField(max_length=32)
    # "email" or "webhook:<endpoint id>": with dedupe_key, one event about one thing reaches one destination once,
    # however often its cause is seen (a NULL endpoint would make every email row distinct).
    destination = models.CharField(max_length=32)
    dedupe_key = models.CharField(max_length=200)
    subject = models.CharField(max_length=200)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=12, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    objects = OwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "deliveries"
        indexes = [models.Index(fields=["status", "next_attempt_at"])]
        constraints = [
            models.UniqueConstraint(fields=["user", "destination", "dedupe_key"], name="one_delivery_per_cause"),
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.endpoint or self.channel} ({self.status})"


class DeliveryAttempt(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    at = models.DateTimeField()
    ok = models.BooleanField()
    response_code = models.PositiveIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField()
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="one_attempt_per_number")]

    def __str__(self) -> str:
        return f"attempt {self.number} of delivery {self.delivery_id}: {'ok' if self.ok else self.error}"


class ThresholdStateQuerySet(TenantScopedQuerySet):
    tenant_field = "group__tenant"


class ThresholdState(models.Model):
    """The highest level of a limit already announced for a group, so a crossing is told once, not every pass.

    Falls back when usage drops below the lowest level; the next crossing is then told again.
    """

    group = models.ForeignKey("tenants.Group", on_delete=models.CASCADE, related_name="+")
    limit = models.CharField(max_length=64, help_text="e.g. GrpTRES:gres/accelerator")
    level = models.PositiveIntegerField(default=0, help_text="percent announced last; 0: below every level")
    changed_at = models.DateTimeField(auto_now=True)

    objects = ThresholdStateQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["group", "limit"], name="one_threshold_state_per_limit")]

    def __str__(self) -> str:
        return f"{self.group} {self.limit} at {self.level}%"
