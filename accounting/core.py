"""The pure core of accounting: run intervals in, accelerator-seconds per key and per time bucket out.

No ORM and no clock: callers pass `now`, so the same history gives the same report, on a virtual clock in a replay
and in unit tests. Times are aware datetimes; everything is summed in whole seconds and shown in minutes or hours.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

HORIZON_DAYS = 100 * 365  # forecasts further out than this say "never at this rate"
DIMENSIONS = ("cluster", "tenant", "group", "user", "partition")


@dataclass(frozen=True)
class Run:
    """One run of a job: when it held its accelerators, how many, whose it was and (if measured) how busy they were."""

    job_id: int
    start: datetime
    end: datetime | None  # None: still running, counted up to `now`
    accelerators: int
    tenant: str
    group: str
    user: str
    partition: str
    utilisation: float | None = None  # mean accelerator utilisation 0..1 where monitoring sampled the run

    def key(self, dimension: str) -> str:
        return "pool" if dimension == "cluster" else getattr(self, dimension)


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime

    def __post_init__(self):
        if self.end <= self.start:
            raise ValueError("the end of the window must be after its start")

    @property
    def seconds(self) -> int:
        return int((self.end - self.start).total_seconds())


def overlap_seconds(start: datetime, end: datetime, window: Window) -> int:
    """Seconds of [start, end) inside the window; 0 when they do not meet."""
    clipped_start, clipped_end = max(start, window.start), min(end, window.end)
    return max(0, int((clipped_end - clipped_start).total_seconds()))


@dataclass
class UsageRow:
    """Accelerator-seconds of one key: allocated; of those, the part monitoring measured; and used (busy) seconds."""

    key: str
    allocated: int = 0
    measured: int = 0
    used: float = 0.0
    jobs: set[int] = field(default_factory=set)

    def add(self, run: Run, seconds: int) -> None:
        held = seconds * run.accelerators
        self.allocated += held
        self.jobs.add(run.job_id)
        if run.utilisation is not None:
            self.measured += held
            self.used += held * run.utilisation

    @property
    def efficiency(self) -> float | None:
        """Used over measured allocated time: None when nothing of this row was measured."""
        return self.used / self.measured if self.measured else None

    @property
    def used_estimate(self) -> float | None:
        """Used accelerator-seconds, extrapolated from the measured share to all allocated time."""
        return None if self.efficiency is None else self.allocated * self.efficiency


def usage_by(runs: Iterable[Run], window: Window, dimension: str, now: datetime) -> list[UsageRow]:
    """One row per key of `dimension` with time inside the window, largest allocation first."""
    if dimension not in DIMENSIONS:
        raise ValueError(f"unknown dimension {dimension!r}: one of {', '.join(DIMENSIONS)}")
    rows: dict[str, UsageRow] = {}
    for run in runs:
        seconds = overlap_seconds(run.start, run.end or now, window)
        if seconds and run.accelerators:
            key = run.key(dimension)
            rows.setdefault(key, UsageRow(key)).add(run, seconds)
    return sorted(rows.values(), key=lambda row: (-row.allocated, row.key))


def bucket_starts(window: Window, step: timedelta) -> list[datetime]:
    starts, at = [], window.start
    while at < window.end:
        starts.append(at)
        at += step
    return starts


def series_by(
    runs: Iterable[Run], window: Window, step: timedelta, dimension: str, now: datetime
) -> tuple[list[datetime], dict[str, list[int]]]:
    """Allocated accelerator-seconds of each key in each step of the window (for the usage-over-time chart)."""
    starts = bucket_starts(window, step)
    series: dict[str, list[int]] = {}
    for run in runs:
        end = min(run.end or now, window.end)
        start = max(run.start, window.start)
        if end <= start or not run.accelerators:
            continue
        values = series.setdefault(run.key(dimension), [0] * len(starts))
        first = int((start - window.start) / step)
        for index in range(first, len(starts)):
            bucket_start = starts[index]
            if bucket_start >= end:
                break
            bucket_end = min(bucket_start + step, window.end)
            seconds = int((min(end, bucket_end) - max(start, bucket_start)).total_seconds())
            values[index] += max(0, seconds) * run.accelerators
    return starts, dict(sorted(series.items()))


def charged_seconds(runs: Iterable[tuple[datetime, datetime | None, int]], *, until: datetime) -> float:
    """Accelerator-seconds of (start, end, accelerators) runs up to `until`; a run without an end counts up to it."""
    total = 0.0
    for start, end, accelerators in runs:
        stop = until if end is None else min(end, until)
        total += max(0.0, (stop - start).total_seconds()) * accelerators
    return total


@dataclass(frozen=True)
class Forecast:
    """A GrpTRESMins budget: spent, left, the recent burn rate and when it runs out at that rate."""

    budget_minutes: int
    spent_minutes: float
    burn_per_day: float
    runs_out_at: datetime | None  # None: nothing is burning, it never runs out at this rate
    method: str

    @property
    def remaining_minutes(self) -> float:
        return max(0.0, self.budget_minutes - self.spent_minutes)

    @property
    def spent_fraction(self) -> float:
        return self.spent_minutes / self.budget_minutes if self.budget_minutes else 1.0


def forecast(*, budget_minutes: int, spent_minutes: float, recent_minutes: float, lookback: timedelta, now: datetime):
    """Linear forecast: the budget left, divided by the mean burn rate over the last `lookback`."""
    days = lookback.total_seconds() / 86400
    burn_per_day = recent_minutes / days if days > 0 else 0.0
    method = f"linear: budget left / mean burn rate of the last {days:g} days"
    remaining = budget_minutes - spent_minutes
    if remaining <= 0:
        return Forecast(budget_minutes, spent_minutes, burn_per_day, now, method)
    if burn_per_day <= 0 or remaining / burn_per_day > HORIZON_DAYS:
        # A trickle would run out after the calendar does: as good as never.
        return Forecast(budget_minutes, spent_minutes, burn_per_day, None, method)
    return Forecast(budget_minutes, spent_minutes, burn_per_day, now + timedelta(days=remaining / burn_per_day), method)
