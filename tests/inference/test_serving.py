"""The built-in model server (ai_platform.serving): real predictions from a registry-style model directory, KServe's
v1 protocol, a readiness check, clear 400s, and a graceful stop that finishes requests in flight."""

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from ai_platform.serving.model import ModelError, load_model, save_mlp
from ai_platform.serving.server import ModelServer
from tests.inference.tiny_model import LABELS, mlp_layers

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def model_dir(tmp_path):
    return save_mlp(tmp_path / "model", mlp_layers(), output="softmax", labels=LABELS)


@pytest.fixture
def server(model_dir):
    server = ModelServer(("127.0.0.1", 0), load_model(model_dir, name="clf"))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", server
    server.shutdown()
    server.server_close()


def test_predictions_match_the_model(server):
    url, _ = server
    body = {"instances": [[3, 0, 0, 0], [0, 2, 0, 0], [0, 0, 5, 0]]}
    answer = httpx.post(f"{url}/v1/models/clf:predict", json=body).json()
    assert [p["label"] for p in answer["predictions"]] == ["cat", "dog", "bird"]
    expected = np.exp([6, 0, 0]) / np.exp([6, 0, 0]).sum()
    assert answer["predictions"][0]["probabilities"] == pytest.approx(expected.tolist(), abs=1e-6)


def test_readiness_and_metadata(server):
    url, _ = server
    assert httpx.get(f"{url}/healthz").json() == {"status": "ready", "model": "clf"}
    assert httpx.get(f"{url}/v1/models/clf").json()["inputs"] == 4


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "the body must be JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (json.dumps({"instances": []}).encode(), "non-empty list"),
        (json.dumps({"instances": [[1, 2]]}).encode(), "each instance needs 4 numbers, got 2"),
        (json.dumps({"instances": [["a", 1, 2, 3]]}).encode(), "list of numbers"),
    ],
)
def test_bad_requests_are_400_with_a_reason(server, body, message):
    url, _ = server
    response = httpx.post(f"{url}/predict", content=body)
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_draining_reports_not_ready(server):
    url, instance = server
    instance.draining = True
    response = httpx.get(f"{url}/healthz")
    assert response.status_code == 503 and response.json()["status"] == "draining"


def test_a_directory_without_a_model_is_refused(tmp_path):
    with pytest.raises(ModelError, match="neither model.npz nor model.pt"):
        load_model(tmp_path)


def test_torchscript_models_are_served(tmp_path):
    torch = pytest.importorskip("torch")
    module = torch.jit.script(torch.nn.Linear(2, 1))
    with torch.no_grad():
        module.weight.copy_(torch.tensor([[1.0, 2.0]]))
        module.bias.zero_()
    (tmp_path / "m").mkdir()
    module.save(str(tmp_path / "m" / "model.pt"))
    assert load_model(tmp_path / "m").predict([[1.0, 1.0]]) == [[pytest.approx(3.0)]]


def test_the_process_publishes_its_url_and_stops_cleanly_on_sigterm(model_dir, tmp_path):
    url_file = tmp_path / "url"
    process = subprocess.Popen(
        [sys.executable, "-m", "ai_platform.serving", "--model-dir", str(model_dir), "--name", "clf",
         "--url-file", str(url_file)],
        cwd="/", env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not url_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        url = url_file.read_text().strip()
        assert url.startswith("http://127.0.0.1:")
        assert httpx.post(f"{url}/predict", json={"instances": [[1, 0, 0, 0]]}).status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
        assert "stopped after 1 predictions" in process.stdout.read()
    finally:
        process.kill()


def test_the_server_imports_nothing_of_the_portal():
    code = (
        "import sys, ai_platform.serving, ai_platform.serving.server, ai_platform.serving.__main__\n"
        "portal = {'django', 'rest_framework', 'celery', 'portal', 'jobs', 'tenants', 'cluster', 'api', 'inference',"
        " 'registry', 'gateway', 'aipool_cli'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & portal))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], cwd="/", env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
