"""The pure arithmetic: counters to rates, SDK records to shares, rollups. No database."""

import pytest

from cluster.backends.base import TaskUsage
from monitoring import core


def reading(at, cpu, **extra):
    return TaskUsage(rank=0, node="node1", at=at, cpu_seconds=cpu, rss_bytes=100, swap_bytes=0, **extra)


def test_a_busy_core_per_accelerator_is_full_utilisation():
    point = core.derive(reading(110.0, 19.0), core.Previous(at=100.0, cpu_seconds=9.0), accelerators=1)
    assert point.cpu_cores == pytest.approx(1.0)
    assert point.utilisation == pytest.approx(1.0)


def test_cpu_stand_in_divides_by_accelerators_and_is_capped():
    previous = core.Previous(at=100.0, cpu_seconds=0.0)
    assert core.derive(reading(110.0, 20.0), previous, accelerators=8).utilisation == pytest.approx(0.25)
    assert core.derive(reading(110.0, 200.0), previous, accelerators=2).utilisation == 1.0


def test_measured_accelerator_utilisation_wins_over_the_cpu_stand_in():
    point = core.derive(reading(110.0, 100.0, accel_util=0.3), core.Previous(at=100.0), accelerators=1)
    assert point.utilisation == 0.3


def test_no_rate_without_a_previous_reading_or_too_close_to_it():
    assert core.derive(reading(110.0, 5.0), None, accelerators=1).utilisation is None
    assert core.derive(reading(110.0, 5.0), core.Previous(at=109.9), accelerators=1).cpu_cores is None


def test_swap_growth_is_a_rate_of_bytes():
    usage = TaskUsage(rank=0, node="n", at=110.0, cpu_seconds=0.0, swap_bytes=10 << 20)
    point = core.derive(usage, core.Previous(at=100.0, swap_bytes=0), accelerators=1)
    assert point.swap_rate == pytest.approx((10 << 20) / 10)


def test_step_summary_weights_shares_by_step_time():
    records = [
        {"step_time_s": 1.0, "comm_time_s": 0.5, "compute_time_s": 0.4, "data_time_s": 0.1, "samples_per_s": 100},
        {"step_time_s": 3.0, "comm_time_s": 0.5, "compute_time_s": 2.5, "data_time_s": 0.0, "samples_per_s": 50},
    ]
    summary = core.step_summary(records)
    assert summary["comm_share"] == pytest.approx(0.25)
    assert summary["compute_share"] == pytest.approx(0.725)
    assert summary["step_time_s"] == pytest.approx(2.0)
    assert summary["throughput"] == pytest.approx(75)
    assert summary["steps"] == 2


def test_step_summary_ignores_junk_records():
    assert core.step_summary([{"step_time_s": "x"}, {"step_time_s": -1}, {}]) == {}


def test_rollup_means_rates_and_keeps_memory_peaks():
    points = [
        core.Point(rank=0, at=60.0 + i * 10, utilisation=u, rss_bytes=r, cpu_seconds=float(i), steps=2)
        for i, (u, r) in enumerate([(0.2, 5), (0.4, 9), (0.6, 7)])
    ] + [core.Point(rank=0, at=125.0, utilisation=1.0)]
    first, second = core.rollup(points, 60)
    assert (first.at, second.at) == (60.0, 120.0)
    assert first.utilisation == pytest.approx(0.4)
    assert first.rss_bytes == 9
    assert first.cpu_seconds == 2.0
    assert first.steps == 6
    assert second.utilisation == 1.0


def test_slot_means_average_ranks():
    points = [core.Point(rank=r, at=100.0 + r, utilisation=u) for r, u in enumerate([0.2, 0.4])]
    assert core.slot_means(points, 10) == [(100.0, pytest.approx(0.3))]
