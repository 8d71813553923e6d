"""Submission: what can never run is rejected with the limit and the numbers; nothing is half-written."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from jobs.models import Job, JobEvent, Runtime
from jobs.services import IdempotencyConflict, job_submit
from jobs.spec import parse_job_spec
from tenants.models import AuditLog
from tenants.services import limits_set
from tests.factories import PartitionFactory

pytestmark = pytest.mark.django_db


def spec(**fields):
    data = {"name": "train", "nodes": 1, "accelerators_per_node": 8, "time_limit": "1:00:00", "command": "true"}
    return parse_job_spec({**data, **fields})


def rejection(user, group, **fields) -> dict:
    before = (Job.objects.count(), JobEvent.objects.count(), AuditLog.objects.count())
    with pytest.raises(ValidationError) as info:
        job_submit(user=user, group=group, spec=spec(**fields))
    assert (Job.objects.count(), JobEvent.objects.count(), AuditLog.objects.count()) == before
    return info.value.message_dict


def test_submit_creates_a_pending_job_with_defaults_from_the_group(world):
    job, created = job_submit(user=world.alice, group=world.ai_team, spec=spec(accelerators_per_node=4))
    assert created and job.state == "PENDING" and job.partition.name == "main"
    assert (job.cpus_per_node, job.memory_per_node) == (32, 256 * 1024)  # half the node for half its accelerators
    assert job.tenant == world.acme and job.time_limit == 60
    assert AuditLog.objects.filter(action="job.submit", target_id=str(job.pk)).exists()


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"accelerators_per_node": 9}, "accelerators_per_node", "9 requested, nodes in partition 'main' have 8"),
        ({"nodes": 5}, "nodes", "5 requested, partition 'main' has 4 nodes"),
        ({"time_limit": "8-00:00:00"}, "time_limit", "MaxTime is 7-00:00:00 (over by 1-00:00:00)"),
        ({"nodes": 3}, "accelerators_per_node", "24 accelerators requested in total, group ai-team GrpTRES is 16"),
        ({"cpus_per_node": 65}, "cpus_per_node", "65 requested, nodes in partition 'main' have 64"),
        ({"partition": "nope"}, "partition", "unknown partition 'nope'"),
        ({"runtime": "ai-suite/9"}, "runtime", "unknown runtime 'ai-suite/9'"),
    ],
)
def test_submit_rejects_what_can_never_run(world, fields, field, words):
    errors = rejection(world.alice, world.ai_team, **fields)
    assert any(words in message for message in errors[field]), errors


def test_submit_rejects_a_partition_the_group_may_not_use(world):
    PartitionFactory(name="restricted")
    errors = rejection(world.alice, world.ai_team, partition="restricted")
    assert errors["partition"] == ["group ai-team may not use partition 'restricted' (allowed: main)"]


def test_submit_enforces_max_wall_of_the_tenant(world):
    limits_set(actor=None, target=world.acme, changes={"max_wall": 30})
    errors = rejection(world.alice, world.ai_team, time_limit="1:00:00")
    assert errors["time_limit"] == ["01:00:00 requested, tenant acme MaxWall is 00:30:00"]


def test_submit_enforces_grp_submit_jobs(world):
    limits_set(actor=None, target=world.ai_team, changes={"grp_submit_jobs": 1})
    job_submit(user=world.alice, group=world.ai_team, spec=spec())
    errors = rejection(world.bob, world.ai_team)
    assert errors["group"] == ["ai-team has 1 of 1 jobs pending or running (GrpSubmitJobs)"]


def test_parse_job_spec_lists_every_bad_field_at_once():
    with pytest.raises(ValidationError) as info:
        parse_job_spec({"nodes": 0, "accelerators_per_node": "x", "time_limit": "3 days", "environment": {"1A": "x"}})
    errors = info.value.message_dict
    assert set(errors) == {"nodes", "accelerators_per_node", "time_limit", "environment", "command"}
    assert errors["nodes"] == ["must be at least 1"]


def test_viewer_and_outsider_cannot_submit(world):
    with pytest.raises(PermissionDenied):
        job_submit(user=world.vic, group=world.ai_team, spec=spec())
    with pytest.raises(PermissionDenied):
        job_submit(user=world.mallory, group=world.ai_team, spec=spec())
    assert not Job.objects.exists()


def test_same_idempotency_key_and_body_returns_the_same_job(world):
    first, created = job_submit(user=world.alice, group=world.ai_team, spec=spec(), idempotency_key="ci-42")
    again, created_again = job_submit(user=world.alice, group=world.ai_team, spec=spec(), idempotency_key="ci-42")
    assert (created, created_again, again.pk) == (True, False, first.pk)
    with pytest.raises(IdempotencyConflict):
        job_submit(user=world.alice, group=world.ai_team, spec=spec(nodes=2), idempotency_key="ci-42")
    assert Job.objects.count() == 1


def test_idempotency_keys_are_per_user(world):
    mine, _ = job_submit(user=world.alice, group=world.ai_team, spec=spec(), idempotency_key="k")
    theirs, created = job_submit(user=world.bob, group=world.ai_team, spec=spec(), idempotency_key="k")
    assert created and theirs.pk != mine.pk


def test_runtime_adds_its_environment_and_prologue(world):
    Runtime.objects.create(name="ai-suite/2.1", environment={"AI_SUITE": "2.1"}, prologue="export FROM_PROLOGUE=yes")
    job, _ = job_submit(user=world.alice, group=world.ai_team, spec=spec(runtime="ai-suite/2.1"))
    assert job.runtime.name == "ai-suite/2.1"


def test_operator_can_restrict_the_local_backend_to_staff(world, settings):
    settings.AIPOOL_LOCAL_BACKEND_OPEN = False
    with pytest.raises(PermissionDenied, match="restricted to staff"):
        job_submit(user=world.alice, group=world.ai_team, spec=spec())
    job, _ = job_submit(user=world.staff, group=world.ai_team, spec=spec())
    assert job.user == world.staff


def test_absurd_numbers_are_field_errors_not_overflows():
    with pytest.raises(ValidationError) as info:
        parse_job_spec({"nodes": 2**40, "max_switches": 2**40, "time_limit": "99999999", "command": "x"})
    errors = info.value.message_dict
    assert errors["nodes"] == ["must be at most 2147483647"]
    assert errors["max_switches"] == ["must be at most 2147483647"]
    assert errors["time_limit"] == ["must be at most 365-00:00:00 (a year)"]
