"""The gateway's decisions, without I/O: which service a key opens, which replica gets a request, rate limits.

Kept free of aiohttp and Django so they are unit-tested directly and cost nothing to import in the hot path.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol


class Route(Protocol):
    """inference.selectors.GatewayRoute, or a test's stand-in."""

    service_id: int
    tenant: str
    service: str
    rate_limit_rps: int
    key_hashes: Mapping[str, int]
    replicas: tuple[tuple[int, str], ...]


UNAUTHORIZED = "unauthorized"
NOT_FOUND = "not_found"


@dataclass(frozen=True)
class Access:
    route: Route | None
    key_id: int | None
    refusal: str | None  # UNAUTHORIZED (401), NOT_FOUND (404), or None when allowed


class RouteTable:
    """A snapshot of gateway_routes(): services by (tenant, name) and every active key's service."""

    def __init__(self, routes: Mapping[tuple[str, str], Route]):
        self.routes = dict(routes)
        self.key_owner: dict[str, tuple[str, str]] = {}
        for name, route in self.routes.items():
            for key_hash in route.key_hashes:
                self.key_owner[key_hash] = name

    def check(self, tenant: str, service: str, key_hash: str | None) -> Access:
        # No key, or a key nobody has: 401. A real key for something else, or no such service: 404, the same
        # answer for both, so a key tells its holder nothing about other tenants' services.
        if key_hash is None or key_hash not in self.key_owner:
            return Access(None, None, UNAUTHORIZED)
        route = self.routes.get((tenant, service))
        if route is None or key_hash not in route.key_hashes:
            return Access(None, None, NOT_FOUND)
        return Access(route, route.key_hashes[key_hash], None)

    def replica_ids(self) -> set[int]:
        return {replica_id for route in self.routes.values() for replica_id, _ in route.replicas}


class LeastOutstanding:
    """Requests in flight per replica; a request goes to the ready replica with the fewest, ties in turn."""

    def __init__(self) -> None:
        self.outstanding: dict[int, int] = {}
        self._turn = 0

    def choose(self, replicas: Iterable[tuple[int, str]], exclude: set[int]) -> tuple[int, str] | None:
        candidates = [r for r in replicas if r[0] not in exclude]
        if not candidates:
            return None
        fewest = min(self.outstanding.get(r[0], 0) for r in candidates)
        tied = [r for r in candidates if self.outstanding.get(r[0], 0) == fewest]
        self._turn += 1
        return tied[self._turn % len(tied)]

    def begin(self, replica_id: int) -> None:
        self.outstanding[replica_id] = self.outstanding.get(replica_id, 0) + 1

    def end(self, replica_id: int) -> None:
        left = self.outstanding.get(replica_id, 0) - 1
        if left > 0:
            self.outstanding[replica_id] = left
        else:
            self.outstanding.pop(replica_id, None)


class TokenBuckets:
    """Per-key token buckets: `rate` tokens a second, a burst of one second's worth."""

    def __init__(self) -> None:
        self._buckets: dict[int, tuple[float, float]] = {}  # key id -> (tokens, last refill time)

    def take(self, key_id: int, rate: float, now: float) -> float:
        """0 when the request may pass; else the seconds until a token is there (for Retry-After)."""
        if rate <= 0:
            return 0.0  # no limit set
        tokens, last = self._buckets.get(key_id, (rate, now))
        tokens = min(rate, tokens + (now - last) * rate)
        if tokens >= 1:
            self._buckets[key_id] = (tokens - 1, now)
            return 0.0
        self._buckets[key_id] = (tokens, now)
        return (1 - tokens) / rate

    def forget_idle(self, now: float, idle_s: float = 300.0) -> None:
        self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < idle_s}


def retry_after_header(wait_s: float) -> str:
    return str(max(1, math.ceil(wait_s)))


class Suspects:
    """Replicas that refused a connection lately: skipped until `hold_s` passes or the table drops them."""

    def __init__(self, hold_s: float = 5.0) -> None:
        self.hold_s = hold_s
        self._since: dict[int, float] = {}

    def mark(self, replica_id: int, now: float) -> bool:
        """True the first time in a hold period: the caller reports the replica once, not per request."""
        first = replica_id not in self._since or now - self._since[replica_id] >= self.hold_s
        if first:
            self._since[replica_id] = now
        return first

    def current(self, now: float) -> set[int]:
        return {r for r, since in self._since.items() if now - since < self.hold_s}

    def keep_only(self, replica_ids: set[int]) -> None:
        self._since = {r: s for r, s in self._since.items() if r in replica_ids}
