"""`aipool monitor` as a subprocess against a live stack (gunicorn + Celery worker with beat), and /metrics scraped
from it: the sampling beat, the idle flag and the Prometheus numbers, with nothing faked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.stack import ROOT, Stack

pytestmark = pytest.mark.slow
PORT = 18312  # h11a's range


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("monitoring-cli-stack"))
    stack.env.update({"AIPOOL_MONITOR_SECONDS": "1", "AIPOOL_IDLE_MINUTES": "0.05"})
    stack.port = int(os.environ.get("AIPOOL_TEST_MONITORING_CLI_PORT", PORT))
    try:
        yield stack.serve_demo()
    finally:
        stack.close()


def aipool(stack, token: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "AIPOOL_URL": stack.url(""), "AIPOOL_TOKEN": token}
    return subprocess.run(
        [sys.executable, "-m", "aipool_cli.main", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def test_monitor_flags_a_sleeping_job_and_metrics_count_it(stack):
    token = stack.manage("create_token", "alice", "--scopes", "read,write").stdout.strip()
    submitted = aipool(
        stack, token, "submit", "-A", "acme-research", "--gres=accelerator:1", "-t", "5", "--wrap", "sleep 90"
    )
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    deadline = time.monotonic() + 60
    while True:
        frame = aipool(stack, token, "monitor", "--jobid", job_id, "--json", "--count", "1")
        assert frame.returncode == 0, frame.stderr
        health = json.loads(frame.stdout.splitlines()[0])
        if health["idle"] and health["idle"]["flagged"]:
            break
        assert time.monotonic() < deadline, health
        time.sleep(1)
    assert health["rules"][0]["status"] == "bad" and health["utilisation_source"] == "cpu"

    table = aipool(stack, token, "monitor", job_id, "--count", "1")
    assert "idle accelerators: flagged" in table.stdout and "Compute utilisation" in table.stdout

    text = httpx.get(stack.url("/metrics"), timeout=10).text
    values = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert values[("aipool_jobs", (("state", "RUNNING"),))] == 1
    assert values[("aipool_tenant_idle_jobs", (("tenant", "acme"),))] == 1
    assert aipool(stack, token, "cancel", job_id).returncode == 0
