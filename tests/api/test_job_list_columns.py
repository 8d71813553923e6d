"""The job list reads what its rows show, in one query, whatever the page holds (issue 5's list benchmark)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.jobs.helpers import submit

pytestmark = pytest.mark.django_db


def test_a_list_page_reads_only_the_columns_it_shows(world, api):
    for _ in range(3):
        submit(world.alice, world.ai_team, environment={"SECRET": "x"})
    client = api(world.alice)
    with CaptureQueriesContext(connection) as ctx:
        response = client.get("/api/v1/jobs/")
    assert response.status_code == 200 and len(response.json()["results"]) == 3
    (page,) = [q["sql"] for q in ctx.captured_queries if 'FROM "jobs_job"' in q["sql"]]
    for heavy in ('"jobs_job"."script"', '"jobs_job"."environment"', '"jobs_job"."allocation"',
                  '"tenants_tenant"."grp_tres"', '"tenants_group"."grp_tres"', '"auth_user"."password"'):  # fmt: skip
        assert heavy not in page
    row = response.json()["results"][0]
    assert (row["tenant"], row["group"], row["user"], row["partition"]) == ("acme", "ai-team", "alice", "main")
    assert row["memory_per_node_mb"] > 0 and row["time_limit_minutes"] == 10
