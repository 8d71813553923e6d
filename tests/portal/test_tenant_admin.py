"""Tenant admins manage the members and groups of their own tenant; group pages for members."""

import pytest

from tenants.models import AuditLog, Group, GroupMember, Membership, Role
from tests.factories import UserFactory
from tests.jobs.helpers import submit

pytestmark = pytest.mark.django_db


def test_tenant_admin_sees_members_and_groups(client, world):
    client.force_login(world.ada)
    page = client.get("/tenants/acme/").content.decode()
    for name in ("alice", "bob", "ada", "vic", "ai-team"):
        assert name in page
    assert "mallory" not in page and "rivals" not in page


def test_a_member_who_is_not_admin_gets_403(client, world):
    client.force_login(world.alice)
    response = client.get("/tenants/acme/")
    assert response.status_code == 403 and b"only admins of tenant acme" in response.content


def test_another_tenant_is_404(client, world):
    client.force_login(world.mallory)
    assert client.get("/tenants/acme/").status_code == 404


def test_admin_adds_an_existing_user_with_role_and_groups(client, world):
    UserFactory(username="newbie")
    client.force_login(world.ada)
    response = client.post("/tenants/acme/members/", {"username": "newbie", "role": "member", "groups": ["ai-team"]})
    assert response.status_code == 302
    membership = Membership.objects.get(user__username="newbie")
    assert (membership.tenant, membership.role) == (world.acme, Role.MEMBER)
    assert GroupMember.objects.filter(user__username="newbie", group=world.ai_team).exists()
    assert AuditLog.objects.filter(action="membership.set", actor=world.ada).exists()


def test_adding_an_unknown_user_says_so(client, world):
    client.force_login(world.ada)
    response = client.post("/tenants/acme/members/", {"username": "ghost", "role": "member"}, follow=True)
    assert "no active account named &#x27;ghost&#x27;" in response.content.decode()


def test_adding_someone_already_in_the_tenant_says_so(client, world):
    client.force_login(world.ada)
    response = client.post("/tenants/acme/members/", {"username": "alice", "role": "admin"}, follow=True)
    assert "already a member of tenant acme" in response.content.decode()
    assert Membership.objects.get(user=world.alice).role == Role.MEMBER


def test_admin_changes_a_role_and_groups(client, world):
    other = Group.objects.create(tenant=world.acme, name="vision", path="/vision/")
    membership = Membership.objects.get(user=world.bob, tenant=world.acme)
    client.force_login(world.ada)
    prefix = f"m{membership.pk}"
    client.post(f"/tenants/acme/members/{membership.pk}/", {f"{prefix}-role": "viewer", f"{prefix}-groups": ["vision"]})
    membership.refresh_from_db()
    assert membership.role == Role.VIEWER
    assert list(GroupMember.objects.filter(user=world.bob).values_list("group", flat=True)) == [other.pk]


def test_admin_removes_a_member(client, world):
    membership = Membership.objects.get(user=world.bob, tenant=world.acme)
    client.force_login(world.ada)
    client.post(f"/tenants/acme/members/{membership.pk}/remove/")
    assert not Membership.objects.filter(user=world.bob).exists()
    assert not GroupMember.objects.filter(user=world.bob).exists()


def test_a_membership_of_another_tenant_is_404_on_my_tenants_page(client, world):
    theirs = Membership.objects.get(user=world.mallory)
    client.force_login(world.ada)
    assert client.post(f"/tenants/acme/members/{theirs.pk}/remove/").status_code == 404
    assert Membership.objects.filter(pk=theirs.pk).exists()


def test_admin_creates_a_group_under_a_parent(client, world):
    client.force_login(world.ada)
    response = client.post("/tenants/acme/groups/", {"name": "nlp", "parent": "ai-team", "partitions": ["main"]})
    group = Group.objects.get(name="nlp")
    assert response["Location"] == "/groups/nlp/"
    assert (group.tenant, group.parent, group.path) == (world.acme, world.ai_team, "/ai-team/nlp/")


def test_creating_a_group_with_a_taken_name_says_so(client, world):
    client.force_login(world.ada)
    response = client.post("/tenants/acme/groups/", {"name": "rivals"}, follow=True)
    assert "already exists" in response.content.decode()


def test_admin_sets_group_limits_in_sacctmgr_syntax(client, world):
    client.force_login(world.ada)
    client.post("/groups/ai-team/limits/", {"grp_tres": "accelerator=24,cpu=128", "max_wall": "3-00:00:00"})
    world.ai_team.refresh_from_db()
    assert world.ai_team.grp_tres == {"gres/accelerator": 24, "cpu": 128}
    assert world.ai_team.max_wall == 3 * 1440
    assert AuditLog.objects.filter(action="group.limits", actor=world.ada).exists()


def test_bad_limits_are_refused_with_the_reason(client, world):
    client.force_login(world.ada)
    response = client.post("/groups/ai-team/limits/", {"grp_tres": "gpus=8"}, follow=True)
    assert "unknown TRES" in response.content.decode()
    world.ai_team.refresh_from_db()
    assert world.ai_team.grp_tres == {"gres/accelerator": 16}


def test_a_member_may_not_set_limits(client, world):
    client.force_login(world.alice)
    assert client.post("/groups/ai-team/limits/", {"grp_tres": "accelerator=999"}).status_code == 403
    world.ai_team.refresh_from_db()
    assert world.ai_team.grp_tres == {"gres/accelerator": 16}


def test_group_page_shows_usage_members_and_jobs_to_members(client, world):
    submit(world.bob, world.ai_team, name="group-job")
    client.force_login(world.alice)
    page = client.get("/groups/ai-team/").content.decode()
    assert "group-job" in page and "bob" in page and "<small>GrpTRES</small>" in page
    assert "Save limits" not in page


def test_group_page_of_another_tenant_is_404(client, world):
    client.force_login(world.mallory)
    assert client.get("/groups/ai-team/").status_code == 404
