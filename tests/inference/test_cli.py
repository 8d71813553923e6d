"""`aipool apply -f` / `get isvc` / `delete isvc` / `key` against this API in-process (httpx over WSGI)."""

import json

import httpx
import pytest
from click.testing import CliRunner
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from aipool_cli.main import cli
from api.services import token_create
from inference.models import InferenceService, ServiceKey
from tests.inference.helpers import SEED_YAML, make_model, make_service, seed_yaml

pytestmark = pytest.mark.django_db


@pytest.fixture
def aipool(world):
    """``aipool(user, *args, input=None)`` → (exit code, stdout, stderr)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    transport = httpx.WSGITransport(app=WSGIHandler())

    def run(user, *args, input=None):
        _, secret = token_create(user=user, name="cli", scopes="read,write")
        env = {"AIPOOL_URL": "http://testserver", "AIPOOL_TOKEN": secret}
        obj = {"transport": transport, "sleep": lambda s: None}
        result = CliRunner().invoke(cli, list(args), obj=obj, env=env, input=input)
        return result.exit_code, result.stdout, result.stderr

    yield run
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def seed_file(tmp_path):
    path = tmp_path / "image-classifier.yaml"
    path.write_text(SEED_YAML)
    return path


def test_apply_creates_then_configures(world, aipool, seed_file):
    make_model(world.alice, world.ai_team)
    code, out, err = aipool(world.alice, "apply", "-f", str(seed_file))
    assert code == 0, err
    service = InferenceService.objects.get()
    assert out.strip() == f"inferenceservice/image-classifier created (generation 1, id {service.pk})"
    code, out, err = aipool(world.alice, "apply", "-f", "-", input=seed_yaml(**{"maxReplicas: 20": "maxReplicas: 5"}))
    assert code == 0 and "configured" in out, err
    assert InferenceService.objects.get().max_replicas == 5


def test_apply_prints_the_servers_field_errors(world, aipool, seed_file):
    make_model(world.alice, world.ai_team)
    seed_file.write_text(seed_yaml(**{"memory: 32Gi": "memory: 32Gx"}))
    code, out, err = aipool(world.alice, "apply", "-f", str(seed_file))
    assert code == 1 and out == ""
    assert "spec.resources.memory" in err and "32Gx" in err and "Traceback" not in err


def test_apply_of_a_missing_file_is_one_line(world, aipool):
    code, _, err = aipool(world.alice, "apply", "-f", "/nonexistent.yaml")
    assert code == 2 and err.startswith("aipool: cannot read /nonexistent.yaml")


def test_get_lists_and_shows(world, aipool):
    rows = make_service(world)
    code, out, err = aipool(world.alice, "get", "isvc")
    assert code == 0, err
    header, line = out.splitlines()
    assert header.split()[:4] == ["NAME", "STATE", "READY", "MIN-MAX"]
    assert line.split()[:4] == ["image-classifier", "PENDING", "1/3", "2-20"]
    code, out, err = aipool(world.alice, "get", "isvc", "image-classifier")
    assert code == 0, err
    assert "acme/image-classifier" in out and "http://127.0.0.1:9" in out and "2 → 3" in out
    code, out, _ = aipool(world.alice, "--json", "get", "isvc", "image-classifier")
    assert json.loads(out)["id"] == rows["service"].pk
    code, out, _ = aipool(world.alice, "get", "isvc", "image-classifier", "-o", "yaml")
    assert out.startswith("apiVersion: serving.ai/v1") and "cpus" not in out


def test_get_of_another_tenants_service_is_not_found(world, aipool):
    make_service(world)
    code, out, err = aipool(world.mallory, "get", "isvc", "image-classifier")
    assert code == 1 and "no inference service 'image-classifier'" in err
    code, out, err = aipool(world.mallory, "get", "isvc")
    assert code == 0 and out.strip() == "No inference services."


def test_unknown_kind_is_a_usage_error(world, aipool):
    code, _, err = aipool(world.alice, "get", "pods")
    assert code == 2 and "unknown kind 'pods'" in err


def test_keys_create_list_revoke(world, aipool):
    make_service(world)
    code, out, err = aipool(world.alice, "key", "create", "image-classifier", "--name", "web")
    assert code == 0, err
    raw = out.strip()
    assert raw.startswith("isk_") and "not shown again" in err
    code, out, err = aipool(world.alice, "key", "list", "image-classifier")
    assert code == 0 and "web" in out and raw not in out
    key = ServiceKey.objects.get(name="web")
    code, out, err = aipool(world.alice, "key", "revoke", str(key.pk))
    assert code == 0, err
    key.refresh_from_db()
    assert key.revoked_at is not None


def test_delete(world, aipool):
    make_service(world)
    code, out, err = aipool(world.alice, "delete", "isvc", "image-classifier")
    assert code == 0 and out.strip() == 'inferenceservice "image-classifier" deleted', err
    assert not InferenceService.objects.exists()


def test_apply_with_the_model_given_beside_the_file(world, aipool, seed_file):
    make_model(world.alice, world.ai_team)
    seed_file.write_text(seed_yaml(**{"  model: acme/classifier:production\n": ""}))
    code, out, err = aipool(world.alice, "apply", "-f", str(seed_file), "--model", "acme/classifier:production")
    assert code == 0, err
    assert InferenceService.objects.get().model_ref == "acme/classifier:production"
