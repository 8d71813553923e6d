"""Gateway rows built through the gateway's services, as the gateway process and the beat task write them."""

from __future__ import annotations

from gateway.metrics import SecondCounts, TrafficRow, bucket_of
from gateway.services import claim_decision, record_traffic


def traffic(service_id: int, second: int, requests: int, *, latency_ms: float = 10.0, errors: int = 0) -> TrafficRow:
    counts = SecondCounts(requests=requests, errors=errors, latency_sum_ms=requests * latency_ms)
    counts.buckets[bucket_of(latency_ms)] = requests
    return TrafficRow(service_id=service_id, second=second, counts=counts)


def steady_traffic(service_id: int, *, qps: int, seconds: int, until: int, gateway: str = "gw:1", latency_ms=10.0):
    """`qps` requests in each of the `seconds` seconds before `until`, as one gateway's flushes."""
    rows = [traffic(service_id, second, qps, latency_ms=latency_ms) for second in range(until - seconds, until)]
    record_traffic(gateway=gateway, rows=rows)


def populate(world) -> None:
    """A second of traffic and an autoscaler state for every service there is (the scoping walkers' rows)."""
    from inference.models import InferenceService

    for service in InferenceService.objects.all():
        record_traffic(gateway="gw:1", rows=[traffic(service.pk, 1_700_000_000, 5)])
        claim_decision(service_id=service.pk, now=1_700_000_000.0, min_gap_s=1)
