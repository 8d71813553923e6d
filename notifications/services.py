"""Write operations of notifications (style.md §2): settings and endpoints, and `notify`, which records one delivery
per destination and enqueues its sending after commit."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.utils import timezone

from notifications.events import SUBSCRIBABLE, Event
from notifications.models import Channel, Delivery, NotificationSettings, WebhookEndpoint
from notifications.signing import new_secret
from tenants.services import audit

MAX_ENDPOINTS = 10
MAX_LONG_WAIT_MINUTES = 60 * 24 * 30


@dataclass(frozen=True)
class Notice:
    """What to tell: the event, a one-line subject, a plain-text body for mail, the data for webhooks, and a key
    that names its cause (the same cause seen twice is told once)."""

    event: str
    subject: str
    text: str
    dedupe_key: str
    data: dict = field(default_factory=dict)


def settings_for(user) -> NotificationSettings:
    found, _ = NotificationSettings.objects.get_or_create(user=user)
    return found


def _check_events(events, field_name: str = "events") -> list[str]:
    unknown = sorted(set(events) - set(SUBSCRIBABLE))
    if unknown:
        raise ValidationError({field_name: [f"unknown event {', '.join(unknown)}: one of {', '.join(SUBSCRIBABLE)}"]})
    return [str(event) for event in SUBSCRIBABLE if event in set(events)]


@transaction.atomic
def settings_update(
    *, user, events: Iterable[str] | None = None, email: bool | None = None, long_wait_minutes: int | None = None
) -> NotificationSettings:
    current = NotificationSettings.objects.select_for_update().get(pk=settings_for(user).pk)
    before = {"events": current.events, "email": current.email, "long_wait_minutes": current.long_wait_minutes}
    if events is not None:
        current.events = _check_events(events)
    if email is not None:
        current.email = email
    if long_wait_minutes is not None:
        if not 0 <= long_wait_minutes <= MAX_LONG_WAIT_MINUTES:
            raise ValidationError({"long_wait_minutes": [f"between 0 and {MAX_LONG_WAIT_MINUTES} minutes"]})
        current.long_wait_minutes = long_wait_minutes
    current.save()
    after = {"events": current.events, "email": current.email, "long_wait_minutes": current.long_wait_minutes}
    changes = {key: [before[key], after[key]] for key in before if before[key] != after[key]}
    audit(actor=user, action="notifications.settings", target=current, tenant=None, changes=changes)
    return current


def _check_url(url: str) -> str:
    url = (url or "").strip()
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError as exc:
        raise ValidationError(
            {"url": ["an http:// or https:// URL, e.g. https://ci.example.com/hooks/aipool"]}
        ) from exc
    if urlsplit(url).username or urlsplit(url).password:
        raise ValidationError({"url": ["no credentials in the URL: verify the signature instead"]})
    return url


@transaction.atomic
def endpoint_create(*, user, url: str, events: Iterable[str] = ()) -> tuple[WebhookEndpoint, str]:
    """A new endpoint and its signing secret (shown to the user once)."""
    url = _check_url(url)
    events = _check_events(events)
    if WebhookEndpoint.objects.filter(user=user).count() >= MAX_ENDPOINTS:
        raise ValidationError({"url": [f"at most {MAX_ENDPOINTS} webhook endpoints per user: delete one first"]})
    secret = new_secret()
    endpoint = WebhookEndpoint.objects.create(user=user, url=url, events=events, secret=secret)
    audit(actor=user, action="notifications.webhook.create", target=endpoint, tenant=None, changes={"url": [None, url]})
    return endpoint, secret


@transaction.atomic
def endpoint_update(
    *, user, endpoint: WebhookEndpoint, url: str | None = None, events=None, active: bool | None = None
) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk, user=user)
    changes = {}
    for name, value in (
        ("url", None if url is None else _check_url(url)),
        ("events", None if events is None else _check_events(events)),
        ("active", active),
    ):
        if value is not None and getattr(endpoint, name) != value:
            changes[name] = [getattr(endpoint, name), value]
            setattr(endpoint, name, value)
    endpoint.save()
    audit(actor=user, action="notifications.webhook.update", target=endpoint, tenant=None, changes=changes)
    return endpoint


@transaction.atomic
def endpoint_delete(*, user, endpoint: WebhookEndpoint) -> None:
    audit(actor=user, action="notifications.webhook.delete", target=endpoint, tenant=None)
    WebhookEndpoint.objects.filter(pk=endpoint.pk, user=user).delete()


def _destinations(user, event: str, *, only: WebhookEndpoint | None):
    if only is not None:
        return [(Channel.WEBHOOK, only)]
    preferences = settings_for(user)
    if not preferences.wants(event):
        return []
    found = [(Channel.EMAIL, None)] if preferences.email and user.email else []
    endpoints = WebhookEndpoint.objects.filter(user=user, active=True).order_by("pk")
    return found + [(Channel.WEBHOOK, endpoint) for endpoint in endpoints if endpoint.wants(event)]


@transaction.atomic
def notify(*, users: Iterable, notice: Notice, only: WebhookEndpoint | None = None) -> list[Delivery]:
    """Record a delivery for every destination of every user who asked for this event; send them after commit.

    A notice whose cause was told before (same dedupe key and destination) is not recorded again.
    """
    created = []
    now = timezone.now()
    for user in users:
        for channel, endpoint in _destinations(user, notice.event, only=only):
            destination = channel if endpoint is None else f"webhook:{endpoint.pk}"
            try:
                with transaction.atomic():
                    delivery = Delivery.objects.create(
                        user=user,
                        endpoint=endpoint,
                        channel=channel,
                        destination=destination,
                        event=notice.event,
                        dedupe_key=notice.dedupe_key[:200],
                        subject=notice.subject[:200],
                        payload={"text": notice.text, "data": notice.data},
                        next_attempt_at=now,
                    )
            except IntegrityError:
                continue  # told before
            created.append(delivery)
    if created:
        ids = [delivery.pk for delivery in created]
        transaction.on_commit(lambda: _enqueue(ids))
    return created


def _enqueue(delivery_ids: list[int]) -> None:
    from notifications.tasks import deliver

    for delivery_id in delivery_ids:
        deliver.delay(delivery_id, 1)


def ping(*, user, endpoint: WebhookEndpoint) -> Delivery:
    """A test delivery to one endpoint, whatever its event filter."""
    stamp = timezone.now().isoformat()
    notice = Notice(
        event=Event.PING,
        subject="aipool test delivery",
        text="A test delivery from aipool: your endpoint receives signed webhooks.",
        dedupe_key=f"ping:{stamp}",
        data={"endpoint": endpoint.pk, "at": stamp},
    )
    return notify(users=[user], notice=notice, only=endpoint)[0]
