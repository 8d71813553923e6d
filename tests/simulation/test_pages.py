"""/simulate/: staff start replays in the browser (run by the Celery task, eager in tests) and read the report."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from scheduler.workload import CANONICAL_HEADER
from simulation.models import RunState, SimulationRun
from tenants.models import AuditLog
from tests.jobs.helpers import submit
from tests.simulation.helpers import DATA

pytestmark = pytest.mark.django_db

ROWS = ("0,600,3600,1,8,acme,ai-team,alice", "10,60,,2,8,acme,ai-team,bob", "20,60,600,1,1,globex,rivals,mallory")
CSV = "\n".join([",".join(CANONICAL_HEADER), *ROWS]) + "\n"


@pytest.fixture
def staff(client, world, django_capture_on_commit_callbacks):
    client.force_login(world.staff)
    client.capture = django_capture_on_commit_callbacks
    return client


def _start(client, url, data):
    with client.capture(execute=True):
        response = client.post(url, data)
    return response


def test_staff_replays_an_uploaded_csv_and_reads_the_report(staff, world):
    response = _start(
        staff,
        "/simulate/new/",
        {
            "source": "csv",
            "upload": SimpleUploadedFile("jobs.csv", CSV.encode()),
            "policies": ["easy", "learned"],
            "load": "1",
            "pool_fraction": "1",
            "tenants": "8",
        },
    )
    run = SimulationRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/simulate/{run.pk}/"
    assert run.state == RunState.DONE, run.error
    assert [p["policy"] for p in run.result["policies"]] == ["easy", "learned"]
    page = staff.get(f"/simulate/{run.pk}/").content.decode()
    assert "FIFO + EASY backfill" in page and "learned" in page and "globex" in page
    assert 'hx-trigger="every 2s"' not in page  # done: no more polling
    plot = staff.get(f"/simulate/{run.pk}/plots/times.png")
    assert plot.status_code == 200 and plot.content.startswith(b"\x89PNG")
    assert AuditLog.objects.filter(action="simulation.start", target_id=str(run.pk)).exists()


def test_an_unfinished_run_polls_its_report(staff, world):
    run = SimulationRun.objects.create(kind="compare", params={"source": "openb"}, created_by=world.staff)
    page = staff.get(f"/simulate/{run.pk}/").content.decode()
    assert 'hx-trigger="every 2s"' in page and f"/simulate/{run.pk}/report/" in page
    assert staff.get(f"/simulate/{run.pk}/plots/times.png").status_code == 404


def test_openb_replay_from_the_traces_folder(staff, world, monkeypatch):
    monkeypatch.setenv("AIPOOL_TRACES_DIR", str(DATA))
    _start(
        staff,
        "/simulate/new/",
        {"source": "openb", "policies": ["fifo", "easy"], "load": "1", "pool_fraction": "1", "tenants": "4"},
    )
    run = SimulationRun.objects.get()
    assert run.state == RunState.DONE, run.error
    assert set(run.result["policies"][0]["tenant_wait"]) <= {f"tenant-{i}" for i in range(4)}
    assert any("openb" in note for note in run.result["notes"])


def test_whatif_shows_per_tenant_wait_before_and_after_a_quota_change(staff, world):
    for _ in range(3):
        submit(world.alice, world.ai_team, accelerators_per_node=8, time_limit="60")
        submit(world.mallory, world.rivals, accelerators_per_node=8, time_limit="60")
    start = (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M")
    end = (timezone.now() + timedelta(minutes=1)).strftime("%Y-%m-%d %H:%M")
    _start(staff, "/simulate/whatif/", {"start": start, "end": end, "quotas": "tenant acme GrpTRES=accelerator=8"})
    run = SimulationRun.objects.get()
    assert run.state == RunState.DONE, run.error
    rows = {row["tenant"]: row for row in run.result["whatif"]["tenants"]}
    assert rows["acme"]["wait_proposed"] > rows["acme"]["wait_now"]  # a tighter quota: acme waits longer
    assert rows["globex"]["wait_proposed"] <= rows["globex"]["wait_now"]
    assert run.result["whatif"]["after"]["quota_violations"] == 0
    page = staff.get(f"/simulate/{run.pk}/").content.decode()
    assert "today's limits vs the proposal" in page and "GrpTRES=gres/accelerator=8" in page


@pytest.mark.parametrize(
    ("url", "data", "field", "message"),
    [
        (
            "/simulate/new/",
            {"source": "csv", "policies": ["easy"], "load": "1", "pool_fraction": "1", "tenants": "8"},
            "upload",
            "a csv file is needed",
        ),
        (
            "/simulate/new/",
            {"source": "openb", "policies": ["sjf"], "load": "1", "pool_fraction": "1", "tenants": "8"},
            "policies",
            "not one of the available choices",
        ),
        (
            "/simulate/new/",
            {"source": "openb", "policies": ["easy"], "load": "0", "pool_fraction": "1", "tenants": "8"},
            "load",
            "greater than or equal to 0.01",
        ),
        ("/simulate/whatif/", {"quotas": "tenant acme GrpTRES=gpu=1"}, "quotas", "unknown TRES"),
        (
            "/simulate/whatif/",
            {"quotas": "tenant acme GrpTRES=accelerator=1", "start": "2026-01-02 00:00", "end": "2026-01-01 00:00"},
            "end",
            "must be after the start",
        ),
    ],
)
def test_bad_input_is_a_form_error_and_starts_nothing(staff, url, data, field, message):
    response = staff.post(url, data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert f'id="field-{"compare" if url.endswith("new/") else "whatif"}-{field}"' in response.content.decode()
    assert not SimulationRun.objects.exists()


def test_a_run_that_cannot_read_its_input_fails_with_the_reason(staff, world):
    bad = ",".join(CANONICAL_HEADER) + "\n0,60,,1,x,a,b,c\n"
    _start(
        staff,
        "/simulate/new/",
        {
            "source": "csv",
            "upload": SimpleUploadedFile("j.csv", bad.encode()),
            "policies": ["easy"],
            "load": "1",
            "pool_fraction": "1",
            "tenants": "8",
        },
    )
    run = SimulationRun.objects.get()
    assert run.state == RunState.FAILED and "accelerators_per_node='x'" in run.error
    assert "accelerators_per_node=&#x27;x&#x27;" in staff.get(f"/simulate/{run.pk}/").content.decode()


def test_a_redelivered_task_does_not_run_twice(staff, world):
    from simulation.services import simulation_execute

    run = SimulationRun.objects.create(kind="compare", params={"source": "csv", "data": CSV, "policies": ["easy"]})
    assert simulation_execute(run_id=run.pk) is not None
    run.refresh_from_db()
    finished = run.finished_at
    assert simulation_execute(run_id=run.pk) is None
    run.refresh_from_db()
    assert run.finished_at == finished and run.state == RunState.DONE


@pytest.mark.parametrize("url", ["/simulate/", "/simulate/1/", "/simulate/1/report/", "/simulate/1/plots/times.png"])
def test_pages_are_404_for_anyone_but_staff(client, world, url):
    SimulationRun.objects.create(pk=1, kind="compare", params={}, state=RunState.DONE, result={"policies": []})
    for user in (world.ada, world.mallory):
        client.force_login(user)
        assert client.get(url).status_code == 404
    client.force_login(world.ada)
    assert client.post("/simulate/new/", {"source": "openb"}).status_code == 404
    assert not SimulationRun.objects.exclude(pk=1).exists()


def test_home_lists_runs_and_offers_both_forms(staff, world):
    SimulationRun.objects.create(kind="whatif", params={}, state=RunState.FAILED, created_by=world.staff)
    page = staff.get("/simulate/").content.decode()
    assert 'action="/simulate/new/"' in page and 'action="/simulate/whatif/"' in page
    assert "quota change on past history" in page and "failed" in page
    assert 'name="policies" value="learned"' in page
