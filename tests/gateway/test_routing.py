"""The gateway's decisions without I/O: keys, least outstanding, token buckets, suspects, per-second counters."""

from __future__ import annotations

import pytest

from gateway.metrics import BUCKETS_MS, Recorder, bucket_of
from gateway.routing import NOT_FOUND, UNAUTHORIZED, LeastOutstanding, RouteTable, Suspects, TokenBuckets
from gateway.server import hash_key
from inference.keys import hash_key as inference_hash_key
from tests.gateway.fakes import ACME_KEY, GLOBEX_KEY, route


def table() -> RouteTable:
    return RouteTable(
        {
            ("acme", "a"): route(1, "acme", "a", [(10, "http://x")], key=ACME_KEY, key_id=11),
            ("acme", "b"): route(2, "acme", "b", [], key="isk_other-acme-service", key_id=12),
            ("globex", "g"): route(3, "globex", "g", [], key=GLOBEX_KEY, key_id=33),
        }
    )


def test_the_gateway_hashes_keys_as_the_inference_app_stores_them():
    assert hash_key(ACME_KEY) == inference_hash_key(ACME_KEY)


def test_a_key_opens_its_own_service():
    access = table().check("acme", "a", hash_key(ACME_KEY))
    assert access.refusal is None and access.key_id == 11 and access.route.service_id == 1


@pytest.mark.parametrize("key", [None, hash_key("isk_nobody")])
def test_no_key_or_an_unknown_key_is_unauthorized_even_for_a_service_that_does_not_exist(key):
    assert table().check("acme", "a", key).refusal == UNAUTHORIZED
    assert table().check("nobody", "nothing", key).refusal == UNAUTHORIZED


@pytest.mark.parametrize(
    "tenant, service, key",
    [("acme", "a", GLOBEX_KEY), ("acme", "a", "isk_other-acme-service"), ("acme", "nothing", ACME_KEY)],
)
def test_a_real_key_for_something_else_is_not_found(tenant, service, key):
    assert table().check(tenant, service, hash_key(key)).refusal == NOT_FOUND


def test_least_outstanding_prefers_the_idle_replica_and_takes_turns_on_ties():
    balancer = LeastOutstanding()
    replicas = [(1, "a"), (2, "b"), (3, "c")]
    balancer.begin(1)
    balancer.begin(1)
    balancer.begin(2)
    assert balancer.choose(replicas, exclude=set()) == (3, "c")
    balancer.begin(3)
    picks = set()
    for _ in range(2):
        picks.add(balancer.choose(replicas, exclude=set())[0])
    assert picks == {2, 3}
    assert balancer.choose(replicas, exclude={1, 2, 3}) is None


def test_outstanding_counts_go_back_to_nothing():
    balancer = LeastOutstanding()
    balancer.begin(1)
    balancer.end(1)
    balancer.end(1)
    assert balancer.outstanding == {}


def test_a_token_bucket_allows_a_burst_of_one_second_then_the_rate():
    buckets = TokenBuckets()
    assert [buckets.take(7, 5, 100.0) for _ in range(5)] == [0.0] * 5
    wait = buckets.take(7, 5, 100.0)
    assert wait == pytest.approx(0.2)
    assert buckets.take(7, 5, 100.2) == 0.0
    assert buckets.take(8, 5, 100.2) == 0.0  # another key has its own bucket


def test_a_rate_of_zero_means_no_limit():
    buckets = TokenBuckets()
    assert all(buckets.take(1, 0, 0.0) == 0.0 for _ in range(1000))


def test_a_suspect_is_reported_once_per_hold_and_skipped_meanwhile():
    suspects = Suspects(hold_s=5)
    assert suspects.mark(1, 100.0) is True
    assert suspects.mark(1, 101.0) is False
    assert suspects.current(104.9) == {1}
    assert suspects.current(105.0) == set()
    assert suspects.mark(1, 105.0) is True
    suspects.keep_only({2})
    assert suspects.current(105.0) == set()


def test_latency_buckets_are_upper_bounds_and_the_last_holds_the_slowest():
    assert bucket_of(0.3) == 0
    assert bucket_of(1) == 0
    assert bucket_of(1.01) == 1
    assert bucket_of(60_000) == len(BUCKETS_MS)


def test_requests_count_at_arrival_and_latency_at_the_finish():
    recorder = Recorder()
    recorder.arrived(1, 100.9)
    recorder.finished(1, 101.2, 300.0, error=True)
    recorder.retried(1, 101.2)
    assert recorder.take_closed(101.5) == [recorder_row(1, 100, requests=1)]
    (row,) = recorder.take_closed(102.0)
    assert (row.second, row.counts.requests, row.counts.errors, row.counts.retries) == (101, 0, 1, 1)
    assert row.counts.latency_sum_ms == 300.0 and row.counts.buckets[bucket_of(300.0)] == 1
    assert recorder.pending() == 0


def recorder_row(service_id, second, requests):
    from gateway.metrics import SecondCounts, TrafficRow

    return TrafficRow(service_id=service_id, second=second, counts=SecondCounts(requests=requests))


def test_rows_put_back_merge_with_what_was_counted_since():
    recorder = Recorder()
    recorder.arrived(1, 100.0)
    rows = recorder.take_closed(101.0)
    recorder.arrived(1, 100.5)  # a late arrival stamped in the same second
    recorder.put_back(rows)
    (row,) = recorder.take_closed(101.0)
    assert row.counts.requests == 2
