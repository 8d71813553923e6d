"""Association limits checked up the tree (tenant → parent groups → group), with Slurm's reason codes."""

from __future__ import annotations

from scheduler.model import AssocLimits, AssocUsage, JobRequest
from vocab.states import Reason
from vocab.tres import ACCEL, CPU, MEM, NODE, tres_label

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


def admission_block(
    job: JobRequest, limits: dict[str, AssocLimits], usage: dict[str, AssocUsage]
) -> tuple[str, str] | None:
    """The first limit (root first) that keeps `job` from starting now, as (reason, detail); None if admitted."""
    request = job.tres
    for key in job.associations:
        limit = limits.get(key)
        if limit is None:
            continue
        used = usage.get(key) or AssocUsage()
        for name, cap in limit.grp_tres.items():
            if used.tres.get(name, 0) + request.get(name, 0) > cap:
                return GRP_TRES_REASON[name], _detail(
                    limit.name, name, used.tres.get(name, 0), cap, request.get(name, 0)
                )
        if limit.grp_jobs is not None and used.jobs + 1 > limit.grp_jobs:
            return Reason.ASSOC_GRP_JOBS, f"{limit.name} runs {used.jobs} of {limit.grp_jobs} jobs (GrpJobs)"
        mine = used.tres_by_user.get(job.user, {})
        for name, cap in limit.max_tres_per_user.items():
            if mine.get(name, 0) + request.get(name, 0) > cap:
                return PER_USER_REASON[name], (
                    f"{job.user} has {mine.get(name, 0)} of {cap} {tres_label(name)} per user in {limit.name}; "
                    f"this job needs {request.get(name, 0)}"
                )
        for name, budget in limit.grp_tres_mins.items():
            needed = request.get(name, 0) * job.time_limit
            spent = used.tres_mins.get(name, 0)
            if spent + needed > budget:
                return TRES_MINS_REASON[name], (
                    f"{limit.name} has used {int(spent)} of {budget} {tres_label(name)}-minutes (GrpTRESMins); "
                    f"this job may use {needed}"
                )
    return None


def _detail(owner: str, name: str, in_use: int, cap: int, requested: int) -> str:
    return f"{owner} has {in_use} of {cap} {tres_label(name)} in use (GrpTRES); this job needs {requested}"


def charge(job: JobRequest, usage: dict[str, AssocUsage]) -> None:
    for key in job.associations:
        usage.setdefault(key, AssocUsage()).add(job)
