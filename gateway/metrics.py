"""Per-service, per-second traffic counters kept in the gateway's memory and flushed in batches (no Django).

A request counts in the second it arrived (what the QPS autoscaler scales on); its latency, error and retries count
in the second it finished. A second is flushed once it is over, so each row is written once per gateway process.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

# Upper bounds of the latency histogram's buckets, in milliseconds; the last bucket is everything slower.
BUCKETS_MS: tuple[float, ...] = (1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
BUCKET_COUNT = len(BUCKETS_MS) + 1


def bucket_of(latency_ms: float) -> int:
    return bisect.bisect_left(BUCKETS_MS, latency_ms)


@dataclass
class SecondCounts:
    requests: int = 0
    errors: int = 0
    retries: int = 0
    throttled: int = 0
    latency_sum_ms: float = 0.0
    buckets: list[int] = field(default_factory=lambda: [0] * BUCKET_COUNT)

    def merge(self, other: SecondCounts) -> None:
        self.requests += other.requests
        self.errors += other.errors
        self.retries += other.retries
        self.throttled += other.throttled
        self.latency_sum_ms += other.latency_sum_ms
        self.buckets = [a + b for a, b in zip(self.buckets, other.buckets, strict=True)]


@dataclass(frozen=True)
class TrafficRow:
    service_id: int
    second: int  # Unix time of the second
    counts: SecondCounts


class Recorder:
    """Counters by (service id, second). Only the event loop touches it: no locks."""

    def __init__(self) -> None:
        self._open: dict[tuple[int, int], SecondCounts] = {}

    def _at(self, service_id: int, now: float) -> SecondCounts:
        key = (service_id, int(now))
        counts = self._open.get(key)
        if counts is None:
            counts = self._open[key] = SecondCounts()
        return counts

    def arrived(self, service_id: int, now: float) -> None:
        self._at(service_id, now).requests += 1

    def throttled(self, service_id: int, now: float) -> None:
        self._at(service_id, now).throttled += 1

    def retried(self, service_id: int, now: float) -> None:
        self._at(service_id, now).retries += 1

    def finished(self, service_id: int, now: float, latency_ms: float, *, error: bool) -> None:
        counts = self._at(service_id, now)
        counts.latency_sum_ms += latency_ms
        counts.buckets[bucket_of(latency_ms)] += 1
        if error:
            counts.errors += 1

    def take_closed(self, now: float) -> list[TrafficRow]:
        """Remove and return every second that is over."""
        current = int(now)
        closed = [key for key in self._open if key[1] < current]
        return [TrafficRow(service_id=key[0], second=key[1], counts=self._open.pop(key)) for key in closed]

    def put_back(self, rows: list[TrafficRow]) -> None:
        """Rows a flush could not write go back, merged with anything counted since, for the next flush."""
        for row in rows:
            key = (row.service_id, row.second)
            if key in self._open:
                self._open[key].merge(row.counts)
            else:
                self._open[key] = row.counts

    def pending(self) -> int:
        return len(self._open)
