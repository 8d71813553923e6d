"""Plain data the core works on. Built by jobs.scheduling from the database, or by a replay from a trace."""

from __future__ import annotations

from dataclasses import dataclass, field

from vocab.tres import ACCEL, CPU, MEM, NODE


@dataclass
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


@dataclass(frozen=True)
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

    @property
    def tres(self) -> dict[str, int]:
        return {
            CPU: self.nodes * self.cpus_per_node,
            MEM: self.nodes * self.memory_per_node,
            NODE: self.nodes,
            ACCEL: self.nodes * self.accelerators_per_node,
        }


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
        for name, value in job.tres.items():
            self.tres[name] = self.tres.get(name, 0) + value
            per_user = self.tres_by_user.setdefault(job.user, {})
            per_user[name] = per_user.get(name, 0) + value
            self.tres_mins[name] = self.tres_mins.get(name, 0) + value * job.time_limit
        self.jobs += 1


@dataclass(frozen=True)
class Start:
    job_id: int
    allocation: dict[str, tuple[int, ...]]  # node → accelerator indices, in rank order
    switches: tuple[str, ...]


@dataclass(frozen=True)
class Block:
    job_id: int
    reason: str
    detail: str = ""


@dataclass
class Decisions:
    starts: list[Start] = field(default_factory=list)
    blocked: list[Block] = field(default_factory=list)
