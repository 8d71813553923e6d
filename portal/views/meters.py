"""Usage bars: every limit of a group next to what is in use and pending, as the dashboard and quota page draw them."""

from __future__ import annotations

from dataclasses import dataclass, field

from jobs.selectors import GroupQuota
from tenants.limits import FIELD_LABELS
from tenants.models import Group, Tenant
from vocab.slurmtime import format_minutes
from vocab.tres import KNOWN_TRES, MEM, format_memory, format_tres, tres_label

WARN_PERCENT = 80
CRITICAL_PERCENT = 90


def _show(tres_name: str | None, value: float) -> str:
    value = round(value)
    return format_memory(value) if tres_name == MEM else f"{value:,}"


@dataclass
class Meter:
    """One limit: `in_use` against `limit`, with `pending` drawn after it (pending work that would also count)."""

    limit_name: str  # sacctmgr's word: GrpTRES, GrpJobs, ...
    what: str  # "accelerators", "running jobs", ...
    in_use: float
    limit: int
    pending: float = 0
    tres: str | None = None
    scope: str = "group"  # "group" (the group and everything below it) or "you" (this user's share)
    yours: float | None = None  # this user's part of `in_use`, where the limit counts the whole group

    @property
    def percent(self) -> int:
        if self.limit <= 0:
            return 100 if self.in_use > 0 else 0
        return round(100 * self.in_use / self.limit)

    @property
    def bar_percent(self) -> int:
        return min(100, self.percent)

    @property
    def pending_percent(self) -> int:
        if self.limit <= 0:
            return 0
        return max(0, min(100 - self.bar_percent, round(100 * self.pending / self.limit)))

    @property
    def level(self) -> str:
        if self.percent >= CRITICAL_PERCENT:
            return "critical"
        if self.percent >= WARN_PERCENT:
            return "warn"
        return "ok"

    @property
    def in_use_text(self) -> str:
        return _show(self.tres, self.in_use)

    @property
    def pending_text(self) -> str:
        return _show(self.tres, self.pending)

    @property
    def limit_text(self) -> str:
        return _show(self.tres, self.limit)

    @property
    def yours_text(self) -> str:
        return "" if self.yours is None else _show(self.tres, self.yours)

    @property
    def free_text(self) -> str:
        return _show(self.tres, max(0, self.limit - self.in_use))


@dataclass
class GroupMeters:
    group: Group
    meters: list[Meter]
    per_job: list[tuple[str, str]]  # limits of one job: (label, value)
    running: dict[str, str]  # what runs now, for groups without limits
    pending_jobs: int
    running_jobs: int
    bound_by: list[tuple[str, str]] = field(default_factory=list)  # (association, limits) up the tree

    @property
    def level(self) -> str:
        levels = {m.level for m in self.meters}
        return next((lvl for lvl in ("critical", "warn") if lvl in levels), "ok")


def _ordered(tres: dict) -> list[str]:
    return [name for name in KNOWN_TRES if name in (tres or {})]


def meters_for(quota: GroupQuota) -> GroupMeters:
    group, usage, mine = quota.group, quota.usage, quota.user_usage
    meters: list[Meter] = []
    for name in _ordered(group.grp_tres):
        meters.append(
            Meter(
                "GrpTRES",
                tres_label(name),
                usage.running_tres.get(name, 0),
                group.grp_tres[name],
                usage.pending_tres.get(name, 0),
                tres=name,
                yours=mine.running_tres.get(name, 0),
            )
        )
    if group.grp_jobs is not None:
        meters.append(
            Meter(
                "GrpJobs",
                "running jobs",
                usage.running_jobs,
                group.grp_jobs,
                usage.pending_jobs,
                yours=mine.running_jobs,
            )
        )
    if group.grp_submit_jobs is not None:
        meters.append(
            Meter(
                "GrpSubmitJobs",
                "jobs running or pending",
                usage.running_jobs + usage.pending_jobs,
                group.grp_submit_jobs,
            )
        )
    for name in _ordered(group.max_tres_per_user):
        meters.append(
            Meter(
                "MaxTRESPerUser",
                f"{tres_label(name)} (yours)",
                mine.running_tres.get(name, 0),
                group.max_tres_per_user[name],
                mine.pending_tres.get(name, 0),
                tres=name,
                scope="you",
            )
        )
    for name in _ordered(group.grp_tres_mins):
        meters.append(
            Meter(
                "GrpTRESMins",
                f"{tres_label(name)}-minutes used",
                usage.tres_minutes.get(name, 0),
                group.grp_tres_mins[name],
                tres=None,
            )
        )
    per_job = []
    if group.max_tres_per_job:
        per_job.append(("MaxTRESPerJob", format_tres(group.max_tres_per_job)))
    if group.max_wall is not None:
        per_job.append(("MaxWall", format_minutes(group.max_wall)))
    running = {tres_label(n): _show(n, usage.running_tres.get(n, 0)) for n in KNOWN_TRES}
    return GroupMeters(
        group=group,
        meters=meters,
        per_job=per_job,
        running=running,
        pending_jobs=usage.pending_jobs,
        running_jobs=usage.running_jobs,
        bound_by=bound_by(group),
    )


def bound_by(group: Group) -> list[tuple[str, str]]:
    """The limits of the tenant and parent groups, which bind this group too (Slurm's hierarchy)."""
    found = []
    chain: list[Tenant | Group] = [group.tenant]
    ancestors = group.ancestor_names
    if ancestors:
        by_name = {g.name: g for g in Group.objects.filter(tenant_id=group.tenant_id, name__in=ancestors)}
        chain += [by_name[name] for name in ancestors if name in by_name]
    for assoc in chain:
        shown = ", ".join(f"{label}={text}" for label, text in _labels(assoc) if text)
        if shown:
            kind = "tenant" if isinstance(assoc, Tenant) else "group"
            found.append((f"{kind} {assoc.name}", shown))
    return found


def _labels(assoc) -> list[tuple[str, str]]:
    return [(FIELD_LABELS[name], text) for name, text in assoc.limits_display().items()]
