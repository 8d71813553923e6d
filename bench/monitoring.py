"""Monitoring costs: what one sampling pass costs per job, and what a Prometheus scrape costs.

``proc``: reading /proc counters of one task with N processes (the local backend's part of a sample).
``pass``: one sampling pass (fake backend, 8 ranks per job) plus idle evaluation over J running jobs, on SQLite in
a scratch AIPOOL_DATA_DIR; and a /metrics exposition over the same database.

    python -m bench monitoring [proc|pass|all] [--jobs 200] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench monitoring", description=__doc__)
    parser.add_argument("which", nargs="?", default="all", choices=["proc", "pass", "all"])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    if args.which in ("proc", "all"):
        bench_proc(args.repeat)
    if args.which in ("pass", "all"):
        bench_pass(args.jobs, args.repeat)


def _median_ms(func, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def bench_proc(repeat: int) -> None:
    from cluster.backends import shepherd as sh
    from cluster.backends.procfs import ProcFS

    children = [subprocess.Popen(["sleep", "60"], start_new_session=False) for _ in range(16)]
    try:
        pids = [os.getpid(), *(c.pid for c in children)]
        proc = ProcFS()
        read = _median_ms(lambda: proc.task_counters(pids), max(repeat, 20))
        scan = _median_ms(lambda: sh.group_members(os.getpgrp(), 0), max(repeat, 20))
        print(f"monitoring proc: counters of a 17-process task {read:.2f} ms (median); /proc group scan {scan:.2f} ms")
    finally:
        for child in children:
            child.kill()
            child.wait()


def bench_pass(jobs: int, repeat: int) -> None:
    scratch = tempfile.mkdtemp(prefix="aipool-bench-monitoring-")
    os.environ["AIPOOL_DATA_DIR"] = scratch
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--no-input", verbosity=0)
    job_ids = _running_jobs(jobs)
    from cluster.backends.base import TaskUsage
    from monitoring.prometheus import exposition
    from monitoring.sampling import sample_running_jobs
    from monitoring.services import evaluate_idle

    clock = {"t": time.time()}

    class Backend:
        def usage(self, backend_job_id):
            at = clock["t"]
            return [TaskUsage(rank=r, node=f"n{r}", at=at, cpu_seconds=at * 0.9, rss_bytes=1 << 30, swap_bytes=0)
                    for r in range(8)]  # fmt: skip

        def step_metrics(self, backend_job_id, *, since, limit_bytes=1 << 16):
            return {}

    backend = Backend()

    def one_pass():
        clock["t"] += 10
        sample_running_jobs(backend_for=lambda name: backend)
        evaluate_idle(now=clock["t"])

    one_pass()  # the first pass pays for imports and caches
    sampled = _median_ms(one_pass, repeat)
    scrape = _median_ms(exposition, repeat)
    print(
        f"monitoring pass: {len(job_ids)} running jobs x 8 ranks: {sampled:.0f} ms per sampling pass (median of "
        f"{repeat}), {sampled / len(job_ids):.2f} ms per job; /metrics exposition {scrape:.1f} ms"
    )


def _running_jobs(count: int) -> list[int]:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from cluster.models import Node, Partition, Switch
    from jobs.models import Job
    from tenants.models import Group, Tenant

    switch = Switch.objects.create(name="leaf0")
    partition = Partition.objects.create(name="main", is_default=True)
    partition.nodes.add(Node.objects.create(name="node1", cpus=64, memory_mb=1 << 19, switch=switch))
    user = get_user_model().objects.create(username="bench")
    tenants = [Tenant.objects.create(name=f"t{i}") for i in range(4)]
    groups = [Group.objects.create(tenant=t, name=f"g{i}", path=f"/g{i}/") for i, t in enumerate(tenants)]
    now = timezone.now()
    jobs = [
        Job(tenant=groups[i % 4].tenant, group=groups[i % 4], user=user, partition=partition, name=f"j{i}", nodes=1,
            accelerators_per_node=8, cpus_per_node=8, memory_per_node=1024, time_limit=60, state="RUNNING",
            started_at=now, backend="local", backend_job_id=f"{i}.0")
        for i in range(count)
    ]  # fmt: skip
    return [j.pk for j in Job.objects.bulk_create(jobs)]


if __name__ == "__main__":
    main(sys.argv[1:])
