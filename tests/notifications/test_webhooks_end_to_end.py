"""Done-when: a webhook receiver (a real HTTP server) gets signed deliveries for a job's end and for a quota
threshold, and a delivery that first got a 500 is retried and delivered; every attempt is logged."""

import json
import time

import pytest

from jobs.models import Job
from jobs.services import job_cancel
from notifications.models import Delivery, DeliveryStatus
from notifications.services import endpoint_create
from notifications.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, verify
from tests.jobs.helpers import drive_until, ended, submit

pytestmark = pytest.mark.django_db


def running(job):
    def check():
        job.refresh_from_db()
        return job.state == "RUNNING"

    return check


def events_received(receiver, secret):
    answer = []
    for request in receiver.requests:
        headers = {k.lower(): v for k, v in request.headers.items()}
        assert verify(
            secret, headers[TIMESTAMP_HEADER.lower()], headers[SIGNATURE_HEADER.lower()], request.body, time.time()
        ), "a delivery that does not verify"
        answer.append((json.loads(request.body)["event"], request.answered))
    return answer


def test_signed_deliveries_for_job_end_and_quota_threshold_with_a_retry(
    world, receiver, django_capture_on_commit_callbacks
):
    endpoint, secret = endpoint_create(user=world.alice, url=receiver.url)
    receiver.answers = [500]  # the first POST fails; its retry must get through

    with django_capture_on_commit_callbacks(execute=True):
        short = submit(world.alice, world.ai_team, name="short", command="true")
        drive_until(ended(short))
    assert short.state == "COMPLETED"

    # 16 of ai-team's 16 accelerators (GrpTRES gres/accelerator=16): past 80% and 90%, told once, as 90%.
    with django_capture_on_commit_callbacks(execute=True):
        big = submit(world.alice, world.ai_team, name="big", nodes=2, accelerators_per_node=8, command="sleep 60")
        drive_until(running(big))
    with django_capture_on_commit_callbacks(execute=True):
        job_cancel(user=world.alice, job=Job.objects.get(pk=big.pk))

    received = events_received(receiver, secret)
    assert received[:2] == [("job.ended", 500), ("job.ended", 200)]
    assert ("quota.threshold", 200) in received
    assert received.count(("quota.threshold", 200)) == 1
    assert received[-1] == ("job.ended", 200)  # the cancelled big job

    retried = Delivery.objects.get(endpoint=endpoint, dedupe_key__startswith=f"job:{short.pk}:")
    assert retried.status == DeliveryStatus.DELIVERED and retried.attempts == 2
    log = list(retried.attempt_log.values_list("number", "ok", "response_code"))
    assert log == [(1, False, 500), (2, True, 200)]
    assert all(a.duration_ms >= 0 for a in retried.attempt_log.all())
    quota = Delivery.objects.get(endpoint=endpoint, event="quota.threshold")
    assert quota.payload["data"]["level"] == 90 and quota.payload["data"]["in_use"] == 16


def test_a_receiver_that_keeps_failing_is_given_up_after_the_last_attempt(
    world, receiver, settings, django_capture_on_commit_callbacks
):
    settings.AIPOOL_NOTIFY_MAX_ATTEMPTS = 3
    endpoint, _ = endpoint_create(user=world.alice, url=receiver.url)
    receiver.answers = [500, 502, 503, 500]
    from notifications.services import ping

    with django_capture_on_commit_callbacks(execute=True):
        delivery = ping(user=world.alice, endpoint=endpoint)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 3
    assert [r.answered for r in receiver.requests] == [500, 502, 503]
    assert list(delivery.attempt_log.values_list("response_code", flat=True)) == [500, 502, 503]
