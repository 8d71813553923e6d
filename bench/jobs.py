"""Job benchmarks on a real stack: submit → RUNNING latency on an idle pool, and a 1,000-job burst."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from tests.e2e.stack import Stack, wait_for


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench jobs", description=__doc__)
    parser.add_argument("which", nargs="?", default="all", choices=["latency", "burst", "all"])
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL + Redis instead of the embedded default")
    parser.add_argument("--jobs", type=int, default=1000, help="jobs in the burst")
    parser.add_argument("--samples", type=int, default=20, help="submissions for the latency median")
    args = parser.parse_args(argv)
    if args.postgres:
        os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
        os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/15")
    data_dir = Path(tempfile.mkdtemp(prefix="aipool-bench-"))
    run_benchmarks(data_dir, which=args.which, burst=args.jobs, samples=args.samples)


def run_benchmarks(data_dir: Path, *, which: str, burst: int, samples: int) -> None:
    stack = Stack(data_dir)
    os.environ.update({k: v for k, v in stack.env.items() if k in ("AIPOOL_DATA_DIR", "DATABASE_URL")})
    import django

    os.environ["DJANGO_SETTINGS_MODULE"] = "portal.settings"
    django.setup()
    from django.core.management import call_command

    try:
        call_command("migrate", verbosity=0)
        call_command("seed_demo", verbosity=0)
        stack.start_worker()
        from django.conf import settings

        label = "PostgreSQL + Redis" if "postgresql" in settings.DATABASES["default"]["ENGINE"] else "SQLite (embedded)"
        print(f"stack: {label}, worker concurrency 2, reconcile every 1 s")
        time.sleep(3)  # let the worker connect before measuring
        if which in ("latency", "all"):
            latency(samples)
        if which in ("burst", "all"):
            burst_run(burst)
    finally:
        stack.close()


def _submit(user, group, **fields):
    from jobs.services import job_submit
    from jobs.spec import parse_job_spec

    body = {"name": "bench", "nodes": 1, "accelerators_per_node": 1, "time_limit": "10", "command": "true", **fields}
    return job_submit(user=user, group=group, spec=parse_job_spec(body))[0]


def latency(samples: int) -> None:
    from django.contrib.auth.models import User

    from jobs.models import Job, JobEvent
    from tenants.models import Group

    alice, group = User.objects.get(username="alice"), Group.objects.get(name="acme-research")
    results = []
    for _ in range(samples):
        job = _submit(alice, group)
        wait_for(lambda job=job: Job.objects.filter(pk=job.pk).exclude(state="PENDING").exists(), 30, interval=0.02)
        running = JobEvent.objects.filter(job=job, to_state="RUNNING").values_list("at", flat=True).first()
        results.append((running - job.submitted_at).total_seconds())
        wait_for(lambda job=job: Job.objects.filter(pk=job.pk, state="COMPLETED").exists(), 30, interval=0.05)
    results.sort()
    print(
        f"submit → RUNNING on an idle pool ({samples} jobs): median {statistics.median(results) * 1000:.0f} ms, "
        f"p90 {results[int(len(results) * 0.9) - 1] * 1000:.0f} ms, max {results[-1] * 1000:.0f} ms"
    )


def burst_run(count: int) -> None:
    from django.contrib.auth.models import User
    from django.db import transaction
    from django.db.models import Count

    from jobs.models import Job
    from tenants.models import Group

    users = {u.username: u for u in User.objects.filter(username__in=["alice", "bob"])}
    plan = [("alice", "acme-research"), ("alice", "acme-vision"), ("bob", "globex-ml")]
    groups = {g.name: g for g in Group.objects.filter(name__in=[g for _, g in plan])}
    first_id = (Job.objects.order_by("-id").values_list("id", flat=True).first() or 0) + 1
    started = time.monotonic()
    with transaction.atomic():  # one commit: a true burst, scheduled by the passes that follow
        for i in range(count):
            user, group = plan[i % len(plan)]
            _submit(users[user], groups[group], accelerators_per_node=1 + i % 4, command="sleep 0.2")
    submitted = time.monotonic() - started
    jobs = Job.objects.filter(id__gte=first_id)
    wait_for(lambda: not jobs.filter(state__in=["PENDING", "RUNNING"]).exists(), 1800, interval=1)
    total = time.monotonic() - started
    states = dict(jobs.values_list("state").annotate(n=Count("id")))
    print(f"burst of {count} jobs: submitted in {submitted:.1f} s, all ended after {total:.1f} s; states {states}")
    print(f"  runs per job: {check_runs(jobs)}; GrpTRES peak per group: {check_limits(jobs)}")


def check_runs(jobs) -> str:
    from django.db.models import Count, Q

    counts = jobs.annotate(runs=Count("events", filter=Q(events__to_state="RUNNING"))).values_list("runs", flat=True)
    histogram: dict[int, int] = {}
    for runs in counts:
        histogram[runs] = histogram.get(runs, 0) + 1
    return ", ".join(f"{n} job(s) ran {runs}x" for runs, n in sorted(histogram.items()))


def check_limits(jobs) -> str:
    """Replay the event history: the accelerators held by each group's subtree at every instant."""
    from jobs.models import JobEvent
    from tenants.models import Group

    groups = list(Group.objects.all())
    held = {g.name: 0 for g in groups}
    peak = dict(held)
    events = JobEvent.objects.filter(job__in=jobs).select_related("job__group").order_by("at", "id")
    for event in events.iterator():
        job = event.job
        accelerators = job.nodes * job.accelerators_per_node
        delta = accelerators if event.to_state == "RUNNING" else -accelerators if event.from_state == "RUNNING" else 0
        for g in groups:
            if job.group.path.startswith(g.path):
                held[g.name] += delta
                peak[g.name] = max(peak[g.name], held[g.name])
    parts = []
    for g in groups:
        cap = (g.grp_tres or {}).get("gres/accelerator")
        verdict = "" if cap is None else (" OK" if peak[g.name] <= cap else " EXCEEDED")
        parts.append(f"{g.name} {peak[g.name]}/{cap if cap is not None else '-'}{verdict}")
    return ", ".join(parts)
