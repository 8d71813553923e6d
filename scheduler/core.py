"""One scheduling pass. Same input, same decisions: the function the Celery task, explanations and a replay all call.

The pass walks the queue in priority order (EASY backfill, per partition):

- a job over an association limit waits with that limit's reason code and holds back nobody (as in Slurm);
- a job that fits now starts, gang-placed on the fewest leaf switches;
- the first job of a partition that does not fit gets a reservation: when and where it will start if running jobs run
  to their time limits (reason ``Resources``);
- every later job (reason ``Priority`` if it cannot start) may still start now if it does not delay a reservation: it
  ends before the reservation starts, or it keeps off the reserved nodes, and it leaves the reserved job's limits room.

With ``plan_ahead`` (explanations), waiting jobs are also planned into the future in priority order, so each gets an
estimated start; the pass itself never pays for that.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from operator import attrgetter
from typing import NamedTuple

from scheduler.admission import Cause, charge, first_violation
from scheduler.model import (
    AssocLimits,
    AssocUsage,
    Block,
    Decisions,
    JobRequest,
    NodeView,
    Reservation,
    RunningJob,
    Start,
)
from scheduler.placement import Pool
from scheduler.policy import Policy
from scheduler.timeline import LimitSlots, NodeSlots
from vocab.states import Reason

START, RESERVE, WAIT = "start", "reserve", "wait"


@contextmanager
def paused_gc() -> Iterator[None]:
    """A pass allocates hundreds of thousands of small acyclic objects; the cycle collector would walk them (and
    everything else the process holds) again and again for nothing: a third of a pass at 100,000 jobs."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


DEFAULT_POLICY = Policy()


def queue_order(queue: Iterable[JobRequest]) -> list[JobRequest]:
    """Highest priority first, then first come first served: (-priority, submitted_at, id).

    Three stable sorts on one attribute each: twice as fast as one sort on a tuple built per job.
    """
    ordered = sorted(queue, key=attrgetter("id"))
    ordered.sort(key=attrgetter("submitted_at"))
    ordered.sort(key=attrgetter("priority"), reverse=True)
    return ordered


class Outcome(NamedTuple):
    kind: str  # START, RESERVE or WAIT
    reason: str
    start: float | None  # now, the reservation, the planned start, or None: not within any plan
    chosen: tuple[int, ...] = ()  # node indices in the planner's pool
    cause: Cause | None = None  # the first limit that holds it


@dataclass(frozen=True)
class Held:
    """A reservation as the pass protects it."""

    job: JobRequest
    start: float
    end: float
    chosen: tuple[int, ...]
    associations: frozenset[str]


class Planner:
    """Walks the queue once, in priority order: `step` decides and commits one job, `evaluate` only decides."""

    def __init__(
        self,
        nodes: list[NodeView],
        limits: dict[str, AssocLimits],
        usage: dict[str, AssocUsage],
        now: float,
        *,
        running: Sequence[RunningJob] = (),
        policy: Policy = DEFAULT_POLICY,
        plan_ahead: bool = False,
        pool_class: type[Pool] = Pool,
    ):
        self.pool = pool_class(nodes)
        self.limits = limits
        self.usage = {key: value.copy() for key, value in usage.items()}
        self.now, self.policy, self.plan_ahead = now, policy, plan_ahead
        self.running = running
        self.reservations: list[Held] = []
        self.reserved_in: dict[str, Held] = {}
        self.started: list[tuple[JobRequest, dict, float]] = []
        self.future: list[tuple[JobRequest, float]] = []  # reserved and planned jobs: (job, end)
        self.decisions = Decisions()
        self.planned: dict[int, float | None] = {}
        self.waiting: dict[str, list[JobRequest]] = {}  # partition → jobs that could not start, in order
        self._failed: dict[tuple, int] = {}
        self._minute = policy.seconds_per_minute
        self.horizon = now + policy.plan_window
        self._first_reserved = float("inf")  # earliest reservation start: a job ending by then may use any node
        self._behind: dict[str, str] = {}  # partition → why jobs behind its reservation wait (said once per pass)
        self._future_limited: set[str] = set()  # limited associations that reserved or planned jobs draw on
        self._future_chains: set[tuple[str, ...]] = set()
        self._nodes: NodeSlots | None = None
        self._limits: LimitSlots | None = None
        # Partitions whose every slot is held past the planning window: their waiting jobs are not planned. Slots only
        # free later as a walk goes on, so a partition never leaves this set.
        self._saturated: set[str] = set()

    # --- deciding -------------------------------------------------------------------------------------------------

    def run(self, queue: Iterable[JobRequest]) -> Decisions:
        with paused_gc():
            for job in queue_order(queue):
                self.step(job)
        return self.decisions

    def step(self, job: JobRequest) -> Outcome:
        outcome = self.evaluate(job)
        self.commit(job, outcome)
        return outcome

    def advance(self, job: JobRequest) -> None:
        """`step` for a job whose reason nobody reads: the jobs ahead of the one an explanation is about.

        A job whose shape already failed to fit now, in a partition that already has its reservation, can neither
        start nor reserve: it is only planned, without asking which limit holds it (a third of an explanation's walk
        went to that question and the saturation check)."""
        partition = job.partition
        if self.plan_ahead and partition in self.reserved_in:
            open_only = self.overlaps_reservation(self.now + job.time_limit * self._minute)
            if self._known_not_to_fit(job, self._shape_key(job, open_only)):
                self.waiting[partition].append(job)  # the reserved job is there already
                start, chosen = self._plan(job)
                self.planned[job.id] = start
                if start is not None:
                    self._hold_future(job, start, chosen)
                return
        self.step(job)

    def evaluate(self, job: JobRequest) -> Outcome:
        """What this pass would do with `job` at its place in the queue; changes nothing."""
        cause = first_violation(job, self.limits, self.usage)
        if cause is None:
            if not self.reservations or self.spares_reservations(job):
                end = self.now + job.time_limit * self._minute
                chosen = self.place_now(job, open_only=self.overlaps_reservation(end))
                if chosen is not None:
                    return Outcome(START, Reason.NONE, self.now, tuple(chosen))
            if job.partition not in self.reserved_in:
                found = self.earliest(job, admitted=True)
                if found is None:
                    return Outcome(WAIT, Reason.NODE_DOWN, None)
                if found is not False:
                    return Outcome(RESERVE, Reason.RESOURCES, found[0], tuple(found[1]))
            reason = Reason.PRIORITY
        else:
            reason = cause.code
        if not self.plan_ahead:
            return Outcome(WAIT, reason, None, (), cause)
        start, chosen = self._plan(job)
        return Outcome(WAIT, reason, start, chosen, cause)

    def _plan(self, job: JobRequest) -> tuple[float | None, tuple[int, ...]]:
        """Where a waiting job goes in the plan; (None, ()) beyond the planning window (Slurm's bf_window): not
        planned, so it holds nothing in the plan."""
        if job.partition in self._saturated:
            return None, ()
        found = self.earliest(job, admitted=False)
        if not found or found[0] > self.horizon:
            if self.node_slots().first_free(job.partition) > self.horizon:
                self._saturated.add(job.partition)
            return None, ()
        return found[0], tuple(found[1])

    def overlaps_reservation(self, end: float) -> bool:
        return end > self._first_reserved

    def spares_reservations(self, job: JobRequest) -> bool:
        """Starting `job` now leaves every reserved job room in the limits they share, from now on.

        Even a job that ends before the reservation must leave the room: if it took it, the reserved job would be
        held by its limit at the next pass, lose its reservation, and see lower jobs take its nodes.
        """
        for held in self.reservations:
            if held.associations.isdisjoint(job.associations):
                continue
            if first_violation(held.job, self.limits, self.usage, extra=job):
                return False
        return True

    def switch_limit(self, job: JobRequest, at: float) -> int | None:
        """How many leaf switches the job accepts at `at`: its own bound until its switch wait runs out."""
        if not (job.topology_aware or job.max_switches):
            return None
        if at >= job.eligible_at + self.policy.switch_wait:
            return None
        return job.max_switches or self.pool.ideal_switches(job)

    def place_now(self, job: JobRequest, *, open_only: bool) -> list[int] | None:
        key = self._shape_key(job, open_only)
        if self._known_not_to_fit(job, key):
            return None
        chosen = self.pool.find(job, open_only=open_only, max_switches=key[-1])
        if chosen is None:
            self._failed[key] = min(self._failed.get(key, job.nodes), job.nodes)
        return chosen

    def _known_not_to_fit(self, job: JobRequest, key: tuple) -> bool:
        """Free resources only shrink during a pass: a shape that did not fit does not fit with more nodes either."""
        failed = self._failed.get(key)
        return failed is not None and job.nodes >= failed

    def _shape_key(self, job: JobRequest, open_only: bool) -> tuple:
        bound = self.switch_limit(job, self.now) if job.topology_aware or job.max_switches else None
        return (open_only, job.partition, job.accelerators_per_node, job.cpus_per_node, job.memory_per_node, bound)

    def earliest(self, job: JobRequest, *, admitted: bool) -> tuple[float, list[int]] | None | bool:
        """Planned (start, nodes); None when no nodes can ever hold it; False when a limit never will."""
        if admitted and self._future_limited.isdisjoint(job.associations):
            limit_at = self.now  # admitted now, and nothing planned ahead of it draws on the same limits
        else:
            limit_at = self.limit_slots().earliest(job)
            if limit_at is None:
                return False
        plan = self.node_slots()
        bound = self.switch_limit(job, self.now) if job.topology_aware or job.max_switches else None
        if bound is None:
            spread = plan.earliest(job)
            if spread is None:
                return None
            return (spread[0] if spread[0] > limit_at else limit_at), spread[1]
        options = []
        if bound is not None:
            expiry = job.eligible_at + self.policy.switch_wait
            constrained = plan.earliest(job, bound)
            if constrained is not None:
                options.append((max(constrained[0], limit_at), 0, constrained[1]))
            spread = plan.earliest(job)
            if spread is not None:
                options.append((max(spread[0], expiry, limit_at), 1, spread[1]))
        if not options:
            return None
        when, _, chosen = min(options, key=lambda o: (o[0], o[1]))
        return when, chosen

    def node_slots(self) -> NodeSlots:
        if self._nodes is None:
            holdings = [(r.job, r.allocation, r.ends_at) for r in self.running] + self.started
            self._nodes = NodeSlots(self.pool, holdings, self.now)
        return self._nodes

    def limit_slots(self) -> LimitSlots:
        if self._limits is None:
            holdings = [(r.job, r.ends_at) for r in self.running] + [(j, end) for j, _, end in self.started]
            self._limits = LimitSlots(self.limits, self.usage, holdings, self.now)
            for job, end in self.future:
                self._limits.commit(job, end, charged=False)
        return self._limits

    # --- committing -----------------------------------------------------------------------------------------------

    def commit(self, job: JobRequest, outcome: Outcome) -> None:
        if self.plan_ahead:
            self.planned[job.id] = outcome.start
        if outcome.kind == START:
            self._start(job, outcome)
        elif outcome.kind == RESERVE:
            self._reserve(job, outcome)
        else:
            self.waiting.setdefault(job.partition, []).append(job)
            # Explanations plan thousands of jobs and read none of these details: only a pass writes them.
            detail = "" if self.plan_ahead else self._detail(job, outcome)
            self.decisions.blocked.append(Block(job.id, outcome.reason, detail))
            if outcome.start is not None:
                self._hold_future(job, outcome.start, outcome.chosen)

    def _start(self, job: JobRequest, outcome: Outcome) -> None:
        end = self.now + self.policy.duration(job.time_limit)
        allocation = self.pool.allocate(job, list(outcome.chosen))
        self.decisions.starts.append(Start(job.id, allocation, self.pool.switches_of(outcome.chosen)))
        charge(job, self.usage)
        self.started.append((job, allocation, end))
        if self._nodes is not None:
            self._nodes.commit(job, outcome.chosen, end)
        if self._limits is not None:
            self._limits.commit(job, end, charged=True)

    def _reserve(self, job: JobRequest, outcome: Outcome) -> None:
        held = Held(
            job,
            outcome.start,
            outcome.start + self.policy.duration(job.time_limit),
            outcome.chosen,
            frozenset(job.associations),
        )
        self.reservations.append(held)
        self.reserved_in[job.partition] = held
        self._first_reserved = min(self._first_reserved, held.start)
        self._behind.pop(job.partition, None)
        self.pool.reserve(outcome.chosen)
        self.waiting.setdefault(job.partition, []).append(job)
        nodes = tuple(self.pool.nodes[i].name for i in sorted(outcome.chosen))
        self.decisions.reservations.append(
            Reservation(job.id, outcome.start, nodes, self.pool.switches_of(outcome.chosen))
        )
        self.decisions.blocked.append(Block(job.id, Reason.RESOURCES, self._detail(job, outcome)))
        self._hold_future(job, outcome.start, outcome.chosen)

    def _hold_future(self, job: JobRequest, start: float, chosen: tuple[int, ...]) -> None:
        end = start + job.time_limit * self._minute
        self.node_slots().commit(job, chosen, end)
        self.future.append((job, end))
        if job.associations not in self._future_chains:
            self._future_chains.add(job.associations)
            self._future_limited.update(key for key in job.associations if key in self.limits)
        if self._limits is not None:
            self._limits.commit(job, end, charged=False)

    def _detail(self, job: JobRequest, outcome: Outcome) -> str:
        if outcome.cause is not None:
            return outcome.cause.message
        if outcome.kind == RESERVE:
            return f"reserved to start in {format_duration(outcome.start - self.now)} on {len(outcome.chosen)} node(s)"
        if outcome.reason == Reason.NODE_DOWN:
            return f"partition {job.partition} does not have enough nodes in service for it"
        said = self._behind.get(job.partition)
        if said is None:
            held = self.reserved_in.get(job.partition)
            if held is not None:
                wait = format_duration(held.start - self.now)
                said = f"job {held.job.id} of higher priority is reserved to start in {wait}"
            else:
                said = "jobs of higher priority hold what it needs"
            self._behind[job.partition] = said
        return said


def format_duration(value: float) -> str:
    value = max(0, int(round(value)))
    hours, rest = divmod(value, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {seconds} s" if minutes < 10 and seconds else f"{minutes} min"
    return f"{seconds} s"


def schedule(
    nodes: list[NodeView],
    queue: Sequence[JobRequest],
    limits: dict[str, AssocLimits],
    usage: dict[str, AssocUsage],
    now: float,
    *,
    running: Sequence[RunningJob] = (),
    policy: Policy = DEFAULT_POLICY,
) -> Decisions:
    """Start what fits in priority order, with EASY backfill. Takes the resources it allocates from `nodes`."""
    return Planner(nodes, limits, usage, now, running=running, policy=policy).run(queue)
