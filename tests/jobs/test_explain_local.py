"""Explanations on the local backend, end to end: the reason, the causes with numbers, an estimated start that comes
true when nothing else changes, and a suggestion that would start the job sooner.

Time limits are seconds here (AIPOOL_SECONDS_PER_MINUTE=1) and the jobs that hold the pool sleep past their limits,
so they end exactly when the plan expects them to: at their time limit.
"""

from datetime import datetime

import pytest

from jobs.models import Job
from jobs.selectors import job_explanation
from tests.jobs.helpers import drive_until, submit, tick

pytestmark = pytest.mark.django_db

# The start a pass makes lags the plan by the launch of the job it waits for, the reconcile that notices its end
# and the next pass: well under this.
LAG = 3.0
HOLD = "sleep 60"


@pytest.fixture(autouse=True)
def seconds_per_minute(settings):
    settings.AIPOOL_SECONDS_PER_MINUTE = 1


def running(job):
    job.refresh_from_db()
    assert job.state == "RUNNING", (job.state, job.reason)
    return job


def started(job):
    def check():
        job.refresh_from_db()
        return job.state != "PENDING"

    drive_until(check, timeout=30)
    return job.started_at


def at(value: str) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def sooner(explained: dict) -> list[dict]:
    base = explained["estimated_start"]
    return [s for s in explained["suggestions"] if s["estimated_start"] is not None and s["estimated_start"] < base]


def test_job_over_its_groups_quota_is_explained_and_starts_when_estimated(world):
    first = submit(world.alice, world.ai_team, accelerators_per_node=8, time_limit="4", command=HOLD)
    other = submit(world.alice, world.ai_team, accelerators_per_node=4, time_limit="60", command=HOLD)
    tick()
    first, other = running(first), running(other)
    job = submit(world.bob, world.ai_team, accelerators_per_node=8, time_limit="5", command="true")
    tick()
    job.refresh_from_db()
    assert (job.state, job.reason) == ("PENDING", "AssocGrpGRES")

    explained = job_explanation(job)
    assert explained["reason"] == "AssocGrpGRES"
    (cause,) = explained["causes"]
    assert cause["code"] == "AssocGrpGRES"
    assert cause["message"] == "group ai-team has 12 of 16 accelerators in use (GrpTRES); this job needs 8"
    assert (cause["limit"], cause["in_use"], cause["requested"]) == (
        {"gres/accelerator": 16},
        {"gres/accelerator": 12},
        {"gres/accelerator": 8},
    )
    estimate = at(explained["estimated_start"])
    assert abs((estimate - first.started_at).total_seconds() - 4) < 0.5  # when the 8-accelerator job times out
    (fewer, *_) = sooner(explained)
    assert fewer["change"]["accelerators_per_node"] == 4

    assert abs((started(job) - estimate).total_seconds()) < LAG


def test_suggestion_for_a_job_over_quota_really_starts_it_now(world):
    submit(world.alice, world.ai_team, accelerators_per_node=8, time_limit="30", command=HOLD)
    submit(world.alice, world.ai_team, accelerators_per_node=4, time_limit="30", command=HOLD)
    job = submit(world.bob, world.ai_team, accelerators_per_node=8, time_limit="5", command="true")
    tick()
    (suggestion, *_) = sooner(job_explanation(Job.objects.get(pk=job.pk)))
    change = {k: v for k, v in suggestion["change"].items() if k in ("accelerators_per_node", "time_limit", "nodes")}
    smaller = submit(world.bob, world.ai_team, **{**{"time_limit": "5", "command": "true"}, **change})
    tick()
    assert Job.objects.get(pk=smaller.pk).state in ("RUNNING", "COMPLETED")


def _busy_pool(world):
    """Another tenant holds three of the four nodes: two until t+5 s (one leaf switch), one for a minute."""
    pair = submit(world.mallory, world.rivals, nodes=2, accelerators_per_node=8, time_limit="5", command=HOLD)
    single = submit(world.mallory, world.rivals, nodes=1, accelerators_per_node=8, time_limit="60", command=HOLD)
    tick()
    return running(pair), running(single)


def test_job_short_of_nodes_is_explained_and_starts_when_estimated(world):
    pair, _ = _busy_pool(world)
    job = submit(world.alice, world.ai_team, nodes=2, accelerators_per_node=8, time_limit="5", command="true")
    tick()
    job.refresh_from_db()
    assert (job.state, job.reason) == ("PENDING", "Resources")

    explained = job_explanation(job)
    assert explained["reason"] == "Resources"
    (cause,) = explained["causes"]
    assert cause["code"] == "Resources"
    assert "partition main has 8 of 32 accelerators free" in cause["message"]
    assert "1 of its 4 nodes have 8 free accelerators" in cause["message"]
    assert cause["requested"] == {"node": 2, "gres/accelerator": 16}
    estimate = at(explained["estimated_start"])
    assert abs((estimate - pair.started_at).total_seconds() - 5) < 0.5
    assert any(s["change"] == {"nodes": 1} for s in sooner(explained))

    assert abs((started(job) - estimate).total_seconds()) < LAG


def test_job_behind_a_reservation_is_explained_and_starts_when_estimated(world):
    pair, _ = _busy_pool(world)
    reserved = submit(world.alice, world.ai_team, nodes=2, accelerators_per_node=8, time_limit="5", command="true")
    tick()
    job = submit(world.mallory, world.rivals, nodes=1, accelerators_per_node=8, time_limit="20", command="true")
    tick()
    job.refresh_from_db()
    # It would fit on the free node now, but would still run when the two-node job is reserved to start there.
    assert (job.state, job.reason) == ("PENDING", "Priority")

    explained = job_explanation(job)
    assert explained["reason"] == "Priority"
    assert [c["code"] for c in explained["causes"]] == ["Priority"]
    assert f"job {reserved.pk} (higher priority)" in explained["causes"][0]["message"]
    estimate = at(explained["estimated_start"])
    assert abs((estimate - pair.started_at).total_seconds() - 5) < 0.5  # beside the reserved job, on the third node
    (backfill,) = [s for s in sooner(explained) if "time_limit" in s["change"]]
    assert at(backfill["estimated_start"]) < estimate and "backfill" in backfill["message"]

    assert abs((started(job) - estimate).total_seconds()) < LAG
    assert abs((started(reserved) - estimate).total_seconds()) < LAG  # its reservation held
