"""Reads over recorded traffic: what the autoscaler scales on and what pages and the API show.

Windows are whole seconds that are over, ending one second before `now`: a gateway writes a second about a second
after it ends (flushes are batched), so the latest second is left out rather than read half-written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Sum

from gateway.metrics import BUCKETS_MS
from gateway.models import TrafficWindow

FLUSH_LAG_S = 1


@dataclass(frozen=True)
class Observed:
    window_s: float
    requests: int = 0
    errors: int = 0
    retries: int = 0
    throttled: int = 0
    latency_sum_ms: float = 0.0

    @property
    def qps(self) -> float:
        return self.requests / self.window_s

    @property
    def concurrency(self) -> float:
        """Average requests in flight (Little's law: the time spent in requests per second of wall time)."""
        return self.latency_sum_ms / 1000 / self.window_s

    def metric(self, name: str) -> float:
        return self.concurrency if name == "concurrency" else self.qps


def window_bounds(window_s: float, now: float) -> tuple[int, int]:
    end = int(now) - FLUSH_LAG_S
    return end - max(1, round(window_s)), end


def observed_many(service_ids: Iterable[int], window_s: float, now: float) -> dict[int, Observed]:
    """Traffic of each service over the `window_s` seconds before `now`, every gateway summed. One query."""
    ids = list(service_ids)
    begin, end = window_bounds(window_s, now)
    rows = (
        TrafficWindow.objects.filter(service_id__in=ids)
        .between(begin, end)
        .values("service_id")
        .annotate(
            n=Sum("requests"), e=Sum("errors"), r=Sum("retries"), t=Sum("throttled"), latency=Sum("latency_sum_ms")
        )
        .order_by()
    )
    found = {
        row["service_id"]: Observed(
            window_s=end - begin,
            requests=row["n"] or 0,
            errors=row["e"] or 0,
            retries=row["r"] or 0,
            throttled=row["t"] or 0,
            latency_sum_ms=row["latency"] or 0.0,
        )
        for row in rows
    }
    return {pk: found.get(pk, Observed(window_s=end - begin)) for pk in ids}


def observed(service_id: int, window_s: float, now: float) -> Observed:
    return observed_many([service_id], window_s, now)[service_id]


@dataclass(frozen=True)
class SecondSummary:
    second: int
    requests: int
    errors: int
    retries: int
    throttled: int
    p50_ms: float | None
    p99_ms: float | None


def traffic_series(service_id: int, *, seconds: int, now: float) -> list[SecondSummary]:
    """Per-second traffic of one service (every gateway summed), oldest first, for pages and the API.

    The caller has checked that the user may see the service (InferenceService.objects.visible_to).
    """
    begin, end = window_bounds(seconds, now)
    merged: dict[int, list] = {}
    rows = TrafficWindow.objects.filter(service_id=service_id).between(begin, end).order_by("second")
    for row in rows.values_list("second", "requests", "errors", "retries", "throttled", "latency_buckets"):
        second, *counts, buckets = row
        entry = merged.setdefault(second, [0, 0, 0, 0, [0] * (len(BUCKETS_MS) + 1)])
        for i, value in enumerate(counts):
            entry[i] += value
        entry[4] = [a + b for a, b in zip(entry[4], buckets, strict=False)]
    return [
        SecondSummary(second, n, e, r, t, quantile_ms(buckets, 0.5), quantile_ms(buckets, 0.99))
        for second, (n, e, r, t, buckets) in sorted(merged.items())
    ]


def quantile_ms(buckets: list[int], q: float) -> float | None:
    """The upper bound of the bucket holding the q-quantile (the slowest bucket reports its lower bound)."""
    total = sum(buckets)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for index, count in enumerate(buckets):
        seen += count
        if seen >= rank:
            return BUCKETS_MS[index] if index < len(BUCKETS_MS) else BUCKETS_MS[-1]
    return BUCKETS_MS[-1]
