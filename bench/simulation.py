"""What-if replay benchmarks: replay speed and each policy's quality against FIFO + EASY backfill.

    python -m bench simulation [openb|synthetic|all] [--jobs N] [--repeat N] [--quick]

- openb: the Alibaba openb trace (8,152 pods; the GPU pods that ran, on its 1,213 nodes), every policy, twice:
  as recorded (the trace never fills its cluster: every policy gives the same result) and contended (arrivals 300x
  as fast on every 8th node, 152 nodes / 770 GPUs). Target: under 60 s per policy. Prints the docs' table.
- synthetic: a generated trace (default 100,000 jobs; --jobs to change) on 1,000 nodes x 8: replay time per policy
  and jobs replayed per second. Target: under 10 minutes.

Times are CPU seconds of this process (the median of --repeat runs): on a machine shared with other work wall time
measures the neighbours too.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path

from scheduler.compare import Scenario, format_markdown, format_table, tenant_table
from scheduler.policies import BASELINE, POLICIES
from scheduler.replay import simulate
from scheduler.workload import (
    Workload,
    WorkloadJob,
    fill_owners,
    read_openb_nodes,
    read_openb_pods,
    read_text,
    scale_arrivals,
    shrink_pool,
    uniform_pool,
)

TRACES = Path(__file__).resolve().parent.parent.parent / "shared" / "traces"
CONTENDED = {"load": 300.0, "pool_fraction": 0.125}
TARGET_OPENB, TARGET_SYNTHETIC = 60.0, 600.0


def openb_scenario(load: float = 1.0, fraction: float = 1.0, traces: Path = TRACES) -> Scenario:
    jobs, notes = read_openb_pods(read_text(traces / "openb_pod_list_default.csv"))
    nodes = shrink_pool(read_openb_nodes(read_text(traces / "openb_node_list_gpu_node.csv")), fraction)
    return Scenario.from_workload(Workload(scale_arrivals(jobs, load), nodes, {}, "openb", tuple(notes)))


def synthetic_scenario(count: int, nodes: int = 1000, seed: int = 12) -> Scenario:
    """Users with habits (each has a typical run time and shape), Poisson arrivals offering ~90% of the pool's capacity
    (a busier trace only grows the queue without end: every pass then walks all of it)."""
    rng = random.Random(seed)
    users = []
    for u in range(max(20, count // 500)):
        shape = rng.choices([(1, 1), (1, 2), (1, 4), (1, 8), (2, 8), (4, 8), (8, 8)], [30, 15, 15, 20, 10, 7, 3])[0]
        users.append((f"user{u}", f"group{u % 40}", shape, math.exp(rng.uniform(math.log(300), math.log(36000)))))
    # A lognormal(0, 0.6) factor has mean exp(0.18): the work a job brings on average.
    mean_work = statistics.fmean(n * a * typical for _, _, (n, a), typical in users) * math.exp(0.18)
    gap = mean_work / (nodes * 8 * 0.90)
    jobs, at = [], 0.0
    for i in range(1, count + 1):
        at += rng.expovariate(1 / gap)
        user, group, (n, a), typical = rng.choice(users)
        duration = min(typical * rng.lognormvariate(0, 0.6), 6 * 86400)
        limit = rng.choice([2, 4]) * duration if rng.random() < 0.7 else 7 * 86400
        jobs.append(fill_owners(WorkloadJob(i, at, duration, min(limit, 7 * 86400), n, a, "", group, user)))
    return Scenario.from_workload(Workload(jobs, uniform_pool(nodes), {}, "synthetic", ()))


def run_policies(scenario: Scenario, names, repeat: int):
    reports = []
    for name in names:
        runs = []
        for _ in range(repeat):
            runs.append(simulate(scenario.nodes, scenario.requests, scenario.runtimes, name, limits=scenario.limits))
        report = runs[0]
        report.seconds = statistics.median(r.seconds for r in runs)
        report.notes = list(scenario.notes)
        reports.append(report)
        print(f"  {name:12} {report.seconds:7.1f} s CPU  {report.passes} passes", file=sys.stderr, flush=True)
    return reports


def quality(reports) -> str:
    base = next((r for r in reports if r.policy == BASELINE), None)
    if base is None:
        return f"  (no ratios: {BASELINE} was not run)"
    lines = []
    for r in reports:
        jct = r.jct.mean / base.jct.mean if base.jct.mean else 1.0
        wait = r.wait.mean / base.wait.mean if base.wait.mean else float("nan")
        lines.append(f"  {r.policy:12} avg JCT {jct:.3f}x  avg wait {wait:.3f}x  of {BASELINE}")
    return "\n".join(lines)


def bench_openb(args) -> None:
    for label, params in (("as recorded", {}), ("contended: 300x arrivals, every 8th node", CONTENDED)):
        scenario = openb_scenario(params.get("load", 1.0), params.get("pool_fraction", 1.0))
        gpus = sum(n.accelerators for n in scenario.nodes)
        print(f"\nopenb {label}: {len(scenario.requests)} jobs on {len(scenario.nodes)} nodes / {gpus} GPUs")
        reports = run_policies(scenario, args.policies, args.repeat)
        print(format_markdown(reports) if args.markdown else format_table(reports))
        print(tenant_table(reports))
        print(quality(reports))
        slowest = max(r.seconds for r in reports)
        verdict = "ok" if slowest < TARGET_OPENB else "MISSED"
        print(f"  slowest policy {slowest:.1f} s CPU (target < {TARGET_OPENB:.0f} s): {verdict}")


def bench_synthetic(args) -> None:
    started = time.process_time()
    scenario = synthetic_scenario(args.jobs)
    print(f"\nsynthetic: {args.jobs} jobs on 1000 nodes x 8 (built in {time.process_time() - started:.1f} s)")
    reports = run_policies(scenario, args.policies, 1)
    print(format_table(reports))
    print(quality(reports))
    for r in reports:
        rate = args.jobs / r.seconds if r.seconds else float("inf")
        projected = 100_000 / rate
        print(f"  {r.policy:12} {rate:8.0f} jobs/s; 100,000 jobs at this rate: {projected:.0f} s (target < 600 s)")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench simulation", description=__doc__)
    parser.add_argument("suite", nargs="?", default="all", choices=["openb", "synthetic", "all"])
    parser.add_argument("--jobs", type=int, default=100_000, help="synthetic trace size")
    parser.add_argument("--repeat", type=int, default=1, help="runs per policy (median)")
    parser.add_argument("--policies", default="all", help="comma-separated, or all")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--quick", action="store_true", help="synthetic 5,000 jobs; openb contended only")
    args = parser.parse_args(argv)
    args.policies = list(POLICIES) if args.policies == "all" else args.policies.split(",")
    if args.quick:
        args.jobs = min(args.jobs, 5000)
    if args.suite in ("openb", "all"):
        bench_openb(args)
    if args.suite in ("synthetic", "all"):
        bench_synthetic(args)
