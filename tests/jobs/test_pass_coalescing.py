"""Submits under a burst: one read decides whether a pass is already queued, and the worker leaves a gap between
passes (AIPOOL_SCHED_MIN_INTERVAL_MS) so that a burst costs a few passes a second, not one per handful of jobs."""

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from jobs.models import SchedulerLock
from jobs.scheduling import run_pass, wait_for_min_interval
from jobs.services import PASS_REQUEST_ROW, request_schedule_pass
from jobs.tasks import schedule_pass

pytestmark = pytest.mark.django_db


def _last_pass(seconds_ago: float) -> None:
    SchedulerLock.objects.update_or_create(
        pk=1, defaults={"last_pass_at": timezone.now() - timedelta(seconds=seconds_ago)}
    )


def test_a_queued_pass_is_seen_with_one_query(django_assert_num_queries):
    SchedulerLock.objects.filter(pk=PASS_REQUEST_ROW).update(pass_requested=True)
    with mock.patch("jobs.tasks.schedule_pass.delay") as delay, django_assert_num_queries(1):
        request_schedule_pass()
    assert delay.call_count == 0


def test_the_first_request_after_a_pass_queues_one():
    run_pass()
    with mock.patch("jobs.tasks.schedule_pass.delay") as delay:
        request_schedule_pass()
        request_schedule_pass()
    assert delay.call_count == 1
    assert SchedulerLock.objects.get(pk=PASS_REQUEST_ROW).pass_requested


def test_without_the_flag_row_every_request_queues_a_pass():
    SchedulerLock.objects.filter(pk=PASS_REQUEST_ROW).delete()
    with mock.patch("jobs.tasks.schedule_pass.delay") as delay:
        request_schedule_pass()
        request_schedule_pass()
    assert delay.call_count == 2


def test_a_pass_right_after_another_waits_for_the_rest_of_the_interval(monkeypatch):
    monkeypatch.setenv("AIPOOL_SCHED_MIN_INTERVAL_MS", "400")
    _last_pass(seconds_ago=0.1)
    with mock.patch("jobs.scheduling.time.sleep") as sleep:
        waited = wait_for_min_interval()
    assert 0.2 < waited <= 0.3
    sleep.assert_called_once_with(waited)


def test_a_pass_long_after_the_last_one_starts_at_once(monkeypatch):
    monkeypatch.setenv("AIPOOL_SCHED_MIN_INTERVAL_MS", "400")
    _last_pass(seconds_ago=5)
    with mock.patch("jobs.scheduling.time.sleep") as sleep:
        assert wait_for_min_interval() == 0
    sleep.assert_not_called()


def test_an_interval_of_zero_never_waits(monkeypatch, django_assert_num_queries):
    monkeypatch.setenv("AIPOOL_SCHED_MIN_INTERVAL_MS", "0")
    _last_pass(seconds_ago=0)
    with mock.patch("jobs.scheduling.time.sleep") as sleep, django_assert_num_queries(0):
        assert wait_for_min_interval() == 0
    sleep.assert_not_called()


def test_the_flag_stays_set_while_the_pass_waits(monkeypatch):
    """Submits landing during the wait are scheduled by the waiting pass: they must not queue another."""
    monkeypatch.setenv("AIPOOL_SCHED_MIN_INTERVAL_MS", "400")
    run_pass()
    SchedulerLock.objects.filter(pk=PASS_REQUEST_ROW).update(pass_requested=True)
    seen = []
    with mock.patch("jobs.scheduling.time.sleep", lambda seconds: seen.append(_flag())):
        wait_for_min_interval()
    assert seen == [True]


def test_inline_passes_never_wait(monkeypatch):
    """Run eagerly (tests, AIPOOL_CELERY_EAGER) a pass is part of the request that asked for it: no sleeping there."""
    monkeypatch.setenv("AIPOOL_SCHED_MIN_INTERVAL_MS", "10000")
    _last_pass(seconds_ago=0)
    with mock.patch("jobs.scheduling.wait_for_min_interval") as wait:
        schedule_pass.apply()
        schedule_pass()
    wait.assert_not_called()


def test_a_worker_pass_waits_first(monkeypatch):
    with mock.patch("jobs.scheduling.wait_for_min_interval") as wait, mock.patch("jobs.scheduling.run_pass") as run:
        run.return_value = []
        schedule_pass.push_request(called_directly=False, is_eager=False)
        try:
            schedule_pass.run()
        finally:
            schedule_pass.pop_request()
    wait.assert_called_once_with()
    run.assert_called_once_with()


def _flag() -> bool:
    return SchedulerLock.objects.get(pk=PASS_REQUEST_ROW).pass_requested
