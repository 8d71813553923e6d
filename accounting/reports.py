"""Reports as plain data, the same for the API, the /usage/ page, its CSV export and (through the API) the CLI."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta

from accounting import core, selectors
from accounting.windows import STEPS

USED_METHOD = (
    "used = allocated x mean accelerator utilisation measured by monitoring; runs without samples are 'not measured' "
    "and left out of used and efficiency"
)
STEP_NAMES = {delta: name for name, delta in STEPS.items()}
CSV_COLUMNS = ("name", "allocated_minutes", "allocated_hours", "measured_hours", "used_hours", "efficiency", "jobs")


def _hours(seconds: float) -> float:
    return round(seconds / 3600, 2)


def row_data(row: core.UsageRow) -> dict:
    efficiency = row.efficiency
    return {
        "name": row.key,
        "allocated_minutes": round(row.allocated / 60),
        "allocated_hours": _hours(row.allocated),
        "measured_hours": _hours(row.measured),
        "used_hours": None if efficiency is None else _hours(row.used),
        "efficiency": None if efficiency is None else round(efficiency, 4),
        "jobs": len(row.jobs),
    }


def _total(rows: list[core.UsageRow]) -> core.UsageRow:
    total = core.UsageRow("total")
    for row in rows:
        total.allocated += row.allocated
        total.measured += row.measured
        total.used += row.used
        total.jobs |= row.jobs
    return total


def usage(user, window: core.Window, dimension: str, filters: selectors.Filters, *, now: datetime) -> dict:
    rows = selectors.usage_report(user, window, dimension, filters, now=now)
    total = _total(rows)
    capacity = selectors.pool_capacity_seconds(window)
    return {
        "start": window.start,
        "end": window.end,
        "by": dimension,
        "rows": [row_data(row) for row in rows],
        "total": row_data(total),
        "pool_capacity_hours": _hours(capacity),
        "pool_allocated_percent": round(100 * total.allocated / capacity, 2) if capacity else None,
        "used_method": USED_METHOD,
    }


def usage_csv(report: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([report["by"], *CSV_COLUMNS[1:]])
    for row in [*report["rows"], report["total"]]:
        writer.writerow(["" if row[column] is None else row[column] for column in CSV_COLUMNS])
    return out.getvalue()


def series(
    user, window: core.Window, step: timedelta, dimension: str, filters: selectors.Filters, *, now: datetime
) -> dict:
    starts, values = selectors.usage_series(user, window, step, dimension, filters, now=now)
    return {
        "start": window.start,
        "end": window.end,
        "step_seconds": int(step.total_seconds()),
        "step": STEP_NAMES.get(step, f"{int(step.total_seconds())} s"),
        "by": dimension,
        "times": starts,
        "series": [{"name": name, "allocated_hours": [_hours(v) for v in points]} for name, points in values.items()],
    }


def budgets(user, *, now: datetime) -> dict:
    found = selectors.budgets(user, now=now)
    lookback_days = found[0].lookback.total_seconds() / 86400 if found else None
    return {
        "method": found[0].forecast.method if found else "",
        "lookback_days": lookback_days,
        "budgets": [_budget_data(budget) for budget in found],
    }


def _budget_data(budget: selectors.Budget) -> dict:
    burn = budget.forecast
    return {
        "group": budget.group.name,
        "tenant": budget.group.tenant.name,
        "budget_minutes": burn.budget_minutes,
        "spent_minutes": round(burn.spent_minutes),
        "remaining_minutes": round(burn.remaining_minutes),
        "spent_percent": round(100 * burn.spent_fraction, 1),
        "burn_per_day": round(burn.burn_per_day, 1),
        "runs_out_at": burn.runs_out_at,
        "burn_down": [{"at": at, "remaining_minutes": round(left)} for at, left in budget.burn_down],
    }
