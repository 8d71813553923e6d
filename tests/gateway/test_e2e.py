"""The issue's "done when", end to end on the local backend: a real Celery worker with beat, replica jobs running
the model server, and the gateway process (`manage.py gateway`), on their own database. And a rolling update under
load through the gateway, which must fail no request.

The autoscaler's windows are shortened (stable 10 s, panic 3 s) so that a scale-down fits in a test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.stack import ROOT, Stack, free_port, wait_for

pytestmark = pytest.mark.slow

SERVICE_YAML = """\
apiVersion: serving.ai/v1
kind: InferenceService
metadata:
  name: image-classifier
  group: acme-vision
spec:
  model: acme/classifier:production
  minReplicas: 2
  maxReplicas: 4
  scaling:
    metric: qps
    target: 5
  resources:
    accelerator: nvidia-h100-80gb
    memory: 1Gi
"""
PREDICT = "/serve/acme/image-classifier/v1/models/image-classifier:predict"

SETUP = """
import json, yaml
from django.contrib.auth import get_user_model
from tenants.models import Group
from inference.services import key_create, service_apply
from inference.spec import parse_service_spec
from tests.inference.helpers import make_model

User = get_user_model()
alice, bob = User.objects.get(username="alice"), User.objects.get(username="bob")
vision, globex = Group.objects.get(name="acme-vision"), Group.objects.get(name="globex-ml")
make_model(alice, vision)
make_model(bob, globex)
acme, _ = service_apply(user=alice, spec=parse_service_spec(yaml.safe_load({acme_yaml!r})), group=vision)
other = {globex_yaml!r}
theirs, _ = service_apply(user=bob, spec=parse_service_spec(yaml.safe_load(other)), group=globex)
_, acme_key = key_create(user=alice, service=acme, name="frontend")
_, globex_key = key_create(user=bob, service=theirs, name="theirs")
print(json.dumps({{"service": acme.pk, "acme_key": acme_key, "globex_key": globex_key}}))
"""

STATUS = """
import json
from inference.models import InferenceService
s = InferenceService.objects.get(pk={service})
ready = list(s.replicas.filter(state="READY").order_by("pk").values_list("pk", flat=True))
failed = list(s.replicas.filter(state="FAILED").values_list("pk", flat=True))
print(json.dumps({{"desired": s.desired_replicas, "ready": ready, "failed": failed, "conditions": s.conditions,
                  "events": s.scaling_events.count()}}))
"""


class GatewayStack(Stack):
    def start_gateway(self) -> None:
        self.gateway_port = free_port()
        log = open(self.data_dir / "gateway.log", "ab")  # noqa: SIM115 - lives as long as the process
        self.gateway = subprocess.Popen(
            [sys.executable, "manage.py", "gateway", "--port", str(self.gateway_port)],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def close(self) -> None:
        self.kill(getattr(self, "gateway", None))
        super().close()


@pytest.fixture
def stack(tmp_path):
    stack = GatewayStack(tmp_path)
    stack.env.update(
        AIPOOL_AUTOSCALE_STABLE_WINDOW="10",
        AIPOOL_AUTOSCALE_PANIC_WINDOW="3",
        AIPOOL_INFERENCE_DRAIN_SECONDS="2",
    )
    stack.manage("migrate", "--no-input")
    stack.manage("seed_demo")
    # Room for three one-accelerator replicas: the fourth is what the quota stops.
    stack.manage("sacctmgr", "modify", "group", "acme-vision", "set", "GrpTRES=accelerator=3")
    stack.start_worker()
    stack.start_gateway()
    try:
        yield stack
    finally:
        stack.close()
        _stop_replica_jobs(tmp_path / "cluster")


def _stop_replica_jobs(root: Path) -> None:
    from cluster.backends.local import LocalBackend

    backend = LocalBackend(root=root, kill_grace_seconds=0.5)
    for run_dir in root.glob("jobs/*/run-*"):
        backend.cancel(f"{run_dir.parent.name}.{run_dir.name.removeprefix('run-')}")


def status(stack, service: int) -> dict:
    return stack.python(STATUS.format(service=service))


class Load:
    """Requests at about `qps` from a few threads until stopped; counts what came back."""

    def __init__(self, url: str, key: str, qps: float, threads: int = 4):
        self.url, self.key, self.qps, self.threads = url, key, qps, threads
        self.statuses: list[int] = []
        self.stopping = threading.Event()
        self.workers = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]

    def _run(self) -> None:
        period = self.threads / self.qps
        with httpx.Client(timeout=10, headers={"Authorization": f"Bearer {self.key}"}) as client:
            while not self.stopping.is_set():
                started = time.monotonic()
                try:
                    self.statuses.append(client.post(self.url, json={"instances": [[1, 0, 0, 0]]}).status_code)
                except httpx.TransportError:
                    self.statuses.append(0)
                time.sleep(max(0.0, period - (time.monotonic() - started)))

    def __enter__(self):
        for worker in self.workers:
            worker.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for worker in self.workers:
            worker.join(timeout=15)


def _kill_replica_process(data_dir: Path, replica_id: int) -> int:
    """SIGKILL the model server of one replica, as a crash would; found by the URL file on its command line."""
    marker = f"/inference/replicas/{replica_id}/url"
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "ai_platform.serving" in cmdline and marker in cmdline and str(data_dir) in cmdline:
            os.kill(int(proc.name), signal.SIGKILL)
            return int(proc.name)
    raise AssertionError(f"no model server process for replica {replica_id}")


def test_seed_service_serves_scales_within_quota_and_survives_a_killed_replica(stack):
    globex_yaml = SERVICE_YAML.replace("acme/", "globex/").replace("acme-vision", "globex-ml")
    globex_yaml = globex_yaml.replace("minReplicas: 2", "minReplicas: 1").replace("maxReplicas: 4", "maxReplicas: 1")
    made = stack.python(SETUP.format(acme_yaml=SERVICE_YAML, globex_yaml=globex_yaml))
    service, acme_key, globex_key = made["service"], made["acme_key"], made["globex_key"]
    gateway = f"http://127.0.0.1:{stack.gateway_port}"

    # 1. Two ready replicas answer real predictions through the gateway, with a key.
    wait_for(lambda: len(status(stack, service)["ready"]) == 2, timeout=120, interval=1)
    time.sleep(1.5)  # the gateway reads its routes every second
    answer = httpx.post(
        gateway + PREDICT, json={"instances": [[1, 0, 0, 0], [0, 1, 0, 0]]}, headers={"X-Api-Key": acme_key}
    )
    assert answer.status_code == 200, answer.text
    labels = [p["label"] if isinstance(p, dict) else p for p in answer.json()["predictions"]]
    assert json.dumps(labels).count("cat") == 1 and json.dumps(labels).count("dog") == 1

    # 2. No key: 401. Another tenant's key: 404. Both in the API's error shape.
    missing = httpx.post(gateway + PREDICT, json={"instances": [[1, 0, 0, 0]]})
    assert missing.status_code == 401 and missing.json()["code"] == "not_authenticated"
    foreign = httpx.post(gateway + PREDICT, json={"instances": [[1, 0, 0, 0]]}, headers={"X-Api-Key": globex_key})
    assert foreign.status_code == 404 and foreign.json()["code"] == "not_found"

    # 3. Load at ~40 qps (target 5 per replica) asks for 8: capped by max 4, and first by the quota at 3.
    with Load(gateway + PREDICT, acme_key, qps=40) as load:
        blocked = wait_for(lambda: _blocked(status(stack, service)), timeout=90, interval=1)
        assert blocked["desired"] == 3
        assert blocked["message"].startswith("scale-up blocked: group acme-vision uses")
        assert "/3 accelerators" in blocked["message"]
        stack.manage("sacctmgr", "modify", "group", "acme-vision", "set", "GrpTRES=accelerator=16")
        wait_for(lambda: status(stack, service)["desired"] == 4, timeout=60, interval=1)
        wait_for(lambda: not _blocked(status(stack, service)), timeout=30, interval=1)
    assert load.statuses and set(load.statuses) == {200}  # the rate limit (100/s a key) is not reached

    # 4. No load: back to the minimum.
    wait_for(lambda: status(stack, service)["desired"] == 2, timeout=90, interval=1)
    wait_for(lambda: len(status(stack, service)["ready"]) == 2, timeout=60, interval=1)
    time.sleep(1.5)

    # 5. A replica killed under load: requests are retried on the other, and the replica is replaced.
    victim = status(stack, service)["ready"][0]
    with Load(gateway + PREDICT, acme_key, qps=10, threads=2) as load:
        time.sleep(2)
        _kill_replica_process(stack.data_dir, victim)
        wait_for(lambda: victim in status(stack, service)["failed"], timeout=30, interval=1)
        wait_for(lambda: len(status(stack, service)["ready"]) == 2, timeout=120, interval=1)
        time.sleep(2)
    assert load.statuses.count(200) >= 20
    assert set(load.statuses) == {200}, {code: load.statuses.count(code) for code in set(load.statuses)}
    assert victim not in status(stack, service)["ready"]


def _blocked(state: dict) -> dict | None:
    condition = next((c for c in state["conditions"] if c.get("type") == "ScaleUpBlocked"), None)
    if condition and condition.get("status") == "True":
        return {"desired": state["desired"], "message": condition["message"]}
    return None


ROLL = """
import json, yaml
from django.contrib.auth import get_user_model
from inference.models import InferenceService
from inference.services import service_apply
from inference.spec import parse_service_spec

alice = get_user_model().objects.get(username="alice")
service, _ = service_apply(user=alice, spec=parse_service_spec(yaml.safe_load({text!r})))
print(json.dumps({{"generation": service.generation}}))
"""

GENERATIONS = """
import json
from inference.models import InferenceService
s = InferenceService.objects.get(pk={service})
print(json.dumps(sorted(s.replicas.filter(state="READY").values_list("generation", flat=True))))
"""


def test_a_rolling_update_under_load_fails_no_request(stack):
    fixed = SERVICE_YAML.replace("maxReplicas: 4", "maxReplicas: 2")
    globex_yaml = (
        fixed.replace("acme/", "globex/")
        .replace("acme-vision", "globex-ml")
        .replace("minReplicas: 2", "minReplicas: 1")
    )
    globex_yaml = globex_yaml.replace("maxReplicas: 2", "maxReplicas: 1")
    made = stack.python(SETUP.format(acme_yaml=fixed, globex_yaml=globex_yaml))
    service, acme_key = made["service"], made["acme_key"]
    gateway = f"http://127.0.0.1:{stack.gateway_port}"
    wait_for(lambda: len(status(stack, service)["ready"]) == 2, timeout=120, interval=1)
    time.sleep(1.5)

    with Load(gateway + PREDICT, acme_key, qps=10, threads=2) as load:
        time.sleep(2)
        rolled = stack.python(ROLL.format(text=fixed.replace("memory: 1Gi", "memory: 2Gi")))
        assert rolled["generation"] == 2
        wait_for(lambda: stack.python(GENERATIONS.format(service=service)) == [2, 2], timeout=120, interval=1)
        time.sleep(4)  # past the drain of the last old replica
    assert load.statuses.count(200) >= 50
    assert set(load.statuses) == {200}, {code: load.statuses.count(code) for code in set(load.statuses)}
