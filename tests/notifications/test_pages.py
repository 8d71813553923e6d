"""/notifications/: settings form, endpoints with a secret shown once, the delivery log; other users get 404."""

import pytest

from notifications.models import NotificationSettings, WebhookEndpoint
from tests.notifications.helpers import acme_objects

pytestmark = pytest.mark.django_db


def test_the_page_saves_settings(client, world):
    client.force_login(world.alice)
    assert client.get("/notifications/").status_code == 200
    response = client.post("/notifications/", {"events": ["job.failed"], "long_wait_minutes": "5"})
    assert response.status_code == 302
    saved = NotificationSettings.objects.get(user=world.alice)
    assert saved.events == ["job.failed"] and saved.long_wait_minutes == 5 and saved.email is False


def test_bad_settings_show_a_form_error(client, world):
    client.force_login(world.alice)
    response = client.post("/notifications/", {"events": ["job.exploded"], "long_wait_minutes": "-3"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "job.exploded is not one of the available choices" in page
    assert "greater than or equal to 0" in page


def test_adding_an_endpoint_shows_the_secret_once(client, world):
    client.force_login(world.alice)
    response = client.post("/notifications/webhooks/", {"url": "https://ci.acme.example/hook"})
    endpoint = WebhookEndpoint.objects.get(user=world.alice)
    assert endpoint.secret in response.content.decode()
    assert endpoint.secret not in client.get("/notifications/").content.decode()


def test_a_bad_endpoint_url_is_a_form_error(client, world):
    client.force_login(world.alice)
    response = client.post("/notifications/webhooks/", {"url": "ftp://nope"})
    assert response.status_code == 400 and "http:// or https://" in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


def test_the_log_and_attempts_are_the_owners_only(client, world):
    objects = acme_objects(world)
    client.force_login(world.alice)
    assert "job 1 (t) COMPLETED" in client.get("/notifications/").content.decode()
    assert client.get(f"/notifications/deliveries/{objects['delivery']}/").status_code == 200
    client.force_login(world.bob)
    assert "job 1 (t) COMPLETED" not in client.get("/notifications/").content.decode()
    assert client.get(f"/notifications/deliveries/{objects['delivery']}/").status_code == 404
    assert client.post(f"/notifications/webhooks/{objects['webhook']}/ping/").status_code == 404
    assert client.post(f"/notifications/webhooks/{objects['webhook']}/delete/").status_code == 404
    assert WebhookEndpoint.objects.filter(pk=objects["webhook"]).exists()
