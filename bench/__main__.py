"""``python -m bench [jobs-latency|jobs-burst|all] [--postgres]``: print the numbers for the closing notes.

Each benchmark starts a real stack (Celery worker + beat as subprocesses) on a fresh database: SQLite and the SQLite
broker by default, or PostgreSQL + Redis with --postgres (DATABASE_URL / CELERY_BROKER_URL default to loopback).
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("which", nargs="?", default="all", choices=["jobs-latency", "jobs-burst", "all"])
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL + Redis instead of the embedded default")
    parser.add_argument("--jobs", type=int, default=1000, help="jobs in the burst")
    parser.add_argument("--samples", type=int, default=20, help="submissions for the latency median")
    args = parser.parse_args()
    if args.postgres:
        os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
        os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/15")
    data_dir = Path(tempfile.mkdtemp(prefix="aipool-bench-"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.jobs import run_benchmarks

    run_benchmarks(data_dir, which=args.which, burst=args.jobs, samples=args.samples)


if __name__ == "__main__":
    main()
