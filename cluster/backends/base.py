"""The one interface every cluster backend implements (style.md §6). No Django imports here or in backends.

The portal's database is the source of truth for what *should* run; a backend runs it and reports what *is*.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LaunchSpec:
    """Everything a backend needs to start one run of a job on the nodes the scheduler gave it."""

    job_id: int
    run: int  # the job's run_count: a requeued job is a new run with its own working directory
    name: str
    user: str
    nodes: tuple[str, ...]  # allocated node names, in rank order
    accelerators: dict[str, tuple[int, ...]]  # accelerator indices per node
    time_limit_seconds: int
    command: str = ""
    script: str = ""
    environment: dict[str, str] = field(default_factory=dict)
    prologue: str = ""
    partition: str = ""
    account: str = ""
    cpus_per_node: int = 1
    memory_per_node_mb: int = 0
    # The request's shape, for backends that place jobs themselves (`nodes` is empty then: nothing is allocated yet).
    node_count: int = 0
    accelerators_per_node: int = 0
    topology_aware: bool = False
    max_switches: int | None = None
    # The operating-system account the job runs as, for backends that run jobs as their owners (Slurm).
    posix_user: str = ""
    posix_uid: int | None = None


@dataclass(frozen=True)
class BackendStatus:
    """What the backend knows of one job. `state` uses Slurm's words (vocab.states.JobState values)."""

    backend_job_id: str
    state: str
    exit_code: int | None = None
    started_at: float | None = None  # unix time
    ended_at: float | None = None
    reason: str = ""
    nodelist: tuple[str, ...] = ()  # where it runs or ran, when the backend placed it
    estimated_start: float | None = None  # the backend's own start estimate for a pending job (unix time)


@dataclass(frozen=True)
class LogChunk:
    text: str
    offset: int  # byte offset to pass next time (tail -f by polling)
    size: int  # current size of the log in bytes


@dataclass(frozen=True)
class TaskUsage:
    """One task's resource counters at one instant, as the backend measures them (monitoring turns them into rates).

    `cpu_seconds` is cumulative CPU time of the task's processes (rates come from two readings); `accel_util` and
    `accel_memory_bytes` are None where the backend has no accelerator telemetry (no NVML, no gres usage).
    """

    rank: int
    node: str
    at: float  # unix time of the reading
    cpu_seconds: float | None = None
    rss_bytes: int | None = None
    swap_bytes: int | None = None  # the task's memory that sits in swap now (VmSwap; Slurm: none)
    major_faults: int | None = None  # cumulative page faults that had to read from disk or swap
    accel_util: float | None = None  # 0..1, mean over the task's accelerators
    accel_memory_bytes: int | None = None
    processes: int = 0


class BackendUnavailable(RuntimeError):
    """The backend cannot be reached now; callers retry with backoff."""


class JobRejected(ValueError):
    """The backend refuses this job (unknown partition, a shape no node has); the message says why.

    `limits_out_of_date`: the backend does not know the job's account or user (yet): a limits sync may fix that.
    """

    def __init__(self, message: str, *, limits_out_of_date: bool = False) -> None:
        super().__init__(message)
        self.limits_out_of_date = limits_out_of_date


class ClusterBackend(ABC):
    name: str = ""
    # True when the backend places jobs itself (Slurm); False when aipool's scheduler allocates nodes (local).
    schedules_itself: bool = False

    @abstractmethod
    def submit(self, spec: LaunchSpec) -> str:
        """Start the job; idempotent: submitting the same (job_id, run) again returns the same id, starts nothing."""

    @abstractmethod
    def cancel(self, backend_job_id: str) -> None:
        """Stop every process of the job; a job already ended is left alone."""

    @abstractmethod
    def poll(self, backend_job_ids: list[str]) -> dict[str, BackendStatus]:
        """Status of each id. An id the backend has no trace of is reported with state NODE_FAIL, reason 'lost'."""

    @abstractmethod
    def read_log(self, backend_job_id: str, stream: str = "stdout", offset: int = 0, limit: int = 1 << 20) -> LogChunk:
        """Text of the job's stdout or stderr from byte `offset` (at most `limit` bytes)."""

    def inventory(self) -> dict:
        """The pool description (same shape as cluster/pools/*.yaml) as the backend sees it."""
        return {}

    def usage(self, backend_job_id: str) -> list[TaskUsage]:
        """Resource counters of each running task of the job, now; [] when the backend cannot measure them."""
        return []

    def step_metrics(self, backend_job_id: str, *, since: float, limit_bytes: int = 1 << 16) -> dict[int, list[dict]]:
        """Per rank, the step records the in-job SDK wrote after unix time `since` (ai_platform.metrics: JSON lines),
        read from the end of each file, at most `limit_bytes` per rank. {} when the backend cannot reach them."""
        return {}

    def sync_limits(self, associations: list, *, dry_run: bool = False) -> list:
        """Bring the backend's own limits in line with `associations` (Slurm: cluster.backends.slurm_limits
        .Association); returns the differences found (applied unless `dry_run`). Local: nothing to do."""
        return []
