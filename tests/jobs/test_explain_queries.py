"""Explanations through the ORM: the contract's shape, a fixed number of queries, and jobs that are not waiting."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.models import Job
from jobs.scheduling import run_pass
from jobs.selectors import job_explanation
from tests.jobs.helpers import submit

pytestmark = pytest.mark.django_db


def queries_to_explain(world, queued: int) -> int:
    submit(world.mallory, world.rivals, nodes=4, accelerators_per_node=8, time_limit="60", command="sleep 60")
    for _ in range(queued):
        submit(world.alice, world.ai_team)
    run_pass()
    job = Job.objects.pending().order_by("-id").first()
    with CaptureQueriesContext(connection) as queries:
        job_explanation(job)
    return len(queries)


def test_explaining_costs_the_same_queries_with_a_long_queue(world):
    assert queries_to_explain(world, 2) == queries_to_explain(world, 30)


def test_explanation_has_the_contract_shape(world):
    submit(world.mallory, world.rivals, nodes=4, accelerators_per_node=8, time_limit="60", command="sleep 60")
    job = submit(world.alice, world.ai_team, nodes=2, accelerators_per_node=8)
    run_pass()
    explained = job_explanation(Job.objects.get(pk=job.pk))
    assert set(explained) == {"state", "reason", "causes", "estimated_start", "suggestions"}
    assert all(set(c) == {"code", "message", "limit", "in_use", "requested"} for c in explained["causes"])
    assert all(set(s) == {"message", "change", "estimated_start"} for s in explained["suggestions"])
    assert explained["reason"] == "Resources" and explained["estimated_start"] is not None


def test_a_running_job_has_nothing_to_explain(world):
    job = submit(world.alice, world.ai_team)
    run_pass()
    explained = job_explanation(Job.objects.get(pk=job.pk))
    assert explained == {
        "state": "RUNNING",
        "reason": "None",
        "causes": [],
        "estimated_start": None,
        "suggestions": [],
    }


def test_a_job_the_last_pass_held_but_nothing_holds_now_says_so(world):
    job = submit(world.alice, world.ai_team)
    Job.objects.filter(pk=job.pk).update(reason="Resources")
    explained = job_explanation(Job.objects.get(pk=job.pk))
    (cause,) = explained["causes"]
    assert cause["code"] == "Resources" and "next pass should start it" in cause["message"]
    assert explained["suggestions"] == []
