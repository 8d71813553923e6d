"""Celery dispatch: work is enqueued after commit, and a burst of submits queues one scheduling pass."""

from unittest import mock

import pytest
from django.db import transaction

from jobs.scheduling import run_pass
from tests.jobs.helpers import submit

pytestmark = pytest.mark.django_db


def test_a_burst_of_submits_queues_one_scheduling_pass(world, django_capture_on_commit_callbacks):
    with mock.patch("jobs.tasks.schedule_pass.delay") as delay:
        with django_capture_on_commit_callbacks(execute=True):
            with transaction.atomic():
                for _ in range(5):
                    submit(world.alice, world.ai_team)
        assert delay.call_count == 1


def test_a_submit_after_a_pass_started_queues_another(world, django_capture_on_commit_callbacks):
    with mock.patch("jobs.tasks.schedule_pass.delay") as delay:
        with django_capture_on_commit_callbacks(execute=True):
            submit(world.alice, world.ai_team)
        run_pass()
        with django_capture_on_commit_callbacks(execute=True):
            submit(world.alice, world.ai_team)
        assert delay.call_count == 2


def test_nothing_is_enqueued_before_commit(world, django_capture_on_commit_callbacks):
    with mock.patch("jobs.tasks.schedule_pass.delay") as delay:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            submit(world.alice, world.ai_team)
        assert delay.call_count == 0 and len(callbacks) == 1
