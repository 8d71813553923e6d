"""Scheduler benchmarks: pass time, placement quality against first fit, explanation latency.

    python -m bench scheduler [pass|placement|explain|db|all] [--quick]

- pass: one scheduling pass (priorities + decisions) with 10,000 pending jobs on 1,000 nodes x 8 accelerators and
  100,000 on 10,000 nodes, on a busy pool (steady state: ~90% allocated) and an idle one (a burst: thousands start);
  targets 0.1 s and 1 s, growth close to linear.
- placement: a synthetic workload with multi-node jobs replayed on a virtual clock; the share of multi-node jobs
  placed on the fewest leaf switches that could ever hold them (target >= 95%), against a first-fit baseline.
- explain: one explanation (causes, estimated start, suggestions) with 10,000 jobs queued; target 200 ms.
- db: the same through the ORM on a fresh SQLite database: a pass with 10,000 pending and GET explain's work.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from scheduler.core import Planner, schedule
from scheduler.explain import explain
from scheduler.model import AssocLimits, AssocUsage, JobRequest, NodeView, RunningJob
from scheduler.placement import Pool, choose_switches
from scheduler.policy import Policy
from scheduler.priority import Association, Prioritizer, PriorityContext, fairshare_factors
from scheduler.replay import Replay

SWITCH_SIZE = 32
HOUR = 3600.0
# CPU time of this process: on a machine shared with other work, wall time measures the neighbours as much as the
# scheduler. On an idle machine the two agree (the scheduler does no I/O).
clock = time.process_time


# --- synthetic pool and workload ---------------------------------------------------------------------------------


def make_nodes(count: int, switch_size: int = SWITCH_SIZE) -> list[NodeView]:
    return [
        NodeView(
            name=f"node{i:05d}",
            switch=f"leaf{i // switch_size:04d}",
            partitions=frozenset({"main"}),
            accelerators=8,
            cpus=128,
            memory_mb=1024 * 1024,
            free_accelerators=list(range(8)),
            free_cpus=128,
            free_memory_mb=1024 * 1024,
        )
        for i in range(count)
    ]


class Workload:
    """Tenants, groups with limits and shares, and a job mix: two thirds on one node, 30% on 2-8 whole nodes, 3% on
    16-64 nodes; time limits from 30 minutes to a day. 10,000 such jobs are about a week of work for 1,000 nodes."""

    def __init__(self, nodes: int, seed: int = 1):
        self.rng = random.Random(seed)
        self.tenants = max(4, nodes // 100)
        self.groups = self.tenants * 5
        self.tree = [Association(f"tenant:{t}", None, 1) for t in range(self.tenants)] + [
            Association(f"group:{g}", f"tenant:{g % self.tenants}", self.rng.randint(1, 5)) for g in range(self.groups)
        ]
        self.limits: dict[str, AssocLimits] = {}
        for g in range(self.groups):
            if g % 3 == 0:
                self.limits[f"group:{g}"] = AssocLimits(f"group g{g}", grp_tres={"gres/accelerator": 8 * nodes // 20})
        for t in range(self.tenants):
            self.limits[f"tenant:{t}"] = AssocLimits(f"tenant t{t}", grp_tres={"gres/accelerator": 8 * nodes // 3})
        usage = {a.key: self.rng.random() * 1e6 for a in self.tree}
        self.ctx = PriorityContext(
            fairshare=fairshare_factors(self.tree, usage),
            partition_tier={"main": 1},
            partition_size={"main": (nodes, nodes * 8)},
        )
        self.next_id = 1

    def job(self, submitted_at: float = 0.0, topology_share: float = 0.1) -> JobRequest:
        rng = self.rng
        roll = rng.random()
        if roll < 0.67:
            nodes, apn = 1, rng.choice([1, 2, 4, 8])
        elif roll < 0.97:
            nodes, apn = rng.randint(2, 8), 8
        else:
            nodes, apn = rng.choice([16, 32, 64]), 8
        group = rng.randrange(self.groups)
        request = JobRequest(
            id=self.next_id,
            partition="main",
            nodes=nodes,
            accelerators_per_node=apn,
            cpus_per_node=16 * apn,
            memory_per_node=128 * 1024 * apn,
            time_limit=rng.choice([30, 60, 120, 240, 480, 1440]),
            associations=(f"tenant:{group % self.tenants}", f"group:{group}"),
            user=f"user{rng.randrange(self.groups * 4)}",
            submitted_at=submitted_at,
            eligible_at=submitted_at - rng.random() * 2 * 86400,
            topology_aware=rng.random() < topology_share,
        )
        self.next_id += 1
        return request

    def busy(self, nodes: list[NodeView], share: float) -> tuple[list[RunningJob], dict[str, AssocUsage]]:
        """Start jobs until `share` of the accelerators are held; they end at random points of their limits."""
        target = share * 8 * len(nodes)
        queue, total = [], 0
        while total < target:
            job = self.job(topology_share=0)
            queue.append(job)
            total += job.tres["gres/accelerator"]
        decisions = schedule(nodes, queue, {}, {}, 0.0)
        by_id = {j.id: j for j in queue}
        running, usage = [], {}
        for start in decisions.starts:
            job = by_id[start.job_id]
            running.append(RunningJob(job, start.allocation, self.rng.random() * job.time_limit * 60, 0.0))
            for key in job.associations:
                usage.setdefault(key, AssocUsage()).add(job)
        return running, usage

    def queue(self, count: int, now: float = 0.0) -> list[JobRequest]:
        # Submitted over the last day in id order, as the database hands them out (and the adapter reads them).
        jobs = [self.job(submitted_at=now - 86400 * (count - k) / count) for k in range(count)]
        Prioritizer(self.ctx, now, Policy()).assign(jobs)
        return jobs


# --- one pass ------------------------------------------------------------------------------------------------------


def pass_times(pending: int, nodes: int, busy: float, repeats: int) -> tuple[float, float, int, int]:
    """Best-of-`repeats` seconds for priorities and for the pass, and how many started / were reserved."""
    best_prio = best_pass = math.inf
    started = reserved = 0
    for attempt in range(repeats):
        workload = Workload(nodes, seed=attempt + 1)
        pool = make_nodes(nodes)
        running, usage = workload.busy(pool, busy) if busy else ([], {})
        queue = workload.queue(pending)
        t0 = clock()
        Prioritizer(workload.ctx, 0.0, Policy()).assign(queue)
        t1 = clock()
        decisions = schedule(pool, queue, workload.limits, usage, 0.0, running=running)
        t2 = clock()
        best_prio, best_pass = min(best_prio, t1 - t0), min(best_pass, t2 - t1)
        started, reserved = len(decisions.starts), len(decisions.reservations)
    return best_prio, best_pass, started, reserved


def bench_pass(quick: bool) -> None:
    sizes = [(10_000, 1_000)] if quick else [(10_000, 1_000), (100_000, 10_000)]
    print("one scheduling pass (priorities + decisions), CPU time, best of 3:")
    for label, busy in (("busy pool, 90% allocated", 0.9), ("idle pool", 0.0)):
        results = []
        for pending, nodes in sizes:
            prio, decide, started, reserved = pass_times(pending, nodes, busy, repeats=1 if quick else 3)
            results.append(prio + decide)
            print(
                f"  {label:26} {pending:>7,} pending on {nodes:>6,} nodes: {(prio + decide) * 1000:7.1f} ms "
                f"(priorities {prio * 1000:6.1f} ms, pass {decide * 1000:7.1f} ms); {started:,} started, "
                f"{reserved} reserved"
            )
        if len(results) == 2:
            print(f"  {'':26} growth for 10x the jobs and nodes: x{results[1] / results[0]:.1f}")


# --- placement quality -----------------------------------------------------------------------------------------------


class FirstFitPool(Pool):
    """The baseline: the first nodes in name order that fit, wherever their switches are."""

    def find(self, job, *, open_only=False, max_switches=None):
        by_name = sorted(range(len(self.nodes)), key=lambda i: self.nodes[i].name)
        chosen = [
            i
            for i in by_name
            if self.node_parts[i]
            and job.partition in self.nodes[i].partitions
            and self.nodes[i].fits(job.accelerators_per_node, job.cpus_per_node, job.memory_per_node)
            and not (open_only and self.reserved[i])
        ][: job.nodes]
        return chosen if len(chosen) == job.nodes else None


def recording(pool_class):
    """`pool_class` that notes, for each multi-node placement, its switches and the fewest it could have had then."""

    class Recording(pool_class):
        placements: list[tuple[int, int, int]] = []  # (switches used, fewest possible now, fewest ever possible)

        def find(self, job, *, open_only=False, max_switches=None):
            chosen = super().find(job, open_only=open_only, max_switches=max_switches)
            if chosen and job.nodes > 1:
                part = self.parts[job.partition]
                counts = {s: len(self._eligible(members, job, open_only)) for s, members in part.switch_members.items()}
                fewest_now = len(choose_switches({s: c for s, c in counts.items() if c}, job.nodes))
                used = len({self.nodes[i].switch for i in chosen})
                self.placements.append((used, fewest_now, part.ideal_switches(job.nodes)))
            return chosen

    Recording.placements = []
    return Recording


def placement_quality(pool_class, jobs: int, nodes: int, switch_size: int, seed: int) -> list[tuple[int, int, int]]:
    workload = Workload(nodes, seed=seed)
    queue, runtimes = [], {}
    for k in range(jobs):
        job = workload.job(submitted_at=k * 40.0, topology_share=0)
        job.time_limit = workload.rng.choice([60, 120, 240])
        queue.append(job)
        runtimes[job.id] = workload.rng.uniform(0.3, 1.0) * job.time_limit * 60
    Prioritizer(workload.ctx, 0.0, Policy()).assign(queue)
    recorder = recording(pool_class)
    replay = Replay(make_nodes(nodes, switch_size), {}, Policy(), pool_class=recorder)
    replay.submit(queue, runtimes)
    replay.run()
    return recorder.placements


def bench_placement(quick: bool) -> None:
    jobs, nodes, switch_size = (800, 128, 16) if quick else (3000, 256, 16)
    print(
        f"placement quality: {jobs:,} jobs (40% multi-node, up to 64 nodes) replayed on {nodes} nodes, "
        f"{switch_size} per leaf switch; multi-node jobs placed on"
    )
    for label, pool_class in (("this scheduler", Pool), ("first-fit baseline", FirstFitPool)):
        t0 = clock()
        placements = placement_quality(pool_class, jobs, nodes, switch_size, seed=3)
        took = clock() - t0
        count = len(placements) or 1
        fewest_now = sum(used == now for used, now, _ in placements) / count
        ideal = sum(used == ever for used, _, ever in placements) / count
        extra = statistics.mean(used - now for used, now, _ in placements) if placements else 0.0
        print(
            f"  {label:20} the fewest switches that could hold them then: {fewest_now * 100:5.1f}% "
            f"(mean extra {extra:.2f}); the fewest any could (a whole empty pool): {ideal * 100:5.1f}% "
            f"[{len(placements)} jobs, replay {took:.1f} s]"
        )


# --- explanations ----------------------------------------------------------------------------------------------------


def bench_explain(quick: bool) -> None:
    pending, nodes = 10_000, 1_000
    workload = Workload(nodes, seed=5)
    pool = make_nodes(nodes)
    running, usage = workload.busy(pool, 0.9)
    queue = workload.queue(pending)
    ordered = sorted(queue, key=lambda j: j.order_key)
    print(f"explanation latency with {pending:,} jobs queued on {nodes:,} nodes (pure core, median of 5):")
    for label, position in (("first in the queue", 0), ("middle", pending // 2), ("last", pending - 1)):
        target = ordered[position]
        times = []
        for _ in range(1 if quick else 5):
            t0 = clock()
            result = explain(pool, queue, workload.limits, usage, 0.0, target.id, running=running, ctx=workload.ctx)
            times.append(clock() - t0)
        start = "unknown" if result.estimated_start is None else f"in {result.estimated_start / HOUR:.1f} h"
        print(
            f"  {label:20} {statistics.median(times) * 1000:6.1f} ms; {len(result.causes)} cause(s), "
            f"estimated start {start}, {len(result.suggestions)} suggestion(s)"
        )
    planner = Planner(pool, workload.limits, usage, 0.0, running=running, plan_ahead=True)
    t0 = clock()
    planner.run(queue)
    print(f"  (planning all {pending:,} into the future: {(clock() - t0) * 1000:.0f} ms)")


# --- through the ORM -------------------------------------------------------------------------------------------------


class Timer:
    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu

    def __str__(self) -> str:
        return f"{self.wall * 1000:.0f} ms (CPU {self.cpu * 1000:.0f} ms)"


def bench_db(quick: bool) -> None:
    pending, node_count = (2_000, 200) if quick else (10_000, 1_000)
    data = Path(tempfile.mkdtemp(prefix="aipool-bench-sched-"))
    os.environ["AIPOOL_DATA_DIR"] = str(data)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    call_command("migrate", verbosity=0)
    seed_database(pending, node_count)
    from jobs.explain import job_explanation
    from jobs.models import Job
    from jobs.scheduling import run_pass

    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    print(
        f"through the ORM ({engine}): {pending:,} pending jobs on {node_count:,} nodes, 90% allocated "
        "(wall time, and this process's CPU time: the database server's is not in it)"
    )
    with CaptureQueriesContext(connection) as queries, Timer() as took:
        started = run_pass()
    print(f"  first pass: {took}, {len(queries)} queries, {len(started)} started (reasons written)")
    with CaptureQueriesContext(connection) as queries, Timer() as took:
        run_pass()
    print(f"  steady pass: {took}, {len(queries)} queries")
    from jobs.scheduling import load_queue, load_state

    ordered = sorted(load_queue(load_state())[0], key=lambda j: j.order_key)
    picks = (("first in the queue", 0), ("middle", len(ordered) // 2), ("last", len(ordered) - 1))
    for label, job_id in ((label, ordered[at].id) for label, at in picks):
        job = Job.objects.select_related("partition", "group").get(pk=job_id)
        with CaptureQueriesContext(connection) as queries, Timer() as took:
            answer = job_explanation(job)
        print(
            f"  explain ({label}): {took}, {len(queries)} queries; "
            f"{len(answer['causes'])} cause(s), {len(answer['suggestions'])} suggestion(s)"
        )


def seed_database(pending: int, node_count: int) -> None:
    from django.contrib.auth.models import User
    from django.db import transaction
    from django.utils import timezone

    from cluster.models import Node, Partition, Switch
    from jobs.models import Job
    from tenants.models import Group, Tenant

    rng = random.Random(9)
    with transaction.atomic():
        spine = Switch.objects.create(name="spine")
        leaves = [Switch.objects.create(name=f"leaf{k}", parent=spine) for k in range(math.ceil(node_count / 32))]
        nodes = Node.objects.bulk_create(
            Node(name=f"node{i:05d}", cpus=128, memory_mb=1024 * 1024, accelerators=8, switch=leaves[i // 32])
            for i in range(node_count)
        )
        main = Partition.objects.create(name="main", is_default=True, max_time=7 * 1440)
        main.nodes.set(nodes)
        tenants = [Tenant.objects.create(name=f"t{k}") for k in range(10)]
        groups = [
            Group.objects.create(name=f"g{k}", tenant=tenants[k % 10], path=f"/g{k}/", shares=1 + k % 3)
            for k in range(50)
        ]
        users = User.objects.bulk_create(User(username=f"u{k}") for k in range(100))
        now = timezone.now()
        running_nodes = int(node_count * 0.9)
        rows = [
            Job(
                tenant_id=groups[k % 50].tenant_id,
                group=groups[k % 50],
                user=users[k % 100],
                partition=main,
                name="busy",
                nodes=1,
                accelerators_per_node=8,
                cpus_per_node=128,
                memory_per_node=1024 * 1024,
                time_limit=rng.choice([60, 240, 1440]),
                state="RUNNING",
                started_at=now,
                eligible_at=now,
                allocation={f"node{k:05d}": list(range(8))},
                nodelist=[f"node{k:05d}"],
            )
            for k in range(running_nodes)
        ]
        for _ in range(pending):
            group = groups[rng.randrange(50)]
            apn = rng.choice([1, 2, 4, 8])
            rows.append(
                Job(
                    tenant_id=group.tenant_id,
                    group=group,
                    user=users[rng.randrange(100)],
                    partition=main,
                    name="queued",
                    nodes=rng.choice([1, 1, 1, 2, 4, 8]),
                    accelerators_per_node=apn,
                    cpus_per_node=16 * apn,
                    memory_per_node=128 * 1024 * apn,
                    time_limit=rng.choice([30, 60, 240, 1440]),
                    eligible_at=now,
                    command="true",
                )
            )
        Job.objects.bulk_create(rows, batch_size=2000)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench scheduler", description=__doc__)
    parser.add_argument("which", nargs="?", default="all", choices=["pass", "placement", "explain", "db", "all"])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, one repetition")
    args = parser.parse_args(argv)
    if args.which in ("pass", "all"):
        bench_pass(args.quick)
    if args.which in ("placement", "all"):
        bench_placement(args.quick)
    if args.which in ("explain", "all"):
        bench_explain(args.quick)
    if args.which in ("db", "all"):
        bench_db(args.quick)
