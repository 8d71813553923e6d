"""Turn what happened (a job changed state, a group crossed a level, accelerators sat idle) into notices, and say
who is told. Called by the Celery tasks; each call re-reads the database, so a repeated call tells nothing twice."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils import timezone

from accounting.selectors import group_budget
from jobs.models import Job
from jobs.selectors import group_usage
from notifications import config
from notifications.events import Event
from notifications.models import ThresholdState
from notifications.services import Notice, notify, settings_for
from tenants.models import Group, Role
from vocab.states import FINAL_STATES, JobState
from vocab.tres import ACCEL

ENDED_WELL = {JobState.COMPLETED, JobState.CANCELLED}
QUOTA_LEVELS = (90, 80)
GRP_TRES = f"GrpTRES:{ACCEL}"
GRP_TRES_MINS = f"GrpTRESMins:{ACCEL}"


def _job_data(job: Job) -> dict:
    return {
        "job_id": job.pk,
        "name": job.name,
        "state": job.state,
        "reason": job.reason,
        "exit_code": job.exit_code,
        "group": job.group.name,
        "tenant": job.tenant.name,
        "user": job.user.username,
        "partition": job.partition.name,
        "submitted_at": job.submitted_at.isoformat() if job.submitted_at else None,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "ended_at": job.ended_at.isoformat() if job.ended_at else None,
    }


def job_changed(*, job_id: int, from_state: str, to_state: str) -> None:
    job = Job.objects.select_related("user", "group", "tenant", "partition").filter(pk=job_id).first()
    if job is None or job.state != to_state:
        return  # it moved on meanwhile: the later transition tells its own story
    if to_state == JobState.RUNNING and from_state == JobState.PENDING:
        _started(job)
        check_thresholds(groups=_chain(job.group))
    elif to_state in FINAL_STATES:
        _ended(job)
        check_thresholds(groups=_chain(job.group))


def _started(job: Job) -> None:
    waited_from = job.eligible_at or job.submitted_at
    if not (job.started_at and waited_from):
        return
    waited = (job.started_at - waited_from).total_seconds() / 60
    if waited < settings_for(job.user).long_wait_minutes:
        return
    notice = Notice(
        event=Event.JOB_STARTED_AFTER_WAIT,
        subject=f"job {job.pk} ({job.name}) started after waiting {waited:.0f} minutes",
        text=f"Job {job.pk} ({job.name}) in group {job.group.name} started on {', '.join(job.nodelist) or '-'} "
        f"after waiting {waited:.0f} minutes.",
        dedupe_key=f"job:{job.pk}:run:{job.run_count}:started",
        data={**_job_data(job), "waited_minutes": round(waited)},
    )
    notify(users=[job.user], notice=notice)


def _ended(job: Job) -> None:
    event = Event.JOB_ENDED if job.state in ENDED_WELL else Event.JOB_FAILED
    exit_text = "" if job.exit_code is None else f", exit code {job.exit_code}"
    notice = Notice(
        event=event,
        subject=f"job {job.pk} ({job.name}) {job.state}",
        text=f"Job {job.pk} ({job.name}) in group {job.group.name} ended: {job.state} "
        f"(reason {job.reason}{exit_text}).",
        dedupe_key=f"job:{job.pk}:run:{job.run_count}:ended",
        data=_job_data(job),
    )
    notify(users=[job.user], notice=notice)


def job_idle(*, job_id: int, minutes: int, utilisation: float, action: str) -> None:
    job = Job.objects.select_related("user", "group", "tenant", "partition").filter(pk=job_id).first()
    if job is None:
        return
    what = "was cancelled" if action == "cancelled" else "holds idle accelerators"
    notice = Notice(
        event=Event.ACCELERATORS_IDLE,
        subject=f"job {job.pk} ({job.name}) {what}",
        text=f"Job {job.pk} ({job.name}) used its accelerators at {utilisation:.0%} for {minutes} minutes: {what}.",
        dedupe_key=f"job:{job.pk}:run:{job.run_count}:idle:{action}",
        data={**_job_data(job), "idle_minutes": minutes, "utilisation": utilisation, "action": action},
    )
    notify(users=[job.user], notice=notice)


# --- group thresholds -----------------------------------------------------------------------------------------


def _chain(group: Group) -> list[Group]:
    names = [name for name in group.path.strip("/").split("/") if name]
    return list(Group.objects.filter(name__in=names).select_related("tenant"))


def recipients(group: Group):
    """Who hears about a group: its members and its tenant's admins."""
    return (
        get_user_model()
        .objects.filter(is_active=True)
        .filter(
            Q(group_memberships__group=group) | Q(memberships__tenant_id=group.tenant_id, memberships__role=Role.ADMIN)
        )
        .distinct()
        .order_by("pk")
    )


def level_of(percent: float, levels: tuple[int, ...]) -> int:
    """The highest level reached, 0 below all of them (levels highest first)."""
    return next((level for level in levels if percent >= level), 0)


def _crossed(group: Group, limit: str, level: int) -> bool:
    """Record `level` for the group's limit; True when it rose (once per crossing: a conditional UPDATE claims it)."""
    state, _ = ThresholdState.objects.get_or_create(group=group, limit=limit)
    if state.level == level:
        return False
    claimed = ThresholdState.objects.filter(pk=state.pk, level=state.level).update(
        level=level, changed_at=timezone.now()
    )
    return bool(claimed) and level > state.level


def check_thresholds(groups=None) -> None:
    """Tell each group's people when running accelerators reach 80% / 90% of GrpTRES, or its GrpTRESMins budget
    reaches AIPOOL_BUDGET_WARN_PERCENT. A level is told once; it is told again only after usage fell below it."""
    if groups is None:
        groups = Group.objects.select_related("tenant")
    groups = [group for group in groups if (group.grp_tres or {}).get(ACCEL) or (group.grp_tres_mins or {}).get(ACCEL)]
    usage = group_usage(groups)
    now = timezone.now()
    for group in groups:
        limit = (group.grp_tres or {}).get(ACCEL)
        if limit:
            in_use = usage[group.pk].running_tres.get(ACCEL, 0)
            _quota(group, in_use, limit, now)
        budget = (group.grp_tres_mins or {}).get(ACCEL)
        if budget:
            _budget(group, now)


def _quota(group: Group, in_use: int, limit: int, now) -> None:
    percent = 100 * in_use / limit
    level = level_of(percent, QUOTA_LEVELS)
    if not _crossed(group, GRP_TRES, level):
        return
    notice = Notice(
        event=Event.QUOTA_THRESHOLD,
        subject=f"group {group.name} at {percent:.0f}% of its accelerator limit",
        text=f"Group {group.name} runs {in_use} of its {limit} accelerators (GrpTRES gres/accelerator={limit}): "
        f"{percent:.0f}%, past the {level}% mark. Jobs beyond the limit wait with reason AssocGrpGRES.",
        dedupe_key=f"threshold:{group.pk}:{GRP_TRES}:{level}:{now.isoformat()}",
        data={"group": group.name, "tenant": group.tenant.name, "limit": GRP_TRES, "limit_value": limit,
              "in_use": in_use, "percent": round(percent, 1), "level": level},
    )  # fmt: skip
    notify(users=recipients(group), notice=notice)


def _budget(group: Group, now) -> None:
    burn = group_budget(group, now=now)
    percent = 100 * burn.spent_fraction
    level = level_of(percent, (config.budget_warn_percent(),))
    if not _crossed(group, GRP_TRES_MINS, level):
        return
    runs_out = burn.runs_out_at.isoformat() if burn.runs_out_at else None
    notice = Notice(
        event=Event.BUDGET_NEARLY_SPENT,
        subject=f"group {group.name} has spent {percent:.0f}% of its accelerator budget",
        text=f"Group {group.name} has spent {burn.spent_minutes:.0f} of its {burn.budget_minutes} accelerator-minutes "
        f"(GrpTRESMins). At the recent rate it runs out {runs_out or 'never'}.",
        dedupe_key=f"threshold:{group.pk}:{GRP_TRES_MINS}:{level}:{now.isoformat()}",
        data={"group": group.name, "tenant": group.tenant.name, "limit": GRP_TRES_MINS,
              "budget_minutes": burn.budget_minutes, "spent_minutes": round(burn.spent_minutes),
              "percent": round(percent, 1), "runs_out_at": runs_out},
    )  # fmt: skip
    notify(users=recipients(group), notice=notice)
