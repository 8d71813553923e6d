"""Association limits checked up the tree (tenant → parent groups → group), with Slurm's reason codes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from scheduler.model import AssocLimits, AssocUsage, JobRequest
from vocab.states import Reason
from vocab.tres import ACCEL, CPU, MEM, NODE, format_memory, tres_label

GRP_TRES_REASON = {
    ACCEL: Reason.ASSOC_GRP_GRES,
    CPU: Reason.ASSOC_GRP_CPU,
    MEM: Reason.ASSOC_GRP_MEM,
    NODE: Reason.ASSOC_GRP_NODE,
}
PER_USER_REASON = {
    ACCEL: "QOSMaxGRESPerUser",
    CPU: "QOSMaxCpuPerUserLimit",
    MEM: "QOSMaxMemoryPerUser",
    NODE: "QOSMaxNodePerUserLimit",
}
TRES_MINS_REASON = {
    ACCEL: "AssocGrpGRESMinutes",
    CPU: "AssocGrpCPUMinutesLimit",
    MEM: "AssocGrpMemMinutes",
    NODE: "AssocGrpNodeMinutes",
}
EMPTY = AssocUsage()


@dataclass(frozen=True)
class Cause:
    """One thing that keeps a job from starting, with the numbers behind it."""

    code: str
    message: str
    limit: dict | None = None
    in_use: dict | None = None
    requested: dict | None = None
    association: str | None = None


def violations(
    job: JobRequest,
    limits: dict[str, AssocLimits],
    usage: dict[str, AssocUsage],
    *,
    extra: JobRequest | None = None,
) -> Iterator[Cause]:
    """Every limit (root first) that keeps `job` from starting now.

    `extra` is a job counted as running too: would starting it leave room for `job`?
    """
    request = job.tres
    for key in job.associations:
        limit = limits.get(key)
        if limit is None:
            continue
        used = usage.get(key) or EMPTY
        shared = extra is not None and key in extra.associations
        yield from _grp_tres(limit, used, request, extra.tres if shared else None)
        running = used.jobs + (1 if shared else 0)
        if limit.grp_jobs is not None and running + 1 > limit.grp_jobs:
            yield Cause(
                Reason.ASSOC_GRP_JOBS,
                f"{limit.name} runs {running} of {limit.grp_jobs} jobs (GrpJobs); this job would be one more",
                limit={"jobs": limit.grp_jobs},
                in_use={"jobs": running},
                requested={"jobs": 1},
                association=limit.name,
            )
        same_user = shared and extra.user == job.user
        yield from _per_user(limit, used, job, extra.tres if same_user else None)
        yield from _budget(limit, used, job, extra if shared else None)


def _grp_tres(limit: AssocLimits, used: AssocUsage, request: dict, extra: dict | None) -> Iterator[Cause]:
    for name, cap in limit.grp_tres.items():
        in_use = used.tres.get(name, 0) + (extra.get(name, 0) if extra else 0)
        needed = request.get(name, 0)
        if needed and in_use + needed > cap:
            yield Cause(
                GRP_TRES_REASON[name],
                f"{limit.name} has {_amount(name, in_use)} of {_amount(name, cap)} {tres_label(name)} in use "
                f"(GrpTRES); this job needs {_amount(name, needed)}",
                limit={name: cap},
                in_use={name: in_use},
                requested={name: needed},
                association=limit.name,
            )


def _per_user(limit: AssocLimits, used: AssocUsage, job: JobRequest, extra: dict | None) -> Iterator[Cause]:
    mine = used.tres_by_user.get(job.user, {})
    for name, cap in limit.max_tres_per_user.items():
        in_use = mine.get(name, 0) + (extra.get(name, 0) if extra else 0)
        needed = job.tres.get(name, 0)
        if needed and in_use + needed > cap:
            yield Cause(
                PER_USER_REASON[name],
                f"{job.user} has {_amount(name, in_use)} of {_amount(name, cap)} {tres_label(name)} per user in "
                f"{limit.name} (MaxTRESPerUser); this job needs {_amount(name, needed)}",
                limit={name: cap},
                in_use={name: in_use},
                requested={name: needed},
                association=limit.name,
            )


def _budget(limit: AssocLimits, used: AssocUsage, job: JobRequest, extra: JobRequest | None) -> Iterator[Cause]:
    for name, budget in limit.grp_tres_mins.items():
        needed = job.tres.get(name, 0) * job.time_limit
        spent = used.tres_mins.get(name, 0) + (extra.tres.get(name, 0) * extra.time_limit if extra else 0)
        if needed and spent + needed > budget:
            yield Cause(
                TRES_MINS_REASON[name],
                f"{limit.name} has used {int(spent)} of {budget} {tres_label(name)}-minutes (GrpTRESMins, running "
                f"jobs counted at their full time limit); this job may use {needed}",
                limit={name: budget},
                in_use={name: int(spent)},
                requested={name: needed},
                association=limit.name,
            )


def _amount(name: str, value: int) -> str:
    return format_memory(value) if name == MEM else str(value)


def first_violation(
    job: JobRequest,
    limits: dict[str, AssocLimits],
    usage: dict[str, AssocUsage],
    *,
    extra: JobRequest | None = None,
) -> Cause | None:
    """The first limit that blocks `job`, or None. Checked in plain loops (every pass asks this of every queued
    job); the cause with its message is only built for a job that is blocked."""
    request = job.tres
    for key in job.associations:
        limit = limits.get(key)
        if limit is None:
            continue
        used = usage.get(key) or EMPTY
        more = extra.tres if extra is not None and key in extra.associations else None
        for name, cap in limit.grp_tres.items():
            need = request[name] if name in request else 0
            if need and used.tres.get(name, 0) + need + (more.get(name, 0) if more else 0) > cap:
                return next(violations(job, limits, usage, extra=extra))
        if limit.grp_jobs is not None and used.jobs + (1 if more else 0) + 1 > limit.grp_jobs:
            return next(violations(job, limits, usage, extra=extra))
        if limit.max_tres_per_user:
            mine = used.tres_by_user.get(job.user, {})
            same = more if more is not None and extra.user == job.user else None
            for name, cap in limit.max_tres_per_user.items():
                need = request.get(name, 0)
                if need and mine.get(name, 0) + need + (same.get(name, 0) if same else 0) > cap:
                    return next(violations(job, limits, usage, extra=extra))
        for name, budget in limit.grp_tres_mins.items():
            need = request.get(name, 0) * job.time_limit
            spent = used.tres_mins.get(name, 0) + (more.get(name, 0) * extra.time_limit if more else 0)
            if need and spent + need > budget:
                return next(violations(job, limits, usage, extra=extra))
    return None


def admission_block(
    job: JobRequest, limits: dict[str, AssocLimits], usage: dict[str, AssocUsage]
) -> tuple[str, str] | None:
    """The first limit (root first) that keeps `job` from starting now, as (reason, detail); None if admitted."""
    cause = first_violation(job, limits, usage)
    return None if cause is None else (cause.code, cause.message)


def charge(job: JobRequest, usage: dict[str, AssocUsage]) -> None:
    for key in job.associations:
        usage.setdefault(key, AssocUsage()).add(job)
