"""Gateway overhead: latency and throughput through the gateway against straight to a replica.

    python -m bench gateway [--duration 5] [--concurrency 32] [--repeats 3] [--quick]

Three processes per measurement, as in production: a stand-in replica (aiohttp, answers a small JSON prediction),
the gateway (gateway.server with a fixed routing table: no database, so this is the proxy's own cost), and an
asyncio load generator (aiohttp client; wrk is used instead when it is installed). Each measurement runs `repeats`
times; the medians are printed.

- latency: one connection, one request at a time: the median and p99 of a request, and the gateway's added median.
- throughput: `concurrency` connections for `duration` seconds: requests per second through each path, and the CPU
  time the server process (replica, or gateway) spent per request, read from /proc: on a machine shared with other
  work, wall-clock throughput measures the neighbours too, CPU per request much less.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEY = "isk_bench-key"
BODY = b'{"inputs": [[0.1, 0.2, 0.3, 0.4]]}'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- the processes under test ------------------------------------------------------------------------------------


def serve_replica(port: int) -> None:
    from aiohttp import web

    async def predict(request):
        await request.read()
        return web.json_response({"predictions": [{"label": "cat", "score": 0.91}]})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", predict)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


@dataclass(frozen=True)
class BenchRoute:
    service_id: int
    tenant: str
    service: str
    rate_limit_rps: int
    key_hashes: dict = field(default_factory=dict)
    replicas: tuple = ()


def serve_gateway(port: int, replica_url: str) -> None:
    from aiohttp import web

    from gateway.server import Gateway, Options, hash_key

    routes = {
        ("bench", "svc"): BenchRoute(1, "bench", "svc", 0, {hash_key(KEY): 1}, ((1, replica_url),)),
    }
    gateway = Gateway(
        routes_source=lambda: routes,
        flush=lambda *_: None,
        report_failure=lambda *_: None,
        options=Options(gateway_id="bench"),
    )
    web.run_app(gateway.app(), host="127.0.0.1", port=port, access_log=None, print=None)


async def _load(url: str, concurrency: int, duration: float) -> dict:
    import aiohttp

    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + duration
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}

    async def worker(session):
        nonlocal errors
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            async with session.post(url, data=BODY, headers=headers) as response:
                await response.read()
                if response.status != 200:
                    errors += 1
            latencies.append(time.perf_counter() - started)

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        # Warm the connections first: the numbers are for steady state, not for connection setup.
        for _ in range(20):
            async with session.post(url, data=BODY, headers=headers) as response:
                await response.read()
        started = time.perf_counter()
        deadline = started + duration
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "requests": len(latencies),
        "errors": errors,
        "rps": len(latencies) / elapsed,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
    }


def load(url: str, concurrency: int, duration: float) -> None:
    print(json.dumps(asyncio.run(_load(url, concurrency, duration))))


# --- orchestration -----------------------------------------------------------------------------------------------


def _spawn(code: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)


def _wait_for(port: int, timeout: float = 20.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port} after {timeout:g} s")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process: on a shared machine, cost per request is steadier than wall time."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(url: str, concurrency: int, duration: float, server_pid: int | None = None) -> dict:
    before = cpu_seconds(server_pid) if server_pid else 0.0
    result = _measure_once(url, concurrency, duration)
    if server_pid and result.get("requests"):
        result["cpu_us_per_request"] = (cpu_seconds(server_pid) - before) / result["requests"] * 1e6
    return result


def _measure_once(url: str, concurrency: int, duration: float) -> dict:
    if shutil.which("wrk") and concurrency > 1:
        return _wrk(url, concurrency, duration)
    code = f"from bench.gateway import load; load({url!r}, {concurrency}, {duration})"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _wrk(url: str, concurrency: int, duration: float) -> dict:
    handle, name = tempfile.mkstemp(suffix=".lua", prefix="aipool-gateway-bench-")
    os.close(handle)
    script = Path(name)
    script.write_text(
        f'wrk.method = "POST"\nwrk.body = {json.dumps(BODY.decode())}\n'
        f'wrk.headers["Authorization"] = "Bearer {KEY}"\nwrk.headers["Content-Type"] = "application/json"\n'
    )
    try:
        out = subprocess.run(
            ["wrk", "-t2", f"-c{concurrency}", f"-d{int(max(1, duration))}s", "--latency", "-s", str(script), url],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        script.unlink(missing_ok=True)
    rps = float(next(line.split()[1] for line in out.splitlines() if line.startswith("Requests/sec")))
    requests = int(next(line.split()[0] for line in out.splitlines() if " requests in " in line))
    p50 = next(line.split()[1] for line in out.splitlines() if line.strip().startswith("50%"))
    p99 = next(line.split()[1] for line in out.splitlines() if line.strip().startswith("99%"))
    return {"rps": rps, "p50_ms": _ms(p50), "p99_ms": _ms(p99), "requests": requests, "errors": 0}


def _ms(text: str) -> float:
    for unit, factor in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return float(text)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench gateway", description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 s runs, once: a smoke test of the suite")
    args = parser.parse_args(argv)
    if args.quick:
        args.duration, args.repeats = 1.0, 1
    replica_port, gateway_port = free_port(), free_port()
    replica = _spawn(f"from bench.gateway import serve_replica; serve_replica({replica_port})")
    gateway = _spawn(
        f"from bench.gateway import serve_gateway; serve_gateway({gateway_port}, 'http://127.0.0.1:{replica_port}')"
    )
    try:
        _wait_for(replica_port)
        _wait_for(gateway_port)
        direct_url = f"http://127.0.0.1:{replica_port}/v1/predict"
        gateway_url = f"http://127.0.0.1:{gateway_port}/serve/bench/svc/v1/predict"
        results = {}
        for name, url, pid in (("direct", direct_url, replica.pid), ("gateway", gateway_url, gateway.pid)):
            results[name] = {
                "latency": [_measure(url, 1, args.duration) for _ in range(args.repeats)],
                "throughput": [_measure(url, args.concurrency, args.duration, pid) for _ in range(args.repeats)],
            }
        _print(results, args)
    finally:
        for process in (gateway, replica):
            process.terminate()
            process.wait(timeout=10)


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def _print(results: dict, args) -> None:
    tool = "wrk" if shutil.which("wrk") else "asyncio/aiohttp load generator"
    print(f"gateway overhead ({tool}; medians of {args.repeats} run(s) of {args.duration:g} s)")
    print(
        f"{'path':<10}{'p50 ms (1 conn)':>17}{'p99 ms (1 conn)':>17}{f'req/s ({args.concurrency} conn)':>20}"
        f"{'server CPU us/req':>19}"
    )
    for name in ("direct", "gateway"):
        latency, throughput = results[name]["latency"], results[name]["throughput"]
        print(
            f"{name:<10}{_median(latency, 'p50_ms'):>17.3f}{_median(latency, 'p99_ms'):>17.3f}"
            f"{_median(throughput, 'rps'):>20.0f}{_median(throughput, 'cpu_us_per_request'):>19.0f}"
        )
    added = _median(results["gateway"]["latency"], "p50_ms") - _median(results["direct"]["latency"], "p50_ms")
    ratio = _median(results["gateway"]["throughput"], "rps") / _median(results["direct"]["throughput"], "rps")
    print(f"added median latency: {added:.3f} ms; throughput through the gateway: {ratio:.0%} of direct")
    gateway_cpu = _median(results["gateway"]["throughput"], "cpu_us_per_request")
    print(f"the gateway's own CPU per request: {gateway_cpu:.0f} us, i.e. about {1e6 / gateway_cpu:.0f} req/s per core")
