"""Jobs end to end on the local backend, through the service layer."""

import os
import signal

import pytest

from cluster.backends.registry import get_backend
from jobs.models import Job
from jobs.runs import launch
from jobs.services import job_cancel, job_requeue
from tests.jobs.helpers import drive_until, ended, submit, tick

pytestmark = pytest.mark.django_db

ENV_PROBE = 'echo "rank=$RANK world=$WORLD_SIZE nnodes=$SLURM_NNODES node=$SLURMD_NODENAME accel=$AIPOOL_ACCELERATORS"'


def log_of(job, stream="stdout"):
    return get_backend().read_log(job.backend_job_id, stream).text


def test_two_node_job_runs_one_process_per_node_with_ranks(world):
    job = submit(world.alice, world.ai_team, nodes=2, accelerators_per_node=4, command=ENV_PROBE)
    drive_until(ended(job))
    assert (job.state, job.exit_code) == ("COMPLETED", 0)
    lines = sorted(log_of(job).splitlines())
    assert len(lines) == 2
    assert lines[0].startswith("rank=0 world=2 nnodes=2")
    assert lines[1].startswith("rank=1 world=2 nnodes=2")
    assert all(line.endswith("accel=0,1,2,3") for line in lines)
    assert len(job.nodelist) == 2 and job.switches


def test_failing_command_ends_failed_with_its_exit_code(world):
    job = submit(world.alice, world.ai_team, command="echo oops >&2; exit 3")
    drive_until(ended(job))
    assert (job.state, job.exit_code, job.reason) == ("FAILED", 3, "NonZeroExitCode")
    assert "oops" in log_of(job, "stderr")


def test_job_over_its_time_limit_ends_timeout(world, settings):
    settings.AIPOOL_SECONDS_PER_MINUTE = 1
    job = submit(world.alice, world.ai_team, command="sleep 30", time_limit="1")
    drive_until(ended(job), timeout=15)
    assert (job.state, job.reason) == ("TIMEOUT", "TimeLimit")


def test_cancel_kills_every_process_of_the_job(world):
    job = submit(world.alice, world.ai_team, nodes=2, command="sleep 100 & sleep 100; wait")
    drive_until(lambda: Job.objects.get(pk=job.pk).backend_job_id)
    job.refresh_from_db()
    backend = get_backend()
    drive_until(lambda: len(backend.alive_pids(job.backend_job_id)) >= 2)
    job_cancel(user=world.alice, job=job)
    backend.cancel(job.backend_job_id)  # what cancel_on_backend does after commit
    drive_until(lambda: not backend.alive_pids(job.backend_job_id), timeout=10)
    job.refresh_from_db()
    assert job.state == "CANCELLED"
    assert [e.to_state for e in job.events.all()] == ["PENDING", "RUNNING", "CANCELLED"]


def test_job_over_group_grptres_waits_with_assoc_grp_gres_and_starts_when_capacity_frees(world):
    first = submit(world.alice, world.ai_team, nodes=2, accelerators_per_node=8, command="sleep 100")
    second = submit(world.bob, world.ai_team, nodes=1, accelerators_per_node=8, command="true")
    tick()
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.state == "RUNNING"
    assert (second.state, second.reason) == ("PENDING", "AssocGrpGRES")
    job_cancel(user=world.alice, job=first)
    drive_until(ended(second))
    assert second.state == "COMPLETED"


def test_other_tenants_jobs_are_not_held_by_a_groups_quota(world):
    submit(world.alice, world.ai_team, nodes=2, accelerators_per_node=8, command="sleep 100")
    blocked = submit(world.bob, world.ai_team, nodes=1, accelerators_per_node=8)
    theirs = submit(world.mallory, world.rivals, nodes=1, accelerators_per_node=8)
    tick()
    assert Job.objects.get(pk=blocked.pk).state == "PENDING"
    assert Job.objects.get(pk=theirs.pk).state in ("RUNNING", "COMPLETED")


def test_launch_twice_starts_the_job_once(world, tmp_path):
    marker = tmp_path / "ran"
    job = submit(world.alice, world.ai_team, command=f"echo x >> {marker}")
    tick()
    job.refresh_from_db()
    launch(job_id=job.pk, run=job.run_count)  # a duplicate delivery of the launch task
    Job.objects.filter(pk=job.pk).update(backend_job_id="")  # even if the first launch's record was lost
    launch(job_id=job.pk, run=job.run_count)
    drive_until(ended(job))
    assert marker.read_text() == "x\n"


def test_requeue_runs_the_job_again_as_a_new_run(world):
    job = submit(world.alice, world.ai_team, command="echo run=$SLURM_JOB_ID")
    drive_until(ended(job))
    job_requeue(user=world.alice, job=job)
    job.refresh_from_db()
    assert (job.state, job.run_count, job.backend_job_id) == ("PENDING", 1, "")
    drive_until(ended(job))
    assert job.state == "COMPLETED"
    states = [e.to_state for e in job.events.all()]
    assert states == ["PENDING", "RUNNING", "COMPLETED", "PENDING", "RUNNING", "COMPLETED"]


def test_lost_shepherd_ends_node_fail(world):
    job = submit(world.alice, world.ai_team, command="sleep 100")
    drive_until(lambda: Job.objects.get(pk=job.pk).backend_job_id)
    job.refresh_from_db()
    run_dir = get_backend().root / "jobs" / str(job.pk) / "run-0"
    drive_until(lambda: (run_dir / "shepherd.pid").exists())
    os.kill(int((run_dir / "shepherd.pid").read_text().split()[0]), signal.SIGKILL)
    drive_until(ended(job))
    assert job.state == "NODE_FAIL"
