"""Memberships: tenant admins add, change and remove users of their tenant; nobody else does."""

import pytest

from tenants.models import AuditLog, GroupMember, Membership
from tests.factories import GroupFactory, UserFactory

pytestmark = pytest.mark.django_db

MEMBERSHIPS = "/api/v1/memberships/"


def test_tenant_admin_adds_a_user_to_the_tenant_and_a_group(world, api):
    UserFactory(username="carol")
    response = api(world.ada).post(
        MEMBERSHIPS, {"tenant": "acme", "user": "carol", "role": "member", "groups": ["ai-team"]}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json() | {"id": 0} == {
        "id": 0,
        "tenant": "acme",
        "user": "carol",
        "role": "member",
        "groups": ["ai-team"],
    }
    assert AuditLog.objects.filter(action="membership.set", tenant=world.acme).exists()


def test_members_see_their_tenants_memberships_only(world, api):
    users = {m["user"] for m in api(world.alice).get(MEMBERSHIPS).json()["results"]}
    assert users == {"alice", "bob", "ada", "vic"}


def test_member_may_not_add_users(world, api):
    UserFactory(username="carol")
    response = api(world.alice).post(MEMBERSHIPS, {"tenant": "acme", "user": "carol"}, format="json")
    assert response.status_code == 403
    assert not Membership.objects.filter(user__username="carol").exists()


def test_other_tenants_admin_cannot_name_this_tenant(world, api):
    response = api(world.mallory).post(MEMBERSHIPS, {"tenant": "acme", "user": "mallory"}, format="json")
    assert response.status_code == 400 and "tenant" in response.json()["errors"]


def test_adding_an_existing_member_is_409(world, api):
    response = api(world.ada).post(MEMBERSHIPS, {"tenant": "acme", "user": "bob"}, format="json")
    assert response.status_code == 409 and response.json()["code"] == "conflict"


def test_groups_must_belong_to_the_tenant(world, api):
    UserFactory(username="carol")
    response = api(world.staff).post(
        MEMBERSHIPS, {"tenant": "acme", "user": "carol", "groups": ["rivals"]}, format="json"
    )
    assert response.status_code == 400 and "not groups of tenant acme: rivals" in response.json()["errors"]["groups"][0]


def test_tenant_admin_changes_role_and_groups(world, api):
    other = GroupFactory(name="vision", tenant=world.acme, partitions=[world.partition])
    membership = Membership.objects.get(user=world.bob, tenant=world.acme)
    response = api(world.ada).patch(
        f"{MEMBERSHIPS}{membership.pk}/", {"role": "viewer", "groups": ["vision"]}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["role"] == "viewer" and response.json()["groups"] == ["vision"]
    assert list(GroupMember.objects.filter(user=world.bob).values_list("group", flat=True)) == [other.pk]


def test_tenant_admin_removes_a_member(world, api):
    membership = Membership.objects.get(user=world.bob, tenant=world.acme)
    assert api(world.alice).delete(f"{MEMBERSHIPS}{membership.pk}/").status_code == 403
    assert api(world.mallory).delete(f"{MEMBERSHIPS}{membership.pk}/").status_code == 404
    assert api(world.ada).delete(f"{MEMBERSHIPS}{membership.pk}/").status_code == 204
    assert not Membership.objects.filter(pk=membership.pk).exists()
    assert not GroupMember.objects.filter(user=world.bob).exists()
