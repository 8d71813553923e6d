"""The inference API: the seed's YAML as a YAML or a JSON body, per-field 400s, keys, events, scale, delete, and
another tenant's services reading as absent."""

import json

import pytest

from inference.models import InferenceService, ServiceKey
from tests.inference.helpers import SEED_YAML, make_model, make_service, seed_yaml

pytestmark = pytest.mark.django_db
URL = "/api/v1/inference-services/"


@pytest.fixture
def model(world):
    return make_model(world.alice, world.ai_team)


def post_yaml(client, text, **params):
    query = "?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""
    return client.post(URL + query, data=text.encode(), content_type="application/yaml")


def test_the_seed_yaml_as_a_yaml_body_creates_the_service(world, api, model):
    response = post_yaml(api(world.alice), SEED_YAML)
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["name"], body["group"], body["model_version"], body["desired_replicas"]) == (
        "image-classifier", "ai-team", 1, 2,
    )  # fmt: skip
    assert body["gateway_path"] == "/serve/acme/image-classifier/"
    assert body["spec"]["spec"]["resources"]["memory"] == "32Gi"


def test_the_same_document_as_json_updates_it(world, api, model):
    client = api(world.alice)
    post_yaml(client, SEED_YAML)
    import yaml

    document = yaml.safe_load(seed_yaml(**{"maxReplicas: 20": "maxReplicas: 4"}))
    response = client.post(URL, document, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["max_replicas"] == 4 and InferenceService.objects.count() == 1


def test_field_errors_in_the_api_shape(world, api, model):
    text = seed_yaml(**{"minReplicas: 2": "minReplicas: 30", "memory: 32Gi": "memory: 32Gx", "nvidia": "amd"})
    response = post_yaml(api(world.alice), text)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error"
    assert set(body["errors"]) == {"spec.minReplicas", "spec.resources.memory"}
    # the accelerator is checked against the pool once the document itself is sound
    response = post_yaml(api(world.alice), seed_yaml(**{"nvidia-h100-80gb": "amd-mi300x"}))
    assert response.json()["errors"] == {
        "spec.resources.accelerator": ["unknown accelerator type 'amd-mi300x' (this pool has: nvidia-h100-80gb)"]
    }


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"{{{", "application/yaml"),
        (b"[1,2]", "application/json"),
        (b"\x00\xff", "application/yaml"),
        (b"", "application/json"),
    ],
)
def test_bodies_that_are_not_a_document_are_400(world, api, model, body, content_type):
    response = api(world.alice).post(URL, data=body, content_type=content_type)
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "validation_error"


def test_the_group_parameter_and_an_unknown_group(world, api, model):
    response = post_yaml(api(world.alice), SEED_YAML, group="rivals")
    assert response.status_code == 400
    assert response.json()["errors"] == {"group": ["unknown group 'rivals'"]}
    assert post_yaml(api(world.alice), SEED_YAML, group="ai-team").status_code == 201


def test_viewers_are_refused(world, api, model):
    response = post_yaml(api(world.vic), SEED_YAML)
    assert response.status_code == 403


def test_list_detail_and_name_filter(world, api, model, django_assert_max_num_queries):
    rows = make_service(world)
    make_service(world, name="second")
    client = api(world.vic)  # viewers read
    with django_assert_max_num_queries(8):
        listed = client.get(URL).json()["results"]
    assert [s["name"] for s in listed] == ["image-classifier", "second"]
    assert [s["name"] for s in client.get(URL, {"name": "second"}).json()["results"]] == ["second"]
    detail = client.get(f"{URL}{rows['service'].pk}/").json()
    assert [r["url"] for r in detail["replicas"]] == ["http://127.0.0.1:9"]
    assert detail["ready_replicas"] == 1


def test_keys_created_once_listed_by_prefix_and_revoked(world, api, model):
    rows = make_service(world)
    client = api(world.alice)
    created = client.post(f"{URL}{rows['service'].pk}/keys/", {"name": "ci"}, format="json")
    assert created.status_code == 201
    raw = created.json()["key"]
    listed = client.get(f"{URL}{rows['service'].pk}/keys/").json()["results"]
    assert raw not in json.dumps(listed) and {k["name"] for k in listed} == {"ci", "frontend"}
    key_id = created.json()["id"]
    assert client.delete(f"/api/v1/inference-keys/{key_id}/").status_code == 204
    assert ServiceKey.objects.get(pk=key_id).revoked_at is not None
    assert api(world.vic).post(f"{URL}{rows['service'].pk}/keys/", {"name": "x"}, format="json").status_code == 403


def test_events_and_manual_scale(world, api, model):
    rows = make_service(world)
    client = api(world.alice)
    response = client.post(f"{URL}{rows['service'].pk}/scale/", {"replicas": 5}, format="json")
    assert response.status_code == 200 and response.json()["desired_replicas"] == 5
    events = client.get(f"{URL}{rows['service'].pk}/events/").json()["results"]
    assert [(e["from_replicas"], e["to_replicas"]) for e in events] == [(3, 5), (2, 3)]
    assert client.post(f"{URL}{rows['service'].pk}/scale/", {"replicas": -1}, format="json").status_code == 400


def test_delete(world, api, model):
    rows = make_service(world)
    assert api(world.vic).delete(f"{URL}{rows['service'].pk}/").status_code == 403
    assert api(world.alice).delete(f"{URL}{rows['service'].pk}/").status_code == 204
    assert not InferenceService.objects.exists()


def test_another_tenant_sees_nothing(world, api, model):
    rows = make_service(world)
    client = api(world.mallory)
    assert client.get(URL).json()["results"] == []
    assert client.get(URL, {"name": "image-classifier"}).json()["results"] == []
    for path in ("", "keys/", "events/"):
        assert client.get(f"{URL}{rows['service'].pk}/{path}").status_code == 404
    assert client.get(f"/api/v1/inference-keys/{rows['key'].pk}/").status_code == 404
    assert client.delete(f"/api/v1/inference-keys/{rows['key'].pk}/").status_code == 404


def test_every_inference_operation_has_examples():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    missing = []
    for path, operations in schema["paths"].items():
        if not path.startswith(("/api/v1/inference-services/", "/api/v1/inference-keys/")):
            continue
        for method, operation in operations.items():
            body = operation.get("requestBody")
            if body and not body["content"].get("application/json", {}).get("examples"):
                missing.append(f"{method} {path} request")
            for code, response in operation["responses"].items():
                content = response.get("content", {}).get("application/json", {})
                if code.startswith("2") and "content" in response and not content.get("examples"):
                    missing.append(f"{method} {path} {code}")
    assert missing == []


def test_the_seeds_exact_yaml_plus_the_model_beside_it(world, api, model):
    exact = seed_yaml(**{"  model: acme/classifier:production\n": ""})
    client = api(world.alice)
    missing = post_yaml(client, exact)
    assert missing.status_code == 400 and "spec.model" in missing.json()["errors"]
    created = post_yaml(client, exact, model="acme/classifier:1")
    assert created.status_code == 201 and created.json()["model"] == "acme/classifier:1"
    clash = post_yaml(client, SEED_YAML, model="acme/classifier:1")
    assert clash.json()["errors"] == {
        "spec.model": ["the document says 'acme/classifier:production', the request says 'acme/classifier:1'"]
    }


def test_a_service_whose_version_was_deleted_still_reads(world, api, model):
    from registry.services import version_delete

    rows = make_service(world)
    version_delete(actor=world.alice, version=model[1])
    body = api(world.alice).get(f"{URL}{rows['service'].pk}/").json()
    assert body["model_version"] is None and body["model"] == "acme/classifier:production"
