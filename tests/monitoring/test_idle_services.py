"""Idle accelerators end to end on a virtual clock: flagged once per episode, the signal after commit, the tenant's
policy (warn only, or cancel after a grace period) applied through jobs.services.job_cancel."""

import pytest

from jobs.models import Job
from monitoring.models import IdleAction, IdleEpisode, IdlePolicy
from monitoring.sampling import sample_running_jobs
from monitoring.services import evaluate_idle
from monitoring.signals import accelerators_idle
from tenants.models import AuditLog
from tests.monitoring.helpers import FakeBackend, running_job, usage

pytestmark = pytest.mark.django_db
T0 = 1_900_000_000.0


@pytest.fixture
def clock(settings):
    settings.AIPOOL_MONITOR_SECONDS = 10
    settings.AIPOOL_IDLE_THRESHOLD = 10
    settings.AIPOOL_IDLE_MINUTES = 1
    return FakeBackend()


@pytest.fixture
def received():
    calls = []

    def receiver(sender, **kwargs):
        calls.append(kwargs)

    accelerators_idle.connect(receiver, dispatch_uid="test-idle")
    yield calls
    accelerators_idle.disconnect(dispatch_uid="test-idle")


def run(backend, cpu_per_sample: float, seconds: range, capture):
    """Sample the test's one running job every 10 s of `seconds` (adding `cpu_per_sample` CPU seconds each time) and
    evaluate idleness after each sample, running on-commit callbacks as a commit would."""
    cpu = 0.0
    for offset in seconds:
        cpu += cpu_per_sample
        backend.readings = [usage(T0 + offset, cpu=cpu)]
        with capture(execute=True):
            sample_running_jobs(backend_for=lambda name: backend)
            evaluate_idle(now=T0 + offset)


def test_a_sleeping_job_is_flagged_once_with_one_signal(world, clock, received, django_capture_on_commit_callbacks):
    job = running_job(world.alice, world.ai_team, started_at=T0)
    run(clock, 0.0, range(10, 200, 10), django_capture_on_commit_callbacks)
    episode = IdleEpisode.objects.get(job=job)
    assert episode.ended_at is None and episode.action == "warned"
    assert episode.utilisation == 0.0 and episode.accelerators == 1
    assert len(received) == 1
    assert received[0]["job"].pk == job.pk and received[0]["action"] == "warned" and received[0]["minutes"] >= 1
    assert AuditLog.objects.filter(action="job.idle", target_id=str(job.pk)).count() == 1
    job.refresh_from_db()
    assert job.state == "RUNNING"  # acme has no policy: a warning only


def test_a_busy_job_is_never_flagged(world, clock, received, django_capture_on_commit_callbacks):
    running_job(world.alice, world.ai_team, started_at=T0)
    run(clock, 9.5, range(10, 200, 10), django_capture_on_commit_callbacks)
    assert not IdleEpisode.objects.exists() and received == []


def test_busy_again_ends_the_episode_and_a_new_stretch_warns_again(world, clock, received, settings):
    job = running_job(world.alice, world.ai_team, started_at=T0)
    backend = clock
    cpu = 0.0
    for offset, busy in (
        [(t, False) for t in range(10, 100, 10)]
        + [(100, True), (110, True)]
        + [(t, False) for t in range(120, 220, 10)]
    ):
        cpu += 9.5 if busy else 0.0
        backend.readings = [usage(T0 + offset, cpu=cpu)]
        sample_running_jobs(backend_for=lambda name: backend)
        evaluate_idle(now=T0 + offset)
    episodes = list(IdleEpisode.objects.filter(job=job).order_by("flagged_at"))
    assert len(episodes) == 2
    assert episodes[0].ended_at is not None and episodes[1].ended_at is None


def test_cancel_policy_cancels_after_the_grace_period(world, clock, received, django_capture_on_commit_callbacks):
    IdlePolicy.objects.create(tenant=world.acme, action=IdleAction.CANCEL, grace_minutes=1)
    job = running_job(world.alice, world.ai_team, started_at=T0)
    run(clock, 0.0, range(10, 100, 10), django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert job.state == "RUNNING"  # warned, within the grace period
    run(clock, 0.0, range(100, 200, 10), django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert job.state == "CANCELLED"
    assert "idle" in job.events.last().cause
    assert [r["action"] for r in received] == ["warned", "cancelled"]
    assert IdleEpisode.objects.get(job=job).action == "cancelled"


def test_one_tenants_policy_does_not_apply_to_another(world, clock, django_capture_on_commit_callbacks):
    IdlePolicy.objects.create(tenant=world.globex, action=IdleAction.CANCEL, grace_minutes=0.5)
    job = running_job(world.alice, world.ai_team, started_at=T0)
    run(clock, 0.0, range(10, 300, 10), django_capture_on_commit_callbacks)
    assert Job.objects.get(pk=job.pk).state == "RUNNING"


def test_a_tenant_threshold_overrides_the_default(world, clock):
    IdlePolicy.objects.create(tenant=world.acme, threshold_percent=60)
    job = running_job(world.alice, world.ai_team, started_at=T0)
    cpu = 0.0
    for offset in range(10, 200, 10):
        cpu += 5.0  # 50% busy: idle for this tenant (below 60%), not for the 10% default
        clock.readings = [usage(T0 + offset, cpu=cpu)]
        sample_running_jobs(backend_for=lambda name: clock)
        evaluate_idle(now=T0 + offset)
    assert IdleEpisode.objects.filter(job=job).exists()


def test_episodes_of_ended_jobs_are_closed(world, clock):
    job = running_job(world.alice, world.ai_team, started_at=T0)
    run_no_capture = [usage(T0 + t, cpu=0.0) for t in range(10, 100, 10)]
    for reading in run_no_capture:
        clock.readings = [reading]
        sample_running_jobs(backend_for=lambda name: clock)
        evaluate_idle(now=reading.at)
    Job.objects.filter(pk=job.pk).update(state="COMPLETED")
    evaluate_idle(now=T0 + 200)
    assert IdleEpisode.objects.get(job=job).ended_at is not None


def test_a_long_idle_job_is_warned_once_not_every_window(world, clock, received, django_capture_on_commit_callbacks):
    job = running_job(world.alice, world.ai_team, started_at=T0)
    # 26 minutes idle: longer than the series the evaluation looks at (1 idle minute + 15 grace minutes + 3 periods).
    run(clock, 0.0, range(10, 1570, 10), django_capture_on_commit_callbacks)
    assert len(received) == 1
    assert IdleEpisode.objects.filter(job=job).count() == 1
