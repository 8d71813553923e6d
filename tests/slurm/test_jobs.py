"""Jobs on a real Slurm through the portal: submit, state, nodes, logs, limits, cancel, idempotent dispatch."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cluster.backends.registry import get_backend
from jobs.models import Job
from jobs.runs import backend_estimated_start, dispatch, launch_spec, posix_identity
from jobs.selectors import job_explanation
from jobs.services import job_cancel
from tests.slurm.conftest import slurm
from tests.slurm.helpers import drive_until, in_state, submit, tick

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"


def _slurm_state(backend_job_id: str) -> str:
    for line in slurm("squeue", "--noheader", "--states=all", "--format=%i|%T").splitlines():
        job_id, state = line.split("|")
        if job_id == backend_job_id:
            return state
    return ""


def test_job_submitted_over_the_api_completes_on_slurm_with_its_log(
    slurm_world, api_client, django_capture_on_commit_callbacks
):
    client = api_client(slurm_world.alice)
    body = {
        "group": slurm_world.ai_team.name,
        "name": "hello",
        "nodes": 1,
        "accelerators_per_node": 2,
        "time_limit": "5",
        "command": 'echo "hello from $(id -un) on $SLURMD_NODENAME with $AIPOOL_ACCELERATORS"',
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(JOBS, body, format="json")
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert job.backend == "slurm" and job.backend_job_id  # the submit's scheduling pass handed it to Slurm

    drive_until(in_state(job, "COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL"))

    assert job.state == "COMPLETED" and job.exit_code == 0
    assert job.nodelist and job.nodelist[0] in {"n1", "n2", "n3", "n4"}
    shown = client.get(f"{JOBS}{job.pk}/").json()
    assert shown["state"] == "COMPLETED" and shown["backend_job_id"] == job.backend_job_id
    log = client.get(f"{JOBS}{job.pk}/logs/").json()
    assert log["text"] == f"hello from aipool-u1 on {job.nodelist[0]} with 0,1\n"


def test_two_node_job_gets_two_nodes_with_one_task_each(slurm_world):
    job = submit(
        slurm_world.alice,
        slurm_world.ai_team,
        nodes=2,
        accelerators_per_node=4,
        command='echo "rank $RANK of $WORLD_SIZE on $SLURMD_NODENAME"',
    )
    drive_until(in_state(job, "COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL"))

    assert job.state == "COMPLETED"
    assert len(set(job.nodelist)) == 2
    lines = sorted(get_backend().read_log(job.backend_job_id).text.splitlines())
    assert lines == [f"rank 0 of 2 on {job.nodelist[0]}", f"rank 1 of 2 on {job.nodelist[1]}"]


def test_job_over_the_groups_grptres_waits_with_assoc_grp_gres_and_starts_when_the_first_ends(slurm_world):
    first = submit(slurm_world.alice, slurm_world.ai_team, accelerators_per_node=8, command="sleep 4")
    second = submit(slurm_world.bob, slurm_world.ai_team, accelerators_per_node=8, command="true")
    drive_until(in_state(first, "RUNNING"))

    drive_until(lambda: (second.refresh_from_db() or second.reason) == "AssocGrpGRES", timeout=20)
    assert second.state == "PENDING"
    explained = job_explanation(second)
    assert explained["reason"] == "AssocGrpGRES" and "GrpTRES" in explained["causes"][0]["message"]

    drive_until(in_state(second, "RUNNING", "COMPLETED"), timeout=60)
    first.refresh_from_db()
    assert first.state == "COMPLETED"
    assert second.started_at >= first.ended_at


def test_nonzero_exit_is_failed_with_the_exit_code(slurm_world):
    job = submit(slurm_world.mallory, slurm_world.rivals, command="echo oops >&2; exit 3")
    drive_until(in_state(job, "COMPLETED", "FAILED"))

    assert (job.state, job.exit_code, job.reason) == ("FAILED", 3, "NonZeroExitCode")
    assert get_backend().read_log(job.backend_job_id, "stderr").text == "oops\n"


def test_cancel_stops_a_running_job_in_slurm(slurm_world, django_capture_on_commit_callbacks):
    job = submit(slurm_world.alice, slurm_world.ai_team, command="sleep 120")
    drive_until(in_state(job, "RUNNING"))

    with django_capture_on_commit_callbacks(execute=True):
        job_cancel(user=slurm_world.alice, job=job)

    drive_until(lambda: _slurm_state(job.backend_job_id) == "CANCELLED", timeout=20)
    job.refresh_from_db()
    assert job.state == "CANCELLED"


def test_cancel_removes_a_job_still_queued_in_slurm(slurm_world, django_capture_on_commit_callbacks):
    blocker = submit(slurm_world.alice, slurm_world.ai_team, accelerators_per_node=8, command="sleep 120")
    queued = submit(slurm_world.bob, slurm_world.ai_team, accelerators_per_node=8, command="true")
    drive_until(in_state(blocker, "RUNNING"))
    queued.refresh_from_db()
    assert queued.state == "PENDING" and queued.backend_job_id

    with django_capture_on_commit_callbacks(execute=True):
        job_cancel(user=slurm_world.bob, job=queued)

    drive_until(lambda: _slurm_state(queued.backend_job_id) == "CANCELLED", timeout=20)


def test_dispatch_that_ran_twice_leaves_one_job_in_slurm(slurm_world):
    job = submit(slurm_world.alice, slurm_world.ai_team, command="sleep 30")
    user, uid = posix_identity(job.user)
    # A first dispatch reached sbatch and died before recording the id ...
    first_id = get_backend().submit(replace(launch_spec(job), posix_user=user, posix_uid=uid))

    # ... the retry finds that job by name instead of submitting another.
    assert dispatch(job_id=job.pk, run=job.run_count) == first_id
    assert dispatch(job_id=job.pk, run=job.run_count) == "noop"
    name = get_backend().job_name(job.pk, job.run_count)
    assert slurm("squeue", "--noheader", "--states=all", f"--name={name}", "--format=%i").split() == [first_id]


def test_job_of_a_group_not_yet_synced_to_slurm_goes_out_after_a_sync(slurm_world):
    from tests.factories import GroupFactory, make_member

    fresh = GroupFactory(name=f"fresh-{slurm_world.tag}", tenant=slurm_world.acme, partitions=[slurm_world.partition])
    make_member(slurm_world.alice, fresh)  # no limits sync ran since: Slurm knows neither account nor association
    job = submit(slurm_world.alice, fresh)

    drive_until(in_state(job, "COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL"))

    assert job.state == "COMPLETED"
    assert slurm("sacctmgr", "-n", "-P", "show", "assoc", "where", f"account={fresh.name}", "format=User").split()


def test_job_slurm_refuses_fails_with_slurms_reason(slurm_world):
    from tests.factories import PartitionFactory

    unknown = PartitionFactory(name=f"nosuch-{slurm_world.tag}")
    unknown.nodes.set(slurm_world.partition.nodes.all())
    slurm_world.ai_team.allowed_partitions.add(unknown)
    job = submit(slurm_world.alice, slurm_world.ai_team, partition=unknown.name)

    tick()

    job.refresh_from_db()
    assert job.state == "FAILED" and not job.backend_job_id
    assert "Slurm refused the job: invalid partition specified: nosuch-" in job.events.last().cause


def test_job_waiting_for_resources_shows_slurms_start_estimate(slurm_world):
    whole_pool = submit(
        slurm_world.mallory, slurm_world.rivals, nodes=4, accelerators_per_node=8, time_limit="10", command="sleep 120"
    )
    waiting = submit(slurm_world.mallory, slurm_world.rivals, accelerators_per_node=8, command="true")
    drive_until(in_state(whole_pool, "RUNNING"))

    estimate = drive_until(lambda: waiting.refresh_from_db() or backend_estimated_start(waiting), timeout=30)

    waiting.refresh_from_db()
    assert waiting.state == "PENDING" and waiting.reason in ("Resources", "Priority")
    minutes = (estimate - whole_pool.started_at).total_seconds() / 60
    assert 9 <= minutes <= 11  # when the running job's 10-minute limit runs out


def test_job_environment_reaches_the_job_and_the_portals_does_not(slurm_world, monkeypatch):
    monkeypatch.setenv("DJANGO_SECRET_KEY", "portal-secret")
    job = submit(
        slurm_world.alice,
        slurm_world.ai_team,
        environment={"GREETING": "it's $HOME"},
        command='echo "$GREETING|${DJANGO_SECRET_KEY:-unset}|$HOME"',
    )
    drive_until(in_state(job, "COMPLETED", "FAILED"))

    assert get_backend().read_log(job.backend_job_id).text == "it's $HOME|unset|/nonexistent\n"


def test_accounting_reports_an_ended_job_with_its_exit_code_once_slurmctld_forgot_it(slurm_world):
    job = submit(slurm_world.mallory, slurm_world.rivals, nodes=2, command="exit 4")
    drive_until(in_state(job, "COMPLETED", "FAILED"))
    backend = get_backend()

    # What poll falls back to for jobs older than MinJobAge: sacct, which lags slurmctld (its record can show
    # the job ended before it shows all of its nodes).
    def settled():
        status = backend._sacct({job.backend_job_id}).get(job.backend_job_id)
        return status if status and status.state == "FAILED" and len(status.nodelist) == 2 else None

    status = drive_until(settled, timeout=20)

    assert (status.exit_code, status.nodelist) == (4, tuple(job.nodelist))
    assert status.ended_at >= status.started_at > 0
