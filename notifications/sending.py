"""One attempt at one delivery: claimed with a conditional UPDATE, sent, logged, and the next step decided.

Safe to run twice for the same attempt (a redelivered Celery message, the stalled-delivery sweep): only the caller
whose UPDATE moves ``attempts`` from n-1 to n sends attempt n.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass
from datetime import timedelta

import httpx
from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone

from notifications import config, signing
from notifications.models import Channel, Delivery, DeliveryAttempt, DeliveryStatus

OPEN = (DeliveryStatus.PENDING, DeliveryStatus.RETRYING)
ERROR_LENGTH = 500


@dataclass(frozen=True)
class Outcome:
    ok: bool
    response_code: int | None = None
    error: str = ""


def webhook_body(delivery: Delivery) -> bytes:
    document = {
        "delivery": delivery.pk,
        "event": delivery.event,
        "created_at": delivery.created_at.isoformat(),
        "subject": delivery.subject,
        "data": delivery.payload.get("data", {}),
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


@functools.cache
def _http() -> httpx.Client:
    """One client per worker process: building a TLS context per delivery costs more than the delivery."""
    return httpx.Client(follow_redirects=False)


def _post_webhook(delivery: Delivery) -> Outcome:
    body = webhook_body(delivery)
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "aipool-webhooks/1",
        signing.EVENT_HEADER: delivery.event,
        signing.DELIVERY_HEADER: str(delivery.pk),
        signing.TIMESTAMP_HEADER: str(timestamp),
        signing.SIGNATURE_HEADER: signing.sign(delivery.endpoint.secret, timestamp, body),
    }
    try:
        response = _http().post(delivery.endpoint.url, content=body, headers=headers, timeout=config.timeout_seconds())
    except httpx.HTTPError as exc:
        return Outcome(False, None, f"{type(exc).__name__}: {exc}"[:ERROR_LENGTH])
    if 200 <= response.status_code < 300:
        return Outcome(True, response.status_code)
    return Outcome(False, response.status_code, f"HTTP {response.status_code}")


def _send_email(delivery: Delivery) -> Outcome:
    try:
        send_mail(
            f"[aipool] {delivery.subject}",
            delivery.payload.get("text", delivery.subject),
            settings.DEFAULT_FROM_EMAIL,
            [delivery.user.email],
        )
    except Exception as exc:  # any mail backend's failure is a failed attempt, retried like a webhook's
        return Outcome(False, None, f"{type(exc).__name__}: {exc}"[:ERROR_LENGTH])
    return Outcome(True)


def _send(delivery: Delivery) -> Outcome:
    if delivery.channel == Channel.EMAIL:
        return _send_email(delivery)
    if delivery.endpoint is None:
        return Outcome(False, None, "the webhook endpoint was deleted")
    return _post_webhook(delivery)


def attempt(delivery_id: int, number: int) -> int | None:
    """Send attempt `number` of a delivery unless someone else did; the seconds to wait before the next attempt, or
    None when there is none (delivered, given up, or not ours to send)."""
    claimed = Delivery.objects.filter(pk=delivery_id, attempts=number - 1, status__in=OPEN).update(attempts=number)
    if not claimed:
        return None
    delivery = Delivery.objects.select_related("endpoint", "user").get(pk=delivery_id)
    started, at = time.monotonic(), timezone.now()
    outcome = _send(delivery)
    duration_ms = round((time.monotonic() - started) * 1000)
    DeliveryAttempt.objects.create(
        delivery=delivery,
        number=number,
        at=at,
        ok=outcome.ok,
        response_code=outcome.response_code,
        duration_ms=duration_ms,
        error=outcome.error,
    )
    return _after(delivery, number, outcome)


def _after(delivery: Delivery, number: int, outcome: Outcome) -> int | None:
    now = timezone.now()
    if outcome.ok:
        Delivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.DELIVERED, delivered_at=now)
        return None
    if number >= config.max_attempts() or (delivery.channel == Channel.WEBHOOK and delivery.endpoint is None):
        Delivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.FAILED, next_attempt_at=None)
        return None
    wait = config.backoff_for(number)
    Delivery.objects.filter(pk=delivery.pk).update(
        status=DeliveryStatus.RETRYING, next_attempt_at=now + timedelta(seconds=wait)
    )
    return wait


def stalled(now, grace: timedelta) -> list[tuple[int, int]]:
    """(delivery id, next attempt number) of deliveries whose next attempt is overdue: a lost message, a dead worker."""
    return list(
        Delivery.objects.filter(status__in=OPEN, next_attempt_at__lt=now - grace)
        .order_by("next_attempt_at")
        .values_list("pk", "attempts")[:500]
    )
