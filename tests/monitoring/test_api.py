"""GET /api/v1/jobs/{id}/health/ and /metrics/: the rules, the series, scoping and bad input."""

from datetime import UTC, datetime

import pytest

from monitoring.models import MINUTE, MetricSample
from monitoring.sampling import sample_running_jobs
from tests.monitoring.helpers import FakeBackend, running_job, usage

pytestmark = pytest.mark.django_db
T0 = 1_900_000_000.0


@pytest.fixture
def sampled(world, settings):
    settings.AIPOOL_MONITOR_SECONDS = 10
    backend = FakeBackend()
    job = running_job(world.alice, world.ai_team, started_at=T0)
    for offset, cpu in ((10, 0.2), (20, 0.4)):
        backend.readings = [usage(T0 + offset, cpu=cpu)]
        sample_running_jobs(backend_for=lambda name: backend)
    return job


def test_health_of_a_sleeping_job_says_low_utilisation(world, api, sampled):
    body = api(world.alice).get(f"/api/v1/jobs/{sampled.pk}/health/").json()
    utilisation = body["rules"][0]
    assert (utilisation["rule"], utilisation["status"], utilisation["display"]) == ("utilisation", "bad", "2%")
    assert body["status"] == "bad" and body["utilisation_source"] == "cpu" and "stands in" in body["note"]
    assert body["tasks"][0]["rank"] == 0 and body["tasks"][0]["rss_bytes"] == 1 << 30


def test_health_and_metrics_of_another_tenants_job_are_404(world, api, sampled):
    client = api(world.mallory)
    for suffix in ("health/", "metrics/"):
        response = client.get(f"/api/v1/jobs/{sampled.pk}/{suffix}")
        assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert api(world.vic).get(f"/api/v1/jobs/{sampled.pk}/health/").status_code == 200  # a viewer of acme may look


def test_metrics_series_oldest_first(world, api, sampled):
    body = api(world.alice).get(f"/api/v1/jobs/{sampled.pk}/metrics/").json()
    assert body["resolution"] == "raw"
    assert [p["utilisation"] for p in body["points"]] == pytest.approx([0.02, 0.02])
    assert body["points"][0]["ts"] < body["points"][1]["ts"]


def test_metrics_filters_by_time_rank_and_resolution(world, api, sampled):
    MetricSample.objects.create(
        job=sampled, rank=0, resolution=MINUTE, slot=1, ts=datetime.fromtimestamp(T0, UTC), utilisation=0.5
    )
    client = api(world.alice)
    since = datetime.fromtimestamp(T0 + 15, UTC).isoformat()
    assert len(client.get(f"/api/v1/jobs/{sampled.pk}/metrics/", {"since": since}).json()["points"]) == 1
    assert client.get(f"/api/v1/jobs/{sampled.pk}/metrics/", {"rank": 3}).json()["points"] == []
    minute = client.get(f"/api/v1/jobs/{sampled.pk}/metrics/", {"resolution": "1m"}).json()
    assert minute["resolution"] == "1m" and minute["points"][0]["utilisation"] == 0.5


@pytest.mark.parametrize(
    ("query", "field"),
    [({"resolution": "5s"}, "resolution"), ({"since": "yesterday"}, "since"), ({"rank": "-1"}, "rank"),
     ({"since": "0001-01-01T00:00:00+18:00"}, "since")],
)  # fmt: skip
def test_bad_metrics_queries_are_400_with_the_field(world, api, sampled, query, field):
    response = api(world.alice).get(f"/api/v1/jobs/{sampled.pk}/metrics/", query)
    assert response.status_code == 400
    assert field in response.json()["errors"]


def test_health_needs_a_token(world, api, sampled):
    assert api().get(f"/api/v1/jobs/{sampled.pk}/health/").status_code == 401
