"""The notifications API: settings, endpoints, deliveries — personal, so another user's are 404, even in one tenant."""

import pytest

from notifications.models import WebhookEndpoint
from tests.notifications.helpers import acme_objects

pytestmark = pytest.mark.django_db

SETTINGS = "/api/v1/notifications/settings/"
HOOKS = "/api/v1/notifications/webhooks/"
DELIVERIES = "/api/v1/notifications/deliveries/"


def test_settings_default_to_every_event_and_can_be_narrowed(world, api):
    client = api(world.alice)
    body = client.get(SETTINGS).json()
    assert "job.failed" in body["events"] and body["email"] is True and body["long_wait_minutes"] == 60
    changed = client.patch(SETTINGS, {"events": ["job.failed"], "long_wait_minutes": 15}, format="json")
    assert changed.status_code == 200, changed.content
    assert client.get(SETTINGS).json()["events"] == ["job.failed"]
    assert api(world.bob).get(SETTINGS).json()["events"] != ["job.failed"]  # bob's own settings


@pytest.mark.parametrize(
    ("body", "field"),
    [({"events": ["job.exploded"]}, "events"), ({"long_wait_minutes": -1}, "long_wait_minutes")],
)
def test_bad_settings_are_400_with_the_field(world, api, body, field):
    response = api(world.alice).patch(SETTINGS, body, format="json")
    assert response.status_code == 400
    assert field in response.json()["errors"]


def test_creating_an_endpoint_shows_its_secret_once(world, api):
    client = api(world.alice)
    created = client.post(HOOKS, {"url": "https://ci.acme.example/hook", "events": ["job.ended"]}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["secret"].startswith("whsec_")
    shown = client.get(f"{HOOKS}{created.json()['id']}/").json()
    assert "secret" not in shown and shown["events"] == ["job.ended"]


@pytest.mark.parametrize("url", ["ftp://x.example/h", "not a url", "https://user:pw@x.example/h", ""])
def test_a_bad_endpoint_url_is_400(world, api, url):
    response = api(world.alice).post(HOOKS, {"url": url}, format="json")
    assert response.status_code == 400
    assert "url" in response.json()["errors"]
    assert not WebhookEndpoint.objects.exists()


def test_another_users_endpoints_and_deliveries_are_404_even_in_the_same_tenant(world, api):
    objects = acme_objects(world)  # alice's
    for user in (world.bob, world.ada, world.mallory, world.staff):
        client = api(user)
        assert client.get(f"{HOOKS}{objects['webhook']}/").status_code == 404
        assert client.patch(f"{HOOKS}{objects['webhook']}/", {"active": False}, format="json").status_code == 404
        assert client.post(f"{HOOKS}{objects['webhook']}/ping/").status_code == 404
        assert client.delete(f"{HOOKS}{objects['webhook']}/").status_code == 404
        assert client.get(f"{DELIVERIES}{objects['delivery']}/").status_code == 404
        assert client.get(HOOKS).json()["results"] == []
        assert client.get(DELIVERIES).json()["results"] == []
    assert WebhookEndpoint.objects.get(pk=objects["webhook"]).active
    alice = api(world.alice)
    assert alice.get(f"{DELIVERIES}{objects['delivery']}/").status_code == 200
    assert [d["id"] for d in alice.get(DELIVERIES).json()["results"]] == [objects["delivery"]]


def test_ping_queues_a_delivery_and_delete_removes_the_endpoint(world, api):
    client = api(world.alice)
    hook = client.post(HOOKS, {"url": "https://ci.acme.example/hook"}, format="json").json()
    ping = client.post(f"{HOOKS}{hook['id']}/ping/")
    assert ping.status_code == 202 and ping.json()["event"] == "ping"
    assert client.patch(f"{HOOKS}{hook['id']}/", {"active": False}, format="json").json()["active"] is False
    assert client.delete(f"{HOOKS}{hook['id']}/").status_code == 204
    assert client.get(f"{HOOKS}{hook['id']}/").status_code == 404


def test_the_delivery_log_costs_the_same_queries_for_many_deliveries(world, api, django_assert_max_num_queries):
    from notifications.sending import attempt
    from notifications.services import endpoint_create, ping

    endpoint, _ = endpoint_create(user=world.alice, url="http://127.0.0.1:9/closed")
    for _ in range(8):
        attempt(ping(user=world.alice, endpoint=endpoint).pk, 1)
    client = api(world.alice)
    with django_assert_max_num_queries(8):
        body = client.get(DELIVERIES).json()
    assert len(body["results"]) == 8 and all(len(d["attempt_log"]) == 1 for d in body["results"])
