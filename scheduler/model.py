"""Plain data the core works on. Built by jobs.scheduling from the database, or by a replay from a trace."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import NamedTuple

from vocab.tres import ACCEL, CPU, MEM, NODE


@dataclass(slots=True)
class NodeView:
    name: str
    switch: str
    partitions: frozenset[str]
    accelerators: int
    cpus: int
    memory_mb: int
    up: bool = True
    free_accelerators: list[int] = field(default_factory=list)  # indices not held by a running job
    free_cpus: int = 0
    free_memory_mb: int = 0

    def fits(self, accelerators: int, cpus: int, memory_mb: int) -> bool:
        return (
            self.up
            and len(self.free_accelerators) >= accelerators
            and self.free_cpus >= cpus
            and self.free_memory_mb >= memory_mb
        )


@dataclass(slots=True)
class JobRequest:
    id: int
    partition: str
    nodes: int
    accelerators_per_node: int
    cpus_per_node: int
    memory_per_node: int
    time_limit: int  # minutes
    associations: tuple[str, ...]  # keys of the limit tree, root first: ("tenant:acme", "group:research", ...)
    user: str
    submitted_at: float
    topology_aware: bool = False
    max_switches: int | None = None
    priority: int = 0
    eligible_at: float | None = None  # when it (re)entered the queue: age and switch waits count from here
    _tres: dict[str, int] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.eligible_at is None:
            self.eligible_at = self.submitted_at

    @property
    def tres(self) -> dict[str, int]:
        """Built on first use, then kept: limit checks read it again and again, most queued jobs never need it."""
        tres = self._tres
        if tres is None:
            tres = self._tres = {
                CPU: self.nodes * self.cpus_per_node,
                MEM: self.nodes * self.memory_per_node,
                NODE: self.nodes,
                ACCEL: self.nodes * self.accelerators_per_node,
            }
        return tres

    @property
    def order_key(self) -> tuple[float, float, int]:
        """Queue order: priority, then first come first served."""
        return (-self.priority, self.submitted_at, self.id)

    def changed(self, **changes) -> JobRequest:
        return dataclasses.replace(self, **changes)


@dataclass(slots=True)
class RunningJob:
    job: JobRequest
    allocation: dict[str, tuple[int, ...]]  # node → accelerator indices
    ends_at: float  # start + time limit: the backend ends it by then at the latest
    started_at: float | None = None


@dataclass
class AssocLimits:
    """One association's limits (tenant or group). Empty dict / None = unlimited."""

    name: str
    grp_tres: dict[str, int] = field(default_factory=dict)
    grp_jobs: int | None = None
    max_tres_per_user: dict[str, int] = field(default_factory=dict)
    grp_tres_mins: dict[str, int] = field(default_factory=dict)


@dataclass
class AssocUsage:
    tres: dict[str, int] = field(default_factory=dict)  # running
    jobs: int = 0  # running
    tres_by_user: dict[str, dict[str, int]] = field(default_factory=dict)
    tres_mins: dict[str, float] = field(default_factory=dict)  # consumed + committed by running jobs

    def add(self, job: JobRequest) -> None:
        per_user = self.tres_by_user.setdefault(job.user, {})
        for name, value in job.tres.items():
            self.tres[name] = self.tres.get(name, 0) + value
            per_user[name] = per_user.get(name, 0) + value
            self.tres_mins[name] = self.tres_mins.get(name, 0) + value * job.time_limit
        self.jobs += 1

    def copy(self) -> AssocUsage:
        return AssocUsage(
            tres=dict(self.tres),
            jobs=self.jobs,
            tres_by_user={user: dict(values) for user, values in self.tres_by_user.items()},
            tres_mins=dict(self.tres_mins),
        )


@dataclass(frozen=True)
class Start:
    job_id: int
    allocation: dict[str, tuple[int, ...]]  # node → accelerator indices, in rank order
    switches: tuple[str, ...]


class Block(NamedTuple):
    """A job that does not start, and why. A tuple: a pass makes one for nearly every queued job."""

    job_id: int
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class Reservation:
    """Where and when the highest-priority job blocked on resources will start: backfill may not delay it."""

    job_id: int
    start: float
    nodes: tuple[str, ...]
    switches: tuple[str, ...]


@dataclass
class Decisions:
    starts: list[Start] = field(default_factory=list)
    blocked: list[Block] = field(default_factory=list)
    reservations: list[Reservation] = field(default_factory=list)
