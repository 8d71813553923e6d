"""Job states and reason codes in Slurm's words."""

from enum import StrEnum


class JobState(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"


ACTIVE_STATES = frozenset({JobState.PENDING, JobState.RUNNING})
FINAL_STATES = frozenset(set(JobState) - ACTIVE_STATES)

# The only transitions the state machine allows; anything else is a bug and raises.
TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    # NODE_FAIL from PENDING: a backend that queues jobs itself (Slurm) lost one before it started.
    JobState.PENDING: frozenset({JobState.RUNNING, JobState.CANCELLED, JobState.FAILED, JobState.NODE_FAIL}),
    JobState.RUNNING: frozenset(
        {
            JobState.COMPLETED,
            JobState.FAILED,
            JobState.CANCELLED,
            JobState.TIMEOUT,
            JobState.NODE_FAIL,
            JobState.OUT_OF_MEMORY,
            JobState.PENDING,  # requeue
        }
    ),
    **{state: frozenset({JobState.PENDING}) for state in FINAL_STATES},  # requeue of an ended job
}


class Reason(StrEnum):
    NONE = "None"
    PRIORITY = "Priority"
    RESOURCES = "Resources"
    ASSOC_GRP_GRES = "AssocGrpGRES"
    ASSOC_GRP_CPU = "AssocGrpCpuLimit"
    ASSOC_GRP_MEM = "AssocGrpMemLimit"
    ASSOC_GRP_NODE = "AssocGrpNodeLimit"
    ASSOC_GRP_JOBS = "AssocGrpJobsLimit"
    ASSOC_GRP_GRES_MINUTES = "AssocGrpGRESMinutes"
    QOS_MAX_GRES_PER_USER = "QOSMaxGRESPerUser"
    PARTITION_DOWN = "PartitionDown"
    NODE_DOWN = "ReqNodeNotAvail"
    DEPENDENCY = "Dependency"
    BEGIN_TIME = "BeginTime"
    LAUNCH_FAILED = "launch failed requeued held"
    JOB_HELD = "JobHeldAdmin"
    NODE_FAIL = "NodeFail"
    NON_ZERO_EXIT = "NonZeroExitCode"
    TIME_LIMIT = "TimeLimit"
    BACKEND_UNAVAILABLE = "BackendUnavailable"  # aipool's own: the backend cannot be reached; state as last known


def can_transition(current: str, target: str) -> bool:
    return JobState(target) in TRANSITIONS[JobState(current)]
