"""``python manage.py up``: the whole portal in one command — migrate, demo data, Celery worker + beat, web server.

The embedded default needs no server: SQLite and a Celery broker on SQLite under AIPOOL_DATA_DIR.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from gateway import conf as gateway_conf
from portal.env import env_int, env_str


class Command(BaseCommand):
    help = "Run the portal: migrations, demo data, a Celery worker with beat, and gunicorn on AIPOOL_PORT."

    def add_arguments(self, parser):
        parser.add_argument("--no-demo", action="store_true", help="do not load the demo tenants and users")
        parser.add_argument("--port", type=int, default=None, help="default: $AIPOOL_PORT or 8000")
        parser.add_argument("--workers", type=int, default=env_int("AIPOOL_WEB_WORKERS", 2))

    def handle(self, *args, **options):
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        if options["no_demo"]:
            call_command("load_pool")
        else:
            call_command("seed_demo")
            call_command("load_catalog")
        port = options["port"] or env_int("AIPOOL_PORT", 8000)
        host = env_str("AIPOOL_HOST", "127.0.0.1")
        children = [self._worker(), self._web(host, port, options["workers"]), self._gateway()]
        self.stdout.write(self.style.SUCCESS(f"aipool is up on http://{host}:{port}/  (Ctrl-C stops it)"))
        self.stdout.write(f"data: {settings.DATA_DIR}   database: {settings.DATABASES['default']['ENGINE']}")
        self.stdout.write(f"broker: {settings.CELERY_BROKER_URL.split('@')[-1]}   backend: {settings.AIPOOL_BACKEND}")
        self.stdout.write(
            f"inference gateway: http://{gateway_conf.host()}:{gateway_conf.port()}/serve/<tenant>/<service>/"
        )
        self._supervise(children)

    def _worker(self) -> subprocess.Popen:
        # Beat is embedded in the worker: one process tree to start and stop for the embedded default.
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "portal",
                "worker",
                "-B",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(env_int("AIPOOL_WORKER_CONCURRENCY", 2)),
                "--schedule",
                settings.CELERY_BEAT_SCHEDULE_FILENAME,
            ],
            env=os.environ.copy(),
        )

    def _web(self, host: str, port: int, workers: int) -> subprocess.Popen:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "portal.wsgi:application",
                "--bind",
                f"{host}:{port}",
                "--workers",
                str(workers),
                "--worker-class",
                "gthread",
                "--threads",
                "8",
                "--access-logfile",
                "-",
                # Artifact uploads and downloads stream multi-GB bodies through one request.
                "--timeout",
                "3600",
            ],
            env=os.environ.copy(),
        )

    def _gateway(self) -> subprocess.Popen:
        # Its own process: the async gateway's event loop must not share a worker with gunicorn's threads.
        return subprocess.Popen([sys.executable, "manage.py", "gateway"], cwd=settings.BASE_DIR, env=os.environ.copy())

    def _supervise(self, children: list[subprocess.Popen]) -> None:
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        try:
            while not stopping and all(child.poll() is None for child in children):
                time.sleep(0.5)
        finally:
            for child in children:
                if child.poll() is None:
                    child.terminate()
            for child in children:
                try:
                    child.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    child.kill()
        if not stopping:
            self.stderr.write("a child process exited; aipool stopped (see the log above)")
            sys.exit(1)
