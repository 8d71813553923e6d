"""Sampling running jobs through a backend whose readings the test controls (a virtual clock, no processes)."""

import pytest

from monitoring.models import MetricSample
from monitoring.sampling import sample_running_jobs
from monitoring.selectors import job_health
from tests.monitoring.helpers import FakeBackend, running_job, usage

pytestmark = pytest.mark.django_db
T0 = 1_900_000_000.0


@pytest.fixture
def backend(settings):
    settings.AIPOOL_MONITOR_SECONDS = 10
    return FakeBackend()


def sample(backend):
    return sample_running_jobs(backend_for=lambda name: backend)


def test_first_sample_is_measured_against_the_job_start(world, backend):
    job = running_job(world.alice, world.ai_team, started_at=T0)
    backend.readings = [usage(T0 + 20, cpu=19.0)]
    sample(backend)
    row = MetricSample.objects.get(job=job)
    assert row.cpu_cores == pytest.approx(0.95)
    assert row.utilisation == pytest.approx(0.95)


def test_sampling_twice_in_one_period_writes_once(world, backend):
    job = running_job(world.alice, world.ai_team, started_at=T0)
    backend.readings = [usage(T0 + 20, cpu=1.0)]
    sample(backend)
    backend.readings = [usage(T0 + 21, cpu=2.0)]  # a retried task, same slot
    sample(backend)
    assert MetricSample.objects.filter(job=job).count() == 1


def test_rates_come_from_the_previous_sample(world, backend):
    job = running_job(world.alice, world.ai_team, started_at=T0, accelerators_per_node=2)
    backend.readings = [usage(T0 + 10, cpu=10.0)]
    sample(backend)
    backend.readings = [usage(T0 + 20, cpu=13.0)]
    sample(backend)
    latest = MetricSample.objects.filter(job=job).order_by("ts").last()
    assert latest.cpu_cores == pytest.approx(0.3)
    assert latest.utilisation == pytest.approx(0.15)  # 0.3 busy cores for 2 accelerators


def test_sdk_step_records_of_the_slot_become_shares(world, backend):
    job = running_job(world.alice, world.ai_team, started_at=T0)
    backend.readings = [usage(T0 + 10, cpu=9.0)]
    backend.steps = {0: [
        {"time": T0 + 5, "step_time_s": 1.0, "comm_time_s": 0.4, "compute_time_s": 0.6, "samples_per_s": 64},
        {"time": T0 + 9, "step_time_s": 1.0, "comm_time_s": 0.2, "compute_time_s": 0.8, "samples_per_s": 64},
    ]}  # fmt: skip
    sample(backend)
    row = MetricSample.objects.get(job=job)
    assert row.comm_share == pytest.approx(0.3) and row.steps == 2 and row.throughput == 64
    health = job_health(job)
    communication = next(r for r in health["rules"] if r["rule"] == "communication")
    assert communication["status"] == "bad" and "30%" in communication["advice"]


def test_a_swapping_job_is_flagged(world, backend):
    """The kernel here may have no swap: the fake backend reports what /proc's VmSwap would say (see test_procfs)."""
    job = running_job(world.alice, world.ai_team, started_at=T0)
    backend.readings = [usage(T0 + 10, cpu=9.0, swap=0)]
    sample(backend)
    backend.readings = [usage(T0 + 20, cpu=18.0, swap=512 << 20)]
    sample(backend)
    swapping = next(r for r in job_health(job)["rules"] if r["rule"] == "swapping")
    assert swapping["status"] == "bad"
    assert "512.0 MiB of the job's memory is in swap" in swapping["advice"]


def test_jobs_of_both_tenants_are_sampled_each_with_its_own_rows(world, backend):
    acme = running_job(world.alice, world.ai_team, started_at=T0)
    globex = running_job(world.mallory, world.rivals, started_at=T0)
    backend.readings = [usage(T0 + 10, cpu=1.0)]
    result = sample(backend)
    assert result["jobs"] == 2
    assert set(MetricSample.objects.values_list("job_id", flat=True)) == {acme.pk, globex.pk}
    assert not MetricSample.objects.visible_to(world.mallory).filter(job=acme).exists()
    assert MetricSample.objects.visible_to(world.mallory).filter(job=globex).exists()


def test_a_pending_job_has_unknown_health(world):
    from tests.jobs.helpers import submit

    job = submit(world.alice, world.ai_team)  # no scheduling pass ran: PENDING
    health = job_health(job)
    assert health["status"] == "unknown" and health["tasks"] == [] and health["active"]


def test_one_jobs_broken_reading_does_not_stop_the_others(world, backend):
    first = running_job(world.alice, world.ai_team, started_at=T0)
    second = running_job(world.mallory, world.rivals, started_at=T0)

    class Flaky(FakeBackend):
        def usage(self, backend_job_id):
            if backend_job_id == first.backend_job_id:
                raise RuntimeError("sstat: no steps running")
            return [usage(T0 + 10, cpu=5.0)]

    result = sample_running_jobs(backend_for=lambda name: Flaky())
    assert result["skipped"] == 1
    assert list(MetricSample.objects.values_list("job_id", flat=True)) == [second.pk]


def test_a_sampling_pass_costs_the_same_queries_for_one_job_or_five(world, backend):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from monitoring.services import evaluate_idle

    def queries_for_one_pass() -> int:
        backend.readings = [usage(T0 + 10 * (1 + MetricSample.objects.count()), cpu=1.0, rank=r) for r in range(8)]
        with CaptureQueriesContext(connection) as captured:
            sample(backend)
            evaluate_idle(now=T0 + 100)
        return len(captured)

    running_job(world.alice, world.ai_team, started_at=T0)
    one = queries_for_one_pass()
    for _ in range(4):
        running_job(world.alice, world.ai_team, started_at=T0)
    assert queries_for_one_pass() == one


def test_health_reads_a_fixed_number_of_queries(world, backend, django_assert_max_num_queries):
    job = running_job(world.alice, world.ai_team, started_at=T0)
    backend.readings = [usage(T0 + 10, cpu=1.0, rank=r) for r in range(8)]
    sample(backend)
    with django_assert_max_num_queries(4):
        job_health(job)
