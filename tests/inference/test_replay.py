"""The autoscaler replayed on a virtual clock (inference.replay): pure, no database."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference.replay import ReplaySettings, format_report, load_arrivals, replay

SLICE = Path(__file__).parent / "data" / "azure_code_first_800.csv"


def uniform(rate: float, seconds: float, start: float = 0.0) -> list[float]:
    count = int(rate * seconds)
    return [start + i / rate for i in range(count)]


def test_a_steady_load_settles_on_load_over_target_and_meets_the_slo():
    # 12 req/s, 3 per replica: four replicas of capacity 4 req/s keep every request at its service time.
    report = replay(uniform(12, 600), ReplaySettings(min_replicas=1, max_replicas=20, target=3, cold_start_s=0))
    assert report.autoscaled.peak_replicas == 4
    assert report.timeline[-1][1] == 4
    assert report.autoscaled.within_slo > 0.99  # all but the first seconds, before the first scale-up
    assert report.fixed_replicas == 3  # 12 req/s at 4 req/s each
    assert report.saving < 0  # a flat load: nothing to save, and the target (3 of 4 req/s) keeps headroom


def test_a_burst_followed_by_quiet_saves_replica_hours_against_the_peak_fleet():
    arrivals = uniform(2, 300) + uniform(30, 120, start=300) + uniform(2, 1200, start=420)
    report = replay(arrivals, ReplaySettings(min_replicas=1, max_replicas=20, target=3, cold_start_s=10))
    assert report.autoscaled.peak_replicas >= 10
    assert report.fixed_replicas == 8  # the busiest second (30 requests) at 4 req/s per replica
    assert report.autoscaled.replica_hours < 0.5 * report.fixed.replica_hours
    assert report.saving > 0.5
    assert report.fixed.within_slo == 1.0


def test_cold_start_delays_new_capacity_and_costs_slo():
    arrivals = uniform(1, 120) + uniform(20, 120, start=120)
    quick = replay(arrivals, ReplaySettings(min_replicas=1, target=3, cold_start_s=0))
    slow = replay(arrivals, ReplaySettings(min_replicas=1, target=3, cold_start_s=60))
    assert slow.autoscaled.within_slo < quick.autoscaled.within_slo
    assert slow.autoscaled.p99_s > quick.autoscaled.p99_s


def test_the_quota_caps_the_fleet_and_the_capped_decisions_are_counted():
    arrivals = uniform(40, 300)
    report = replay(arrivals, ReplaySettings(min_replicas=2, max_replicas=20, target=3, quota_replicas=6))
    assert report.autoscaled.peak_replicas == 6
    assert report.blocked > 0


def test_panic_is_entered_on_a_sudden_burst():
    report = replay(uniform(1, 120) + uniform(30, 30, start=120), ReplaySettings(min_replicas=1, target=3))
    assert report.panics >= 1


def test_the_concurrency_metric_scales_on_requests_in_flight():
    # 12 req/s x 0.5 s = 6 in flight; target 2 in flight per replica: three replicas once the queue of the first
    # seconds (one replica, so a burst of concurrency and a panic) has drained.
    settings = ReplaySettings(min_replicas=1, metric="concurrency", target=2, cold_start_s=0)
    report = replay(uniform(12, 600), settings)
    assert report.timeline[-1][1] == 3


def test_a_given_fixed_fleet_is_the_baseline():
    report = replay(uniform(12, 300), ReplaySettings(min_replicas=1, target=3, fixed_replicas=10))
    assert report.fixed_replicas == 10
    assert report.fixed.replica_hours == pytest.approx(10 * report.duration_s / 3600, rel=0.01)


def test_the_equal_slo_fleet_is_the_smallest_that_is_as_good():
    report = replay(load_arrivals(SLICE), ReplaySettings())
    assert report.equal_slo.within_slo >= report.autoscaled.within_slo
    smaller = replay(load_arrivals(SLICE), ReplaySettings(fixed_replicas=report.equal_slo_replicas - 1))
    assert smaller.fixed.within_slo < report.autoscaled.within_slo


def test_the_same_trace_and_settings_give_the_same_report():
    arrivals = load_arrivals(SLICE)
    assert replay(arrivals, ReplaySettings()) == replay(arrivals, ReplaySettings())


def test_the_report_prints_the_saving_and_the_slo_figures():
    text = format_report(replay(load_arrivals(SLICE), ReplaySettings()))
    assert "800 requests" in text
    assert "saved against fixed at the peak:" in text
    assert "within SLO" in text and "autoscaled" in text


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(min_replicas=0), "min_replicas must be at least 1"),
        (dict(min_replicas=5, max_replicas=2), "max_replicas must be at least min_replicas"),
        (dict(metric="rps"), "metric must be"),
        (dict(target=0), "must be positive"),
        (dict(quota_replicas=1), "quota_replicas must admit at least min_replicas"),
    ],
)
def test_bad_settings_are_refused_with_a_message(fields, message):
    with pytest.raises(ValueError, match=message):
        ReplaySettings(**fields)


def test_an_empty_trace_is_refused():
    with pytest.raises(ValueError, match="no requests"):
        replay([], ReplaySettings())


# --- reading traces ---------------------------------------------------------------------------------------------


def test_the_azure_trace_is_read_as_seconds_from_its_timestamps():
    arrivals = load_arrivals(SLICE)
    assert len(arrivals) == 800
    assert arrivals == sorted(arrivals)
    assert arrivals[1] - arrivals[0] == pytest.approx(0.052, abs=1e-6)  # 18:17:03.97996 -> 18:17:04.03196


def test_a_headerless_csv_of_seconds_is_read(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("3.5\n1\n2.25\n")
    assert load_arrivals(path) == [1.0, 2.25, 3.5]


def test_a_named_column_is_used(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("id,sent\na,10\nb,4\n")
    assert load_arrivals(path, column="sent") == [4.0, 10.0]


def test_a_missing_column_names_the_columns_there_are(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("id,sent\na,10\n")
    with pytest.raises(ValueError, match="no column 'when'; the columns are id, sent"):
        load_arrivals(path, column="when")


def test_a_bad_time_names_the_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("timestamp\n2023-11-16 18:17:03\nyesterday\n")
    with pytest.raises(ValueError, match=r"t.csv:3: 'yesterday' is neither seconds nor a date and time"):
        load_arrivals(path)
