"""Rollups (raw → 1 minute → 10 minutes) and retention, on a virtual clock."""

from datetime import UTC, datetime

import pytest

from monitoring.models import MINUTE, RAW, TEN_MINUTES, MetricSample
from monitoring.services import rollup_and_expire
from tests.monitoring.helpers import running_job

pytestmark = pytest.mark.django_db
T0 = 1_900_000_200.0  # a multiple of 600: slots line up with minutes


def raw(job, at, utilisation, rss=1):
    return MetricSample.objects.create(
        job=job, rank=0, slot=int(at // 10), ts=datetime.fromtimestamp(at, UTC), utilisation=utilisation, rss_bytes=rss
    )


@pytest.fixture
def job(world, settings):
    settings.AIPOOL_MONITOR_SECONDS = 10
    settings.AIPOOL_MONITOR_RAW_HOURS = 1
    settings.AIPOOL_MONITOR_MINUTE_HOURS = 2
    return running_job(world.alice, world.ai_team, started_at=T0)


def test_complete_minutes_are_rolled_up_once(job):
    for i in range(12):  # two minutes of raw samples
        raw(job, T0 + i * 10, utilisation=0.1 if i < 6 else 0.5, rss=i)
    rollup_and_expire(now=T0 + 135)  # the second minute is complete once a late sample can no longer land in it
    rollup_and_expire(now=T0 + 135)  # again: nothing new
    minutes = list(MetricSample.objects.filter(resolution=MINUTE).order_by("ts"))
    assert [round(m.utilisation, 3) for m in minutes] == [0.1, 0.5]
    assert [m.rss_bytes for m in minutes] == [5, 11]
    assert minutes[0].ts == datetime.fromtimestamp(T0, UTC)


def test_the_current_minute_waits_until_it_is_complete(job):
    raw(job, T0 + 5, 0.2)
    rollup_and_expire(now=T0 + 30)
    assert not MetricSample.objects.filter(resolution=MINUTE).exists()


def test_ten_minute_rollups_and_retention(job):
    for i in range(0, 1200, 10):
        raw(job, T0 + i, 0.3)
    rollup_and_expire(now=T0 + 1300)
    assert MetricSample.objects.filter(resolution=TEN_MINUTES).count() == 2
    rollup_and_expire(now=T0 + 1300 + 3600)  # raw older than an hour goes; its rollups stay
    assert not MetricSample.objects.filter(resolution=RAW).exists()
    assert MetricSample.objects.filter(resolution=MINUTE).count() == 20
    rollup_and_expire(now=T0 + 1300 + 7200)
    assert not MetricSample.objects.filter(resolution=MINUTE).exists()
    assert MetricSample.objects.filter(resolution=TEN_MINUTES).count() == 2


def test_health_falls_back_to_rollups_after_raw_expired(job):
    from monitoring.selectors import job_health

    for i in range(0, 120, 10):
        raw(job, T0 + i, 0.95)
    rollup_and_expire(now=T0 + 130 + 3600)
    health = job_health(job)
    assert health["resolution"] == "1m" and health["rules"][0]["status"] == "ok"
