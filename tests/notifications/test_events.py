"""Who is told what, and only once: job events, thresholds per crossing, budgets, idle accelerators, settings."""

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from jobs.models import Job
from monitoring.signals import accelerators_idle
from notifications import producers
from notifications.models import Delivery, ThresholdState
from notifications.services import endpoint_create, settings_update
from tests.accounting.helpers import JobRunFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _mail(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


def with_email(user, address):
    user.email = address
    user.save(update_fields=["email"])
    return user


def deliveries(user, event=None):
    rows = Delivery.objects.filter(user=user)
    return rows.filter(event=event) if event else rows


def test_a_failed_job_mails_its_owner_only(world, django_capture_on_commit_callbacks):
    with_email(world.alice, "alice@acme.example")
    with_email(world.bob, "bob@acme.example")
    job = JobRunFactory(user=world.alice, group=world.ai_team, started_at=timezone.now(), state="FAILED",
                        ended_at=timezone.now(), exit_code=3)  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        producers.job_changed(job_id=job.pk, from_state="RUNNING", to_state="FAILED")
    assert [m.to for m in mail.outbox] == [["alice@acme.example"]]
    assert "FAILED" in mail.outbox[0].subject and "exit code 3" in mail.outbox[0].body
    assert deliveries(world.alice, "job.failed").get().status == "delivered"
    assert not deliveries(world.bob).exists()


def test_the_same_transition_seen_twice_is_told_once(world, django_capture_on_commit_callbacks):
    with_email(world.alice, "alice@acme.example")
    job = JobRunFactory(user=world.alice, group=world.ai_team, started_at=timezone.now(), ended_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        producers.job_changed(job_id=job.pk, from_state="RUNNING", to_state="COMPLETED")
        producers.job_changed(job_id=job.pk, from_state="RUNNING", to_state="COMPLETED")
    assert len(mail.outbox) == 1
    assert deliveries(world.alice, "job.ended").count() == 1


def test_an_event_switched_off_is_not_told(world):
    with_email(world.alice, "alice@acme.example")
    settings_update(user=world.alice, events=["job.failed"])
    job = JobRunFactory(user=world.alice, group=world.ai_team, started_at=timezone.now(), ended_at=timezone.now())
    producers.job_changed(job_id=job.pk, from_state="RUNNING", to_state="COMPLETED")
    assert not deliveries(world.alice).exists()


def test_email_off_leaves_webhooks_on(world):
    with_email(world.alice, "alice@acme.example")
    settings_update(user=world.alice, email=False)
    endpoint_create(user=world.alice, url="https://hooks.acme.example/a", events=["job.ended"])
    job = JobRunFactory(user=world.alice, group=world.ai_team, started_at=timezone.now(), ended_at=timezone.now())
    producers.job_changed(job_id=job.pk, from_state="RUNNING", to_state="COMPLETED")
    assert list(deliveries(world.alice).values_list("channel", flat=True)) == ["webhook"]


def test_an_endpoint_filter_narrows_its_events(world):
    endpoint_create(user=world.alice, url="https://hooks.acme.example/a", events=["job.failed"])
    job = JobRunFactory(user=world.alice, group=world.ai_team, started_at=timezone.now(), ended_at=timezone.now())
    producers.job_changed(job_id=job.pk, from_state="RUNNING", to_state="COMPLETED")
    assert not deliveries(world.alice).exists()


@pytest.mark.parametrize(("waited", "told"), [(90, True), (30, False)])
def test_job_started_after_a_long_wait(world, waited, told):
    endpoint_create(user=world.alice, url="https://hooks.acme.example/a")
    now = timezone.now()
    job = JobRunFactory(
        user=world.alice, group=world.ai_team, started_at=now, eligible_at=now - timedelta(minutes=waited)
    )
    producers.job_changed(job_id=job.pk, from_state="PENDING", to_state="RUNNING")
    found = deliveries(world.alice, "job.started_after_wait")
    assert found.exists() is told
    if told:
        assert found.get().payload["data"]["waited_minutes"] == waited


def test_the_long_wait_threshold_is_the_users_own(world):
    endpoint_create(user=world.alice, url="https://hooks.acme.example/a")
    settings_update(user=world.alice, long_wait_minutes=10)
    now = timezone.now()
    job = JobRunFactory(user=world.alice, group=world.ai_team, started_at=now, eligible_at=now - timedelta(minutes=15))
    producers.job_changed(job_id=job.pk, from_state="PENDING", to_state="RUNNING")
    assert deliveries(world.alice, "job.started_after_wait").exists()


def run_accelerators(world, count):
    """ai-team (GrpTRES gres/accelerator=16) running `count` accelerators in 1-accelerator jobs."""
    Job.objects.filter(group=world.ai_team, state="RUNNING").update(state="COMPLETED", ended_at=timezone.now())
    for _ in range(count):
        JobRunFactory(user=world.bob, group=world.ai_team, accelerators_per_node=1, started_at=timezone.now())


def quota_notices(user):
    return list(deliveries(user, "quota.threshold").order_by("pk").values_list("payload__data__level", flat=True))


def test_group_thresholds_are_told_once_per_crossing_not_per_pass(world):
    for user in (world.alice, world.ada, world.mallory):
        endpoint_create(user=user, url="https://hooks.example/q")
    run_accelerators(world, 13)  # 81%
    producers.check_thresholds()
    producers.check_thresholds()
    assert quota_notices(world.alice) == [80]
    run_accelerators(world, 15)  # 94%
    producers.check_thresholds()
    producers.check_thresholds()
    assert quota_notices(world.alice) == [80, 90]
    run_accelerators(world, 14)  # 87%: still past 80, fell below 90: nothing new
    producers.check_thresholds()
    run_accelerators(world, 2)  # fell below 80
    producers.check_thresholds()
    run_accelerators(world, 16)  # crosses again: told again
    producers.check_thresholds()
    assert quota_notices(world.alice) == [80, 90, 90]
    assert quota_notices(world.ada) == [80, 90, 90]  # the tenant admin hears too
    assert quota_notices(world.mallory) == []  # another tenant never does
    assert ThresholdState.objects.get(group=world.ai_team).level == 90


def test_a_budget_nearly_spent_is_told_once(world, settings):
    settings.AIPOOL_SECONDS_PER_MINUTE = 60
    world.ai_team.grp_tres_mins = {"gres/accelerator": 1000}
    world.ai_team.save()
    endpoint_create(user=world.alice, url="https://hooks.acme.example/b")
    now = timezone.now()
    # 8 accelerators x 120 minutes = 960 of 1000 accelerator-minutes: 96%
    JobRunFactory(user=world.bob, group=world.ai_team, started_at=now - timedelta(hours=3),
                  ended_at=now - timedelta(hours=1))  # fmt: skip
    producers.check_thresholds()
    producers.check_thresholds()
    (notice,) = deliveries(world.alice, "budget.nearly_spent")
    assert notice.payload["data"]["spent_minutes"] == 960 and notice.payload["data"]["percent"] == 96.0


def test_idle_accelerators_signal_tells_the_owner(world):
    endpoint_create(user=world.alice, url="https://hooks.acme.example/i")
    job = JobRunFactory(user=world.alice, group=world.ai_team, started_at=timezone.now())
    accelerators_idle.send(sender=Job, job=job, minutes=30, utilisation=0.02, action="warned")
    (notice,) = deliveries(world.alice, "job.idle")
    assert notice.payload["data"]["idle_minutes"] == 30 and "idle" in notice.subject
