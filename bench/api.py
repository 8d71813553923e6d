"""REST API benchmarks on PostgreSQL + Redis behind gunicorn.

``submit``: job submissions per second over HTTP (POST /api/v1/jobs/, Bearer token, a fresh Idempotency-Key per
request, quota checks on) with wrk on loopback at 1, 16 and 64 concurrent clients; p50/p99 latency.
``list``: GET /api/v1/jobs/ latency with 1,000,000 jobs in the database: the first page and deep cursor pages.

Each suite creates its own database (``aipool_bench_<random>``) and drops it at the end. PostgreSQL and Redis on
loopback are used unless DATABASE_URL / CELERY_BROKER_URL say otherwise. Installs nothing: the submit suite needs
``wrk`` (Debian: ``apt-get install -y wrk``).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlencode

import httpx
import psycopg

from tests.e2e.stack import Stack, wait_for

# Sync gunicorn workers: a submit spends a good part of its time waiting for PostgreSQL, so two workers per core
# keep both cores busy; more would only add context switches and memory on a 2-core machine that also runs
# PostgreSQL, Redis, the Celery worker and wrk.
DEFAULT_WEB_WORKERS = 2 * (os.cpu_count() or 1)
SUBMIT_BODY = {
    "group": "acme-research",
    "name": "bench",
    "nodes": 1,
    "accelerators_per_node": 1,
    "time_limit": "1",
    "command": "true",
}

WRK_SCRIPT = r"""
-- POST a job with a unique Idempotency-Key per request; prints one JSON line of results at the end.
-- args: TOKEN BODY RUN_ID
local threads = {}
local counter = 0
local prefix = ""

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

function init(args)
  wrk.method = "POST"
  wrk.body = args[2]
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. args[1]
  prefix = args[3] .. "-" .. tid .. "-"
  created = 0
  other = 0
end

function request()
  counter = counter + 1
  wrk.headers["Idempotency-Key"] = prefix .. counter
  return wrk.format()
end

function response(status, headers, body)
  if status == 201 then
    created = created + 1
  else
    other = other + 1
    if other <= 3 then io.stderr:write(status .. " " .. body .. "\n") end
  end
end

function done(summary, latency, requests)
  local c, o = 0, 0
  for _, t in ipairs(threads) do
    c = c + t:get("created")
    o = o + t:get("other")
  end
  local e = summary.errors
  io.write(string.format(
    '{"requests": %d, "seconds": %.3f, "created": %d, "other": %d, "socket_errors": %d, ' ..
    '"p50_ms": %.2f, "p90_ms": %.2f, "p99_ms": %.2f, "max_ms": %.2f}\n',
    summary.requests, summary.duration / 1e6, c, o, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
"""


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench api", description=__doc__)
    parser.add_argument("which", nargs="?", default="all", choices=["submit", "list", "all"])
    parser.add_argument("--clients", default="1,16,64", help="concurrent clients for the submit suite")
    parser.add_argument("--seconds", type=int, default=10, help="length of each submit run")
    parser.add_argument("--web-workers", type=int, default=DEFAULT_WEB_WORKERS, help="gunicorn sync workers")
    parser.add_argument("--no-worker", action="store_true", help="submit without a Celery worker scheduling jobs")
    parser.add_argument(
        "--gunicorn",
        default="",
        help='extra gunicorn options (GUNICORN_CMD_ARGS), e.g. "--worker-class gthread --threads 4"',
    )
    parser.add_argument("--repeat", type=int, default=3, help="submit runs per client count; the median is reported")
    parser.add_argument("--jobs", type=int, default=1_000_000, help="jobs in the database for the list suite")
    parser.add_argument("--requests", type=int, default=300, help="requests per list scenario")
    args = parser.parse_args(argv)
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/15")
    if args.which in ("submit", "all"):
        submit_suite(args)
    if args.which in ("list", "all"):
        list_suite(args)


# --- the stack --------------------------------------------------------------------------------------------------


def start_stack(web_workers: int, *, worker: bool, gunicorn: str = "") -> Stack:
    stack = Stack(Path(tempfile.mkdtemp(prefix="aipool-bench-")), web_workers=web_workers, db_prefix="aipool_bench")
    if gunicorn:
        stack.env["GUNICORN_CMD_ARGS"] = gunicorn
    # The throttle stays in the request path (its cost is part of the number) but must not answer 429 here.
    stack.env["AIPOOL_API_RATE"] = "100000000/min"
    stack.env["AIPOOL_LOG_LEVEL"] = "WARNING"
    try:
        stack.manage("migrate", "--no-input")
        stack.manage("seed_demo")
        if worker:
            stack.start_worker()
        stack.start_web()
        wait_for(lambda: _up(stack), timeout=60)
    except BaseException:
        stop_stack(stack)
        raise
    return stack


def stop_stack(stack: Stack) -> None:
    stack.close()
    # Jobs run detached from the worker (as under slurmstepd): stop what the benchmark left running.
    from cluster.backends.local import LocalBackend

    root = stack.data_dir / "cluster"
    backend = LocalBackend(root=root, kill_grace_seconds=0.5)
    for run_dir in root.glob("jobs/*/run-*"):
        backend.cancel(f"{run_dir.parent.name}.{run_dir.name.removeprefix('run-')}")


def _up(stack: Stack) -> bool:
    try:
        return httpx.get(stack.url("/api/v1/me/"), timeout=2).status_code == 401
    except httpx.TransportError:
        return False


def token(stack: Stack, username: str) -> str:
    return stack.manage("create_token", username, "--scopes", "read,write").stdout.strip()


def sql(stack: Stack, query: str, params=None) -> list[tuple]:
    url = stack.env["DATABASE_URL"].replace("postgres://", "postgresql://", 1)
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(query, params)
        return cursor.fetchall() if cursor.description else []


# --- submissions ------------------------------------------------------------------------------------------------


def submit_suite(args) -> None:
    wrk = shutil.which("wrk")
    if wrk is None:
        print("submit: wrk is not installed; on Debian: apt-get install -y wrk (this benchmark installs nothing)")
        return
    clients = [int(c) for c in args.clients.split(",")]
    stack = start_stack(args.web_workers, worker=not args.no_worker, gunicorn=args.gunicorn)
    try:
        # Quota checks on: every submit locks the association chain and checks GrpTRES, MaxWall and, with
        # GrpSubmitJobs set, counts the group's active jobs.
        stack.manage("sacctmgr", "modify", "group", "acme-research", "set", "GrpSubmitJobs=10000000")
        secret = token(stack, "alice")
        if not args.no_worker:
            fill_the_pool(stack)
        script = stack.data_dir / "submit.lua"
        script.write_text(WRK_SCRIPT)
        worker = (
            "no Celery worker"
            if args.no_worker
            else "Celery worker scheduling every submit (pool full: new jobs stay PENDING, reason Resources)"
        )
        print(
            f"submit: gunicorn {args.web_workers} workers {args.gunicorn or '(sync)'}, PostgreSQL + Redis, {worker}, "
            f"{os.cpu_count()} cores; wrk, {args.seconds} s per run, median of {args.repeat} runs"
        )
        run_wrk(wrk, stack, script, secret, clients=16, seconds=2)  # warm-up: workers import, connect, cache
        time.sleep(1)
        for count in clients:
            runs = [_submit_run(wrk, stack, script, secret, count, args.seconds) for _ in range(args.repeat)]
            rates = sorted(rate for rate, _ in runs)
            rate, result = sorted(runs, key=lambda run: run[0])[len(runs) // 2]
            print(
                f"  {count:>3} clients: {rate:7.1f} submissions/s  p50 {result['p50_ms']:.1f} ms  "
                f"p99 {result['p99_ms']:.1f} ms  max {result['max_ms']:.1f} ms  "
                f"(runs: {', '.join(f'{r:.0f}' for r in rates)}/s; median run: {result['created']} created, "
                f"{result['stored']} rows, {result['other']} other answers, {result['socket_errors']} socket errors)"
            )
            cpu = result["cpu_ms"]
            print(f"       CPU per stored job: {', '.join(f'{k} {v:.1f} ms' for k, v in cpu.items())}")
    finally:
        stop_stack(stack)


def _submit_run(wrk: str, stack: Stack, script: Path, secret: str, clients: int, seconds: int) -> tuple[float, dict]:
    before = sql(stack, "SELECT count(*) FROM jobs_job")[0][0]
    cpu_before = cpu_seconds(stack)
    result = run_wrk(wrk, stack, script, secret, clients=clients, seconds=seconds)
    time.sleep(1)  # requests still in flight when wrk stopped are counted below too
    cpu_after = cpu_seconds(stack)
    result["stored"] = sql(stack, "SELECT count(*) FROM jobs_job")[0][0] - before
    result["cpu_ms"] = {k: (cpu_after[k] - cpu_before[k]) * 1000 / max(1, result["stored"]) for k in cpu_after}
    return result["created"] / result["seconds"], result


def cpu_seconds(stack: Stack) -> dict[str, float]:
    """CPU seconds (user + system) so far of the gunicorn and Celery process trees and of every PostgreSQL process
    (the benchmark's database shares the server with whatever else runs on it), from /proc (Linux only). A process
    that ended is counted once its parent has reaped it."""
    sessions = {"web": stack.web.pid if stack.web else None, "worker": stack.worker.pid if stack.worker else None}
    totals = dict.fromkeys(["web", "worker", "postgres"], 0.0)
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            name, fields = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        fields = fields.split()
        # Its own time and that of its children it has reaped: gunicorn, Celery and PostgreSQL replace processes.
        seconds = sum(int(value) for value in fields[11:15]) / tick
        owner = next((k for k, sid in sessions.items() if sid is not None and int(fields[3]) == sid), None)
        if owner is None and name.endswith("(postgres"):
            owner = "postgres"
        if owner is not None:
            totals[owner] += seconds
    return totals


def fill_the_pool(stack: Stack) -> None:
    """One job of another tenant holds every accelerator, so the submitted jobs queue as on a busy pool: the worker
    runs a scheduling pass after each burst of submits but starts nothing (starting thousands of `true` jobs would
    measure process spawning, not the API)."""
    stack.manage("sacctmgr", "modify", "group", "globex-ml", "set", "GrpTRES=accelerator=-1")
    filler = {**SUBMIT_BODY, "group": "globex-ml", "nodes": 4, "accelerators_per_node": 8, "time_limit": "60"}
    filler["command"] = "sleep 3600"
    headers = {"Authorization": f"Bearer {token(stack, 'bob')}"}
    job = httpx.post(stack.url("/api/v1/jobs/"), json=filler, headers=headers, timeout=30).raise_for_status().json()
    url = stack.url(f"/api/v1/jobs/{job['id']}/")
    wait_for(lambda: httpx.get(url, headers=headers).json()["state"] == "RUNNING", timeout=60)


def run_wrk(wrk: str, stack: Stack, script: Path, secret: str, *, clients: int, seconds: int) -> dict:
    threads = min(clients, 2)
    command = [
        wrk,
        f"-t{threads}",
        f"-c{clients}",
        f"-d{seconds}s",
        "--timeout",
        "30s",
        "-s",
        str(script),
        stack.url("/api/v1/jobs/"),
        "--",
        secret,
        json.dumps(SUBMIT_BODY),
        uuid.uuid4().hex[:12],
    ]
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120, check=True)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"wrk printed no result:\n{out.stdout}\n{out.stderr}")
    return json.loads(lines[-1])


# --- lists ------------------------------------------------------------------------------------------------------

# Ten more tenants with one group each besides the demo's, for a million jobs spread evenly; and two groups whose
# jobs are hard to find in id order: "tiny" has 1 job in 1,000 throughout, "dormant" only old jobs (it stopped
# using the pool), so a scan from the newest id skips almost everything before finding a page.
SETUP = """
import json
from cluster.models import Partition
from tenants import services
from tenants.models import Role
main = Partition.objects.get(is_default=True)
for name, user in [*((f"bench{i}", f"user{i}") for i in range(10)), ("tiny", "tina"), ("dormant", "dora")]:
    tenant = services.tenant_create(actor=None, name=name)
    group = services.group_create(actor=None, tenant=tenant, name=f"{name}-ml", partitions=[main])
    services.user_create(actor=None, username=user, tenant=tenant, groups=[group], role=Role.MEMBER,
                         password="bench-password")
print(json.dumps(main.pk))
"""

# Each group with the first member: idx 0, 1, … for the evenly spread groups, -1 tiny, -2 dormant.
BENCH_GROUPS = """
CREATE TEMP TABLE bench_groups AS
SELECT CASE g.name WHEN 'tiny-ml' THEN -1 WHEN 'dormant-ml' THEN -2
       ELSE row_number() OVER (PARTITION BY g.name IN ('tiny-ml', 'dormant-ml') ORDER BY g.id) - 1 END AS idx,
       g.tenant_id, g.id AS group_id, gm.user_id
FROM tenants_group g
JOIN LATERAL (SELECT user_id FROM tenants_groupmember WHERE group_id = g.id ORDER BY id LIMIT 1) gm ON true
"""

# Job i gets id i, so ids follow submission times as they do in production.
INSERT_JOBS = """
INSERT INTO jobs_job (
    id, tenant_id, group_id, user_id, partition_id, name, nodes, accelerators_per_node, cpus_per_node,
    memory_per_node, time_limit, topology_aware, max_switches, command, script, environment, runtime_id,
    state, reason, exit_code, submitted_at, eligible_at, started_at, ended_at, allocation, nodelist, switches,
    backend, backend_job_id, run_count, idempotency_key, request_hash, priority)
SELECT
    i, b.tenant_id, b.group_id, b.user_id,
    %(partition)s, 'bench-' || i, 1 + i %% 2, 1 + i %% 8, 8, 65536, 60, false, NULL, 'python train.py', '',
    '{}'::jsonb, NULL,
    CASE WHEN i > %(jobs)s - 200 THEN 'PENDING' WHEN i %% 50 = 0 THEN 'FAILED' ELSE 'COMPLETED' END,
    'None',
    CASE WHEN i > %(jobs)s - 200 THEN NULL WHEN i %% 50 = 0 THEN 1 ELSE 0 END,
    now() - (%(jobs)s - i) * interval '1 second', now() - (%(jobs)s - i) * interval '1 second',
    now() - (%(jobs)s - i) * interval '1 second', now() - (%(jobs)s - i) * interval '1 second',
    '{}'::jsonb, '["node1"]'::jsonb, '["leaf0"]'::jsonb, 'local', i::text, 1, NULL, '', 0
FROM generate_series(1, %(jobs)s) AS i
JOIN bench_groups b ON b.idx = CASE
    WHEN i %% 1000 = 0 THEN -1
    WHEN i <= %(jobs)s / 20 AND i %% 5 = 0 THEN -2
    ELSE i %% (SELECT count(*) FROM bench_groups WHERE idx >= 0) END
"""


def list_suite(args) -> None:
    stack = start_stack(args.web_workers, worker=False)
    try:
        partition = stack.python(SETUP)
        started = time.monotonic()
        insert_jobs(stack, jobs=args.jobs, partition=partition)
        print(f"list: {args.jobs:,} jobs inserted in {time.monotonic() - started:.0f} s; {args.web_workers} workers")
        print(f"  visible jobs: {visible_counts(stack)}")
        max_id = sql(stack, "SELECT max(id) FROM jobs_job")[0][0]
        users = {name: token(stack, name) for name in ("alice", "bob", "admin", "tina", "dora")}
        half, oldest = cursor(max_id // 2), cursor(max_id // 100)
        scenarios = [
            ("baseline: GET me/ (no job query)", "alice", None),
            ("alice (member, 2 groups): first page", "alice", {}),
            ("alice: deep cursor (half-way)", "alice", {"cursor": half}),
            ("alice: deep cursor (oldest 1%)", "alice", {"cursor": oldest}),
            ("alice: ?state=FAILED", "alice", {"state": "FAILED"}),
            ("bob: ?user=me, deep cursor", "bob", {"user": "me", "cursor": half}),
            ("admin (staff, all jobs): first page", "admin", {}),
            ("admin: deep cursor (half-way)", "admin", {"cursor": half}),
            ("tina (1 job in 1,000): first page", "tina", {}),
            ("tina: deep cursor (half-way)", "tina", {"cursor": half}),
            ("dora (only old jobs): first page", "dora", {}),
        ]
        with httpx.Client(base_url=stack.url("/api/v1/"), timeout=30) as client:
            for label, user, params in scenarios:
                times, count = measure(client, users[user], params, args.requests)
                times.sort()
                p95 = times[int(len(times) * 0.95) - 1]
                verdict = "OK" if p95 <= 50 else "OVER 50 ms"
                print(
                    f"  {label:<40} p50 {statistics.median(times):6.1f} ms  p95 {p95:6.1f} ms  "
                    f"max {times[-1]:6.1f} ms  ({len(times)} requests, {count} rows/page) {verdict}"
                )
    finally:
        stop_stack(stack)


def insert_jobs(stack: Stack, *, jobs: int, partition: int) -> None:
    """One INSERT … SELECT generate_series: a million rows in seconds, with every index maintained as usual."""
    url = stack.env["DATABASE_URL"].replace("postgres://", "postgresql://", 1)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(BENCH_GROUPS)
        conn.execute(INSERT_JOBS, {"jobs": jobs, "partition": partition})
        conn.execute("SELECT setval(pg_get_serial_sequence('jobs_job', 'id'), (SELECT max(id) FROM jobs_job))")
        conn.execute("ANALYZE")


def visible_counts(stack: Stack) -> str:
    rows = sql(
        stack,
        "SELECT u.username, count(*) FROM jobs_job j JOIN tenants_groupmember gm ON gm.group_id = j.group_id "
        "JOIN auth_user u ON u.id = gm.user_id WHERE u.username IN ('alice', 'tina', 'dora') GROUP BY 1 ORDER BY 1",
    )
    return ", ".join(f"{name} {count:,}" for name, count in rows)


def cursor(position: int) -> str:
    """A cursor as DRF's CursorPagination encodes it: the page starts below job id `position`."""
    return base64.b64encode(urlencode({"p": str(position)}).encode()).decode()


def measure(client: httpx.Client, secret: str, params: dict | None, requests: int) -> tuple[list[float], int]:
    """Sequential GETs of the job list with `params` (None: of me/, the cost of any authenticated request)."""
    headers = {"Authorization": f"Bearer {secret}"}
    path = "me/" if params is None else "jobs/"
    count = 0
    for _ in range(5):  # warm-up: connection, worker imports, PostgreSQL's caches
        response = client.get(path, params=params, headers=headers)
        response.raise_for_status()
        count = len(response.json().get("results", []))
    times: list[float] = []
    deadline = time.monotonic() + 20  # a slow scenario still reports, from fewer samples
    while len(times) < requests and (len(times) < 20 or time.monotonic() < deadline):
        started = time.perf_counter()
        client.get(path, params=params, headers=headers).raise_for_status()
        times.append((time.perf_counter() - started) * 1000)
    return times, count
