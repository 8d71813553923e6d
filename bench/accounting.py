"""Accounting and notification benchmarks: the pure core over many runs, the /usage/ report on a database of N jobs
(SQLite by default, --postgres for PostgreSQL), and one signed webhook attempt to a local receiver. Medians."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta


def _median_ms(func, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        func()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _runs(n: int):
    from accounting import core

    base = datetime(2026, 3, 1, tzinfo=UTC)
    return [
        core.Run(i, base + timedelta(minutes=7 * i % 40000), base + timedelta(minutes=7 * i % 40000 + 90 + i % 600),
                 8, f"t{i % 5}", f"g{i % 40}", f"u{i % 300}", "main", 0.5 if i % 3 else None)
        for i in range(n)
    ]  # fmt: skip


def bench_core(n: int, repeat: int) -> None:
    from accounting import core

    runs = _runs(n)
    window = core.Window(datetime(2026, 3, 5, tzinfo=UTC), datetime(2026, 3, 25, tzinfo=UTC))
    now = datetime(2026, 4, 1, tzinfo=UTC)
    rows_ms = _median_ms(lambda: core.usage_by(runs, window, "user", now), repeat)
    series_ms = _median_ms(lambda: core.series_by(runs, window, timedelta(days=1), "group", now), repeat)
    print(f"core: usage_by over {n} runs: median {rows_ms:.1f} ms ({1000 * rows_ms / n:.2f} us/run)")
    print(f"core: daily series over {n} runs, 20 days: median {series_ms:.1f} ms")


def _setup_django(postgres: bool) -> None:
    if postgres:
        os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/aipool_h11b_bench")
    os.environ.setdefault("AIPOOL_DATA_DIR", tempfile.mkdtemp(prefix="aipool-bench-acct-"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "portal.settings"
    import django

    django.setup()


def bench_report(n: int, repeat: int, postgres: bool) -> None:
    _setup_django(postgres)
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import setup_test_environment, teardown_test_environment

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        call_command("seed_demo", verbosity=0)
        _fill(n)
        _time_reports(n, repeat)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()


def _fill(n: int) -> None:
    from django.contrib.auth import get_user_model

    from cluster.models import Partition
    from jobs.models import Job
    from tenants.models import GroupMember

    fallback = Partition.objects.first()
    members = list(GroupMember.objects.select_related("group__tenant", "group__default_partition", "user"))
    base = datetime(2026, 3, 1, tzinfo=UTC)
    jobs = []
    for i in range(n):
        m = members[i % len(members)]
        start = base + timedelta(minutes=(7 * i) % 40000)
        jobs.append(Job(tenant=m.group.tenant, group=m.group, user=m.user, name=f"b{i}",
                        partition=m.group.default_partition or fallback,
                        nodes=1 + i % 2, accelerators_per_node=8, cpus_per_node=8, memory_per_node=1024,
                        time_limit=1000, state="COMPLETED", started_at=start,
                        ended_at=start + timedelta(minutes=90 + i % 600)))  # fmt: skip
    Job.objects.bulk_create(jobs, batch_size=2000)
    print(f"database: {n} ended jobs, {get_user_model().objects.count()} users")


def _time_reports(n: int, repeat: int) -> None:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from accounting import core, reports
    from accounting.selectors import Filters
    from tenants.models import Membership, Role

    window = core.Window(datetime(2026, 3, 5, tzinfo=UTC), datetime(2026, 3, 25, tzinfo=UTC))
    staff = get_user_model().objects.filter(is_staff=True).first() or get_user_model().objects.create(
        username="bench-staff", is_staff=True
    )
    admin = Membership.objects.filter(role=Role.ADMIN).select_related("user").first().user
    now = timezone.now()
    for label, user in (("staff (whole pool)", staff), (f"tenant admin {admin.username}", admin)):
        ms = _median_ms(lambda user=user: reports.usage(user, window, "user", Filters(), now=now), repeat)
        series_ms = _median_ms(
            lambda user=user: reports.series(user, window, timedelta(days=1), "group", Filters(), now=now), repeat
        )
        print(f"report: usage by user, 20-day window, as {label}: median {ms:.1f} ms; daily series {series_ms:.1f} ms")


def bench_webhook(repeat: int) -> None:
    """One signed delivery attempt (claim, sign, POST to a local receiver, log) end to end."""
    _setup_django(False)
    from django.db import connection
    from django.test.utils import setup_test_environment, teardown_test_environment

    from tests.notifications.receiver import Receiver

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    receiver = Receiver().start()
    try:
        from django.contrib.auth import get_user_model

        from notifications import sending
        from notifications.services import endpoint_create, ping

        user = get_user_model().objects.create(username="bench")
        endpoint, _ = endpoint_create(user=user, url=receiver.url)
        ids = [ping(user=user, endpoint=endpoint).pk for _ in range(repeat)]
        times = []
        for delivery_id in ids:
            started = time.perf_counter()
            sending.attempt(delivery_id, 1)
            times.append((time.perf_counter() - started) * 1000)
        median = statistics.median(times)
        print(f"webhook: one signed attempt to a local receiver (claim, sign, POST, log), {repeat}x: {median:.1f} ms")
    finally:
        receiver.stop()
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench accounting", description=__doc__)
    parser.add_argument("which", nargs="?", default="all", choices=["core", "report", "webhook", "all"])
    parser.add_argument("--runs", type=int, default=100_000, help="runs for the pure core")
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs in the database for the report")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL for the report (DATABASE_URL)")
    args = parser.parse_args(argv)
    if args.which in ("core", "all"):
        bench_core(args.runs, args.repeat)
    if args.which in ("report", "all"):
        bench_report(args.jobs, args.repeat, args.postgres)
    if args.which in ("webhook", "all"):
        bench_webhook(max(args.repeat, 20))
