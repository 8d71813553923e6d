"""The future the scheduler plans with, assuming every job runs to its time limit and nothing new arrives.

Each node is cut into slots (one per accelerator; one per cpu on a node without accelerators), each holding the time it
becomes free for good. A job needs `demand` slots on a node: its accelerators, or more if its cpus or memory are the
larger share of the node, so a node with `demand` free slots always has room for it. A limit's headroom is kept the
same way, as runs of (time free for good, amount). Planning a job takes the slots (and headroom) that free up first
and holds them until the job's end, so a plan never puts two jobs on the same resource at once and never takes
headroom a limit does not have.

It leaves out holes: a slot taken from time T is busy from its previous free time, so estimates are upper bounds (the
scheduler may backfill into a hole sooner). Per partition and demand, a heap of (free time, node) finds the node
that frees first in O(log n). Each node has one entry per heap, whose time may lag behind the node's: slots only ever
free later, so a lagging entry is a lower bound and is raised when it reaches the top (a lazy increase-key). Committing
a job touches no heap; pushing an entry per change and popping the stale ones made up a third of an explanation.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterable, Mapping, Sequence

from scheduler.model import AssocLimits, AssocUsage, JobRequest
from scheduler.placement import Pool, choose_switches

Shape = tuple[int, int, int]  # accelerators, cpus, memory


def slot_count(shape: Shape) -> int:
    accelerators, cpus, _ = shape
    return accelerators if accelerators > 0 else max(cpus, 1)


def demand(accelerators: int, cpus: int, memory: int, shape: Shape) -> int | None:
    """Slots a job needs on a node of this shape; None when the node can never hold it."""
    node_acc, node_cpus, node_mem = shape
    if accelerators > node_acc or cpus > node_cpus or memory > node_mem:
        return None
    size = slot_count(shape)
    need = 1
    if node_acc:
        need = max(need, math.ceil(accelerators * size / node_acc))
    if node_cpus:
        need = max(need, math.ceil(cpus * size / node_cpus))
    if node_mem:
        need = max(need, math.ceil(memory * size / node_mem))
    return min(need, size)


class _Class:
    """The nodes of one partition with one shape, with a heap per demand d keyed on each node's d-th free time.

    A heap is built the first time a job with that demand asks (a pass usually asks for one), then kept current.
    Nodes taken off a heap to answer a multi-node query are set aside and pushed back at the next query, keyed on
    their times then: the plan usually commits a job on them in between, and pushing them back at once would have put
    in entries that were stale the moment after (two heap operations per node instead of one).
    """

    __slots__ = ("shape", "members", "heaps", "slots", "aside")

    def __init__(self, shape: Shape, members: list[int], slots: list[list[float]]):
        self.shape = shape
        self.members = members
        self.slots = slots
        self.heaps: list[list[tuple[float, int]] | None] = [None] * (slot_count(shape) + 1)
        self.aside: list[list[int]] = [[] for _ in self.heaps]

    def heap(self, d: int) -> list[tuple[float, int]]:
        heap = self.heaps[d]
        if heap is None:
            slots = self.slots
            heap = self.heaps[d] = [(slots[i][d - 1], i) for i in self.members]
            heapq.heapify(heap)
        aside = self.aside[d]
        if aside:
            slots, push, at = self.slots, heapq.heappush, d - 1
            for i in aside:
                push(heap, (slots[i][at], i))
            aside.clear()
        return heap


class NodeSlots:
    def __init__(self, pool: Pool, holdings: Iterable[tuple[JobRequest, Mapping[str, Sequence[int]], float]], now):
        self.pool, self.now = pool, now
        nodes = pool.nodes
        self.shapes: list[Shape] = [(n.accelerators, n.cpus, n.memory_mb) for n in nodes]
        busy: list[list[float]] = [[] for _ in nodes]
        for job, allocation, end in holdings:
            for name, indices in allocation.items():
                i = pool.index.get(name)
                if i is None:
                    continue
                shape = self.shapes[i]
                need = demand(len(indices), job.cpus_per_node, job.memory_per_node, shape) or slot_count(shape)
                busy[i].extend([max(end, now)] * need)
        self.slots: list[list[float]] = []
        for i, shape in enumerate(self.shapes):
            size = shape[0] if shape[0] > 0 else max(shape[1], 1)
            held = busy[i]
            if not held:
                self.slots.append([now] * size)
                continue
            held.sort(reverse=True)
            self.slots.append(sorted([now] * (size - len(held)) + held[:size]))
        self.classes: dict[str, list[_Class]] = {}
        self.node_classes: list[list[_Class]] = [[] for _ in nodes]
        for name, part in pool.parts.items():
            by_shape: dict[Shape, list[int]] = {}
            for i in part.members:
                by_shape.setdefault(self.shapes[i], []).append(i)
            classes = [_Class(shape, members, self.slots) for shape, members in by_shape.items()]
            self.classes[name] = classes
            for cls in classes:
                for i in cls.members:
                    self.node_classes[i].append(cls)
        self._demand: dict[tuple, int | None] = {}
        self._options: dict[tuple, list[tuple[_Class, int]]] = {}  # per partition and job shape: (class, demand)

    def demand(self, job: JobRequest, shape: Shape) -> int | None:
        key = (job.accelerators_per_node, job.cpus_per_node, job.memory_per_node, shape)
        if key not in self._demand:
            self._demand[key] = demand(*key)
        return self._demand[key]

    def earliest(self, job: JobRequest, max_switches: int | None = None) -> tuple[float, list[int]] | None:
        """When and where the job could start at the earliest; None if no set of nodes can ever hold it."""
        shape_key = (job.partition, job.accelerators_per_node, job.cpus_per_node, job.memory_per_node)
        options = self._options.get(shape_key)
        if options is None:
            classes = self.classes.get(job.partition, ())
            options = [(cls, d) for cls in classes if (d := self.demand(job, cls.shape)) is not None]
            self._options[shape_key] = options
        if not options:
            return None
        if max_switches is not None:
            return self._constrained(job, options, max_switches)
        if job.nodes == 1:
            best = None
            for cls, d in options:
                top = self._peek(cls.heap(d), d)
                if top is not None and (best is None or top < best):
                    best = top
            return None if best is None else (max(best[0], self.now), [best[1]])
        picked: list[tuple[float, int]] = []
        for cls, d in options:
            picked.extend(self._smallest(cls, d, job.nodes))
        if len(picked) < job.nodes:
            return None
        picked.sort()
        chosen = picked[: job.nodes]
        return max(chosen[-1][0], self.now), [i for _, i in chosen]

    def first_free(self, partition: str) -> float:
        """When the first slot of the partition frees: no job of it can start in the plan before then."""
        tops = [self._peek(cls.heap(1), 1) for cls in self.classes.get(partition, ())]
        return min((top[0] for top in tops if top is not None), default=math.inf)

    def _peek(self, heap: list[tuple[float, int]], d: int) -> tuple[float, int] | None:
        slots, replace, at = self.slots, heapq.heapreplace, d - 1
        while heap:
            top = heap[0]
            actual = slots[top[1]][at]
            if actual == top[0]:
                return top
            replace(heap, (actual, top[1]))
        return None

    def _smallest(self, cls: _Class, d: int, count: int) -> list[tuple[float, int]]:
        """The `count` nodes whose d-th slot frees first; they stay aside until the class's next query."""
        heap = cls.heap(d)
        slots, valid, replace, pop, at = self.slots, [], heapq.heapreplace, heapq.heappop, d - 1
        while heap and len(valid) < count:
            top = heap[0]
            actual = slots[top[1]][at]
            if actual == top[0]:
                valid.append(pop(heap))
            else:
                replace(heap, (actual, top[1]))
        cls.aside[d].extend(i for _, i in valid)
        return valid

    def _constrained(self, job: JobRequest, options, max_switches: int) -> tuple[float, list[int]] | None:
        nodes, slots = self.pool.nodes, self.slots
        by_switch: dict[str, list[tuple[float, int]]] = {}
        for cls, d in options:
            for i in cls.members:
                by_switch.setdefault(nodes[i].switch, []).append((slots[i][d - 1], i))
        for entries in by_switch.values():
            entries.sort()
        needed = job.nodes
        if max_switches <= 1:
            best = None
            for switch in sorted(by_switch):
                entries = by_switch[switch]
                if len(entries) >= needed and (best is None or entries[needed - 1][0] < best[0]):
                    best = (entries[needed - 1][0], switch)
            if best is None:
                return None
            return max(best[0], self.now), [i for _, i in by_switch[best[1]][:needed]]
        times = {s: [t for t, _ in entries] for s, entries in by_switch.items()}

        def counts_at(when: float) -> dict[str, int]:
            return {s: bisect.bisect_right(times[s], when) for s in sorted(times)}

        def feasible(when: float) -> bool:
            return sum(sorted(counts_at(when).values(), reverse=True)[:max_switches]) >= needed

        candidates = sorted({t for ts in times.values() for t in ts})
        if not candidates or not feasible(candidates[-1]):
            return None
        lo, hi = 0, len(candidates) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if feasible(candidates[mid]):
                hi = mid
            else:
                lo = mid + 1
        when = candidates[lo]
        plan = choose_switches({s: c for s, c in counts_at(when).items() if c}, needed) or []
        chosen = [i for switch, take in plan for _, i in by_switch[switch][:take]]
        return max(when, self.now), chosen

    def commit(self, job: JobRequest, chosen: Iterable[int], end: float) -> None:
        """Hold the job's slots on the chosen nodes until `end` (the ones that free first)."""
        slots, shapes = self.slots, self.shapes
        needs: dict[Shape, int] = {}
        for i in chosen:
            shape = shapes[i]
            need = needs.get(shape)
            if need is None:
                need = needs[shape] = self.demand(job, shape) or slot_count(shape)
            old = slots[i]
            # A job started now can sit in a hole before a reserved job's slots: those stay busy until their end.
            # max(x, end) keeps a sorted list sorted, so a whole node needs no sort.
            if need >= len(old):
                if old[0] >= end:
                    continue
                new = [end] * len(old) if old[-1] <= end else [x if x > end else end for x in old]
            else:
                new = sorted(old[need:] + [x if x > end else end for x in old[:need]])
            # Times only grow, so the heaps' entries for this node become lower bounds: _peek raises them.
            slots[i] = new


class _Headroom:
    """A limit's capacity as runs of (time it is free for good, amount): a job that holds 512 accelerators until
    one time is one run, not 512 units."""

    __slots__ = ("cap", "heap", "now")

    def __init__(self, cap: int, held: Iterable[tuple[float, int]], now: float):
        self.cap, self.now = cap, now
        runs: list[tuple[float, int]] = []
        total = 0
        # Latest ends first: when holdings exceed the cap (it was lowered), the room that exists frees last.
        for end, amount in sorted(held, reverse=True):
            take = min(amount, cap - total)
            if take <= 0:
                break
            runs.append((max(end, now), take))
            total += take
        if total < cap:
            runs.append((now, cap - total))
        heapq.heapify(runs)
        self.heap = runs

    def earliest(self, amount: int) -> float | None:
        if amount > self.cap:
            return None
        if amount <= 0:
            return self.now
        heap = self.heap
        if heap[0][1] >= amount:  # the run that frees first is enough: the usual case, no pops
            return max(heap[0][0], self.now)
        taken, got = [], 0
        while got < amount:
            run = heapq.heappop(heap)
            taken.append(run)
            got += run[1]
        for run in taken:
            heapq.heappush(heap, run)
        return max(taken[-1][0], self.now)

    def commit(self, amount: int, end: float) -> None:
        heap, got, freed = self.heap, 0, 0
        amount = min(amount, self.cap)
        if amount <= 0:
            return
        when, size = heap[0]
        if size > amount and when <= end:  # the usual case: part of the first run, freed again at `end`
            heapq.heapreplace(heap, (when, size - amount))
            heapq.heappush(heap, (end, amount))
            return
        later = []
        while got < amount:
            when, size = heapq.heappop(heap)
            use = min(size, amount - got)
            got += use
            if size > use:
                heapq.heappush(heap, (when, size - use))
            if when > end:
                later.append((when, use))  # held by a job planned after this one ends: stays as it was
            else:
                freed += use
        for run in later:
            heapq.heappush(heap, run)
        if freed:
            heapq.heappush(heap, (end, freed))


class LimitSlots:
    """When each association limit has room for a job: GrpTRES, GrpJobs and MaxTRESPerUser over time, and what is
    left of GrpTRESMins budgets (budgets never come back, so a job over one never starts)."""

    def __init__(
        self,
        limits: Mapping[str, AssocLimits],
        usage: Mapping[str, AssocUsage],
        holdings: Iterable[tuple[JobRequest, float]],
        now: float,
    ):
        self.limits, self.usage, self.now = limits, usage, now
        self._budgeted = any(limit.grp_tres_mins for limit in limits.values())
        self.by_key: dict[str, list[tuple[JobRequest, float]]] = {}
        # Holdings are remembered per limit only to build its headrooms lazily; a limit whose every headroom exists
        # (no MaxTRESPerUser: a new user could still ask for one) needs no more of them.
        self._unbuilt: dict[str, set[tuple[str, str]]] = {
            key: {("tres", name) for name in limit.grp_tres}
            | ({("jobs", "jobs")} if limit.grp_jobs is not None else set())
            for key, limit in limits.items()
            if not limit.max_tres_per_user
        }
        self._remembered = {key for key in limits if key not in self._unbuilt or self._unbuilt[key]}
        for job, end in holdings:
            self._remember(job, end)
        self.dims: dict[tuple, _Headroom] = {}
        self._chains: dict[tuple, list[tuple[_Headroom, str | None]]] = {}
        self._last_job: JobRequest | None = None
        self._last_draws: list[tuple[_Headroom, int]] = []  # a job is planned, then committed: one lookup for both
        self.planned_minutes: dict[tuple[str, str], float] = {}

    def _remember(self, job: JobRequest, end: float) -> None:
        for key in job.associations:
            if key in self._remembered:
                self.by_key.setdefault(key, []).append((job, end))

    def _dim(self, key: str, kind: str, name: str, cap: int, user: str = "") -> _Headroom:
        dim_key = (key, kind, name, user)
        units = self.dims.get(dim_key)
        if units is None:
            held = [
                (end, _amount(job, kind, name))
                for job, end in self.by_key.get(key, ())
                if kind != "user" or job.user == user
            ]
            units = self.dims[dim_key] = _Headroom(cap, held, self.now)
            unbuilt = self._unbuilt.get(key)
            if unbuilt is not None:
                unbuilt.discard((kind, name))
                if not unbuilt:
                    self._remembered.discard(key)
                    self.by_key.pop(key, None)
        return units

    def _dims_for(self, job: JobRequest) -> list[tuple[_Headroom, str | None]]:
        """The headrooms a job draws on, with the TRES it draws (None: one job). Cached per chain and user."""
        signature = (job.associations, job.user, job.accelerators_per_node > 0)
        dims = self._chains.get(signature)
        if dims is not None:
            return dims
        dims = []
        for key in job.associations:
            limit = self.limits.get(key)
            if limit is None:
                continue
            for name, cap in limit.grp_tres.items():
                if job.tres.get(name, 0):
                    dims.append((self._dim(key, "tres", name, cap), name))
            if limit.grp_jobs is not None:
                dims.append((self._dim(key, "jobs", "jobs", limit.grp_jobs), None))
            for name, cap in limit.max_tres_per_user.items():
                if job.tres.get(name, 0):
                    dims.append((self._dim(key, "user", name, cap, job.user), name))
        self._chains[signature] = dims
        return dims

    def within_budgets(self, job: JobRequest) -> bool:
        if not self._budgeted:
            return True
        for key in job.associations:
            limit = self.limits.get(key)
            if limit is None or not limit.grp_tres_mins:
                continue
            used = self.usage.get(key)
            for name, budget in limit.grp_tres_mins.items():
                needed = job.tres.get(name, 0) * job.time_limit
                spent = (used.tres_mins.get(name, 0) if used else 0) + self.planned_minutes.get((key, name), 0)
                if needed and spent + needed > budget:
                    return False
        return True

    def earliest(self, job: JobRequest) -> float | None:
        if self._budgeted and not self.within_budgets(job):
            return None
        when = self.now
        for units, amount in self._draws(job):
            at = units.earliest(amount)
            if at is None:
                return None
            if at > when:
                when = at
        return when

    def _draws(self, job: JobRequest) -> list[tuple[_Headroom, int]]:
        """(headroom, amount) for each limit the job draws on; kept for the job's commit, which follows at once."""
        if job is self._last_job:
            return self._last_draws
        tres = job.tres
        draws = [(units, tres[name] if name else 1) for units, name in self._dims_for(job)]
        self._last_job, self._last_draws = job, draws
        return draws

    def commit(self, job: JobRequest, end: float, *, charged: bool) -> None:
        """Hold the job's headroom until `end`. `charged`: its minutes are already in `usage` (it starts now)."""
        for units, amount in self._draws(job):
            units.commit(amount, end)
        self._remember(job, end)
        if not charged and self._budgeted:
            for key in job.associations:
                limit = self.limits.get(key)
                for name in limit.grp_tres_mins if limit else ():
                    spent = job.tres.get(name, 0) * job.time_limit
                    self.planned_minutes[(key, name)] = self.planned_minutes.get((key, name), 0) + spent


def _amount(job: JobRequest, kind: str, name: str) -> int:  # what one holding draws on a headroom
    return 1 if kind == "jobs" else job.tres.get(name, 0)
