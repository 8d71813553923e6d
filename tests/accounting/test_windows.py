from datetime import UTC, datetime, timedelta

import pytest

from accounting.windows import WindowError, parse_step, parse_window

NOW = datetime(2026, 3, 10, 12, 34, 56, tzinfo=UTC)


def test_default_window_is_the_last_week_to_the_minute_rounded_up():
    window = parse_window(None, None, NOW)
    assert window.end == datetime(2026, 3, 10, 12, 35, tzinfo=UTC)
    assert window.end - window.start == timedelta(days=7)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-03-01", datetime(2026, 3, 1, tzinfo=UTC)),
        ("2026-03-01T08:30", datetime(2026, 3, 1, 8, 30, tzinfo=UTC)),
        ("2026-03-01T08:30+02:00", datetime(2026, 3, 1, 6, 30, tzinfo=UTC)),
        ("today", datetime(2026, 3, 10, tzinfo=UTC)),
        ("yesterday", datetime(2026, 3, 9, tzinfo=UTC)),
        ("-2d", datetime(2026, 3, 8, 12, 35, tzinfo=UTC)),
    ],
)
def test_start_formats(text, expected):
    assert parse_window(text, "now", NOW).start == expected


@pytest.mark.parametrize(("start", "end", "field"), [("soon", None, "start"), (None, "2026-13-01", "end")])
def test_bad_times_name_the_field(start, end, field):
    with pytest.raises(WindowError) as caught:
        parse_window(start, end, NOW)
    assert caught.value.field == field


def test_end_before_start_is_refused():
    with pytest.raises(WindowError, match="must be after"):
        parse_window("2026-03-05", "2026-03-01", NOW)


def test_step_defaults_follow_the_window_and_too_many_points_are_refused():
    assert parse_step(None, parse_window("-2d", None, NOW)) == timedelta(hours=1)
    assert parse_step(None, parse_window("-30d", None, NOW)) == timedelta(days=1)
    with pytest.raises(WindowError, match="more than"):
        parse_step("hour", parse_window("-1000d", None, NOW))


@pytest.mark.parametrize(("start", "end"), [("9999-12-24", "9999-12-31"), ("0001-01-01", "0001-01-05")])
def test_times_at_the_calendars_edges_are_refused(start, end):
    with pytest.raises(WindowError, match="outside"):
        parse_window(start, end, NOW)
