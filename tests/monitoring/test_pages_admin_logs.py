"""The admin's worst idle offenders, the idle policy admin (audited), and JSON logs."""

import json
import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from monitoring.jsonlog import JsonFormatter
from monitoring.models import IdleEpisode
from monitoring.offenders import worst_offenders
from tenants.models import AuditLog
from tests.jobs.helpers import submit


def episode(job, hours: float, accelerators: int, now):
    since = now - timedelta(hours=hours)
    return IdleEpisode.objects.create(
        job=job, idle_since=since, flagged_at=since + timedelta(minutes=30), ended_at=now, utilisation=0.01,
        threshold=0.1, accelerators=accelerators,
    )  # fmt: skip


@pytest.mark.django_db
def test_worst_offenders_rank_by_idle_accelerator_hours(world):
    now = timezone.now()
    episode(submit(world.alice, world.ai_team), hours=2, accelerators=8, now=now)
    episode(submit(world.mallory, world.rivals), hours=10, accelerators=1, now=now)
    episode(submit(world.alice, world.ai_team), hours=1, accelerators=4, now=now)
    rows = worst_offenders(now=now)
    assert [(r.tenant, r.user, r.idle_accelerator_hours, r.episodes) for r in rows] == [
        ("acme", "alice", pytest.approx(20.0), 2),
        ("globex", "mallory", pytest.approx(10.0), 1),
    ]


@pytest.mark.django_db
def test_offenders_page_is_for_staff_only(client, world):
    episode(submit(world.alice, world.ai_team), hours=2, accelerators=8, now=timezone.now())
    client.force_login(world.staff)
    page = client.get("/admin/monitoring/idleepisode/offenders/")
    assert page.status_code == 200 and "alice" in page.content.decode()
    assert client.get("/admin/monitoring/idleepisode/").status_code == 200
    client.force_login(world.ada)
    assert client.get("/admin/monitoring/idleepisode/offenders/").status_code == 302  # to the admin login


@pytest.mark.django_db
def test_idle_policy_changes_are_audited(client, world):
    client.force_login(world.staff)
    response = client.post(
        "/admin/monitoring/idlepolicy/add/",
        {"tenant": world.acme.pk, "action": "cancel", "threshold_percent": "5", "minutes": "20", "grace_minutes": "10"},
    )
    assert response.status_code == 302, response.content
    entry = AuditLog.objects.get(action="idle_policy.change")
    assert entry.tenant == world.acme and entry.changes["action"] == "cancel"


def test_json_log_lines_carry_extra_fields():
    record = logging.LogRecord("aipool.test", logging.WARNING, __file__, 1, "job %s idle", (7,), None)
    record.job_id = 7
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "job 7 idle" and line["level"] == "WARNING" and line["job_id"] == 7
