"""Stored priorities: the pass saves them, the API sorts by them, `jobs/priorities/` and `aipool sprio` show them."""

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.models import Job, SchedulerLock
from jobs.scheduling import load_state, run_pass
from jobs.selectors import priority_factors
from tenants.services import limits_set, tenant_update
from tests.api.test_cli_contract import aipool  # noqa: F401 - the fixture
from tests.jobs.helpers import submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue(world):
    """Nothing may start (GrpJobs=0), so nothing is billed and fair share stays put: three pending jobs of different
    sizes, so of different priorities, and one of the other tenant."""
    for group in (world.ai_team, world.rivals):
        limits_set(actor=None, target=group, changes={"grp_jobs": 0})
    jobs = [submit(world.alice, world.ai_team, nodes=n) for n in (1, 4, 2)]
    submit(world.mallory, world.rivals, nodes=4)
    run_pass()
    return jobs


def test_a_pass_stores_each_pending_jobs_priority(world, queue):
    for job in queue:
        job.refresh_from_db()
        assert job.state == "PENDING"
        assert job.priority == priority_factors(job)["priority"] > 0
    # Larger jobs weigh more (job size factor): the stored values differ, so sorting by them means something.
    assert len({job.priority for job in queue}) == 3


def _priority_writes(ctx) -> list[str]:
    # executemany is captured as "N times: UPDATE …".
    return [q["sql"] for q in ctx.captured_queries if "UPDATE" in q["sql"] and 'SET "priority"' in q["sql"]]


def test_priorities_are_rewritten_every_calc_period_only_where_they_changed(world, queue):
    Job.objects.filter(pk=queue[0].pk).update(priority=-1)
    with CaptureQueriesContext(connection) as ctx:
        run_pass()
    # Within PriorityCalcPeriod a pass writes only jobs never stored (none here).
    assert not _priority_writes(ctx)
    SchedulerLock.objects.filter(pk=1).update(usage_decayed_at=timezone.now() - timedelta(days=1))
    with CaptureQueriesContext(connection) as ctx:
        run_pass()
    # The period is up: what changed is written (nothing else: age moves a priority by a point in minutes).
    (write,) = _priority_writes(ctx)
    assert write.startswith("1 times:")
    queue[0].refresh_from_db()
    assert queue[0].priority > 0


def test_ordering_by_priority_pages_the_queue_highest_first(world, queue, api):
    client = api(world.alice)
    response = client.get("/api/v1/jobs/", {"state": "PENDING", "ordering": "-priority", "page_size": 2})
    assert response.status_code == 200, response.content
    first = response.json()
    rest = client.get(first["next"]).json()
    listed = [j["id"] for j in first["results"] + rest["results"]]
    expected = sorted(queue, key=lambda j: (-Job.objects.get(pk=j.pk).priority, j.pk))
    assert listed == [j.pk for j in expected]
    assert [j["priority"] for j in first["results"]] == sorted((j["priority"] for j in first["results"]), reverse=True)
    bad = client.get("/api/v1/jobs/", {"ordering": "-reason"})
    assert bad.status_code == 400 and "ordering" in bad.json()["errors"]


def test_priorities_lists_pending_jobs_you_may_see_with_their_factors(world, queue, api):
    response = api(world.alice).get("/api/v1/jobs/priorities/")
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert {r["job_id"] for r in results} == {j.pk for j in queue}  # not mallory's
    top = results[0]
    assert top["priority"] == max(r["priority"] for r in results)
    assert set(top["factors"]) == {"age", "fairshare", "job_size", "partition"}
    assert round(sum(f["value"] for f in top["factors"].values())) == pytest.approx(top["priority"], abs=1)
    assert api().get("/api/v1/jobs/priorities/").status_code == 401


def test_tenant_shares_enter_the_fair_share_tree(world):
    tenant_update(actor=None, tenant=world.acme, shares=3)
    shares = {a.key: a.shares for a in load_state().tree if a.parent is None}
    assert shares == {f"tenant:{world.acme.pk}": 3, f"tenant:{world.globex.pk}": 1}


def test_aipool_sprio_prints_the_factors(world, queue, aipool):  # noqa: F811
    code, out, err = aipool(world.alice, "sprio")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["JOBID", "PRIORITY", "AGE", "FAIRSHARE", "JOBSIZE", "PARTITION", "ACCOUNT"]
    assert len(lines) == 4 and all("ai-team" in line for line in lines[1:])
    code, out, err = aipool(world.alice, "--json", "sprio", "-j", str(queue[0].pk))
    assert code == 0, err
    assert [e["job_id"] for e in json.loads(out)] == [queue[0].pk]
    code, out, err = aipool(world.alice, "sprio", "-j", "999999")
    assert code != 0 and "999999" in err


def test_staff_set_a_tenants_share_over_the_api(world, api):
    url = f"/api/v1/tenants/{world.acme.pk}/"
    response = api(world.staff).patch(url, {"shares": 3}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["shares"] == 3
    world.acme.refresh_from_db()
    assert world.acme.shares == 3
    assert api(world.ada).patch(url, {"shares": 9}, format="json").status_code == 403
    bad = api(world.staff).patch(url, {"shares": 0}, format="json")
    assert bad.status_code == 400 and "shares" in bad.json()["errors"]
    created = api(world.staff).post("/api/v1/tenants/", {"name": "initech", "shares": 2}, format="json")
    assert created.status_code == 201 and created.json()["shares"] == 2
    world.acme.refresh_from_db()
    assert world.acme.shares == 3
