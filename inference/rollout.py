"""The replica plan, a pure function: which replicas to start and which to drain (no ORM, no clock).

Rolling update: replicas of an older generation (or close to their job's time limit) keep serving until enough
current ones are READY to take their place; replicas that are not ready yet are never worth keeping.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PENDING, STARTING, READY = "PENDING", "STARTING", "READY"
LIVE = (PENDING, STARTING, READY)
# Extras are drained cheapest first: not yet running, then not yet ready, then the newest ready ones.
_DRAIN_ORDER = {PENDING: 0, STARTING: 1, READY: 2}


@dataclass(frozen=True)
class ReplicaView:
    id: int
    generation: int
    state: str
    seconds_left: float | None = None  # until its job's time limit; None: not running yet or unknown


@dataclass(frozen=True)
class Plan:
    start: int
    drain: tuple[int, ...]


def plan(*, desired: int, generation: int, replicas: Sequence[ReplicaView], replace_before_s: float) -> Plan:
    live = [r for r in replicas if r.state in LIVE]
    expiring = {r.id for r in live if r.seconds_left is not None and r.seconds_left < replace_before_s}
    current = [r for r in live if r.generation == generation and r.id not in expiring]
    retiring = [r for r in live if r.generation != generation or r.id in expiring]
    drain: list[int] = []
    start = max(0, desired - len(current))
    if len(current) > desired:
        extras = sorted(current, key=lambda r: (_DRAIN_ORDER[r.state], -r.id))[: len(current) - desired]
        drain += [r.id for r in extras]
        current = [r for r in current if r.id not in drain]
    ready_current = sum(1 for r in current if r.state == READY)
    keep = max(0, desired - ready_current)
    # Old ready replicas bridge the gap until new ones are ready; the longest-lived are kept.
    old_ready = sorted(
        (r for r in retiring if r.state == READY),
        key=lambda r: (r.id in expiring, -(r.seconds_left or 0), -r.id),
    )
    kept = {r.id for r in old_ready[:keep]}
    drain += [r.id for r in retiring if r.id not in kept]
    return Plan(start=start, drain=tuple(drain))


# The service's state is a function of its replicas, so it can never disagree with them:
#   PENDING   nothing has been ready yet
#   READY     the current generation has the desired replicas ready (or the minimum, while scaling up)
#   UPDATING  older generations still run while the current one comes up
#   DEGRADED  fewer ready replicas than the minimum, after having been ready
def service_state(
    *, previous: str, desired: int, min_replicas: int, ready_current: int, ready_total: int, retiring: int
) -> str:
    if retiring:
        return "UPDATING"
    if ready_current >= desired or (ready_current >= max(1, min_replicas)):
        return "READY"
    if previous == "PENDING":
        return "PENDING"
    return "DEGRADED"


def crash_backoff_s(recent_crashes: int, *, base_s: float = 5.0, cap_s: float = 300.0) -> float:
    """How long to wait after the last replica that died before it was ever ready (a model that cannot load, a
    bad image): none for the first, then 5 s, 10 s, 20 s, … up to 5 minutes — a crash loop must not flood the
    queue with jobs."""
    if recent_crashes < 2:
        return 0.0
    return min(cap_s, base_s * 2 ** (recent_crashes - 2))
