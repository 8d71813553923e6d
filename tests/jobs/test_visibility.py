"""Job scoping: members of the group and tenant admins see a job; viewers read; only owner/admin change."""

import pytest

from jobs.models import Job
from tenants.scoping import CHANGE
from tests.jobs.helpers import submit

pytestmark = pytest.mark.django_db


def test_job_visibility_by_role(world):
    job = submit(world.alice, world.ai_team)
    seen_by = {
        u.username
        for u in (world.alice, world.bob, world.ada, world.vic, world.mallory, world.staff)
        if Job.objects.visible_to(u).filter(pk=job.pk).exists()
    }
    assert seen_by == {"alice", "bob", "ada", "vic", "root"}


def test_only_owner_and_tenant_admin_may_change_a_job(world):
    job = submit(world.alice, world.ai_team)
    may_change = {
        u.username
        for u in (world.alice, world.bob, world.ada, world.vic, world.mallory)
        if Job.objects.visible_to(u, CHANGE).filter(pk=job.pk).exists()
    }
    assert may_change == {"alice", "ada"}
