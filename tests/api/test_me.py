"""``me/`` and ``me/quota/``: who you are, and ``quota -u $USER`` for each of your groups."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.models import Job
from tests.factories import GroupFactory, make_member
from tests.jobs.helpers import submit

pytestmark = pytest.mark.django_db


def test_me_lists_tenants_with_role_and_groups(world, api):
    me = api(world.ada).get("/api/v1/me/").json()
    assert me["username"] == "ada" and me["is_staff"] is False
    assert me["tenants"] == [{"id": world.acme.pk, "name": "acme", "role": "admin"}]
    assert me["groups"] == [{"id": world.ai_team.pk, "name": "ai-team", "tenant": "acme"}]


def test_quota_shows_limits_and_usage_of_the_group_and_of_the_user(world, api):
    mine = submit(world.alice, world.ai_team, nodes=1, accelerators_per_node=4)
    Job.objects.filter(pk=mine.pk).update(state="RUNNING")
    submit(world.bob, world.ai_team, nodes=1, accelerators_per_node=2)
    done = submit(world.alice, world.ai_team, nodes=2, accelerators_per_node=8)
    start = timezone.now() - timedelta(minutes=30)
    Job.objects.filter(pk=done.pk).update(state="COMPLETED", started_at=start, ended_at=start + timedelta(minutes=10))
    submit(world.mallory, world.rivals)

    quota = api(world.alice).get("/api/v1/me/quota/").json()
    assert quota["user"] == "alice"
    (entry,) = quota["groups"]
    assert (entry["group"], entry["tenant"]) == ("ai-team", "acme")
    assert entry["limits"]["grp_tres"] == {"gres/accelerator": 16}
    assert entry["limits_display"]["GrpTRES"] == "gres/accelerator=16"
    group, user = entry["usage"], entry["user_usage"]
    assert (group["running_jobs"], group["pending_jobs"]) == (1, 1)
    assert (user["running_jobs"], user["pending_jobs"]) == (1, 0)
    assert group["running_tres"]["gres/accelerator"] == 4 and group["pending_tres"]["gres/accelerator"] == 2
    assert user["pending_tres"]["gres/accelerator"] == 0
    assert group["tres_minutes"]["gres/accelerator"] == 16 * 10 == user["tres_minutes"]["gres/accelerator"]
    assert group["tres_minutes"]["node"] == 20


def test_quota_of_a_group_includes_jobs_of_its_child_groups(world, api):
    child = GroupFactory(name="nlp", tenant=world.acme, parent=world.ai_team, partitions=[world.partition])
    make_member(world.bob, child)
    submit(world.bob, child, accelerators_per_node=3)
    entries = {e["group"]: e for e in api(world.alice).get("/api/v1/me/quota/").json()["groups"]}
    assert set(entries) == {"ai-team"}
    assert entries["ai-team"]["usage"]["pending_tres"]["gres/accelerator"] == 3
    assert entries["ai-team"]["user_usage"]["pending_jobs"] == 0


def test_quota_query_count_does_not_grow_with_groups(world, api):
    client = api(world.alice)
    client.get("/api/v1/me/")
    with CaptureQueriesContext(connection) as one_group:
        client.get("/api/v1/me/quota/")
    for i in range(4):
        make_member(world.alice, GroupFactory(name=f"g{i}", tenant=world.acme, partitions=[world.partition]))
    with CaptureQueriesContext(connection) as five_groups:
        assert len(client.get("/api/v1/me/quota/").json()["groups"]) == 5
    assert len(five_groups) == len(one_group)


def test_quota_of_a_user_without_groups_is_empty(world, api):
    assert api(world.staff).get("/api/v1/me/quota/").json() == {"user": "root", "groups": []}
