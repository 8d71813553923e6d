"""Jobs over the API: submit (idempotent), validation messages, list with filters, show, cancel, logs, explain."""

import base64

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.models import Job
from tests.factories import PartitionFactory
from tests.jobs.helpers import drive_until, ended, submit

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/"
CONTRACT_FIELDS = {
    "id", "name", "tenant", "group", "user", "partition", "nodes", "accelerators_per_node", "time_limit", "state",
    "reason", "exit_code", "submitted_at", "started_at", "ended_at", "nodelist", "switches", "backend",
    "backend_job_id",
}  # fmt: skip


def body(**fields):
    return {"group": "ai-team", "name": "train", "nodes": 1, "accelerators_per_node": 8, "time_limit": "72:00:00",
            "command": "python train.py", **fields}  # fmt: skip


def post(client, data, key=None, **kwargs):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return client.post(JOBS, data, format="json", **headers, **kwargs)


def test_submit_returns_201_with_the_contract_fields(world, api):
    response = post(api(world.alice), body(memory_per_node="64G", environment={"SEED": 1}))
    assert response.status_code == 201, response.content
    job = response.json()
    assert CONTRACT_FIELDS <= set(job)
    assert job["state"] == "PENDING" and job["reason"] == "None" and job["exit_code"] is None
    assert (job["tenant"], job["group"], job["user"], job["partition"]) == ("acme", "ai-team", "alice", "main")
    assert (job["time_limit"], job["time_limit_minutes"]) == ("3-00:00:00", 72 * 60)
    assert (job["memory_per_node"], job["memory_per_node_mb"]) == ("64G", 64 * 1024)
    assert job["environment"] == {"SEED": "1"} and job["events"][0]["to_state"] == "PENDING"
    assert job["nodelist"] == [] and job["switches"] == []


def test_same_idempotency_key_and_body_returns_the_same_job(world, api):
    client = api(world.alice)
    first = post(client, body(), key="run-42")
    again = post(client, body(), key="run-42")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert Job.objects.count() == 1


def test_same_idempotency_key_with_another_body_is_409(world, api):
    client = api(world.alice)
    post(client, body(), key="run-42")
    response = post(client, body(nodes=2), key="run-42")
    assert response.status_code == 409
    assert response.json()["code"] == "idempotency_conflict"
    assert Job.objects.count() == 1


def test_idempotency_keys_are_per_user(world, api):
    first = post(api(world.alice), body(), key="k")
    second = post(api(world.bob), body(), key="k")
    assert (first.status_code, second.status_code) == (201, 201)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"nodes": 0}, "nodes", "must be at least 1"),
        ({"accelerators_per_node": 9}, "accelerators_per_node", "9 requested, nodes in partition 'main' have 8"),
        ({"time_limit": "forever"}, "time_limit", "bad time limit 'forever'"),
        ({"time_limit": "8-00:00:00"}, "time_limit", "MaxTime is 7-00:00:00 (over by 1-00:00:00)"),
        ({"script": "#!/bin/sh\ntrue\n"}, "command", "give exactly one of command or script"),
        ({"group": "nope"}, "group", "unknown group 'nope'"),
        ({"group": "rivals"}, "group", "unknown group 'rivals'"),  # another tenant's group reads as unknown
        ({"accelerators": 8}, "accelerators", "unknown field"),
        ({"nodes": "two"}, "nodes", "must be a whole number"),
        ({"max_switches": 2**40}, "max_switches", "must be at most"),
        ({"partition": "unlimited", "time_limit": str(2**40)}, "time_limit", "must be at most"),
    ],
)
def test_bad_input_is_400_with_field_messages(world, api, fields, field, message):
    unlimited = PartitionFactory(name="unlimited", max_time=None)
    unlimited.nodes.set(world.partition.nodes.all())
    world.ai_team.allowed_partitions.add(unlimited)
    response = post(api(world.alice), body(**fields))
    assert response.status_code == 400, response.content
    error = response.json()
    assert error["code"] == "validation_error"
    assert any(message in m for m in error["errors"][field]), error
    assert message in error["detail"] or field in error["detail"]
    assert not Job.objects.exists()


def test_malformed_json_is_400_not_500(world, api):
    response = api(world.alice).post(JOBS, data='{"group": "ai-team",', content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "validation_error" and "JSON" in response.json()["detail"]


def test_a_json_body_that_is_not_an_object_is_400(world, api):
    response = api(world.alice).post(JOBS, data="[1, 2]", content_type="application/json")
    assert response.status_code == 400 and "non_field_errors" in response.json()["errors"]


def test_overlong_idempotency_key_is_400(world, api):
    response = post(api(world.alice), body(), key="k" * 129)
    assert response.status_code == 400 and "Idempotency-Key" in response.json()["errors"]


def test_viewer_may_not_submit(world, api):
    response = post(api(world.vic), body())
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"


def test_list_is_cursor_paginated_newest_first(world, api):
    ids = [submit(world.alice, world.ai_team).pk for _ in range(5)]
    client = api(world.alice)
    seen, url = [], f"{JOBS}?page_size=2"
    while url:
        page = client.get(url).json()
        assert set(page) == {"next", "previous", "results"}
        seen += [j["id"] for j in page["results"]]
        url = page["next"]
    assert seen == sorted(ids, reverse=True)


def test_list_oldest_first_with_ordering_id(world, api):
    ids = [submit(world.alice, world.ai_team).pk for _ in range(5)]
    client = api(world.alice)
    seen, url = [], f"{JOBS}?page_size=2&ordering=id"
    while url:
        page = client.get(url).json()
        seen += [j["id"] for j in page["results"]]
        url = page["next"]
    assert seen == sorted(ids)


def test_unknown_ordering_is_400(world, api):
    response = api(world.alice).get(f"{JOBS}?ordering=state")
    assert response.status_code == 400 and "ordering" in response.json()["errors"]


@pytest.mark.parametrize("cursor", ["not-a-cursor", base64.b64encode(b"p=abc").decode()])
def test_a_mangled_cursor_is_400(world, api, cursor):
    response = api(world.alice).get(JOBS, {"cursor": cursor})
    assert response.status_code == 400 and "cursor" in response.json()["errors"]


def test_list_filters(world, api):
    running = submit(world.alice, world.ai_team)
    Job.objects.filter(pk=running.pk).update(state="RUNNING")
    pending = submit(world.bob, world.ai_team)
    client = api(world.alice)

    def ids(query):
        response = client.get(f"{JOBS}?{query}")
        assert response.status_code == 200, response.content
        return {j["id"] for j in response.json()["results"]}

    assert ids("state=RUNNING") == {running.pk}
    assert ids("state=PENDING,RUNNING") == {running.pk, pending.pk}
    assert ids("user=me") == {running.pk}
    assert ids("user=bob") == {pending.pk}
    assert ids("group=ai-team&partition=main") == {running.pk, pending.pk}
    assert ids("submitted_after=2999-01-01T00:00:00Z") == set()
    assert ids("submitted_before=2999-01-01T00:00:00Z") == {running.pk, pending.pk}


@pytest.mark.parametrize(
    ("query", "field"),
    [("state=FOO", "state"), ("state=PENDING,FOO", "state"), ("group=rivals", "group"), ("partition=nope", "partition"),
     ("submitted_after=yesterday", "submitted_after")],
)  # fmt: skip
def test_bad_filter_values_are_400_with_the_field(world, api, query, field):
    response = api(world.alice).get(f"{JOBS}?{query}")
    assert response.status_code == 400
    assert response.json()["code"] == "validation_error" and field in response.json()["errors"]


def _list_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(f"{JOBS}?page_size=100").status_code == 200
    return len(queries)


def test_list_query_count_does_not_grow_with_jobs(world, api):
    client = api(world.alice)
    client.get("/api/v1/me/")  # the first request stamps the token's last use
    for _ in range(5):
        submit(world.alice, world.ai_team)
    few = _list_queries(client)
    for _ in range(15):
        submit(world.bob, world.ai_team)
    assert _list_queries(client) == few


def test_detail_shows_events_and_hides_the_environment_from_other_members(world, api):
    job = submit(world.alice, world.ai_team, environment={"TOKEN": "s3cret"})
    mine = api(world.alice).get(f"{JOBS}{job.pk}/").json()
    assert mine["environment"] == {"TOKEN": "s3cret"} and mine["command"] == "true"
    assert [e["to_state"] for e in mine["events"]] == ["PENDING"]
    assert api(world.bob).get(f"{JOBS}{job.pk}/").json()["environment"] is None
    assert api(world.ada).get(f"{JOBS}{job.pk}/").json()["environment"] == {"TOKEN": "s3cret"}


def test_owner_cancels_a_job(world, api):
    job = submit(world.alice, world.ai_team)
    response = api(world.alice).post(f"{JOBS}{job.pk}/cancel/")
    assert response.status_code == 200 and response.json()["state"] == "CANCELLED"
    assert response.json()["events"][-1]["cause"] == "cancelled by alice"


def test_tenant_admin_cancels_a_members_job(world, api):
    job = submit(world.alice, world.ai_team)
    assert api(world.ada).post(f"{JOBS}{job.pk}/cancel/").status_code == 200


@pytest.mark.parametrize(("who", "status"), [("bob", 403), ("vic", 403), ("mallory", 404)])
def test_others_may_not_cancel(world, api, who, status):
    job = submit(world.alice, world.ai_team)
    response = api(getattr(world, who)).post(f"{JOBS}{job.pk}/cancel/")
    assert response.status_code == status
    assert Job.objects.get(pk=job.pk).state == "PENDING"


def test_cancelling_an_ended_job_is_409(world, api):
    job = submit(world.alice, world.ai_team)
    client = api(world.alice)
    client.post(f"{JOBS}{job.pk}/cancel/")
    response = client.post(f"{JOBS}{job.pk}/cancel/")
    assert response.status_code == 409 and response.json()["code"] == "conflict"
    assert "already ended" in response.json()["detail"]


def test_logs_read_from_an_offset(world, api):
    job = submit(world.alice, world.ai_team, command="echo hello; echo oops >&2; echo world")
    drive_until(ended(job))
    client = api(world.alice)
    whole = client.get(f"{JOBS}{job.pk}/logs/").json()
    assert whole == {"text": "hello\nworld\n", "offset": 12, "size": 12, "state": "COMPLETED"}
    assert client.get(f"{JOBS}{job.pk}/logs/?offset=6").json()["text"] == "world\n"
    assert client.get(f"{JOBS}{job.pk}/logs/?offset=12").json()["text"] == ""
    assert client.get(f"{JOBS}{job.pk}/logs/?stream=stderr").json()["text"] == "oops\n"


def test_logs_of_a_job_not_started_yet_are_empty(world, api):
    job = submit(world.alice, world.ai_team)
    assert api(world.alice).get(f"{JOBS}{job.pk}/logs/").json() == {
        "text": "",
        "offset": 0,
        "size": 0,
        "state": "PENDING",
    }


@pytest.mark.parametrize(
    ("query", "field"), [("stream=stdin", "stream"), ("offset=-1", "offset"), ("offset=x", "offset")]
)
def test_bad_log_parameters_are_400(world, api, query, field):
    job = submit(world.alice, world.ai_team)
    response = api(world.alice).get(f"{JOBS}{job.pk}/logs/?{query}")
    assert response.status_code == 400 and field in response.json()["errors"]


def test_explain_a_pending_job(world, api):
    job = submit(world.alice, world.ai_team)
    Job.objects.filter(pk=job.pk).update(reason="AssocGrpGRES")
    explained = api(world.alice).get(f"{JOBS}{job.pk}/explain/").json()
    assert set(explained) == {"state", "reason", "causes", "estimated_start", "suggestions"}
    assert explained["reason"] == "AssocGrpGRES" and explained["suggestions"] == []
    (cause,) = explained["causes"]
    assert set(cause) == {"code", "message", "limit", "in_use", "requested"}
    assert cause["code"] == "AssocGrpGRES" and "GrpTRES" in cause["message"]


# A submit is the API's hot path (bench/api.py): every query is a round trip under the tenant's row lock.
SUBMIT_QUERIES = 16


def test_submit_query_count_is_bounded(world, api):
    client = api(world.alice)
    client.get("/api/v1/me/")  # the first request stamps the token's last use
    with CaptureQueriesContext(connection) as queries:
        assert post(client, body(), key="bounded").status_code == 201
    assert len(queries) <= SUBMIT_QUERIES, "\n".join(q["sql"][:120] for q in queries.captured_queries)


def test_time_filter_outside_utc_range_is_400_not_500(world, api):
    client = api(world.alice)
    response = client.get("/api/v1/jobs/", {"submitted_before": "0001-01-01T00:00:00+18:33"})
    assert response.status_code == 400
    assert "submitted_before" in response.json()["errors"]


def test_time_filter_with_an_offset_postgresql_refuses_is_converted_to_utc(world, api):
    client = api(world.alice)
    response = client.get("/api/v1/jobs/", {"submitted_before": "0790-09-22T16:53:51.20+18:33"})
    assert response.status_code == 200
    assert response.json()["results"] == []
