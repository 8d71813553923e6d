"""The CI pipeline's flow through the real HTTP stack (gunicorn + Celery worker): token → submit → wait → logs →
exit code, over plain HTTP and then with the `aipool` CLI as a subprocess."""

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.stack import Stack

pytestmark = pytest.mark.slow
AIPOOL = str(Path(sys.executable).with_name("aipool"))


@pytest.fixture
def stack(tmp_path):
    stack = Stack(tmp_path)
    yield stack.serve_demo()
    stack.close()


def test_ci_flow_over_http(stack):
    token = stack.manage("create_token", "alice", "--scopes", "read,write").stdout.strip()
    api = httpx.Client(base_url=stack.url("/api/v1/"), headers={"Authorization": f"Bearer {token}"}, timeout=10)
    body = {
        "group": "acme-research",
        "name": "ci",
        "nodes": 1,
        "accelerators_per_node": 1,
        "time_limit": "5",
        "command": "echo hello from $SLURM_JOB_ID; exit 7",
    }
    created = api.post("jobs/", json=body, headers={"Idempotency-Key": "pipeline-1"})
    assert created.status_code == 201, created.text
    job_id = created.json()["id"]
    assert api.post("jobs/", json=body, headers={"Idempotency-Key": "pipeline-1"}).json()["id"] == job_id

    deadline = time.monotonic() + 60
    while (job := api.get(f"jobs/{job_id}/").json())["state"] in ("PENDING", "RUNNING"):
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    assert (job["state"], job["exit_code"]) == ("FAILED", 7)
    assert api.get(f"jobs/{job_id}/logs/", params={"offset": 0}).json()["text"] == f"hello from {job_id}\n"
    assert httpx.get(stack.url("/api/v1/jobs/")).status_code == 401


def test_ci_flow_with_the_cli_as_a_subprocess(stack):
    token = stack.manage("create_token", "alice", "--scopes", "read,write").stdout.strip()
    env = {**os.environ, "AIPOOL_URL": stack.url(""), "AIPOOL_TOKEN": token}
    ok = subprocess.run(
        [
            AIPOOL,
            "run",
            "-A",
            "acme-research",
            "-N",
            "2",
            "--gres=accelerator:2",
            "-t",
            "5",
            "--wrap",
            "echo rank $RANK of $WORLD_SIZE",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert "rank 0 of 2" in ok.stdout and "rank 1 of 2" in ok.stdout
    failing = subprocess.run(
        [AIPOOL, "run", "-A", "acme-research", "-t", "5", "--wrap", "exit 5"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failing.returncode == 5, failing.stderr
    refused = subprocess.run(
        [AIPOOL, "submit", "-A", "acme-research", "--gres=accelerator:9", "-t", "5", "--wrap", "true"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert "accelerators_per_node: 9 requested, nodes in partition 'main' have 8" in refused.stderr
    assert "Traceback" not in refused.stderr
