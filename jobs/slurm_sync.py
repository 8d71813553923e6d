"""The ORM side of the limits sync: aipool's tenants, groups, memberships and limits as Slurm associations.

tenants → accounts under root; groups → sub-accounts under their parent group or tenant; group members → user
associations (as their POSIX account); each limit → the association limit of the same name. MaxTRESPerUser has no
association field: it becomes GrpTRES on each member's user association (the tightest value up the group's chain),
which bounds what one user may hold in that group — per group, where aipool's tenant-level value bounds it per tenant.

The backend (cluster/backends/slurm.py) compares with ``sacctmgr show assoc`` and runs the repairs; accounts it
did not create (another Organization) are never removed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from cluster.backends.registry import get_backend
from cluster.backends.slurm_limits import Association, Change
from tenants.models import Group, GroupMember, Tenant

log = logging.getLogger(__name__)

# aipool's limit fields → sacctmgr's names. MaxTRESPerUser is handled separately (see the module docstring).
LIMIT_NAMES = {
    "grp_tres": "GrpTRES",
    "grp_tres_mins": "GrpTRESMins",
    "grp_jobs": "GrpJobs",
    "grp_submit_jobs": "GrpSubmitJobs",
    "max_tres_per_job": "MaxTRES",
    "max_wall": "MaxWall",
}


class NameClash(ValueError):
    """A tenant and a group share a name: Slurm has one namespace for accounts."""


@dataclass
class SyncReport:
    changes: list[Change] = field(default_factory=list)
    applied: bool = False

    @property
    def failed(self) -> list[Change]:
        return [change for change in self.changes if change.error]

    def summary(self) -> dict:
        return {"differences": len(self.changes), "applied": self.applied, "failed": len(self.failed)}


def _limits(assoc) -> dict:
    values = {name: getattr(assoc, field_name) for field_name, name in LIMIT_NAMES.items()}
    return {name: value for name, value in values.items() if value not in (None, {})}


def _per_user(chain) -> dict[str, int]:
    """The tightest MaxTRESPerUser of each TRES along tenant → parent groups → group."""
    tightest: dict[str, int] = {}
    for assoc in chain:
        for tres, value in (assoc.max_tres_per_user or {}).items():
            tightest[tres] = min(value, tightest.get(tres, value))
    return tightest


def wanted_associations() -> list[Association]:
    """Every association aipool wants in Slurm, from the database. Four queries."""
    tenants = {t.pk: t for t in Tenant.objects.all()}
    groups = list(Group.objects.all())
    clashes = sorted({g.name.lower() for g in groups} & {t.name.lower() for t in tenants.values()})
    if clashes:
        raise NameClash(f"tenant and group share a name ({', '.join(clashes)}): Slurm accounts need unique names")
    by_name = {g.name: g for g in groups}
    wanted = [
        Association(account=t.name.lower(), parent="root", limits=_limits(t), description=f"aipool tenant {t.name}")
        for t in tenants.values()
    ]
    chains = {}
    for group in groups:
        parent = group.ancestor_names[-1] if group.ancestor_names else tenants[group.tenant_id].name
        wanted.append(
            Association(
                account=group.name.lower(),
                parent=parent.lower(),
                limits=_limits(group),
                description=f"aipool group {group.name} of {tenants[group.tenant_id].name}",
            )
        )
        ancestors = [by_name[name] for name in group.ancestor_names if name in by_name]
        chains[group.pk] = [tenants[group.tenant_id], *ancestors, group]
    seen = set()
    members = GroupMember.objects.filter(user__is_active=True).select_related("user__posix_account", "group")
    for member in members.order_by("group__name", "user__username"):
        account = getattr(member.user, "posix_account", None)
        key = (member.group.name.lower(), account.username if account else member.user.username)
        if key in seen:
            continue
        seen.add(key)
        per_user = _per_user(chains[member.group_id])
        wanted.append(Association(account=key[0], user=key[1], limits={"GrpTRES": per_user} if per_user else {}))
    return wanted


def sync(*, dry_run: bool = False, backend=None) -> SyncReport:
    """Compare aipool's associations with Slurm's and, unless `dry_run`, repair every difference."""
    backend = backend or get_backend("slurm")
    changes = backend.sync_limits(wanted_associations(), dry_run=dry_run)
    report = SyncReport(changes=changes, applied=not dry_run)
    for change in report.failed:
        log.error("slurm sync: %s: %s failed: %s", change.what, change.command(), change.error)
    return report


def on_limits_changed(sender=None, **kwargs) -> None:
    """Receiver of tenants.signals.limits_changed (sent after commit): resync when Slurm enforces the limits."""
    if settings.AIPOOL_BACKEND != "slurm":
        return
    from jobs.tasks import sync_backend_limits

    transaction.on_commit(sync_backend_limits.delay)
