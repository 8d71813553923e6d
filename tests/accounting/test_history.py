"""Done-when: the /usage/ page, its CSV, the API and `aipool sreport` agree with the job history to the minute, for
a history spanning several days; another tenant's usage never appears."""

import csv
import io
import json
import re
from datetime import UTC, datetime

import pytest

from tests.accounting.bridge import run_cli
from tests.accounting.helpers import JobRunFactory

pytestmark = pytest.mark.django_db

START, END = "2026-03-02", "2026-03-05"  # three whole days


def at(day, hour=0, minute=0):
    return datetime(2026, 3, day, hour, minute, tzinfo=UTC)


# Accelerator-minutes inside [03-02 00:00, 03-05 00:00), worked out by hand from each run below.
EXPECTED = {"alice": 1200 + 11460, "bob": 472 + 4320}
GLOBEX_MINUTES = 4800


@pytest.fixture
def history(world):
    def run(user, group, start, end, nodes=1, per_node=8):
        return JobRunFactory(
            user=user, group=group, started_at=start, ended_at=end, nodes=nodes, accelerators_per_node=per_node
        )

    run(world.alice, world.ai_team, at(1, 22, 30), at(2, 1, 15), nodes=2)  # 75 min x 16 = 1200, across the start
    run(world.alice, world.ai_team, at(2, 10, 7), at(4, 9, 52), per_node=4)  # 2,865 min x 4 = 11460, two midnights
    run(world.bob, world.ai_team, at(4, 23, 1), at(5, 3, 0))  # 59 min x 8 = 472, across the end
    run(world.bob, world.ai_team, at(3, 12, 0), None, per_node=2)  # still running: 36 h x 2 = 4320 to the end
    run(world.alice, world.ai_team, at(5, 0, 0), at(5, 2, 0))  # starts at the end: nothing
    run(world.alice, world.ai_team, at(1, 10, 0), at(2, 0, 0))  # ends at the start: nothing
    run(world.mallory, world.rivals, at(3, 0, 0), at(3, 10, 0))  # globex: 600 x 8 = 4800
    return world


def by_name(rows):
    return {row["name"]: row for row in rows}


def test_api_agrees_with_the_history(history, api):
    report = api(history.ada).get("/api/v1/accounting/usage/", {"start": START, "end": END, "by": "user"}).json()
    rows = by_name(report["rows"])
    assert {name: row["allocated_minutes"] for name, row in rows.items()} == EXPECTED
    assert report["total"]["allocated_minutes"] == sum(EXPECTED.values())
    assert rows["alice"]["jobs"] == 2 and rows["bob"]["jobs"] == 2
    assert rows["alice"]["used_hours"] is None  # no monitoring samples: not measured, not zero
    group = api(history.ada).get("/api/v1/accounting/usage/", {"start": START, "end": END, "by": "group"}).json()
    assert [(r["name"], r["allocated_minutes"]) for r in group["rows"]] == [("ai-team", sum(EXPECTED.values()))]


def test_another_tenants_usage_never_appears(history, api):
    for by in ("cluster", "tenant", "group", "user", "partition"):
        mine = api(history.mallory).get("/api/v1/accounting/usage/", {"start": START, "end": END, "by": by}).json()
        assert mine["total"]["allocated_minutes"] == GLOBEX_MINUTES, by
        assert "alice" not in json.dumps(mine) and "ai-team" not in json.dumps(mine)
    series = api(history.mallory).get("/api/v1/accounting/series/", {"start": START, "end": END}).json()
    assert [line["name"] for line in series["series"]] == ["rivals"]
    filtered = api(history.mallory).get("/api/v1/accounting/usage/", {"start": START, "end": END, "group": "ai-team"})
    assert filtered.json()["rows"] == []


def test_staff_see_the_whole_pool(history, api):
    report = api(history.staff).get("/api/v1/accounting/usage/", {"start": START, "end": END, "by": "tenant"}).json()
    assert by_name(report["rows"])["globex"]["allocated_minutes"] == GLOBEX_MINUTES
    assert by_name(report["rows"])["acme"]["allocated_minutes"] == sum(EXPECTED.values())


def test_the_daily_series_sums_to_the_report(history, api):
    series = (
        api(history.ada)
        .get("/api/v1/accounting/series/", {"start": START, "end": END, "step": "day", "by": "group"})
        .json()
    )
    (line,) = series["series"]
    assert len(series["times"]) == 3
    assert sum(line["allocated_hours"]) == pytest.approx(sum(EXPECTED.values()) / 60, abs=0.02)


def test_the_page_and_its_csv_agree_with_the_history(history, client):
    client.force_login(history.ada)
    page = client.get("/usage/", {"start": START, "end": END, "by": "user"}).content.decode()
    cells = dict(re.findall(r'<tr data-name="(\w+)">.*?<td class="right num" data-minutes>(\d+)</td>', page, re.S))
    assert {name: int(minutes) for name, minutes in cells.items()} == EXPECTED
    assert 'id="usage-series"' in page and "uplot" in page
    export = client.get("/usage/export.csv", {"start": START, "end": END, "by": "user"})
    assert export["Content-Type"].startswith("text/csv")
    rows = {row["user"]: row for row in csv.DictReader(io.StringIO(export.content.decode()))}
    assert {name: int(rows[name]["allocated_minutes"]) for name in EXPECTED} == EXPECTED
    assert int(rows["total"]["allocated_minutes"]) == sum(EXPECTED.values())
    assert "mallory" not in export.content.decode()


def test_the_cli_agrees_with_the_history(history):
    result = run_cli(history.alice, ["sreport", "user", "-S", START, "-E", END, "--csv"])
    assert result.exit_code == 0, result.output
    rows = {row["user"]: row for row in csv.DictReader(io.StringIO(result.output))}
    assert {name: int(rows[name]["allocated_minutes"]) for name in EXPECTED} == EXPECTED
    table = run_cli(history.alice, ["sreport", "user", "-S", START, "-E", END]).output
    assert re.search(r"^alice\s+211\.00\s+12660\s+not measured", table, re.M), table
    as_json = json.loads(run_cli(history.alice, ["--json", "report", "group", "-S", START, "-E", END]).output)
    assert as_json["total"]["allocated_minutes"] == sum(EXPECTED.values())


def test_bad_windows_are_clear_errors_everywhere(history, api, client):
    response = api(history.alice).get("/api/v1/accounting/usage/", {"start": "soon"})
    assert response.status_code == 400 and "start" in response.json()["errors"]
    response = api(history.alice).get("/api/v1/accounting/usage/", {"start": END, "end": START})
    assert response.status_code == 400 and "must be after" in response.json()["errors"]["end"][0]
    assert api(history.alice).get("/api/v1/accounting/usage/", {"by": "planet"}).status_code == 400
    client.force_login(history.alice)
    page = client.get("/usage/", {"start": "soon"})
    assert page.status_code == 200 and "is not a time" in page.content.decode()
    assert client.get("/usage/export.csv", {"start": "soon"}).status_code == 400
    result = run_cli(history.alice, ["sreport", "-S", "soon"])
    assert result.exit_code == 1 and "is not a time" in result.output


def test_budget_burn_down_forecasts_linearly(world, api, settings):
    settings.AIPOOL_SECONDS_PER_MINUTE = 60
    world.ai_team.grp_tres_mins = {"gres/accelerator": 100_000}
    world.ai_team.save()
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    # 8 accelerators x 10 h in the last week = 4,800 minutes; 8 x 50 h long before it.
    JobRunFactory(user=world.bob, group=world.ai_team, started_at=now - timedelta(days=3, hours=10),
                  ended_at=now - timedelta(days=3))  # fmt: skip
    JobRunFactory(user=world.bob, group=world.ai_team, started_at=now - timedelta(days=60, hours=50),
                  ended_at=now - timedelta(days=60))  # fmt: skip
    data = api(world.alice).get("/api/v1/accounting/budgets/").json()
    (budget,) = data["budgets"]
    assert budget["spent_minutes"] == 4800 + 24000
    assert budget["burn_per_day"] == pytest.approx(4800 / 7, abs=0.1)
    runs_out = datetime.fromisoformat(budget["runs_out_at"].replace("Z", "+00:00"))
    assert abs((runs_out - now).total_seconds() / 86400 - (100_000 - 28_800) / (4800 / 7)) < 0.01
    assert "linear" in data["method"]
    points = budget["burn_down"]
    assert len(points) == 8  # once a day over the 7-day lookback, now included
    assert points[0]["remaining_minutes"] == 100_000 - 24000 and points[-1]["remaining_minutes"] == 100_000 - 28_800
    assert api(world.mallory).get("/api/v1/accounting/budgets/").json()["budgets"] == []
    result = run_cli(world.alice, ["sreport", "budget"])
    assert "ai-team" in result.output and "forecast: linear" in result.output


def test_the_page_shows_budgets_of_visible_groups_only(world, client):
    world.ai_team.grp_tres_mins = {"gres/accelerator": 100_000}
    world.ai_team.save()
    client.force_login(world.alice)
    assert "100000" in client.get("/usage/").content.decode()
    client.force_login(world.mallory)
    page = client.get("/usage/").content.decode()
    assert "100000" not in page and "ai-team" not in page


def test_used_hours_come_from_monitoring_samples(world, api):
    from monitoring.models import MINUTE, RAW, MetricSample

    measured = JobRunFactory(user=world.alice, group=world.ai_team, started_at=at(2, 0), ended_at=at(2, 2))
    JobRunFactory(user=world.bob, group=world.ai_team, started_at=at(2, 0), ended_at=at(2, 2))  # no samples

    def sample(resolution, slot, utilisation):
        MetricSample.objects.create(job=measured, rank=0, resolution=resolution, slot=slot, ts=at(2, 1),
                                    utilisation=utilisation)  # fmt: skip

    sample(RAW, 1, 0.1)  # raw samples expire first: the rollups speak for the whole run
    sample(MINUTE, 1, 0.5)
    sample(MINUTE, 2, 0.7)
    report = api(world.alice).get("/api/v1/accounting/usage/", {"start": START, "end": END, "by": "user"}).json()
    rows = by_name(report["rows"])
    assert rows["alice"]["used_hours"] == pytest.approx(16 * 0.6) and rows["alice"]["efficiency"] == 0.6
    assert rows["bob"]["used_hours"] is None and rows["bob"]["measured_hours"] == 0
    assert report["total"]["measured_hours"] == 16.0 and report["total"]["allocated_hours"] == 32.0


def test_the_report_costs_the_same_queries_for_a_long_history(history, api, django_assert_max_num_queries):
    for day in range(2, 5):
        for hour in range(0, 24, 3):
            JobRunFactory(user=history.bob, group=history.ai_team, started_at=at(day, hour), ended_at=at(day, hour + 1))
    client = api(history.ada)
    with django_assert_max_num_queries(12):
        report = client.get("/api/v1/accounting/usage/", {"start": START, "end": END, "by": "user"}).json()
    assert by_name(report["rows"])["bob"]["jobs"] == 2 + 24
