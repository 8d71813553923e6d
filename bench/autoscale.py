"""The autoscaler replayed on the Azure LLM code trace: replica-hours saved against fixed provisioning, and the SLO.

    python -m bench autoscale [--trace PATH] [--quick]

- default: one replay with the default settings (docs/autoscaling.md), its full report, and how long a replay takes
  (median of 5).
- sweep: min replicas x target x cold start x stable window; for each, the saving against a fixed fleet provisioned
  for the busiest second (the seed's comparison), the share of requests within the SLO, and the saving against the
  smallest fixed fleet that is as good on the SLO. Then the settings closest to the seed's claimed 46% saving.
- delays: Knative's scale-down delay (0, 120, 300 s) against the same baselines.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from pathlib import Path

from inference.autoscaler import Policy
from inference.replay import ReplaySettings, format_report, load_arrivals, replay

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "traces" / "AzureLLMInferenceTrace_code.csv"
SLICE = ROOT / "tests" / "inference" / "data" / "azure_code_first_800.csv"
SEED_CLAIM = 0.46


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench autoscale", description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=None, help="CSV of request times (default: the Azure trace)")
    parser.add_argument("--quick", action="store_true", help="a small sweep")
    args = parser.parse_args(argv)
    path = args.trace or (TRACE if TRACE.is_file() else SLICE)
    arrivals = load_arrivals(path)
    print(f"trace: {path}")

    timings = []
    for _ in range(5 if not args.quick else 1):
        started = time.perf_counter()
        report = replay(arrivals, ReplaySettings())
        timings.append(time.perf_counter() - started)
    print(format_report(report))
    print(f"replay time: median {statistics.median(timings) * 1000:.0f} ms for {len(arrivals)} requests")
    print()
    _sweep(arrivals, args.quick)
    print()
    _delays(arrivals, args.quick)


def _sweep(arrivals: list[float], quick: bool) -> None:
    mins = (2, 4) if quick else (1, 2, 4, 8)
    targets = (3.0,) if quick else (2.0, 3.0, 4.0)
    cold_starts = (30.0,) if quick else (5.0, 30.0)
    windows = (60.0,) if quick else (60.0, 20.0)
    rows = []
    for low, target, cold, window in itertools.product(mins, targets, cold_starts, windows):
        policy = Policy(stable_window_s=window)
        settings = ReplaySettings(min_replicas=low, max_replicas=40, target=target, cold_start_s=cold, policy=policy)
        rows.append((settings, replay(arrivals, settings)))
    print(f"fixed at the peak: {rows[0][1].fixed_replicas} replicas (busiest second {rows[0][1].peak_rps} req/s)")
    print(
        f"{'min':>4}{'target':>8}{'cold s':>8}{'stable s':>10}{'peak':>6}{'replica-h':>11}"
        f"{'saved vs peak':>15}{'within SLO':>12}{'saved at = SLO':>16}"
    )
    for settings, report in rows:
        print(
            f"{settings.min_replicas:>4}{settings.target:>8g}{settings.cold_start_s:>8g}"
            f"{settings.policy.stable_window_s:>10g}{report.autoscaled.peak_replicas:>6}"
            f"{report.autoscaled.replica_hours:>11.2f}{report.saving:>15.1%}{report.autoscaled.within_slo:>12.2%}"
            f"{report.saving_at_equal_slo:>16.1%}"
        )
    closest = min(rows, key=lambda row: abs(row[1].saving - SEED_CLAIM))
    settings, report = closest
    print()
    print(
        f"closest to the seed's {SEED_CLAIM:.0%}: min {settings.min_replicas}, target {settings.target:g} req/s,"
        f" cold start {settings.cold_start_s:g} s, stable window {settings.policy.stable_window_s:g} s"
        f" -> {report.saving:.1%} saved against fixed at the peak"
        f" ({report.fixed_replicas} replicas), {report.autoscaled.within_slo:.2%} within the SLO"
        f" (fixed: {report.fixed.within_slo:.2%}); against the fixed fleet as good on the SLO"
        f" ({report.equal_slo_replicas} replicas): {report.saving_at_equal_slo:.1%}"
    )
    good = [row for row in rows if row[1].autoscaled.within_slo >= 0.99]
    if good:
        settings, report = max(good, key=lambda row: row[1].saving)
        print(
            f"most saved with >= 99% within the SLO: min {settings.min_replicas}, target {settings.target:g},"
            f" cold start {settings.cold_start_s:g} s, stable window {settings.policy.stable_window_s:g} s"
            f" -> {report.saving:.1%} against the peak,"
            f" {report.saving_at_equal_slo:.1%} against the fixed fleet as good on the SLO"
        )
    else:
        print("no setting of the sweep serves 99% of requests within the SLO")


def _delays(arrivals: list[float], quick: bool) -> None:
    """Knative's scale-down delay: do recurring bursts find their replicas still warm, and at what cost?"""
    print("scale-down delay (min 2, stable window 60 s):")
    print(f"{'target':>8}{'cold s':>8}{'delay s':>9}{'replica-h':>11}{'within SLO':>12}{'saved at = SLO':>16}")
    for target, cold, delay in itertools.product((3.0, 4.0), (5.0, 30.0), (0.0,) if quick else (0.0, 120.0, 300.0)):
        policy = Policy(scale_down_delay_s=delay)
        settings = ReplaySettings(min_replicas=2, max_replicas=40, target=target, cold_start_s=cold, policy=policy)
        report = replay(arrivals, settings)
        print(
            f"{target:>8g}{cold:>8g}{delay:>9g}{report.autoscaled.replica_hours:>11.2f}"
            f"{report.autoscaled.within_slo:>12.2%}{report.saving_at_equal_slo:>16.1%}"
        )
