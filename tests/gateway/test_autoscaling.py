"""Recorded traffic → the autoscaler's decision → service_scale, through the database (gateway.autoscaling)."""

from __future__ import annotations

import pytest

from gateway import autoscaling
from gateway.autoscaling import run_autoscaler
from gateway.models import AutoscalerState, TrafficWindow
from gateway.selectors import observed, observed_many, traffic_series
from gateway.services import claim_decision, purge_traffic, record_traffic
from gateway.tasks import autoscale
from inference.models import InferenceService, Replica, ReplicaState, ScalingEvent, ServiceKey
from tests.gateway.helpers import steady_traffic, traffic
from tests.inference.helpers import make_service

pytestmark = pytest.mark.django_db

NOW = 1_800_000_000.5
SECOND = int(NOW)


@pytest.fixture
def service(world):
    rows = make_service(world)
    service = rows["service"]
    # make_service leaves it at 3 by hand with one ready replica; start from the seed's minimum, both ready.
    InferenceService.objects.filter(pk=service.pk).update(desired_replicas=2)
    Replica.objects.create(service=service, generation=1, state=ReplicaState.READY, url="http://127.0.0.1:10")
    service.refresh_from_db()
    return service


def scaled(service) -> InferenceService:
    return InferenceService.objects.get(pk=service.pk)


# --- recording and reading traffic --------------------------------------------------------------------------------


def test_observed_sums_every_gateway_over_whole_seconds_before_the_flush_lag(service):
    steady_traffic(service.pk, qps=100, seconds=10, until=SECOND - 1, gateway="gw:1")
    steady_traffic(service.pk, qps=50, seconds=10, until=SECOND - 1, gateway="gw:2")
    # The current and the previous second may be half-flushed: never read.
    record_traffic(gateway="gw:1", rows=[traffic(service.pk, SECOND - 1, 10_000), traffic(service.pk, SECOND, 10_000)])
    seen = observed(service.pk, 6, NOW)
    assert seen.requests == 6 * 150
    assert seen.qps == 150
    assert seen.concurrency == pytest.approx(150 * 10 / 1000)  # 150 req/s x 10 ms in flight


def test_observed_many_answers_for_services_without_traffic_too(service, world):
    quiet = make_service(world, name="quiet")["service"]
    steady_traffic(service.pk, qps=20, seconds=60, until=SECOND - 1)
    seen = observed_many([service.pk, quiet.pk], 60, NOW)
    assert seen[service.pk].qps == 20
    assert seen[quiet.pk].qps == 0 and seen[quiet.pk].requests == 0


def test_a_flush_for_a_deleted_service_is_dropped_not_an_error(service):
    written = record_traffic(gateway="gw:1", rows=[traffic(service.pk, SECOND, 3), traffic(999_999, SECOND, 3)])
    assert written == 1
    assert list(TrafficWindow.objects.values_list("service_id", "requests")) == [(service.pk, 3)]


def test_a_flush_written_twice_counts_once(service):
    rows = [traffic(service.pk, SECOND, 3)]
    record_traffic(gateway="gw:1", rows=rows)
    record_traffic(gateway="gw:1", rows=rows)
    assert TrafficWindow.objects.get().requests == 3


def test_a_used_key_gets_its_last_use_at_most_once_a_minute(service):
    key = ServiceKey.objects.get(service=service)
    record_traffic(gateway="gw:1", rows=[traffic(service.pk, SECOND, 1)], used_keys={key.pk: NOW})
    first = ServiceKey.objects.get(pk=key.pk).last_used_at
    assert first is not None
    record_traffic(gateway="gw:1", rows=[traffic(service.pk, SECOND + 1, 1)], used_keys={key.pk: NOW + 1})
    assert ServiceKey.objects.get(pk=key.pk).last_used_at == first


def test_old_traffic_is_purged(service):
    record_traffic(gateway="gw:1", rows=[traffic(service.pk, SECOND - 7200, 1), traffic(service.pk, SECOND - 10, 1)])
    assert purge_traffic(keep_seconds=3600, now=NOW) == 1
    assert list(TrafficWindow.objects.values_list("second", flat=True)) == [SECOND - 10]


def test_the_series_merges_gateways_and_estimates_latency_quantiles(service):
    record_traffic(gateway="gw:1", rows=[traffic(service.pk, SECOND - 5, 98, latency_ms=8)])
    record_traffic(gateway="gw:2", rows=[traffic(service.pk, SECOND - 5, 2, latency_ms=700)])
    (point,) = traffic_series(service.pk, seconds=10, now=NOW)
    assert point.second == SECOND - 5 and point.requests == 100
    assert point.p50_ms == 10 and point.p99_ms == 1000


# --- deciding ---------------------------------------------------------------------------------------------------


def test_rising_qps_scales_up_with_an_event_that_carries_its_inputs(service):
    steady_traffic(service.pk, qps=2500, seconds=60, until=SECOND - 1)  # 3 replicas: under 2x the 2 ready
    assert run_autoscaler(now=NOW) == {service.pk: 3}
    assert scaled(service).desired_replicas == 3
    event = ScalingEvent.objects.filter(service=service).latest("at")
    assert (event.from_replicas, event.to_replicas, event.wanted) == (2, 3, 3)
    assert event.inputs["stable_value"] == 2500 and event.inputs["target"] == 1000 and event.inputs["ready"] == 2
    assert "stable: 2500 qps over 60 s / target 1000 asks for 3" in event.reason
    assert not event.blocked_by_quota


def test_a_burst_panics_and_scales_on_the_panic_window(service):
    steady_traffic(service.pk, qps=9000, seconds=6, until=SECOND - 1)
    run_autoscaler(now=NOW)
    assert scaled(service).desired_replicas == 9
    assert AutoscalerState.objects.get(service=service).panic_since == NOW


def test_quota_stops_the_scale_up_and_the_service_says_why(service, world):
    # ai-team has GrpTRES accelerator=16; each replica of the seed's service takes one accelerator.
    steady_traffic(service.pk, qps=19_000, seconds=60, until=SECOND - 1)
    run_autoscaler(now=NOW)
    service = scaled(service)
    assert 2 < service.desired_replicas < 19
    blocked = service.condition("ScaleUpBlocked")
    assert blocked["status"] == "True"
    assert blocked["message"].startswith("scale-up blocked: group ai-team uses")
    assert "/16 accelerators" in blocked["message"]
    assert ScalingEvent.objects.filter(service=service, blocked_by_quota=True).exists()


def test_no_traffic_scales_back_down_to_min_in_bounded_steps(service):
    InferenceService.objects.filter(pk=service.pk).update(desired_replicas=12)
    ready = list(Replica.objects.filter(service=service))
    for port in range(10):
        ready.append(Replica.objects.create(service=service, generation=1, state="READY", url=f"http://h:{port}"))
    steps = []
    for tick in range(4):
        run_autoscaler(now=NOW + tick * 2)
        steps.append(scaled(service).desired_replicas)
        # The replicas scaled away stop being ready, as the reconcile would drain them.
        for replica in ready[steps[-1] :]:
            Replica.objects.filter(pk=replica.pk).update(state=ReplicaState.DRAINING)
    assert steps == [6, 3, 2, 2]  # halved at most per decision, down to the minimum


def test_a_duplicate_run_in_the_same_tick_decides_nothing(service):
    steady_traffic(service.pk, qps=4500, seconds=60, until=SECOND - 1)
    assert run_autoscaler(now=NOW) == {service.pk: 5}
    events = ScalingEvent.objects.count()
    assert run_autoscaler(now=NOW + 0.1) == {}
    assert ScalingEvent.objects.count() == events


def test_claiming_a_decision_is_exclusive_within_half_a_period(service):
    assert claim_decision(service_id=service.pk, now=NOW, min_gap_s=1) is not None
    assert claim_decision(service_id=service.pk, now=NOW + 0.5, min_gap_s=1) is None
    assert claim_decision(service_id=service.pk, now=NOW + 1, min_gap_s=1) is not None


def test_the_beat_task_runs_the_autoscaler(service, monkeypatch):
    monkeypatch.setattr("gateway.tasks.time.time", lambda: NOW)
    steady_traffic(service.pk, qps=4500, seconds=60, until=SECOND - 1)
    assert autoscale.delay().get() == {str(service.pk): 5}


def test_a_service_that_cannot_scale_is_left_alone(world):
    fixed = make_service(world, name="fixed")["service"]
    InferenceService.objects.filter(pk=fixed.pk).update(min_replicas=3, max_replicas=3, desired_replicas=3)
    steady_traffic(fixed.pk, qps=50_000, seconds=60, until=SECOND - 1)
    assert run_autoscaler(now=NOW) == {}


def test_one_service_failing_to_scale_does_not_stop_the_others(service, world, monkeypatch):
    other = make_service(world, name="other")["service"]
    InferenceService.objects.filter(pk=other.pk).update(desired_replicas=2)
    steady_traffic(service.pk, qps=2500, seconds=60, until=SECOND - 1)
    steady_traffic(other.pk, qps=2500, seconds=60, until=SECOND - 1)
    real = autoscaling.service_scale

    def broken_for_the_first(**kwargs):
        if kwargs["service_id"] == service.pk:
            raise RuntimeError("boom")
        return real(**kwargs)

    monkeypatch.setattr("gateway.autoscaling.service_scale", broken_for_the_first)
    assert list(run_autoscaler(now=NOW)) == [other.pk]
    assert scaled(other).desired_replicas > 2


# --- the gateway command's database side ------------------------------------------------------------------------


def test_the_gateway_command_reads_routes_writes_traffic_and_reports_failures(service):
    from gateway.management.commands.gateway import load_routes, report_failure, write_traffic
    from inference.keys import hash_key

    routes = load_routes()
    route = routes[("acme", service.name)]
    assert route.service_id == service.pk and len(route.replicas) == 2
    key = ServiceKey.objects.get(service=service)
    assert route.key_hashes == {key.key_hash: key.pk}
    assert hash_key("isk_x") not in route.key_hashes

    write_traffic("gw:9", [traffic(service.pk, SECOND, 4)], {key.pk: NOW})
    assert TrafficWindow.objects.get(gateway="gw:9").requests == 4

    replica_id = route.replicas[0][0]
    report_failure(replica_id, "gateway could not reach it: refused")
    assert Replica.objects.get(pk=replica_id).state == ReplicaState.FAILED
    assert replica_id not in dict(load_routes()[("acme", service.name)].replicas)


def test_the_scale_down_delay_is_remembered_between_runs(service, monkeypatch):
    monkeypatch.setenv("AIPOOL_AUTOSCALE_SCALE_DOWN_DELAY", "30")
    steady_traffic(service.pk, qps=2500, seconds=60, until=SECOND - 1)
    assert run_autoscaler(now=NOW) == {service.pk: 3}
    TrafficWindow.objects.all().delete()
    assert run_autoscaler(now=NOW + 10) == {service.pk: 3}  # no traffic, but held by the delay
    # What each decision asked for, before the hold and [min, max]: the delay takes the highest of them.
    assert AutoscalerState.objects.get(service=service).recent == [[NOW, 3], [NOW + 10, 1]]
    assert run_autoscaler(now=NOW + 31) == {service.pk: 2}
