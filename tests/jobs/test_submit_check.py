"""``job_submit_check``: the one rule behind a submit and the portal's preview; it creates nothing."""

import ast
import threading
from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection

from jobs.models import Job, JobEvent
from jobs.services import job_submit, job_submit_check
from jobs.spec import parse_job_spec
from tenants.models import AuditLog
from tenants.services import limits_set

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def spec(**fields):
    data = {"name": "train", "nodes": 1, "accelerators_per_node": 4, "time_limit": "1:00:00", "command": "true"}
    return parse_job_spec({**data, **fields})


def counts():
    return Job.objects.count(), JobEvent.objects.count(), AuditLog.objects.count()


def test_check_resolves_the_request_and_creates_nothing(world):
    before = counts()
    check = job_submit_check(user=world.alice, group=world.ai_team, spec=spec())
    assert counts() == before
    assert check.resolved.partition.name == "main"
    assert (check.resolved.cpus_per_node, check.resolved.memory_per_node) == (32, 256 * 1024)
    assert [a.name for a in check.chain] == ["acme", "ai-team"]


def test_check_refuses_what_submit_refuses_with_the_same_words(world):
    limits_set(actor=None, target=world.ai_team, changes={"grp_submit_jobs": 1})
    job_submit(user=world.alice, group=world.ai_team, spec=spec())
    with pytest.raises(ValidationError) as checked:
        job_submit_check(user=world.bob, group=world.ai_team, spec=spec())
    with pytest.raises(ValidationError) as submitted:
        job_submit(user=world.bob, group=world.ai_team, spec=spec())
    assert checked.value.message_dict == submitted.value.message_dict
    assert "GrpSubmitJobs" in checked.value.message_dict["group"][0]
    for outsider in (world.vic, world.mallory):
        with pytest.raises(PermissionDenied):
            job_submit_check(user=outsider, group=world.ai_team, spec=spec())


def test_check_follows_limits_changed_after_the_group_was_read(world):
    group = world.ai_team  # read before the change, as a request reads it before calling the service
    limits_set(actor=None, target=world.ai_team.__class__.objects.get(pk=group.pk), changes={"max_wall": 30})
    with pytest.raises(ValidationError) as info:
        job_submit_check(user=world.alice, group=group, spec=spec())
    assert "MaxWall" in info.value.message_dict["time_limit"][0]


def test_subgroup_chain_is_root_first(world):
    from tests.factories import GroupFactory

    child = GroupFactory(name="ai-team-vision", tenant=world.acme, parent=world.ai_team, partitions=[world.partition])
    check = job_submit_check(user=world.staff, group=child, spec=spec())
    assert [a.name for a in check.chain] == ["acme", "ai-team", "ai-team-vision"]


def test_the_portal_imports_the_public_check_only():
    for name in ("portal/views/preview.py", "portal/views/submit.py"):
        tree = ast.parse((ROOT / name).read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert not {n for n in imported if n.startswith("_")}, name


def test_a_submit_stays_within_its_query_budget(world, django_assert_max_num_queries):
    job_submit(user=world.alice, group=world.ai_team, spec=spec(), idempotency_key="warm")
    # Idempotency lookup, allowed partitions with their node shape, chain, job, event, audit, and the savepoint pair of
    # the test's transaction; the memberships were read before (by the request in the API), the pass-request flag is
    # read after commit. No GrpSubmitJobs: nothing is counted and no lock is taken.
    with django_assert_max_num_queries(8):
        job_submit(user=world.alice, group=world.ai_team, spec=spec(), idempotency_key="k1")
    limits_set(actor=None, target=world.ai_team, changes={"grp_submit_jobs": 100})
    # With GrpSubmitJobs: the tenant's row lock and the count, taken last (it was 13 queries before, lock first).
    with django_assert_max_num_queries(10):
        job_submit(user=world.alice, group=world.ai_team, spec=spec(), idempotency_key="k2")


@pytest.mark.django_db(transaction=True)
def test_concurrent_submits_never_pass_grp_submit_jobs(world):
    if connection.vendor != "postgresql":
        pytest.skip("needs a database that serves concurrent connections (PostgreSQL)")
    limits_set(actor=None, target=world.ai_team, changes={"grp_submit_jobs": 3})
    refused = []
    barrier = threading.Barrier(8)

    def submit_one(index):
        barrier.wait()
        try:
            job_submit(user=world.alice, group=world.ai_team, spec=spec(name=f"race{index}"))
        except ValidationError as exc:
            refused.append(exc.message_dict["group"][0])
        finally:
            connection.close()

    threads = [threading.Thread(target=submit_one, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert Job.objects.filter(group=world.ai_team).count() == 3
    assert len(refused) == 5 and all("has 3 of 3 jobs" in message for message in refused)
    # Nothing of the refused ones is left (the accepted ones may have started meanwhile: a pass runs on commit).
    assert JobEvent.objects.filter(from_state="").count() == 3
    assert AuditLog.objects.filter(action="job.submit").count() == 3
