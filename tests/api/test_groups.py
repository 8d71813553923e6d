"""Tenants and groups: limits as dicts and Slurm strings, live usage of the subtree, tenant admins edit their own."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.models import Job
from tenants.models import AuditLog, Group
from tests.factories import GroupFactory
from tests.jobs.helpers import submit

pytestmark = pytest.mark.django_db

GROUPS = "/api/v1/groups/"


def test_group_shows_limits_as_dicts_and_slurm_strings(world, api):
    group = api(world.alice).get(f"{GROUPS}{world.ai_team.pk}/").json()
    assert group["name"] == "ai-team" and group["tenant"] == "acme" and group["partitions"] == ["main"]
    assert group["limits"]["grp_tres"] == {"gres/accelerator": 16}
    assert group["limits"]["grp_jobs"] is None and group["limits"]["max_wall"] is None
    assert group["limits_display"]["GrpTRES"] == "gres/accelerator=16"


def test_group_usage_counts_running_and_pending_jobs_of_the_subtree(world, api):
    child = GroupFactory(name="ai-team-nlp", tenant=world.acme, parent=world.ai_team, partitions=[world.partition])
    running = submit(world.alice, world.ai_team, nodes=1, accelerators_per_node=4)
    Job.objects.filter(pk=running.pk).update(state="RUNNING")
    submit(world.staff, child, nodes=2, accelerators_per_node=2)
    submit(world.mallory, world.rivals)  # another tenant: never counted
    usage = api(world.alice).get(f"{GROUPS}{world.ai_team.pk}/").json()["usage"]
    assert usage["running_jobs"] == 1 and usage["pending_jobs"] == 1
    assert usage["running_tres"]["gres/accelerator"] == 4 and usage["running_tres"]["node"] == 1
    assert usage["pending_tres"]["gres/accelerator"] == 4 and usage["pending_tres"]["node"] == 2
    child_usage = api(world.alice).get(f"{GROUPS}{child.pk}/").json()["usage"]
    assert (child_usage["running_jobs"], child_usage["pending_jobs"]) == (0, 1)


def _list_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(GROUPS).status_code == 200
    return len(queries)


def test_group_list_query_count_does_not_grow_with_groups(world, api):
    client = api(world.staff)
    client.get("/api/v1/me/")
    few = _list_queries(client)
    for i in range(5):
        group = GroupFactory(name=f"extra{i}", tenant=world.acme, parent=world.ai_team, partitions=[world.partition])
        submit(world.staff, group)
    assert _list_queries(client) == few
    assert len(client.get(GROUPS).json()["results"]) == 7


def test_group_list_filters_by_tenant_and_name(world, api):
    client = api(world.staff)
    assert [g["name"] for g in client.get(f"{GROUPS}?tenant=globex").json()["results"]] == ["rivals"]
    assert [g["name"] for g in client.get(f"{GROUPS}?name=ai-team").json()["results"]] == ["ai-team"]
    assert client.get(f"{GROUPS}?tenant=nope").status_code == 400


def test_tenant_admin_sets_limits_with_slurm_strings_and_it_is_audited(world, api):
    response = api(world.ada).patch(
        f"{GROUPS}{world.ai_team.pk}/",
        {"limits": {"GrpTRES": "gres/accelerator=800,cpu=512", "MaxWall": "72:00:00", "GrpJobs": 10}},
        format="json",
    )
    assert response.status_code == 200, response.content
    limits = response.json()["limits"]
    assert limits["grp_tres"] == {"gres/accelerator": 800, "cpu": 512}
    assert (limits["max_wall"], limits["grp_jobs"]) == (72 * 60, 10)
    assert response.json()["limits_display"]["MaxWall"] == "3-00:00:00"
    entry = AuditLog.objects.get(action="group.limits", target_id=str(world.ai_team.pk))
    assert entry.actor == world.ada and entry.tenant == world.acme
    assert entry.changes["GrpTRES"] == [{"gres/accelerator": 16}, {"gres/accelerator": 800, "cpu": 512}]


def test_minus_one_clears_a_limit(world, api):
    response = api(world.ada).patch(
        f"{GROUPS}{world.ai_team.pk}/", {"limits": {"GrpTRES": "accelerator=-1"}}, format="json"
    )
    assert response.json()["limits"]["grp_tres"] == {}


@pytest.mark.parametrize(("who", "status"), [("alice", 403), ("vic", 403), ("mallory", 404)])
def test_others_may_not_change_a_group(world, api, who, status):
    client = api(getattr(world, who))
    url = f"{GROUPS}{world.ai_team.pk}/"
    response = client.patch(url, {"limits": {"GrpTRES": "gres/accelerator=800"}}, format="json")
    assert response.status_code == status
    assert client.delete(url).status_code == status
    assert Group.objects.get(pk=world.ai_team.pk).grp_tres == {"gres/accelerator": 16}


def test_staff_change_any_group(world, api):
    response = api(world.staff).patch(f"{GROUPS}{world.rivals.pk}/", {"shares": 5}, format="json")
    assert response.status_code == 200 and response.json()["shares"] == 5


@pytest.mark.parametrize(
    ("limits", "words"),
    [
        ({"GrpTRES": "gpu=8"}, "unknown TRES 'gpu'"),
        ({"MaxWall": "forever"}, "MaxWall"),
        ({"Bogus": "1"}, "unknown limit"),
    ],
)
def test_bad_limits_are_400(world, api, limits, words):
    response = api(world.ada).patch(f"{GROUPS}{world.ai_team.pk}/", {"limits": limits}, format="json")
    assert response.status_code == 400
    assert any(words in m for m in response.json()["errors"]["limits"]), response.json()


def test_tenant_admin_creates_and_deletes_a_group_in_their_tenant(world, api):
    client = api(world.ada)
    response = client.post(
        GROUPS,
        {"tenant": "acme", "name": "vision", "parent": "ai-team", "partitions": ["main"],
         "limits": {"GrpTRES": "accelerator=8"}},
        format="json",
    )  # fmt: skip
    assert response.status_code == 201, response.content
    group = response.json()
    assert (group["parent"], group["path"], group["default_partition"]) == ("ai-team", "/ai-team/vision/", "main")
    assert group["limits"]["grp_tres"] == {"gres/accelerator": 8}
    assert AuditLog.objects.filter(action="group.create", target_id=str(group["id"])).exists()
    assert client.delete(f"{GROUPS}{group['id']}/").status_code == 204
    assert not Group.objects.filter(name="vision").exists()


def test_member_may_not_create_groups_and_other_tenants_are_unknown(world, api):
    new = {"tenant": "acme", "name": "shadow"}
    assert api(world.alice).post(GROUPS, new, format="json").status_code == 403
    response = api(world.mallory).post(GROUPS, new, format="json")
    assert response.status_code == 400 and response.json()["errors"]["tenant"] == ["unknown tenant 'acme'"]
    assert not Group.objects.filter(name="shadow").exists()


def test_creating_a_group_with_a_taken_name_is_400(world, api):
    response = api(world.ada).post(GROUPS, {"tenant": "acme", "name": "rivals"}, format="json")
    assert response.status_code == 400 and "already exists" in response.json()["errors"]["name"][0]


def test_deleting_a_group_with_jobs_is_a_conflict(world, api):
    submit(world.alice, world.ai_team)
    response = api(world.ada).delete(f"{GROUPS}{world.ai_team.pk}/")
    assert (
        response.status_code == 409
        and response.json()["code"] == "conflict"
        and "has jobs" in response.json()["detail"]
    )


# --- tenants -------------------------------------------------------------------------------------------------------


def test_tenants_show_your_role(world, api):
    tenants = api(world.ada).get("/api/v1/tenants/").json()["results"]
    assert [(t["name"], t["role"]) for t in tenants] == [("acme", "admin")]


def test_only_staff_change_tenant_limits(world, api):
    url = f"/api/v1/tenants/{world.acme.pk}/"
    change = {"limits": {"GrpTRES": "accelerator=1000"}}
    assert api(world.ada).patch(url, change, format="json").status_code == 403
    assert api(world.mallory).patch(url, change, format="json").status_code == 404
    response = api(world.staff).patch(url, change, format="json")
    assert response.status_code == 200 and response.json()["limits"]["grp_tres"] == {"gres/accelerator": 1000}


def test_only_staff_create_tenants(world, api):
    assert api(world.ada).post("/api/v1/tenants/", {"name": "initech"}, format="json").status_code == 403
    response = api(world.staff).post("/api/v1/tenants/", {"name": "initech"}, format="json")
    assert response.status_code == 201 and response.json()["name"] == "initech"
