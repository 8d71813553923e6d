"""Inference benchmarks (h10a): the built-in model server and the reads the gateway and autoscaler make.

``server``: a replica's model server (``python -m ai_platform.serving``) on loopback, one keep-alive client, then 8
concurrent clients: latency p50/p99 and requests per second, for the tests' tiny MLP and a 784→1024→1024→10 MLP.
``selectors``: ``gateway_routes()`` (the gateway's route refresh) and ``autoscale_inputs()`` (each autoscaler beat)
with 200 services × 2 keys × 4 replicas on a throwaway SQLite database: median and p99 over 30 runs.

    .venv/bin/python -m bench inference [server|selectors] [--requests N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _start_server(model_dir: Path, workdir: Path) -> tuple[subprocess.Popen, str]:
    url_file = workdir / f"url-{model_dir.name}"
    process = subprocess.Popen(
        [sys.executable, "-m", "ai_platform.serving", "--model-dir", str(model_dir), "--url-file", str(url_file)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not url_file.exists():
        if time.monotonic() > deadline:
            process.kill()
            raise SystemExit("the model server did not start")
        time.sleep(0.05)
    return process, url_file.read_text().strip()


def _sequential(url: str, body: dict, count: int) -> list[float]:
    latencies = []
    with httpx.Client() as client:
        for _ in range(count):
            start = time.perf_counter()
            client.post(f"{url}/predict", json=body).raise_for_status()
            latencies.append((time.perf_counter() - start) * 1000)
    return latencies


def _concurrent(url: str, body: dict, count: int, clients: int) -> tuple[float, list[float]]:
    latencies: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        mine = _sequential(url, body, count // clients)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(latencies) / (time.perf_counter() - start), latencies


def bench_server(requests: int) -> None:
    from ai_platform.serving.model import save_mlp
    from tests.inference.tiny_model import mlp_layers

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        models = {
            "tiny MLP 4→8→3": (save_mlp(root / "tiny", mlp_layers(), output="softmax"), [[1.0, 0.0, 2.0, 0.5]]),
            "MLP 784→1024→1024→10": (
                save_mlp(
                    root / "mnist",
                    [(rng.normal(size=(a, b)) * 0.05, np.zeros(b)) for a, b in ((784, 1024), (1024, 1024), (1024, 10))],
                    output="softmax",
                ),
                rng.random((1, 784)).round(3).tolist(),
            ),
        }
        print(f"model server, {requests} requests each (loopback, keep-alive httpx clients)")
        for label, (directory, instances) in models.items():
            process, url = _start_server(directory, root)
            try:
                body = {"instances": instances}
                _sequential(url, body, 50)  # warm-up
                one = _sequential(url, body, requests)
                rate, many = _concurrent(url, body, requests, 8)
            finally:
                process.terminate()
                process.wait(timeout=15)
            print(
                f"  {label:<22} 1 client: p50 {statistics.median(one):.2f} ms, p99 {_quantile(one, 0.99):.2f} ms, "
                f"{1000 / statistics.mean(one):.0f} req/s | 8 clients: p50 {statistics.median(many):.2f} ms, "
                f"p99 {_quantile(many, 0.99):.2f} ms, {rate:.0f} req/s"
            )


def _django(data_dir: str) -> None:
    os.environ["AIPOOL_DATA_DIR"] = data_dir
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _populate(services: int) -> None:
    from django.db import transaction

    from inference.keys import hash_key, new_raw_key
    from inference.models import InferenceService, Replica, ReplicaState, ServiceKey
    from registry.models import Collection, Kind, Version, VersionState
    from tests.factories import GroupFactory, NodeFactory, PartitionFactory, SwitchFactory, TenantFactory

    with transaction.atomic():
        leaf = SwitchFactory(name="leaf0")
        partition = PartitionFactory(name="main", is_default=True)
        partition.nodes.set([NodeFactory(name=f"node{i}", switch=leaf) for i in range(4)])
        for t in range(20):
            tenant = TenantFactory(name=f"tenant{t}")
            group = GroupFactory(
                name=f"group{t}", tenant=tenant, partitions=[partition], grp_tres={"gres/accelerator": 64}
            )
            collection = Collection.objects.create(
                kind=Kind.MODEL, namespace=tenant.name, name="m", tenant=tenant, group=group
            )
            version = Version.objects.create(collection=collection, number=1, state=VersionState.PUBLISHED)
            for s in range(services // 20):
                service = InferenceService.objects.create(
                    tenant=tenant, group=group, name=f"svc{s}", model_ref="m", model_version=version,
                    min_replicas=1, max_replicas=20, accelerator_type="nvidia-h100-80gb", memory_mb=32768,
                    spec={"spec": {"resources": {"cpus": 8}}},
                )  # fmt: skip
                for k in range(2):
                    ServiceKey.objects.create(service=service, tenant=tenant, name=f"k{k}", prefix="isk_",
                                              key_hash=hash_key(new_raw_key()))  # fmt: skip
                for r in range(4):
                    Replica.objects.create(service=service, generation=1, state=ReplicaState.READY,
                                           url=f"http://127.0.0.1:{20000 + r}")  # fmt: skip


def _time(function, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000)
    return times


def bench_selectors(services: int = 200, runs: int = 30) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _django(tmp)
        _populate(services)
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from inference.selectors import autoscale_inputs, gateway_routes

        print(f"selectors on SQLite, {services} services x 2 keys x 4 ready replicas, {runs} runs")
        for label, function in (("gateway_routes()", gateway_routes), ("autoscale_inputs()", autoscale_inputs)):
            with CaptureQueriesContext(connection) as queries:
                function()
            times = _time(function, runs)
            print(
                f"  {label:<20} median {statistics.median(times):.1f} ms, p99 {_quantile(times, 0.99):.1f} ms, "
                f"{len(queries)} queries"
            )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench inference")
    parser.add_argument("suite", nargs="?", choices=["server", "selectors", "all"], default="all")
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args(argv)
    if args.suite in ("server", "all"):
        bench_server(args.requests)
    if args.suite in ("selectors", "all"):
        bench_selectors()


if __name__ == "__main__":
    main(sys.argv[1:])
