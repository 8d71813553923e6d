"""The pure accounting core: clipping runs to a window, to the minute, across days and window edges."""

from datetime import UTC, datetime, timedelta

import pytest

from accounting import core


def at(day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, tzinfo=UTC)


def run(job_id, start, end, accelerators=8, group="ai-team", user="alice", tenant="acme", partition="main", util=None):
    return core.Run(job_id, start, end, accelerators, tenant, group, user, partition, util)


NOW = at(10)
WINDOW = core.Window(at(2), at(4))  # two whole days


def minutes_of(rows, key):
    return {row.key: row.allocated // 60 for row in rows}[key]


def test_a_run_inside_the_window_counts_whole():
    rows = core.usage_by([run(1, at(2, 10, 0), at(2, 11, 30))], WINDOW, "group", NOW)
    assert minutes_of(rows, "ai-team") == 90 * 8


def test_a_run_across_the_window_start_counts_from_the_start():
    rows = core.usage_by([run(1, at(1, 23, 17), at(2, 0, 43), accelerators=2)], WINDOW, "group", NOW)
    assert minutes_of(rows, "ai-team") == 43 * 2


def test_a_run_across_the_window_end_counts_to_the_end():
    rows = core.usage_by([run(1, at(3, 23, 59), at(5, 12, 0), accelerators=1)], WINDOW, "group", NOW)
    assert minutes_of(rows, "ai-team") == 1


def test_a_run_longer_than_the_window_counts_the_window():
    rows = core.usage_by([run(1, at(1), at(6), accelerators=4)], WINDOW, "group", NOW)
    assert minutes_of(rows, "ai-team") == 2 * 24 * 60 * 4


def test_runs_outside_the_window_or_touching_its_edges_count_nothing():
    runs = [run(1, at(1), at(2)), run(2, at(4), at(5)), run(3, at(5), at(6))]
    assert core.usage_by(runs, WINDOW, "group", NOW) == []


def test_a_running_job_counts_up_to_now():
    now = at(3, 6, 15)
    rows = core.usage_by([run(1, at(3, 6, 0), None, accelerators=3)], WINDOW, "group", now)
    assert minutes_of(rows, "ai-team") == 15 * 3


def test_rows_group_by_each_dimension_and_keep_jobs_apart():
    runs = [
        run(1, at(2, 1), at(2, 2), group="ai-team", user="alice"),
        run(2, at(2, 1), at(2, 3), group="vision", user="alice", partition="big"),
        run(3, at(2, 1), at(2, 2), group="vision", user="bob"),
    ]
    by_user = {row.key: row for row in core.usage_by(runs, WINDOW, "user", NOW)}
    assert by_user["alice"].allocated == (60 + 120) * 60 * 8 and by_user["alice"].jobs == {1, 2}
    assert [row.key for row in core.usage_by(runs, WINDOW, "group", NOW)] == ["vision", "ai-team"]
    assert {row.key for row in core.usage_by(runs, WINDOW, "partition", NOW)} == {"main", "big"}
    assert [row.key for row in core.usage_by(runs, WINDOW, "cluster", NOW)] == ["pool"]


def test_used_hours_come_from_measured_runs_only():
    runs = [run(1, at(2, 0), at(2, 1), util=0.5), run(2, at(2, 0), at(2, 1))]
    (row,) = core.usage_by(runs, WINDOW, "group", NOW)
    assert row.allocated == 2 * 3600 * 8
    assert row.measured == 3600 * 8
    assert row.used == pytest.approx(0.5 * 3600 * 8)
    assert row.efficiency == pytest.approx(0.5)


def test_nothing_measured_means_no_used_number():
    (row,) = core.usage_by([run(1, at(2, 0), at(2, 1))], WINDOW, "group", NOW)
    assert row.efficiency is None and row.used_estimate is None


def test_unknown_dimension_is_refused():
    with pytest.raises(ValueError, match="unknown dimension"):
        core.usage_by([], WINDOW, "planet", NOW)


def test_an_empty_window_is_refused():
    with pytest.raises(ValueError):
        core.Window(at(2), at(2))


def test_series_split_a_run_across_day_buckets():
    runs = [run(1, at(2, 22, 0), at(3, 1, 30), accelerators=2)]
    starts, series = core.series_by(runs, WINDOW, timedelta(days=1), "group", NOW)
    assert starts == [at(2), at(3)]
    assert series == {"ai-team": [2 * 3600 * 2, int(1.5 * 3600) * 2]}


def test_series_sum_to_the_usage_rows():
    runs = [run(i, at(1, 20) + timedelta(minutes=37 * i), at(2, 5) + timedelta(minutes=53 * i)) for i in range(30)]
    _, series = core.series_by(runs, WINDOW, timedelta(hours=1), "group", NOW)
    (row,) = core.usage_by(runs, WINDOW, "group", NOW)
    assert sum(series["ai-team"]) == row.allocated


def test_forecast_is_linear_on_the_recent_burn_rate():
    burn = core.forecast(
        budget_minutes=10_000, spent_minutes=4_000, recent_minutes=7_000, lookback=timedelta(days=7), now=NOW
    )
    assert burn.burn_per_day == pytest.approx(1000)
    assert burn.runs_out_at == NOW + timedelta(days=6)
    assert "linear" in burn.method


def test_forecast_without_burn_never_runs_out_and_a_spent_budget_is_out_now():
    idle = core.forecast(budget_minutes=100, spent_minutes=10, recent_minutes=0, lookback=timedelta(days=7), now=NOW)
    assert idle.runs_out_at is None
    spent = core.forecast(budget_minutes=100, spent_minutes=150, recent_minutes=5, lookback=timedelta(days=7), now=NOW)
    assert spent.runs_out_at == NOW and spent.remaining_minutes == 0


def test_a_trickle_that_would_outlast_the_calendar_never_runs_out():
    burn = core.forecast(
        budget_minutes=100_000, spent_minutes=0.1, recent_minutes=0.1, lookback=timedelta(days=7), now=NOW
    )
    assert burn.runs_out_at is None and burn.burn_per_day > 0
