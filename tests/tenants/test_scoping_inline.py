"""The scoping layer reads a user's memberships once and inlines them as id lists (issue 5's job list on PostgreSQL)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.models import Job
from tenants.models import Role
from tenants.scoping import CHANGE, VIEW, memberships_of
from tenants.services import group_member_add, group_member_remove, membership_set
from tests.factories import GroupFactory
from tests.jobs.helpers import submit

pytestmark = pytest.mark.django_db


def test_memberships_are_read_in_one_query_and_kept_for_the_request(world, django_assert_num_queries):
    with django_assert_num_queries(1):
        first = memberships_of(world.alice)
    with django_assert_num_queries(0):
        again = memberships_of(world.alice)
        Job.objects.visible_to(world.alice, VIEW)
        Job.objects.visible_to(world.alice, CHANGE)
    assert first is again
    assert first.roles == {world.acme.pk: Role.MEMBER}
    assert first.group_tenants == {world.ai_team.pk: world.acme.pk}


def test_a_membership_change_is_seen_by_a_user_object_that_read_them_before(world):
    side = GroupFactory(name="side", tenant=world.acme, partitions=[world.partition])
    job = submit(world.staff, side)
    assert not Job.objects.visible_to(world.alice).filter(pk=job.pk).exists()
    group_member_add(actor=None, user=world.alice, group=side)
    assert Job.objects.visible_to(world.alice).filter(pk=job.pk).exists()
    group_member_remove(actor=None, user=world.alice, group=side)
    assert not Job.objects.visible_to(world.alice).filter(pk=job.pk).exists()


def test_a_role_change_changes_what_a_cached_user_may_change(world):
    job = submit(world.alice, world.ai_team)
    assert not Job.objects.visible_to(world.bob, CHANGE).filter(pk=job.pk).exists()
    membership_set(actor=None, user=world.bob, tenant=world.acme, role=Role.ADMIN)
    assert Job.objects.visible_to(world.bob, CHANGE).filter(pk=job.pk).exists()


def test_the_job_filter_names_ids_not_subqueries(world):
    with CaptureQueriesContext(connection) as ctx:
        list(Job.objects.visible_to(world.alice))
    job_query = ctx.captured_queries[-1]["sql"]
    where = job_query.split("WHERE", 1)[1]
    # One SELECT (no membership subquery), and the group list alone: the tenant follows from the group.
    assert job_query.count("SELECT") == 1
    assert f'"group_id" IN ({world.ai_team.pk})' in where and "tenant_id" not in where


def test_a_user_with_no_memberships_sees_nothing_without_a_job_query(world, django_assert_num_queries):
    from tests.factories import UserFactory

    stranger = UserFactory(username="stranger")
    submit(world.alice, world.ai_team)
    memberships_of(stranger)
    with django_assert_num_queries(0):
        assert list(Job.objects.visible_to(stranger)) == []
    assert list(Job.objects.visible_to(world.mallory)) == []
