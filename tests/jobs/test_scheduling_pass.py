"""The scheduling pass through the ORM: bounded queries, fair share stored and decayed, priorities visible, switches."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from api.services import token_create
from jobs.models import FairShareUsage, Job, SchedulerLock
from jobs.scheduling import group_key, load_state, policy_from_env, run_pass, tenant_key
from jobs.selectors import priority_factors, queue_priorities
from tests.factories import GroupFactory
from tests.jobs.helpers import submit, tick

pytestmark = pytest.mark.django_db


def fill_pool(world):
    """Another tenant's job on every node, so nothing queued can start."""
    job = submit(world.mallory, world.rivals, nodes=4, accelerators_per_node=8, time_limit="60", command="sleep 60")
    run_pass()
    return job


def ran(user, group, *, minutes: float, ago: float = 0.0, end=None):
    """A job on one full node that ran `minutes` and ended `ago` minutes ago (or at `end`), recorded directly.

    History goes in before the first pass stores usage: a run that overlaps a stored instant was running then, and
    the pass that stored it billed it up to there.
    """
    job = submit(user, group, accelerators_per_node=8)
    end = end or timezone.now() - timedelta(minutes=ago)
    Job.objects.filter(pk=job.pk).update(
        state="COMPLETED", started_at=end - timedelta(minutes=minutes), ended_at=end, exit_code=0
    )
    return job


def steady_pass_queries(world, queued: int) -> int:
    for _ in range(queued):
        submit(world.alice, world.ai_team)
    run_pass()  # the first pass writes every reason
    with CaptureQueriesContext(connection) as queries:
        run_pass()
    return len(queries)


def test_a_pass_reads_the_same_few_queries_whatever_the_queue(world):
    fill_pool(world)
    few = steady_pass_queries(world, 3)
    many = steady_pass_queries(world, 40)
    assert few == many and few < 20


def test_reasons_are_written_one_update_per_reason(world):
    fill_pool(world)
    for _ in range(30):
        submit(world.alice, world.ai_team)
    with CaptureQueriesContext(connection) as queries:
        run_pass()
    updates = [q["sql"] for q in queries if q["sql"].startswith("UPDATE") and '"reason"' in q["sql"]]
    assert len(updates) == 2
    assert set(Job.objects.pending().values_list("reason", flat=True)) == {"Priority", "Resources"}


def test_multi_node_job_records_the_leaf_switch_it_got(world):
    job = submit(world.alice, world.ai_team, nodes=2, accelerators_per_node=8)
    tick()
    job.refresh_from_db()
    assert job.switches in (["leaf0"], ["leaf1"])
    assert len(job.nodelist) == 2


def test_fair_share_usage_is_billed_to_the_group_and_its_tenant(world):
    ran(world.alice, world.ai_team, minutes=10)
    run_pass()
    stored = dict(FairShareUsage.objects.values_list("association", "usage"))
    group, tenant = stored[group_key(world.ai_team.pk)], stored[tenant_key(world.acme.pk)]
    # 8 accelerators and 64 cpus (billed 1 and 1/16) for 600 s, barely decayed over a 7-day half-life.
    assert group == pytest.approx((8 + 64 / 16) * 600, rel=0.01) and tenant == pytest.approx(group)
    assert stored.get(tenant_key(world.globex.pk), 0) == 0


def test_fair_share_usage_halves_every_half_life(world, monkeypatch):
    monkeypatch.setenv("AIPOOL_PRIORITY_DECAY_HALF_LIFE", "60")  # an hour
    ran(world.alice, world.ai_team, minutes=1, ago=0)
    fresh = load_state().fairshare_usage[group_key(world.ai_team.pk)]
    later = load_state(timezone.now() + timedelta(hours=2)).fairshare_usage[group_key(world.ai_team.pk)]
    assert later == pytest.approx(fresh / 4, rel=0.01)


def test_stored_usage_is_brought_up_to_date_when_read(world, monkeypatch):
    monkeypatch.setenv("AIPOOL_PRIORITY_DECAY_HALF_LIFE", "60")
    ran(world.alice, world.ai_team, minutes=1, ago=30)
    run_pass()  # stores the usage as of now
    stored_at = SchedulerLock.objects.get(pk=1).usage_decayed_at
    ran(world.alice, world.ai_team, minutes=1, end=stored_at + timedelta(minutes=2))  # all of it after
    combined = load_state(stored_at + timedelta(minutes=60)).fairshare_usage[group_key(world.ai_team.pk)]
    lock = SchedulerLock.objects.get(pk=1)
    lock.usage_decayed_at = None
    lock.save()
    from_history = load_state(stored_at + timedelta(minutes=60)).fairshare_usage[group_key(world.ai_team.pk)]
    assert combined == pytest.approx(from_history, rel=0.01)


def test_the_group_that_used_less_goes_first(world):
    ran(world.alice, world.ai_team, minutes=120)
    submit(world.mallory, world.rivals, nodes=3, accelerators_per_node=8, time_limit="60", command="sleep 60")
    busy = submit(world.mallory, world.rivals, accelerators_per_node=8, time_limit="60", command="sleep 60")
    run_pass()
    heavy = submit(world.alice, world.ai_team, accelerators_per_node=8)
    light = submit(world.mallory, world.rivals, accelerators_per_node=8)
    priorities = queue_priorities(Job.objects.filter(pk__in=[heavy.pk, light.pk]))
    assert priorities[light.pk] > priorities[heavy.pk]
    Job.objects.filter(pk=busy.pk).update(state="CANCELLED", ended_at=timezone.now())
    run_pass()
    assert Job.objects.get(pk=light.pk).state == "RUNNING"
    assert (Job.objects.get(pk=heavy.pk).state, Job.objects.get(pk=heavy.pk).reason) == ("PENDING", "Resources")


def test_priority_factors_show_each_factor_weighted(world):
    fill_pool(world)
    job = submit(world.alice, world.ai_team, nodes=2, accelerators_per_node=8)
    shown = priority_factors(job)
    assert set(shown["factors"]) == {"age", "fairshare", "job_size", "partition"}
    assert shown["factors"]["job_size"]["factor"] == 0.5  # 2 of the partition's 4 nodes
    assert shown["factors"]["fairshare"]["weight"] == 10000
    assert shown["priority"] == round(sum(f["value"] for f in shown["factors"].values()))
    assert shown["fairshare"]["association"] == "group ai-team"


def test_priority_weights_and_times_come_from_the_environment(monkeypatch, settings):
    settings.AIPOOL_SECONDS_PER_MINUTE = 60
    monkeypatch.setenv("AIPOOL_PRIORITY_WEIGHT_AGE", "5000")
    monkeypatch.setenv("AIPOOL_PRIORITY_DECAY_HALF_LIFE", "1-00:00:00")
    monkeypatch.setenv("AIPOOL_MAX_SWITCH_WAIT", "10")
    policy = policy_from_env()
    assert (policy.weights.age, policy.half_life, policy.switch_wait) == (5000, 86400, 600)
    monkeypatch.setenv("AIPOOL_PRIORITY_MAX_AGE", "soon")
    with pytest.raises(ValueError, match="AIPOOL_PRIORITY_MAX_AGE"):
        policy_from_env()


def test_a_parent_groups_limit_holds_its_children(world):
    parent = GroupFactory(name="lab", tenant=world.acme, partitions=[world.partition], grp_tres={"gres/accelerator": 8})
    child = GroupFactory(name="lab-vision", tenant=world.acme, parent=parent, partitions=[world.partition])
    from tests.factories import make_member

    make_member(world.alice, child)
    first = submit(world.alice, child, accelerators_per_node=8, command="sleep 60")
    second = submit(world.alice, child, accelerators_per_node=1)
    run_pass()
    assert Job.objects.get(pk=first.pk).state == "RUNNING"
    assert Job.objects.get(pk=second.pk).reason == "AssocGrpGRES"


def client_of(user) -> APIClient:
    client = APIClient()
    _, secret = token_create(user=user, name="test", scopes=("read",))
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_api_shows_a_jobs_priority_and_hides_it_from_other_tenants(world):
    job = submit(world.alice, world.ai_team)
    response = client_of(world.alice).get(f"/api/v1/jobs/{job.pk}/priority/")
    assert response.status_code == 200 and response.json()["job_id"] == job.pk
    assert set(response.json()["factors"]) == {"age", "fairshare", "job_size", "partition"}
    assert client_of(world.mallory).get(f"/api/v1/jobs/{job.pk}/priority/").status_code == 404
