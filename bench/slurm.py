"""Slurm backend benchmarks on the real Slurm of cluster/slurm/slurm-up: the portal (API + worker) vs bare sbatch.

- latency: submit → RUNNING as seen by the submitter (portal: POST, then poll the job over the API; bare: sbatch,
  then poll squeue), on an idle cluster, medians and ratio;
- rate: submissions per second, N in a row (portal: POST /api/v1/jobs/; bare: sbatch in a loop), and for the portal
  also how long until the worker has handed all of them to Slurm.

    bash cluster/slurm/slurm-up && export SLURM_CONF=/var/tmp/aipool-slurm/etc/slurm.conf
    python -m bench slurm [latency|rate|all] [--samples 15] [--jobs 100] [--postgres]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from tests.e2e.stack import ROOT, Stack, wait_for

POSIX_USER = "aipool-u1"
POLL = 0.02


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench slurm", description=__doc__)
    parser.add_argument("which", nargs="?", default="all", choices=["latency", "rate", "all"])
    parser.add_argument("--samples", type=int, default=15, help="jobs for each latency median")
    parser.add_argument("--jobs", type=int, default=100, help="submissions for each rate")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL + Redis instead of the embedded default")
    args = parser.parse_args(argv)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request would bury the numbers
    conf = os.environ.get("SLURM_CONF", "/var/tmp/aipool-slurm/etc/slurm.conf")
    if subprocess.run(["scontrol", "ping"], env={**os.environ, "SLURM_CONF": conf}, capture_output=True).returncode:
        raise SystemExit(f"no Slurm answers at {conf}: run bash cluster/slurm/slurm-up first")
    if args.postgres:
        os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
        os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/14")
    tag = uuid.uuid4().hex[:8]
    shared = Path("/var/tmp/aipool-slurm-bench")
    shared.mkdir(mode=0o755, exist_ok=True)
    data_dir = Path(tempfile.mkdtemp(prefix=f"bench-{tag}-", dir=shared))
    data_dir.chmod(0o755)  # job logs live below it, written by the job's owner
    os.environ.update(
        {
            "SLURM_CONF": conf,
            "AIPOOL_BACKEND": "slurm",
            "AIPOOL_POOL_FILE": str(ROOT / "cluster" / "slurm" / "pool.yaml"),
            "AIPOOL_SLURM_JOB_PREFIX": f"bench{tag}",
            "AIPOOL_SLURM_ORGANIZATION": f"aipool-bench-{tag}",
            "AIPOOL_API_RATE": "100000/min",
        }
    )
    Bench(data_dir, tag, conf).run(args.which, samples=args.samples, jobs=args.jobs)


class Bench:
    def __init__(self, data_dir: Path, tag: str, conf: str) -> None:
        self.data_dir, self.tag, self.conf = data_dir, tag, conf
        self.stack = Stack(data_dir)
        self.account = f"bench-{tag}"

    def run(self, which: str, *, samples: int, jobs: int) -> None:
        os.environ.update({k: v for k, v in self.stack.env.items() if k in ("AIPOOL_DATA_DIR", "DATABASE_URL")})
        os.environ["DJANGO_SETTINGS_MODULE"] = "portal.settings"
        import django

        django.setup()
        try:
            self.token = self._setup()
            self.stack.start_worker()
            self.stack.start_web()
            wait_for(self._web_up, 60, interval=0.2)
            time.sleep(3)  # let the worker connect before measuring
            print(f"stack: {self._label()}, worker concurrency 2, reconcile every 1 s; Slurm {self.conf}")
            if which in ("latency", "all"):
                self.latency(samples)
            if which in ("rate", "all"):
                self.rate(jobs)
        finally:
            self.stack.close()
            self._clean_up()

    # --- set-up -----------------------------------------------------------------------------------------------

    def _setup(self) -> str:
        from django.contrib.auth.models import User
        from django.core.management import call_command

        from api.services import token_create
        from cluster.models import Partition, PosixAccount
        from jobs.slurm_sync import sync
        from tenants.services import group_create, tenant_create, user_create

        call_command("migrate", verbosity=0)
        call_command("load_pool", verbosity=0)
        tenant = tenant_create(actor=None, name=f"benchco-{self.tag}")
        group = group_create(actor=None, tenant=tenant, name=self.account, partitions=[Partition.objects.get()])
        user = user_create(actor=None, username=f"bencher-{self.tag}", tenant=tenant, groups=[group])
        PosixAccount.objects.create(user=user, username=POSIX_USER)
        report = sync()
        if report.failed:
            raise SystemExit(f"limits sync failed: {[c.error for c in report.failed]}")
        _, secret = token_create(user=User.objects.get(pk=user.pk), name="bench", scopes=["read", "write"])
        return secret

    def _label(self) -> str:
        from django.conf import settings

        engine = settings.DATABASES["default"]["ENGINE"]
        return "PostgreSQL + Redis" if "postgresql" in engine else "SQLite (embedded)"

    def _web_up(self) -> bool:
        try:
            return httpx.get(self.stack.url("/api/v1/me/"), headers=self._auth(), timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def _auth(self) -> dict:
        return {"Authorization": f"Bearer {self.token}"}

    def _clean_up(self) -> None:
        from cluster.backends.registry import get_backend

        ours = [
            line.split("|")[0]
            for line in self._slurm("squeue", "--noheader", "--format=%i|%j").splitlines()
            if "|" in line and line.split("|", 1)[1].startswith(f"bench{self.tag}-")
        ]
        if ours:
            self._slurm("scancel", *ours)
        wait_for(lambda: not self._slurm("squeue", "--noheader", f"--account={self.account}").strip(), 60, 0.5)
        get_backend("slurm").sync_limits([])

    def _slurm(self, *argv: str) -> str:
        env = {**os.environ, "SLURM_CONF": self.conf}
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60).stdout

    # --- latency ----------------------------------------------------------------------------------------------

    def latency(self, samples: int) -> None:
        portal = [self._portal_latency() for _ in range(samples)]
        bare = [self._bare_latency() for _ in range(samples)]
        p, b = statistics.median(portal), statistics.median(bare)
        print(
            f"submit → RUNNING on an idle cluster ({samples} jobs each): portal median {p * 1000:.0f} ms "
            f"(p90 {_p90(portal) * 1000:.0f} ms), bare sbatch median {b * 1000:.0f} ms "
            f"(p90 {_p90(bare) * 1000:.0f} ms); ratio {p / b:.1f}x"
        )

    def _portal_latency(self) -> float:
        body = {"group": self.account, "name": "lat", "nodes": 1, "accelerators_per_node": 1, "time_limit": "5"}
        with httpx.Client(base_url=self.stack.url(""), headers=self._auth(), timeout=30) as client:
            started = time.monotonic()
            job = client.post("/api/v1/jobs/", json={**body, "command": "sleep 1"}).raise_for_status().json()
            state = wait_for(lambda: _not_pending(client, job["id"]), 60, interval=POLL)
            elapsed = time.monotonic() - started
            wait_for(lambda: _ended(client, job["id"]), 60, interval=0.2)
        if state not in ("RUNNING", "COMPLETED"):
            raise SystemExit(f"portal job {job['id']} ended {state}")
        return elapsed

    def _bare_latency(self) -> float:
        started = time.monotonic()
        job_id = self._sbatch("sleep 1")
        wait_for(
            lambda: self._slurm("squeue", "--noheader", f"--jobs={job_id}", "--format=%T").strip() != "PENDING",
            60,
            POLL,
        )
        elapsed = time.monotonic() - started
        wait_for(lambda: not self._slurm("squeue", "--noheader", f"--jobs={job_id}").strip(), 60, 0.2)
        return elapsed

    def _sbatch(self, command: str) -> str:
        import pwd

        account = pwd.getpwnam(POSIX_USER)
        out = self._slurm(
            "sbatch",
            "--parsable",
            f"--uid={account.pw_uid}",
            f"--gid={account.pw_gid}",
            f"--account={self.account}",
            "--partition=main",
            "--nodes=1",
            "--gres=accelerator:1",
            "--mem=500",
            "--time=5",
            f"--chdir={self.data_dir}",
            "--output=/dev/null",
            f"--wrap={command}",
        )
        return out.strip().split(";")[0]

    # --- rate -------------------------------------------------------------------------------------------------

    def rate(self, count: int) -> None:
        body = {"group": self.account, "name": "rate", "nodes": 1, "accelerators_per_node": 1, "time_limit": "5"}
        with httpx.Client(base_url=self.stack.url(""), headers=self._auth(), timeout=60) as client:
            started = time.monotonic()
            ids = [client.post("/api/v1/jobs/", json={**body, "command": "true"}).raise_for_status().json()["id"]]
            ids += [
                client.post("/api/v1/jobs/", json={**body, "command": "true"}).raise_for_status().json()["id"]
                for _ in range(count - 1)
            ]
            accepted = time.monotonic() - started
            wait_for(lambda: self._all_dispatched(ids), 600, interval=0.2)
            dispatched = time.monotonic() - started
        wait_for(lambda: not self._slurm("squeue", "--noheader", f"--account={self.account}").strip(), 600, 0.5)
        started = time.monotonic()
        for _ in range(count):
            self._sbatch("true")
        bare = time.monotonic() - started
        wait_for(lambda: not self._slurm("squeue", "--noheader", f"--account={self.account}").strip(), 600, 0.5)
        print(
            f"{count} submissions in a row: portal API {count / accepted:.1f}/s, handed to Slurm "
            f"{count / dispatched:.1f}/s end to end; bare sbatch {count / bare:.1f}/s; "
            f"ratio bare/API {accepted / bare:.2f}, bare/end-to-end {dispatched / bare:.2f}"
        )

    @staticmethod
    def _all_dispatched(ids: list[int]) -> bool:
        from jobs.models import Job

        return not Job.objects.filter(pk__in=ids, backend_job_id="", state="PENDING").exists()


def _not_pending(client: httpx.Client, job_id: int) -> str | None:
    state = client.get(f"/api/v1/jobs/{job_id}/").json()["state"]
    return None if state == "PENDING" else state


def _ended(client: httpx.Client, job_id: int) -> bool:
    return client.get(f"/api/v1/jobs/{job_id}/").json()["state"] not in ("PENDING", "RUNNING")


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.9) - 1)]
