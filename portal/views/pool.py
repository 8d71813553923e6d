"""Pool availability as the dashboard shows it: per partition, per leaf switch, per node (``sinfo`` for people)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Prefetch

from cluster.models import Node, NodeState, Partition
from jobs.selectors import NodeAllocation, node_allocations


@dataclass
class NodeSlots:
    name: str
    state: str  # IDLE, MIXED, ALLOCATED, DRAIN, DOWN
    accelerators: int
    allocated: int

    @property
    def up(self) -> bool:
        return self.state not in (NodeState.DOWN, NodeState.DRAIN)

    @property
    def free(self) -> int:
        return max(0, self.accelerators - self.allocated) if self.up else 0

    @property
    def whole_free(self) -> bool:
        return self.state == "IDLE"

    @property
    def slots(self) -> list[str]:
        """One word per accelerator, for the slot strip: used, free or off."""
        if not self.up:
            return ["off"] * self.accelerators
        used = min(self.allocated, self.accelerators)
        return ["used"] * used + ["free"] * (self.accelerators - used)


@dataclass
class SwitchView:
    name: str
    nodes: list[NodeSlots] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(n.accelerators for n in self.nodes)

    @property
    def free(self) -> int:
        return sum(n.free for n in self.nodes)

    @property
    def whole_nodes_free(self) -> int:
        return sum(1 for n in self.nodes if n.whole_free)


@dataclass
class PartitionView:
    partition: Partition
    switches: list[SwitchView]

    @property
    def nodes(self) -> list[NodeSlots]:
        return [n for s in self.switches for n in s.nodes]

    @property
    def total(self) -> int:
        return sum(s.total for s in self.switches)

    @property
    def free(self) -> int:
        return sum(s.free for s in self.switches)

    @property
    def whole_nodes_free(self) -> int:
        return sum(s.whole_nodes_free for s in self.switches)

    @property
    def nodes_up(self) -> int:
        return sum(1 for n in self.nodes if n.up)

    @property
    def used_percent(self) -> int:
        return round(100 * (self.total - self.free) / self.total) if self.total else 0


def _state(node: Node, held: NodeAllocation | None) -> str:
    if node.state != NodeState.UP:
        return node.state
    if held is None or held.jobs == 0:
        return "IDLE"
    full = (node.accelerators and held.accelerators >= node.accelerators) or held.cpus >= node.cpus
    return "ALLOCATED" if full else "MIXED"


def pool_status() -> list[PartitionView]:
    """Every partition with its nodes grouped by leaf switch. Two queries plus one for the allocations."""
    held = node_allocations()
    nodes = Node.objects.select_related("switch").order_by("switch__name", "name")
    views = []
    for partition in Partition.objects.prefetch_related(Prefetch("nodes", queryset=nodes)).order_by("name"):
        switches: dict[str, SwitchView] = {}
        for node in partition.nodes.all():
            allocation = held.get(node.name)
            slots = NodeSlots(
                node.name, _state(node, allocation), node.accelerators, getattr(allocation, "accelerators", 0)
            )
            switches.setdefault(node.switch.name, SwitchView(node.switch.name)).nodes.append(slots)
        views.append(PartitionView(partition, list(switches.values())))
    return views
