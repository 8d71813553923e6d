"""Gang placement on what is free now: all nodes of a job or none, on the fewest leaf switches, best fit.

`Pool` indexes free resources per partition so a pass over 100,000 queued jobs stays close to linear: counts of nodes
with at least k free accelerators (per partition and per leaf switch) turn most jobs away in O(1), and heaps of nodes
by free accelerators find the tightest node for a one-node job in O(log n). Nodes are ordered by (switch, name), so
ties pack switches in order and leave the last ones whole for multi-node jobs.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from scheduler.model import JobRequest, NodeView


class PartitionIndex:
    __slots__ = (
        "name",
        "members",
        "switch_members",
        "switch_order",
        "max_acc",
        "ge",
        "ge_open",
        "sw_ge",
        "sw_ge_open",
        "buckets",
        "sizes",
    )

    def __init__(self, name: str):
        self.name = name
        self.members: list[int] = []
        self.switch_members: dict[str, list[int]] = {}
        self.max_acc = 0

    def add(self, i: int, node: NodeView) -> None:
        self.members.append(i)
        self.switch_members.setdefault(node.switch, []).append(i)
        self.max_acc = max(self.max_acc, node.accelerators)

    def build(self, free: list[int]) -> None:
        top = self.max_acc
        # ge[k]: nodes with at least k free accelerators; "open" leaves out nodes held for a reservation.
        self.ge = [0] * (top + 2)
        self.sw_ge = {s: [0] * (top + 2) for s in self.switch_members}
        self.buckets: list[list[int]] = [[] for _ in range(top + 1)]
        for switch, members in self.switch_members.items():
            counts = self.sw_ge[switch]
            for i in members:
                for k in range(free[i] + 1):
                    counts[k] += 1
                    self.ge[k] += 1
                self.buckets[free[i]].append(i)  # appended in index order: already a heap
        self.ge_open = list(self.ge)
        self.sw_ge_open = {s: list(c) for s, c in self.sw_ge.items()}
        self.switch_order = list(self.switch_members)
        self.sizes = sorted((len(m) for m in self.switch_members.values()), reverse=True)

    def ideal_switches(self, nodes: int) -> int | None:
        """Fewest leaf switches that could ever hold `nodes` nodes of this partition."""
        total = 0
        for used, size in enumerate(self.sizes, start=1):
            total += size
            if total >= nodes:
                return used
        return None

    def take(self, i: int, switch: str, old: int, new: int, reserved: bool) -> None:
        ge, sw = self.ge, self.sw_ge[switch]
        for k in range(new + 1, old + 1):
            ge[k] -= 1
            sw[k] -= 1
        if not reserved:
            ge, sw = self.ge_open, self.sw_ge_open[switch]
            for k in range(new + 1, old + 1):
                ge[k] -= 1
                sw[k] -= 1
        heapq.heappush(self.buckets[new], i)

    def close(self, switch: str, free: int) -> None:
        ge, sw = self.ge_open, self.sw_ge_open[switch]
        for k in range(free + 1):
            ge[k] -= 1
            sw[k] -= 1


def choose_switches(counts: dict[str, int], needed: int) -> list[tuple[str, int]] | None:
    """(switch, nodes to take) on the fewest switches; among those, the tightest that fits (best fit).

    One switch if any holds the job: the one with the fewest eligible nodes. Otherwise the biggest switches first,
    and for the rest the smallest switch that covers it. `counts` is in switch order, which breaks ties.
    """
    if sum(counts.values()) < needed:
        return None
    ordered = sorted(counts.items(), key=lambda kv: -kv[1])  # stable: ties keep switch order
    chosen: list[tuple[str, int]] = []
    remaining, pos = needed, 0
    while True:
        cover = None
        for j in range(pos, len(ordered)):
            count = ordered[j][1]
            if count < remaining:
                break
            if cover is None or count < ordered[cover][1]:
                cover = j
        if cover is not None:
            chosen.append((ordered[cover][0], remaining))
            return chosen
        switch, count = ordered[pos]
        chosen.append((switch, count))
        remaining -= count
        pos += 1


class Pool:
    """Free resources now, indexed for placement; `allocate` takes them, `reserve` holds nodes for a reservation."""

    def __init__(self, nodes: Iterable[NodeView]):
        self.nodes = sorted(nodes, key=lambda n: (n.switch, n.name))
        self.index = {n.name: i for i, n in enumerate(self.nodes)}
        self.free = [len(n.free_accelerators) for n in self.nodes]
        self.reserved = [False] * len(self.nodes)
        self.parts: dict[str, PartitionIndex] = {}
        self.node_parts: list[tuple[PartitionIndex, ...]] = []
        for i, node in enumerate(self.nodes):
            parts = []
            if node.up:
                for name in sorted(node.partitions):
                    part = self.parts.get(name)
                    if part is None:
                        part = self.parts[name] = PartitionIndex(name)
                    part.add(i, node)
                    parts.append(part)
            self.node_parts.append(tuple(parts))
        for part in self.parts.values():
            part.build(self.free)

    def find(self, job: JobRequest, *, open_only: bool = False, max_switches: int | None = None) -> list[int] | None:
        """Node indices for `job` now, or None. `open_only` keeps off nodes held for a reservation."""
        part = self.parts.get(job.partition)
        want = job.accelerators_per_node
        if part is None or want > part.max_acc:
            return None
        ge = part.ge_open if open_only else part.ge
        if ge[want] < job.nodes:
            return None
        if job.nodes == 1:
            return self._one(part, job, open_only)
        return self._many(part, job, open_only, max_switches)

    def _one(self, part: PartitionIndex, job: JobRequest, open_only: bool) -> list[int] | None:
        cpus, memory = job.cpus_per_node, job.memory_per_node
        nodes, free, reserved = self.nodes, self.free, self.reserved
        for k in range(job.accelerators_per_node, part.max_acc + 1):
            heap = part.buckets[k]
            skipped = []
            found = -1
            while heap:
                i = heap[0]
                if free[i] != k:  # moved to another bucket since: drop the stale entry
                    heapq.heappop(heap)
                    continue
                node = nodes[i]
                if (open_only and reserved[i]) or node.free_cpus < cpus or node.free_memory_mb < memory:
                    skipped.append(heapq.heappop(heap))
                    continue
                found = i
                break
            for i in skipped:
                heapq.heappush(heap, i)
            if found >= 0:
                return [found]
        return None

    def _many(self, part: PartitionIndex, job: JobRequest, open_only: bool, max_switches: int | None):
        want = job.accelerators_per_node
        sw = part.sw_ge_open if open_only else part.sw_ge
        counts = {s: sw[s][want] for s in part.switch_order if sw[s][want]}
        picked = self._pick(part, job, open_only, max_switches, counts)
        if picked is not None:
            return picked or None
        # Counts only know accelerators; cpus or memory ran short somewhere: count exactly and try once more.
        exact = {s: len(self._eligible(part.switch_members[s], job, open_only)) for s in part.switch_order}
        return self._pick(part, job, open_only, max_switches, {s: c for s, c in exact.items() if c}) or None

    def _pick(self, part, job, open_only, max_switches, counts) -> list[int] | None | bool:
        """Node indices; False when no switch set can hold the job; None when the counts overstated a switch."""
        plan = choose_switches(counts, job.nodes)
        if plan is None or (max_switches is not None and len(plan) > max_switches):
            return False
        chosen: list[int] = []
        for switch, take in plan:
            candidates = self._eligible(part.switch_members[switch], job, open_only)
            if len(candidates) < take:
                return None
            chosen.extend(self._best(candidates, take))
        return chosen

    def _eligible(self, members: list[int], job: JobRequest, open_only: bool) -> list[int]:
        want, cpus, memory = job.accelerators_per_node, job.cpus_per_node, job.memory_per_node
        nodes, free, reserved = self.nodes, self.free, self.reserved
        return [
            i
            for i in members
            if free[i] >= want
            and nodes[i].free_cpus >= cpus
            and nodes[i].free_memory_mb >= memory
            and not (open_only and reserved[i])
        ]

    def _best(self, candidates: list[int], take: int) -> list[int]:
        # Fullest nodes first: emptier nodes stay whole for jobs that need all their accelerators.
        nodes, free = self.nodes, self.free
        return sorted(candidates, key=lambda i: (free[i], nodes[i].free_cpus, i))[:take]

    def allocate(self, job: JobRequest, chosen: list[int]) -> dict[str, tuple[int, ...]]:
        """Take the job's resources on the chosen nodes; node → accelerator indices, in rank order."""
        want = job.accelerators_per_node
        allocation: dict[str, tuple[int, ...]] = {}
        for i in sorted(chosen):
            node = self.nodes[i]
            taken = tuple(sorted(node.free_accelerators)[:want])
            if taken:
                held = set(taken)
                node.free_accelerators = [x for x in node.free_accelerators if x not in held]
            node.free_cpus -= job.cpus_per_node
            node.free_memory_mb -= job.memory_per_node
            old = self.free[i]
            self.free[i] = old - len(taken)
            if taken:
                for part in self.node_parts[i]:
                    part.take(i, node.switch, old, self.free[i], self.reserved[i])
            allocation[node.name] = taken
        return allocation

    def reserve(self, chosen: Iterable[int]) -> None:
        for i in chosen:
            if self.reserved[i]:
                continue
            self.reserved[i] = True
            for part in self.node_parts[i]:
                part.close(self.nodes[i].switch, self.free[i])

    def switches_of(self, chosen: Iterable[int]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.nodes[i].switch for i in sorted(chosen)))

    def ideal_switches(self, job: JobRequest) -> int | None:
        part = self.parts.get(job.partition)
        return part.ideal_switches(job.nodes) if part else None

    def summary(self, job: JobRequest) -> PartitionSummary:
        """What the job's partition has free now, in the job's terms (for explanations)."""
        part = self.parts.get(job.partition)
        if part is None:
            return PartitionSummary(0, 0, 0, 0, 0)
        eligible = {s: len(self._eligible(m, job, False)) for s, m in part.switch_members.items()}
        return PartitionSummary(
            nodes=len(part.members),
            accelerators=sum(self.nodes[i].accelerators for i in part.members),
            free_accelerators=sum(self.free[i] for i in part.members),
            eligible_nodes=sum(eligible.values()),
            best_switch=max(eligible.values(), default=0),
        )


@dataclass(frozen=True)
class PartitionSummary:
    nodes: int  # in service
    accelerators: int
    free_accelerators: int
    eligible_nodes: int  # nodes that could take one node of the job now
    best_switch: int  # the most such nodes on one leaf switch


def min_switches_needed(job: JobRequest, nodes: list[NodeView]) -> int | None:
    """Fewest leaf switches that could hold the job now; None when it does not fit at all."""
    by_switch: dict[str, int] = defaultdict(int)
    for node in nodes:
        if job.partition in node.partitions and node.fits(
            job.accelerators_per_node, job.cpus_per_node, job.memory_per_node
        ):
            by_switch[node.switch] += 1
    total = 0
    for used, count in enumerate(sorted(by_switch.values(), reverse=True), start=1):
        total += count
        if total >= job.nodes:
            return used
    return None
