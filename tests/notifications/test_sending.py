"""Sending: one attempt per number however often it is asked for, backoff doubling, the stalled sweep, signatures."""

import json
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from notifications import config, sending, signing
from notifications.models import Delivery, DeliveryStatus
from notifications.services import endpoint_create, ping
from notifications.tasks import retry_stalled

pytestmark = pytest.mark.django_db


def test_an_attempt_is_sent_once_even_if_asked_twice(world, receiver):
    endpoint, secret = endpoint_create(user=world.alice, url=receiver.url)
    delivery = ping(user=world.alice, endpoint=endpoint)  # on_commit never runs here: nothing sent yet
    assert sending.attempt(delivery.pk, 1) is None
    assert sending.attempt(delivery.pk, 1) is None  # a redelivered message: not ours any more
    assert len(receiver.requests) == 1
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED and delivery.attempt_log.count() == 1
    body = receiver.requests[0].body
    assert json.loads(body)["event"] == "ping"
    headers = {k.lower(): v for k, v in receiver.requests[0].headers.items()}
    assert headers["x-aipool-delivery"] == str(delivery.pk)
    assert signing.verify(secret, headers["x-aipool-timestamp"], headers["x-aipool-signature"], body, time.time())


def test_failures_back_off_exponentially(world, receiver, settings):
    settings.AIPOOL_NOTIFY_BACKOFF_SECONDS = 30
    endpoint, _ = endpoint_create(user=world.alice, url=receiver.url)
    receiver.answers = [500, 500]
    delivery = ping(user=world.alice, endpoint=endpoint)
    assert sending.attempt(delivery.pk, 1) == 30
    assert sending.attempt(delivery.pk, 2) == 60
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.RETRYING
    assert delivery.next_attempt_at > timezone.now() + timedelta(seconds=50)
    assert [config.backoff_for(n) for n in (1, 2, 3, 4)] == [30, 60, 120, 240]


def test_an_unreachable_receiver_is_a_logged_failed_attempt(world, settings):
    settings.AIPOOL_WEBHOOK_TIMEOUT = 2
    endpoint, _ = endpoint_create(user=world.alice, url="http://127.0.0.1:9/nothing-listens")
    delivery = ping(user=world.alice, endpoint=endpoint)
    assert sending.attempt(delivery.pk, 1) is not None
    (attempt,) = delivery.attempt_log.all()
    assert not attempt.ok and attempt.response_code is None and "ConnectError" in attempt.error


def test_the_sweep_resends_overdue_attempts_only(world, receiver):
    endpoint, _ = endpoint_create(user=world.alice, url=receiver.url)
    overdue = ping(user=world.alice, endpoint=endpoint)
    fresh = ping(user=world.alice, endpoint=endpoint)
    Delivery.objects.filter(pk=overdue.pk).update(next_attempt_at=timezone.now() - timedelta(minutes=10))
    retry_stalled()
    overdue.refresh_from_db()
    fresh.refresh_from_db()
    assert overdue.status == DeliveryStatus.DELIVERED and fresh.status == DeliveryStatus.PENDING
    assert len(receiver.requests) == 1


@pytest.mark.parametrize(
    ("secret", "age", "ok"), [("whsec_right", 0, True), ("whsec_wrong", 0, False), ("whsec_right", 600, False)]
)
def test_verification_needs_the_secret_and_a_fresh_timestamp(secret, age, ok):
    now = time.time()
    stamp = int(now) - age
    signature = signing.sign("whsec_right", stamp, b'{"event":"ping"}')
    assert signing.verify(secret, str(stamp), signature, b'{"event":"ping"}', now) is ok
