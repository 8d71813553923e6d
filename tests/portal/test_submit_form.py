"""The submission form: what it offers, what the checker says while typing, and what submitting does."""

import re

import pytest
from django.test import override_settings

from jobs.models import Job
from tenants.models import Role
from tests.factories import GroupFactory, PartitionFactory, make_member
from tests.jobs.helpers import submit, tick
from vocab.states import JobState

pytestmark = pytest.mark.django_db

VALID = {
    "group": "ai-team",
    "name": "train",
    "nodes": "1",
    "accelerators_per_node": "2",
    "time_limit": "30",
    "mode": "command",
    "command": "python train.py",
    "touched": "*",
}


def check(client, **changes):
    return client.post("/jobs/new/check/", {**VALID, **changes}).content.decode()


def test_form_offers_the_users_groups_only(client, world):
    GroupFactory(name="other-acme", tenant=world.acme, partitions=[world.partition])
    client.force_login(world.alice)
    page = client.get("/jobs/new/").content.decode()
    assert '<option value="ai-team"' in page
    assert "other-acme" not in page and "rivals" not in page


def test_viewers_cannot_pick_a_group(client, world):
    client.force_login(world.vic)
    page = client.get("/jobs/new/").content.decode()
    assert "You cannot submit jobs yet" in page and 'name="group"' not in page


def test_form_knows_the_groups_partitions_and_limits(client, world):
    PartitionFactory(name="debug")
    client.force_login(world.alice)
    page = client.get("/jobs/new/").content.decode()
    assert '"ai-team": ["main"]' in page  # the partitions the group may use, for the partition picker
    assert "<small>GrpTRES</small>" in page and "/ 16" in page
    assert "4 nodes × 8 accelerators" in page and "MaxTime" in page


def test_script_editor_has_line_numbers_and_monospace(client, world):
    client.force_login(world.alice)
    page = client.get("/jobs/new/").content.decode()
    assert '<div class="code-editor"><div class="gutter" aria-hidden="true">1</div><textarea' in page
    assert 'class="mono"' in page


def test_every_field_has_a_label(client, world):
    client.force_login(world.alice)
    page = client.get("/jobs/new/").content.decode()
    for field in (
        "group",
        "partition",
        "name",
        "nodes",
        "accelerators_per_node",
        "time_limit",
        "cpus_per_node",
        "memory_per_node",
        "topology_aware",
        "max_switches",
        "runtime",
        "command",
        "script",
        "environment",
    ):
        assert f'for="id_{field}"' in page, field


def test_checker_says_a_job_would_start_now_and_where(client, world):
    client.force_login(world.alice)
    page = check(client)
    assert 'data-outcome="start"' in page and "Would start now" in page and "switch leaf" in page
    assert "1 node × 2 accelerators, 16 CPUs and 128G memory per node, for 00:30:00 on partition main" in page


def test_checker_creates_nothing(client, world):
    client.force_login(world.alice)
    check(client)
    assert not Job.objects.exists()


def test_checker_says_why_a_job_would_wait_and_when(client, world):
    submit(world.alice, world.ai_team, nodes=2, accelerators_per_node=8, command="sleep 30")
    tick()
    client.force_login(world.alice)
    page = check(client, accelerators_per_node="4")
    assert 'data-outcome="wait"' in page and "Would wait: AssocGrpGRES" in page
    assert "group ai-team has 16 of 16 accelerators in use (GrpTRES); this job needs 4" in page
    assert "Estimated start: <strong>in 9 min" in page or "Estimated start: <strong>in 10 min" in page


def test_checker_says_a_job_waits_for_resources(client, world):
    world.ai_team.grp_tres = {}
    world.ai_team.save()
    submit(world.bob, world.ai_team, nodes=4, accelerators_per_node=8, command="sleep 30")
    tick()
    client.force_login(world.alice)
    page = check(client)
    assert "Would wait: Resources" in page and "partition main has 0 of 32 accelerators free" in page


def test_checker_names_the_limit_a_job_can_never_meet(client, world):
    client.force_login(world.alice)
    page = check(client, accelerators_per_node="9")
    assert 'data-outcome="reject"' in page
    assert (
        '<div class="field-errors" id="err-accelerators_per_node" hx-swap-oob="true" aria-live="polite">'
        "<p>9 requested, nodes in partition &#x27;main&#x27; have 8</p></div>" in page
    )


def test_checker_names_the_group_limit_and_by_how_much(client, world):
    client.force_login(world.alice)
    page = check(client, nodes="3", accelerators_per_node="8")
    assert "24 accelerators requested in total, group ai-team GrpTRES is 16 (over by 8)" in page


def test_checker_reports_field_errors_of_the_spec_parser(client, world):
    client.force_login(world.alice)
    page = check(client, time_limit="forever", nodes="0")
    assert "bad time limit &#x27;forever&#x27;" in page and "must be at least 1" in page
    assert 'data-outcome="invalid"' in page


def test_checker_hides_errors_of_fields_not_touched_yet(client, world):
    client.force_login(world.alice)
    page = check(client, command="", touched="nodes")
    assert "give exactly one of command or script" not in page
    assert "Complete the form" in page


def test_checker_validates_environment_lines(client, world):
    client.force_login(world.alice)
    page = check(client, environment="GOOD=1\nthis is not a variable")
    assert "line 2: expected NAME=value" in page
    page = check(client, environment="1BAD=x")
    assert "invalid variable names: 1BAD" in page


def test_checker_refuses_a_partition_the_group_may_not_use(client, world):
    PartitionFactory(name="debug").nodes.set(world.partition.nodes.all())
    client.force_login(world.alice)
    page = check(client, partition="debug")
    assert "group ai-team may not use partition &#x27;debug&#x27; (allowed: main)" in page


@override_settings(AIPOOL_LOCAL_BACKEND_OPEN=False)
def test_checker_says_when_submission_is_not_allowed_at_all(client, world):
    client.force_login(world.alice)
    assert "restricted to staff" in check(client)


def test_submitting_creates_the_job_and_opens_its_page(client, world):
    client.force_login(world.alice)
    response = client.post("/jobs/new/", {**VALID, "idempotency_key": "web-1", "environment": "A=1"})
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert (job.user, job.group, job.accelerators_per_node, job.time_limit) == (world.alice, world.ai_team, 2, 30)
    assert job.environment == {"A": "1"} and job.state == JobState.PENDING


def test_submitting_a_script(client, world):
    client.force_login(world.alice)
    client.post("/jobs/new/", {**VALID, "mode": "script", "script": "#!/bin/bash\necho hi\n", "command": "ignored"})
    job = Job.objects.get()
    assert job.script == "#!/bin/bash\necho hi\n" and job.command == ""


def test_submitting_twice_with_the_same_form_gives_one_job(client, world):
    client.force_login(world.alice)
    first = client.post("/jobs/new/", {**VALID, "idempotency_key": "web-twice"})
    second = client.post("/jobs/new/", {**VALID, "idempotency_key": "web-twice"})
    assert Job.objects.count() == 1 and first["Location"] == second["Location"]


def test_an_invalid_submission_shows_the_form_with_its_errors(client, world):
    client.force_login(world.alice)
    response = client.post("/jobs/new/", {**VALID, "accelerators_per_node": "9"})
    page = response.content.decode()
    assert response.status_code == 200 and not Job.objects.exists()
    assert "9 requested, nodes in partition &#x27;main&#x27; have 8" in page
    assert 'value="python train.py"' in page  # what the person typed is kept


def test_submitting_to_another_tenants_group_is_refused(client, world):
    client.force_login(world.mallory)
    response = client.post("/jobs/new/", VALID)
    assert response.status_code == 200 and not Job.objects.exists()
    assert "Select a valid choice" in response.content.decode()


def test_a_viewer_cannot_submit_by_posting(client, world):
    viewers = GroupFactory(name="viewers", tenant=world.acme, partitions=[world.partition])
    make_member(world.vic, viewers, role=Role.VIEWER)
    client.force_login(world.vic)
    client.post("/jobs/new/", {**VALID, "group": "viewers"})
    assert not Job.objects.exists()


def test_form_prefills_from_the_query_string(client, world):
    client.force_login(world.alice)
    page = client.get("/jobs/new/?nodes=2&time_limit=90&topology_aware=true&command=echo+hi").content.decode()
    assert 'name="nodes" value="2"' in page and 'value="01:30:00"' in page and 'value="echo hi"' in page
    checkbox = re.search(r'<input type="checkbox" name="topology_aware"[^>]*>', page).group(0)
    assert "checked" in checkbox
