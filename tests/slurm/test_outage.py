"""Slurm's controller going away: jobs keep their state with a plain reason, and go on by themselves when it is back."""

from __future__ import annotations

import os
import subprocess

import pytest

from cluster.backends.registry import get_backend
from jobs.selectors import job_explanation
from tests.slurm.conftest import REPO, STATE
from tests.slurm.helpers import drive_until, in_state, submit, tick

pytestmark = pytest.mark.django_db


def _script(name: str, *args: str) -> None:
    subprocess.run(
        ["bash", str(REPO / "cluster" / "slurm" / name), *args], check=True, capture_output=True, timeout=180
    )


@pytest.fixture
def controller(slurm_world):
    """Stops slurmctld on demand; whatever happens, starts it again (slurm-up is idempotent)."""
    if not (STATE / "run" / "slurmctld.pid").exists() or os.geteuid() != 0:
        pytest.skip("needs the Slurm of cluster/slurm/slurm-up, as root, to stop and start its controller")

    class Controller:
        @staticmethod
        def stop():
            _script("slurm-down", "slurmctld")

        @staticmethod
        def start():
            _script("slurm-up")

    yield Controller
    Controller.start()


def test_slurm_down_keeps_jobs_with_a_clear_reason_and_they_recover_when_it_is_back(slurm_world, controller):
    running = submit(slurm_world.alice, slurm_world.ai_team, command="sleep 5; echo finished")
    drive_until(in_state(running, "RUNNING"))

    controller.stop()
    queued = submit(slurm_world.bob, slurm_world.ai_team, command="echo later")
    tick()

    running.refresh_from_db()
    queued.refresh_from_db()
    assert (running.state, running.reason) == ("RUNNING", "BackendUnavailable")
    assert (queued.state, queued.reason, queued.backend_job_id) == ("PENDING", "BackendUnavailable", "")
    assert "cannot be reached" in job_explanation(queued)["causes"][0]["message"]

    controller.start()

    drive_until(in_state(queued, "COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL"), timeout=90)
    drive_until(in_state(running, "COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL"), timeout=30)
    assert (running.state, queued.state) == ("COMPLETED", "COMPLETED")
    assert get_backend().read_log(running.backend_job_id).text == "finished\n"
    assert get_backend().read_log(queued.backend_job_id).text == "later\n"
