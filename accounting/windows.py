"""Report windows as people type them (sreport's -S/-E): dates, date-times, ``now``, ``today``, ``-7d``.

Naive times are UTC. The default window is the 7 days up to now (to the minute, rounded up).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta

from django.utils.dateparse import parse_date, parse_datetime

from accounting.core import Window

DEFAULT_DAYS = 7
MAX_DAYS = 3660
MAX_BUCKETS = 2000
# Far enough for any history, and far from datetime's year 9999, where a step past the end would overflow.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
STEPS = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(days=7)}
_RELATIVE = re.compile(r"^-(\d{1,5})([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class WindowError(ValueError):
    """Bad -S/-E input; `field` says which ("start" or "end")."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def _midnight(day) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def parse_when(text: str, now: datetime) -> datetime:
    text = text.strip()
    lowered = text.lower()
    if lowered == "now":
        return now
    if lowered in ("today", "yesterday"):
        return _midnight(now.date()) - timedelta(days=1 if lowered == "yesterday" else 0)
    if match := _RELATIVE.match(lowered):
        return now - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    try:
        moment = parse_datetime(text)
        day = None if moment else parse_date(text)
    except ValueError:
        moment = day = None
    if moment is None and day is None:
        raise ValueError(f"{text!r} is not a time: use 2026-03-01, 2026-03-01T08:00, now, today, yesterday or -7d")
    if moment is None:
        return _midnight(day)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except (OverflowError, ValueError) as exc:
        raise ValueError(f"{text!r} has no UTC equivalent") from exc


def parse_window(start: str | None, end: str | None, now: datetime) -> Window:
    """The window from -S/-E text, either may be empty. Raises WindowError naming the field."""
    # To the minute, rounded up: a job that started seconds ago is inside "the last hour".
    minute = now.replace(second=0, microsecond=0)
    now = minute if minute == now else minute + timedelta(minutes=1)
    try:
        end_at = parse_when(end, now) if end else now
    except ValueError as exc:
        raise WindowError("end", str(exc)) from exc
    try:
        start_at = parse_when(start, now) if start else end_at - timedelta(days=DEFAULT_DAYS)
    except ValueError as exc:
        raise WindowError("start", str(exc)) from exc
    for field, moment in (("start", start_at), ("end", end_at)):
        if not EARLIEST <= moment <= LATEST:
            raise WindowError(field, f"{moment:%Y-%m-%d} is outside {EARLIEST:%Y} to {LATEST:%Y}")
    if end_at <= start_at:
        raise WindowError(
            "end", f"the end ({end_at:%Y-%m-%dT%H:%M}Z) must be after the start ({start_at:%Y-%m-%dT%H:%M}Z)"
        )
    if end_at - start_at > timedelta(days=MAX_DAYS):
        raise WindowError("start", f"a report covers at most {MAX_DAYS} days")
    return Window(start_at, end_at)


def parse_step(step: str | None, window: Window) -> timedelta:
    """The chart's bucket: hour, day or week; unset picks hours up to 3 days, days up to 120, else weeks."""
    if not step:
        days = window.seconds / 86400
        step = "hour" if days <= 3 else "day" if days <= 120 else "week"
    if step not in STEPS:
        raise WindowError("step", f"{step!r}: one of {', '.join(STEPS)}")
    if window.seconds / STEPS[step].total_seconds() > MAX_BUCKETS:
        raise WindowError(
            "step", f"{step} steps over this window make more than {MAX_BUCKETS} points: use a longer step"
        )
    return STEPS[step]
