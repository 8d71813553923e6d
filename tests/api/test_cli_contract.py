"""The aipool CLI against this API in-process (httpx over WSGI): the contract seen from its main client."""

import json

import httpx
import pytest
from click.testing import CliRunner
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from aipool_cli.main import cli
from api.services import token_create
from jobs.models import Job

pytestmark = pytest.mark.django_db


@pytest.fixture
def aipool(world):
    """``aipool(user, *args)`` → (exit code, stdout, stderr) of the CLI talking to this API as `user`."""
    # As Django's test client does: closing connections after each request would end the test's transaction.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    transport = httpx.WSGITransport(app=WSGIHandler())

    def run(user, *args):
        _, secret = token_create(user=user, name="cli", scopes="read,write")
        env = {"AIPOOL_URL": "http://testserver", "AIPOOL_TOKEN": secret}
        result = CliRunner().invoke(cli, list(args), obj={"transport": transport, "sleep": lambda s: None}, env=env)
        return result.exit_code, result.stdout, result.stderr

    yield run
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def test_submit_queue_show_cancel(world, aipool):
    code, out, err = aipool(world.alice, "submit", "-A", "ai-team", "-N", "1", "--gres=accelerator:2", "-t", "30",
                            "--wrap", "echo hi")  # fmt: skip
    assert code == 0, err
    job_id = int(out.strip())
    assert Job.objects.get(pk=job_id).accelerators_per_node == 2
    code, out, err = aipool(world.alice, "--json", "queue")
    assert code == 0, err
    assert [j["id"] for j in json.loads(out)] == [job_id]
    code, out, err = aipool(world.alice, "show", str(job_id))
    assert code == 0 and "PENDING" in out, err
    code, out, err = aipool(world.alice, "cancel", str(job_id))
    assert code == 0, err
    assert Job.objects.get(pk=job_id).state == "CANCELLED"


def test_refused_submission_prints_the_servers_reason(world, aipool):
    code, out, err = aipool(world.alice, "submit", "-A", "ai-team", "--gres=accelerator:9", "-t", "30", "--wrap", "x")
    assert code != 0
    assert "9 requested, nodes in partition 'main' have 8" in err


def test_quota_and_explain(world, aipool):
    code, out, err = aipool(world.alice, "submit", "-A", "ai-team", "--gres=accelerator:1", "-t", "30", "--wrap", "x")
    job_id = out.strip()
    code, out, err = aipool(world.alice, "quota")
    assert code == 0 and "ai-team" in out, err
    code, out, err = aipool(world.alice, "explain", job_id)
    assert code == 0, err


def test_another_tenants_job_is_not_found(world, aipool):
    code, out, err = aipool(world.alice, "submit", "-A", "ai-team", "-t", "30", "--wrap", "x")
    code, out, err = aipool(world.mallory, "show", out.strip())
    assert code != 0 and "not found" in err.lower()
