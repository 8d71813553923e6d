"""Inference test helpers: a tiny real model in the repository, the seed's YAML, services applied as users do."""

from __future__ import annotations

from inference.services import service_apply
from inference.spec import parse_service_spec
from tests.inference.tiny_model import model_files
from tests.registry.helpers import make_collection, publish

ACCELERATOR = "nvidia-h100-80gb"

SEED_YAML = f"""\
apiVersion: serving.ai/v1
kind: InferenceService
metadata:
  name: image-classifier
spec:
  model: acme/classifier:production
  minReplicas: 2
  maxReplicas: 20
  scaling:
    metric: qps
    target: 1000
  resources:
    accelerator: {ACCELERATOR}
    memory: 32Gi
"""


def make_model(user, group, name="classifier", aliases=("production",), scale: float = 1.0):
    """A model collection with one published version holding the tiny MLP; returns (collection, version)."""
    collection = make_collection(user, group, name)
    version = publish(user, collection, model_files(scale), aliases=list(aliases))
    return collection, version


def seed_yaml(**replace) -> str:
    text = SEED_YAML
    for old, new in replace.items():
        text = text.replace(old, new)
    return text


def apply_yaml(user, text: str, group=None):
    import yaml

    return service_apply(user=user, spec=parse_service_spec(yaml.safe_load(text)), group=group)


def make_service(world, name="image-classifier", **fields):
    """acme's service with one key, a replica row and a scaling event, built through the services (no jobs run)."""
    from inference.models import Replica, ReplicaState
    from inference.services import key_create, service_scale

    if not world.ai_team.collections.filter(name="classifier").exists():
        make_model(world.alice, world.ai_team)
    service, _ = apply_yaml(world.alice, seed_yaml(**{"name: image-classifier": f"name: {name}"}))
    key, raw = key_create(user=world.alice, service=service, name="frontend")
    replica = Replica.objects.create(
        service=service, generation=1, state=ReplicaState.READY, url="http://127.0.0.1:9", **fields
    )
    service_scale(
        service_id=service.pk, desired=3, wanted=3, reason="qps 2,500 over target 1,000", inputs={"qps": 2500},
        blocked_by_quota=False,
    )  # fmt: skip
    service.refresh_from_db()
    return {"service": service, "key": key, "raw_key": raw, "replica": replica}


def acme_objects(world) -> dict[str, int]:
    """acme's inference objects by API resource name, for the exhaustive cross-tenant API test."""
    rows = make_service(world)
    return {"inferenceservice": rows["service"].pk, "servicekey": rows["key"].pk}


def snapshot() -> list:
    from inference.models import InferenceService, Replica, ServiceKey

    return [
        list(InferenceService.objects.values_list("pk", "desired_replicas", "generation", "spec")),
        list(ServiceKey.objects.values_list("pk", "revoked_at")),
        list(Replica.objects.values_list("pk", "state")),
    ]
