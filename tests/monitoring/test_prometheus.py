"""/metrics: Prometheus text that the reference parser reads, whose numbers are the database's."""

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cluster.models import Node
from jobs.models import Job
from monitoring.models import CeleryProbe
from monitoring.services import record_probe
from tests.jobs.helpers import submit
from tests.monitoring.helpers import running_job

pytestmark = pytest.mark.django_db
T0 = 1_900_000_000.0


def scrape(client, **headers) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def test_metrics_match_the_database(client, world):
    running_job(world.alice, world.ai_team, started_at=T0, nodes=2, accelerators_per_node=4)
    running_job(world.mallory, world.rivals, started_at=T0, accelerators_per_node=2)
    submit(world.alice, world.ai_team, accelerators_per_node=8, nodes=2)  # over acme's GrpTRES=16 while 8 run
    from jobs.scheduling import run_pass

    run_pass()
    record_probe(name="celery", enqueued_at=T0, started_at=T0 + 0.25)
    metrics = scrape(client)

    total = sum(Node.objects.values_list("accelerators", flat=True))
    assert metrics[("aipool_accelerators", (("state", "total"),))] == total == 32
    assert metrics[("aipool_accelerators", (("state", "allocated"),))] == 10
    assert metrics[("aipool_pool_allocated_ratio", ())] == pytest.approx(10 / 32)
    for state in ("PENDING", "RUNNING", "COMPLETED"):
        assert metrics[("aipool_jobs", (("state", state),))] == Job.objects.filter(state=state).count()
    pending = Job.objects.get(state="PENDING")
    assert metrics[("aipool_queue_length", (("reason", pending.reason),))] == 1
    assert metrics[("aipool_tenant_allocated_accelerators", (("tenant", "acme"),))] == 8
    assert metrics[("aipool_tenant_allocated_accelerators", (("tenant", "globex"),))] == 2
    assert metrics[("aipool_tenant_jobs", (("state", "PENDING"), ("tenant", "acme")))] == 1
    assert metrics[("aipool_tenant_jobs", (("state", "RUNNING"), ("tenant", "globex")))] == 1
    assert metrics[("aipool_celery_task_latency_seconds", (("probe", "celery"),))] == pytest.approx(0.25)


def test_the_latency_probe_records_enqueue_to_start(settings):
    from monitoring.tasks import send_latency_probe

    send_latency_probe.delay()  # eager in tests: the probe starts at once
    probe = CeleryProbe.objects.get(name="celery")
    assert 0 <= probe.latency_seconds < 5


def test_a_configured_token_is_required(client, world, settings):
    settings.AIPOOL_METRICS_TOKEN = "s3cret"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    client.force_login(world.alice)
    assert client.get("/metrics").status_code == 401  # a tenant's user is no operator
    client.logout()
    assert scrape(client, HTTP_AUTHORIZATION="Bearer s3cret")
    client.force_login(world.staff)
    assert scrape(client)


def test_metrics_need_no_session_without_a_token(client, world):
    assert ("aipool_jobs", (("state", "RUNNING"),)) in scrape(client)


def test_metrics_refuse_writes(client):
    assert client.post("/metrics").status_code == 405
