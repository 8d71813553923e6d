"""The browser pages of inference services: list, a service's page (replicas, conditions incl. the quota block,
scaling events, gateway traffic), create from YAML with per-field errors, keys shown once, revoke, delete — and for
another tenant's user, 404 on every one of them."""

import time

import pytest

from inference.models import InferenceService, ServiceKey
from inference.services import service_scale
from tests.inference.helpers import SEED_YAML, make_model, make_service, seed_yaml

pytestmark = pytest.mark.django_db


def test_list_and_detail_show_the_service(client, world):
    rows = make_service(world)
    client.force_login(world.vic)
    listing = client.get("/services/").content.decode()
    assert "image-classifier" in listing and "1/3" in listing and "/serve/acme/image-classifier/" in listing
    page = client.get(f"/services/{rows['service'].pk}/").content.decode()
    assert "http://127.0.0.1:9" in page and "qps 2,500 over target 1,000" in page
    assert f'hx-get="/services/{rows["service"].pk}/live/"' in page
    assert "Delete" not in page and "Create key" not in page  # a viewer changes nothing


def test_the_quota_block_is_shown(client, world):
    rows = make_service(world)
    service_scale(
        service_id=rows["service"].pk, desired=3, wanted=9, reason="quota", inputs={}, blocked_by_quota=True,
        blocked_message="group ai-team uses 16/16 accelerators",
    )  # fmt: skip
    client.force_login(world.alice)
    live = client.get(f"/services/{rows['service'].pk}/live/").content.decode()
    assert "scale-up blocked: group ai-team uses 16/16 accelerators" in live


def test_gateway_traffic_figures_when_present(client, world):
    from gateway.models import TrafficWindow

    rows = make_service(world)
    now = int(time.time())
    for second in range(now - 10, now - 2):
        TrafficWindow.objects.create(service=rows["service"], second=second, gateway="g1", requests=120, errors=1)
    client.force_login(world.alice)
    live = client.get(f"/services/{rows['service'].pk}/live/").content.decode()
    assert "Gateway traffic" in live and "960 requests, 8 errors" in live and "16.0" in live


def test_create_from_yaml(client, world):
    make_model(world.alice, world.ai_team)
    client.force_login(world.alice)
    form = client.get("/services/new/").content.decode()
    assert "nvidia-h100-80gb" in form and "group: ai-team" in form
    response = client.post("/services/new/", {"document": SEED_YAML})
    service = InferenceService.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/services/{service.pk}/"
    edit = client.get(f"/services/new/?from={service.pk}").content.decode()
    assert "model: acme/classifier:production" in edit and "cpus" not in edit


def test_create_shows_field_errors_and_keeps_the_text(client, world):
    make_model(world.alice, world.ai_team)
    client.force_login(world.alice)
    text = seed_yaml(**{"minReplicas: 2": "minReplicas: 50", "memory: 32Gi": "memory: 32Gx"})
    response = client.post("/services/new/", {"document": text})
    page = response.content.decode()
    assert response.status_code == 400
    assert "minReplicas (50) is greater than maxReplicas (20)" in page and "&#x27;32Gx&#x27;" in page
    assert "memory: 32Gx" in page and not InferenceService.objects.exists()
    broken = client.post("/services/new/", {"document": "spec: ["})
    assert broken.status_code == 400 and "not valid YAML" in broken.content.decode()


def test_a_new_key_is_shown_once(client, world):
    rows = make_service(world)
    client.force_login(world.alice)
    client.post(f"/services/{rows['service'].pk}/keys/", {"name": "web"})
    first = client.get(f"/services/{rows['service'].pk}/").content.decode()
    key = ServiceKey.objects.get(name="web")
    assert key.prefix in first and "copy it now" in first
    second = client.get(f"/services/{rows['service'].pk}/").content.decode()
    assert "copy it now" not in second and key.prefix in second


def test_revoke_and_delete(client, world):
    rows = make_service(world)
    client.force_login(world.vic)
    assert client.post(f"/services/{rows['service'].pk}/delete/").status_code == 403
    assert client.post(f"/services/{rows['service'].pk}/keys/{rows['key'].pk}/revoke/").status_code == 403
    client.force_login(world.alice)
    client.post(f"/services/{rows['service'].pk}/keys/{rows['key'].pk}/revoke/")
    assert ServiceKey.objects.get(pk=rows["key"].pk).revoked_at is not None
    assert client.post(f"/services/{rows['service'].pk}/delete/").status_code == 302
    assert not InferenceService.objects.exists()


def test_another_tenants_pages_are_404(client, world):
    rows = make_service(world)
    pk, key = rows["service"].pk, rows["key"].pk
    client.force_login(world.mallory)
    for url in (f"/services/{pk}/", f"/services/{pk}/live/", f"/services/new/?from={pk}"):
        assert client.get(url).status_code == 404, url
    for url in (f"/services/{pk}/delete/", f"/services/{pk}/keys/", f"/services/{pk}/keys/{key}/revoke/"):
        assert client.post(url, {"name": "x"}).status_code == 404, url
    assert "image-classifier" not in client.get("/services/").content.decode()
    assert InferenceService.objects.filter(pk=pk).exists() and ServiceKey.objects.get(pk=key).revoked_at is None
