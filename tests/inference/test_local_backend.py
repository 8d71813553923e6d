"""End to end on the local backend: the seed's YAML gives two READY replicas (real jobs running the built-in model
server) that answer real predictions; a killed replica is replaced; a rolling update to a new model version fails
no request of a client that follows the ready replicas."""

import os
import signal
import time

import httpx
import pytest

from cluster.backends.registry import get_backend
from inference.models import Replica, ReplicaState
from inference.reconcile import reconcile_service
from inference.selectors import gateway_routes
from jobs.models import Job
from tests.inference.helpers import SEED_YAML, apply_yaml, make_model
from tests.inference.tiny_model import model_files
from tests.jobs.helpers import tick
from tests.registry.helpers import publish

pytestmark = pytest.mark.django_db
BODY = {"instances": [[3, 0, 0, 0], [0, 0, 4, 0]]}


def drive(service, until, timeout=60.0, each=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tick()
        reconcile_service(service.pk)
        if each is not None:
            each()
        if until():
            return
        time.sleep(0.1)
    rows = list(service.replicas.values_list("pk", "generation", "state", "message", "job__state"))
    raise AssertionError(f"not reached in {timeout}s: {rows}")


def ready(service, count, generation=None):
    def check():
        replicas = service.replicas.filter(state=ReplicaState.READY)
        if generation is not None:
            replicas = replicas.filter(generation=generation)
        return replicas.count() == count

    return check


def predict(url: str) -> list[str]:
    answer = httpx.post(f"{url}/v1/models/image-classifier:predict", json=BODY, timeout=5)
    answer.raise_for_status()
    return [p["label"] for p in answer.json()["predictions"]]


@pytest.fixture
def service(world, monkeypatch):
    monkeypatch.setenv("AIPOOL_INFERENCE_DRAIN_SECONDS", "1")
    make_model(world.alice, world.ai_team)
    return apply_yaml(world.alice, SEED_YAML)[0]


def test_the_seed_yaml_gives_two_ready_replicas_answering_real_predictions(service):
    drive(service, ready(service, 2))
    service.refresh_from_db()
    assert service.state == "READY"
    urls = [url for _, url in gateway_routes()[("acme", "image-classifier")].replicas]
    assert len(set(urls)) == 2
    for url in urls:
        assert predict(url) == ["cat", "bird"]
    jobs = Job.objects.filter(pk__in=service.replicas.values("job"))
    assert {(j.state, j.accelerators_per_node, j.memory_per_node) for j in jobs} == {("RUNNING", 1, 32768)}


def test_a_killed_replica_is_replaced(service):
    drive(service, ready(service, 2))
    victim = service.replicas.filter(state=ReplicaState.READY).first()
    for process_id in get_backend().alive_pids(victim.job.backend_job_id):
        os.kill(process_id, signal.SIGKILL)
    drive(service, lambda: Replica.objects.get(pk=victim.pk).state == "FAILED" and ready(service, 2)())
    urls = [url for _, url in gateway_routes()[("acme", "image-classifier")].replicas]
    assert victim.url not in urls and all(predict(url) == ["cat", "bird"] for url in urls)


def test_a_rolling_update_fails_no_request(world, service):
    drive(service, ready(service, 2))
    # Version 2 swaps the labels' weights: answers tell which generation served them.
    publish(world.alice, service.model_version.collection, model_files(scale=-1.0), aliases=["production"])
    apply_yaml(world.alice, SEED_YAML)
    failures, answers = [], set()

    def client_requests():
        for _, url in gateway_routes()[("acme", "image-classifier")].replicas:
            try:
                answers.add(tuple(predict(url)))
            except httpx.HTTPError as exc:
                failures.append(f"{url}: {exc}")

    def rolled() -> bool:
        serving_old = service.replicas.filter(generation=1, state__in=["READY", "DRAINING"]).exists()
        return ready(service, 2, generation=2)() and not serving_old

    drive(service, rolled, each=client_requests)
    assert failures == []
    assert answers == {("cat", "bird"), ("dog", "cat")}  # both generations answered, never nobody
    service.refresh_from_db()
    assert service.state == "READY" and service.generation == 2
