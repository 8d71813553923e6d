"""A real aipool stack in subprocesses (Celery worker + beat, gunicorn) on its own database, for end-to-end tests."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Stack:
    def __init__(self, data_dir: Path, *, web_workers: int = 2, db_prefix: str = "aipool_e2e"):
        self.data_dir = data_dir
        self.web_workers = web_workers
        self.port = free_port()
        self.env = {
            **os.environ,
            "AIPOOL_DATA_DIR": str(data_dir),
            "AIPOOL_RECONCILE_SECONDS": "1",
            "AIPOOL_KILL_GRACE_SECONDS": "2",
            "DJANGO_SETTINGS_MODULE": "portal.settings",
        }
        self.database = None
        if os.environ.get("DATABASE_URL"):
            self.database = f"{db_prefix}_{uuid.uuid4().hex[:8]}"
            self._admin_sql(f'CREATE DATABASE "{self.database}"')
            base = os.environ["DATABASE_URL"].rsplit("/", 1)[0]
            self.env["DATABASE_URL"] = f"{base}/{self.database}"
        self.worker: subprocess.Popen | None = None
        self.web: subprocess.Popen | None = None

    def _admin_sql(self, sql: str) -> None:
        url = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
            conn.execute(sql)

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            check=check,
            timeout=120,
        )

    def python(self, code: str):
        """Run `code` inside Django in a fresh process; it prints one JSON value, which is returned."""
        out = self.manage("shell", "-c", code).stdout.strip().splitlines()
        return json.loads(out[-1])

    def start_worker(self) -> None:
        log = open(self.data_dir / "worker.log", "ab")  # noqa: SIM115 - lives as long as the process
        self.worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "portal",
                "worker",
                "-B",
                "--concurrency",
                "2",
                "--loglevel",
                "INFO",
                "--schedule",
                str(self.data_dir / "beat-schedule"),
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def start_web(self) -> None:
        log = open(self.data_dir / "web.log", "ab")  # noqa: SIM115
        self.web = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "portal.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(self.web_workers),
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @staticmethod
    def kill(process: subprocess.Popen | None) -> None:
        """SIGKILL the whole process tree, as a crash or an OOM kill would."""
        if process and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def is_up(self) -> bool:
        import httpx

        try:
            return httpx.get(self.url("/accounts/login/"), timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def serve_demo(self, *, static: bool = False) -> Stack:
        """The README's embedded default: migrated, demo data, a worker with beat, gunicorn answering pages."""
        self.manage("migrate", "--no-input")
        self.manage("seed_demo")
        if static:
            self.manage("collectstatic", "--no-input")
        self.start_worker()
        self.start_web()
        wait_for(self.is_up, timeout=30)
        return self

    def close(self) -> None:
        for process in (self.worker, self.web):
            if process and process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.kill(process)
        if self.database:
            self._admin_sql(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')


def wait_for(predicate, timeout: float, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not reached within {timeout}s")
