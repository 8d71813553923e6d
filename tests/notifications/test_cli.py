"""`aipool notify` against the app in-process (tests/accounting/bridge.py): settings, endpoints, log, errors."""

import json

import pytest

from notifications.models import WebhookEndpoint
from tests.accounting.bridge import django_transport
from tests.notifications.helpers import acme_objects

pytestmark = pytest.mark.django_db


def run(user, args):
    from click.testing import CliRunner

    from aipool_cli.main import cli
    from api.services import token_create

    _, secret = token_create(user=user, name="cli", scopes=("read", "write"), expires_days=None)
    env = {"AIPOOL_URL": "http://testserver", "AIPOOL_TOKEN": secret, "AIPOOL_DEBUG": "1"}
    return CliRunner().invoke(cli, args, obj={"transport": django_transport()}, env=env, catch_exceptions=False)


def test_settings_show_and_change(world):
    result = run(world.alice, ["notify", "settings", "--events", "job.failed", "--long-wait", "45", "--no-email"])
    assert result.exit_code == 0, result.output
    assert "[x] job.failed" in result.output and "[ ] job.ended" in result.output
    assert "45 minutes" in result.output and "email:      off" in result.output


def test_a_bad_event_is_a_one_line_error(world):
    result = run(world.alice, ["notify", "settings", "--events", "job.exploded"])
    assert result.exit_code == 1
    assert "aipool: error:" in result.output and "job.exploded" in result.output
    assert "Traceback" not in result.output


def test_add_list_and_remove_a_webhook(world):
    added = run(world.alice, ["notify", "webhook-add", "https://ci.acme.example/h", "--event", "job.ended"])
    assert added.exit_code == 0, added.output
    endpoint = WebhookEndpoint.objects.get(user=world.alice)
    assert f"secret (shown once): {endpoint.secret}" in added.output
    listed = json.loads(run(world.alice, ["--json", "notify", "webhooks"]).output)
    assert [e["url"] for e in listed] == ["https://ci.acme.example/h"]
    assert run(world.alice, ["notify", "webhook-rm", str(endpoint.pk)]).exit_code == 0
    assert not WebhookEndpoint.objects.exists()


def test_another_users_endpoint_is_not_found(world):
    objects = acme_objects(world)
    for args in (["notify", "ping", str(objects["webhook"])], ["notify", "webhook-rm", str(objects["webhook"])]):
        result = run(world.bob, args)
        assert result.exit_code == 1 and "not found" in result.output.lower(), result.output
    assert "job 1 (t) COMPLETED" not in run(world.bob, ["--json", "notify", "log"]).output
    log = run(world.alice, ["notify", "log"])
    assert "job.ended" in log.output and "pending" in log.output
