"""Reads for accounting: the runs a user may see in a window, turned into usage rows, series and budgets.

Scoping goes through ``Job.objects.visible_to`` like every other read: a member sees their groups' runs, a tenant
admin the whole tenant, staff the pool. The database finds the runs that meet the window (an indexed range on
``started_at``/``ended_at``); the pure core in ``accounting.core`` clips and sums them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db.models import F, Q, Sum

from accounting import core
from accounting.config import budget_lookback_days
from accounting.utilisation import mean_utilisation
from cluster.models import Node
from jobs.models import Job
from jobs.scheduling import Epoch
from tenants.models import Group
from vocab.tres import ACCEL

RUN_FIELDS = (
    "pk",
    "start_epoch",
    "end_epoch",
    "nodes",
    "accelerators_per_node",
    "tenant__name",
    "group__name",
    "user__username",
    "partition__name",
)


@dataclass(frozen=True)
class Filters:
    tenant: str = ""
    group: str = ""
    user: str = ""
    partition: str = ""


def runs_query(user, window: core.Window, filters: Filters = Filters()):
    """Jobs of `user`'s scope whose run meets the window (requeued jobs: their latest run)."""
    jobs = (
        Job.objects.visible_to(user)
        .exclude(started_at=None)
        .filter(started_at__lt=window.end)
        .filter(Q(ended_at=None) | Q(ended_at__gt=window.start))
    )
    for field, lookup in (
        ("tenant", "tenant__name"),
        ("user", "user__username"),
        ("partition", "partition__name"),
    ):
        if value := getattr(filters, field):
            jobs = jobs.filter(**{lookup: value})
    if filters.group:
        # A group's report covers its subtree, as its limits do.
        group = Group.objects.visible_to(user).filter(name=filters.group).values_list("path", flat=True).first()
        jobs = jobs.filter(group__path__startswith=group) if group else jobs.none()
    return jobs


def runs_in_window(user, window: core.Window, filters: Filters = Filters()) -> list[core.Run]:
    jobs = runs_query(user, window, filters).order_by()
    # Epoch seconds from the database: building 100,000 datetimes from SQLite's text costs more than the report.
    rows = list(jobs.annotate(start_epoch=Epoch("started_at"), end_epoch=Epoch("ended_at")).values_list(*RUN_FIELDS))
    measured = mean_utilisation(jobs) if rows else {}
    return [
        core.Run(
            job_id=pk,
            start=_when(started),
            end=None if ended is None else _when(ended),
            accelerators=nodes * per_node,
            tenant=tenant,
            group=group,
            user=username,
            partition=partition,
            utilisation=measured.get(pk),
        )
        for pk, started, ended, nodes, per_node, tenant, group, username, partition in rows
    ]


def _when(epoch: float) -> datetime:
    return datetime.fromtimestamp(round(epoch), UTC)


def usage_report(user, window: core.Window, dimension: str, filters: Filters = Filters(), *, now: datetime):
    return core.usage_by(runs_in_window(user, window, filters), window, dimension, now)


def pool_capacity_seconds(window: core.Window) -> int:
    """Accelerator-seconds the pool's nodes offer in the window (today's inventory)."""
    accelerators = Node.objects.aggregate(total=Sum("accelerators"))["total"] or 0
    return accelerators * window.seconds


def usage_series(user, window: core.Window, step: timedelta, dimension: str, filters: Filters, *, now: datetime):
    return core.series_by(runs_in_window(user, window, filters), window, step, dimension, now)


# --- GrpTRESMins budgets ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    group: Group
    forecast: core.Forecast
    lookback: timedelta
    # (when, budget minutes left then): one point a day over the lookback, ending now — the burn-down so far.
    burn_down: list[tuple[datetime, float]]


def _group_runs(group: Group) -> list[tuple[datetime, datetime | None, int]]:
    runs = Job.objects.under_group_path(group.path).exclude(started_at=None)
    return list(runs.values_list("started_at", "ended_at", F("nodes") * F("accelerators_per_node")))


def group_budget(group: Group, *, now: datetime, lookback: timedelta | None = None) -> core.Forecast:
    """The group's accelerator GrpTRESMins budget: spent by its subtree (running jobs up to now, in time-limit
    minutes as the scheduler counts them) and a linear forecast at the mean burn rate of the last `lookback`."""
    return _budget(group, _group_runs(group), now=now, lookback=lookback or timedelta(days=budget_lookback_days()))


def _budget(group: Group, runs, *, now: datetime, lookback: timedelta) -> core.Forecast:
    minute = float(settings.AIPOOL_SECONDS_PER_MINUTE)
    spent = core.charged_seconds(runs, until=now) / minute
    recent = spent - core.charged_seconds(runs, until=now - lookback) / minute
    budget = (group.grp_tres_mins or {}).get(ACCEL) or 0
    return core.forecast(budget_minutes=budget, spent_minutes=spent, recent_minutes=recent, lookback=lookback, now=now)


def _burn_down(group: Group, runs, *, now: datetime, lookback: timedelta) -> list[tuple[datetime, float]]:
    minute = float(settings.AIPOOL_SECONDS_PER_MINUTE)
    budget = (group.grp_tres_mins or {}).get(ACCEL) or 0
    days = max(1, round(lookback.total_seconds() / 86400))
    moments = [now - lookback + index * (lookback / days) for index in range(days + 1)]
    return [(at, budget - core.charged_seconds(runs, until=at) / minute) for at in moments]


def budgets(user, *, now: datetime, lookback: timedelta | None = None) -> list[Budget]:
    """Every group `user` may see that has an accelerator GrpTRESMins budget, with its burn-down and forecast."""
    lookback = lookback or timedelta(days=budget_lookback_days())
    groups = Group.objects.visible_to(user).select_related("tenant").order_by("tenant__name", "name")
    answer = []
    for group in groups:
        if not (group.grp_tres_mins or {}).get(ACCEL):
            continue
        runs = _group_runs(group)
        answer.append(
            Budget(
                group=group,
                forecast=_budget(group, runs, now=now, lookback=lookback),
                lookback=lookback,
                burn_down=_burn_down(group, runs, now=now, lookback=lookback),
            )
        )
    return answer
