"""The repository's REST resources: create, versions and aliases, lineage, replica states, storage, query counts."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from registry.models import Collection, Visibility
from registry.services import version_create
from tests.registry.helpers import make_collection, publish, put_file

pytestmark = pytest.mark.django_db


def test_a_member_creates_a_model_in_their_tenants_namespace(world, api):
    response = api(world.alice).post(
        "/api/v1/models/",
        {"name": "llm", "group": "ai-team", "license": "mit", "parameters": 7_000_000_000, "card": "# LLM"},
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["full_name"], body["visibility"], body["parameters_display"]) == ("acme/llm", "group", "7B")
    assert body["page"] == "/models/acme/llm/"


def test_naming_another_tenants_group_reads_as_unknown(world, api):
    response = api(world.mallory).post("/api/v1/models/", {"name": "x", "group": "ai-team"})
    assert response.status_code == 400 and response.json()["errors"]["group"] == ["unknown group 'ai-team'"]


def test_publish_with_an_alias_and_move_it(world, api):
    model = make_collection(world.alice, world.ai_team, "llm")
    client = api(world.alice)
    first = client.post(f"/api/v1/models/{model.pk}/versions/", {"message": "first"}).json()
    put_file(world.alice, model.versions.get(pk=first["id"]), "a", b"1")
    published = client.post(f"/api/v1/versions/{first['id']}/publish/", {"aliases": ["production"]})
    assert published.status_code == 200 and published.json()["aliases"] == ["latest", "production"]
    publish(world.alice, model, {"a": b"2"})
    moved = client.post(f"/api/v1/models/{model.pk}/aliases/", {"name": "production", "version": 2})
    assert moved.json()["aliases"] == {"latest": 2, "production": 2}
    removed = client.post(f"/api/v1/models/{model.pk}/aliases/", {"name": "production", "version": None})
    assert removed.json()["aliases"] == {"latest": 2}


def test_an_alias_to_a_missing_version_is_a_field_error(world, api):
    model = make_collection(world.alice, world.ai_team, "llm")
    response = api(world.alice).post(f"/api/v1/models/{model.pk}/aliases/", {"name": "production", "version": 9})
    assert response.status_code == 400 and "version" in response.json()["errors"]


def test_version_lineage_shows_parents_the_reader_may_see(world, api):
    base = publish(world.alice, make_collection(world.alice, world.ai_team, "base"), {"a": b"1"})
    derived = publish(
        world.alice, make_collection(world.alice, world.ai_team, "derived", visibility="public"), {"a": b"2"}
    )
    derived.parents.add(base)
    assert api(world.alice).get(f"/api/v1/versions/{derived.pk}/").json()["lineage"]["parents"] == [
        {"id": base.pk, "ref": "model:acme/base@1"}
    ]
    assert api(world.mallory).get(f"/api/v1/versions/{derived.pk}/").json()["lineage"]["parents"] == []


def test_replica_states_are_shown_to_pool_staff_only(world, api):
    model = make_collection(world.alice, world.ai_team, "llm", replicas=2)
    file = put_file(world.alice, version_create(actor=world.alice, collection=model), "a", b"1")
    assert api(world.alice).get(f"/api/v1/files/{file.pk}/").json()["replicas"] is None
    staff = api(world.staff).get(f"/api/v1/files/{file.pk}/").json()
    assert staff["replicas_ok"] == 2 and {r["state"] for r in staff["replicas"]} == {"ok"}


def test_storage_shows_each_groups_usage_and_staff_set_limits(world, api):
    model = make_collection(world.alice, world.ai_team, "llm", replicas=2)
    publish(world.alice, model, {"a": b"x" * 500})
    rows = api(world.alice).get("/api/v1/storage/").json()["results"]
    assert [(r["group"], r["used_bytes"], r["limit_bytes"]) for r in rows] == [("ai-team", 1000, None)]
    assert api(world.ada).patch(f"/api/v1/storage/{world.ai_team.pk}/", {"limit": "1G"}).status_code == 403
    response = api(world.staff).patch(f"/api/v1/storage/{world.ai_team.pk}/", {"limit": "1G"})
    assert response.json()["limit_bytes"] == 1 << 30


def test_the_model_list_takes_a_fixed_number_of_queries(world, api):
    client = api(world.alice)

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/api/v1/models/").status_code == 200
        return len(queries)

    publish(world.alice, make_collection(world.alice, world.ai_team, "m0"), {"a": b"0"}, aliases=["production"])
    count()  # the token's first use is recorded once
    few = count()
    for index in range(1, 6):
        publish(world.alice, make_collection(world.alice, world.ai_team, f"m{index}"), {"a": b"0"}, aliases=["x"])
    assert count() == few


def test_the_version_list_takes_a_fixed_number_of_queries(world, api):
    model = make_collection(world.alice, world.ai_team, "llm")
    publish(world.alice, model, {"a": b"0"})
    client = api(world.alice)

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"/api/v1/models/{model.pk}/versions/").status_code == 200
        return len(queries)

    count()  # the token's first use is recorded once
    few = count()
    for _ in range(5):
        publish(world.alice, model, {"a": b"1", "b": b"2"}, aliases=["production"])
    assert count() == few


def test_unknown_visibility_filter_is_a_400(world, api):
    response = api(world.alice).get("/api/v1/models/?visibility=secret")
    assert response.status_code == 400 and "visibility" in response.json()["errors"]


def test_the_catalog_is_public_and_staff_only_for_writes(world, api):
    entry = Collection.objects.create(kind="model", namespace="org", name="m", visibility=Visibility.PUBLIC)
    assert api(world.mallory).get(f"/api/v1/models/{entry.pk}/").status_code == 200
    assert api(world.ada).patch(f"/api/v1/models/{entry.pk}/", {"summary": "x"}).status_code == 403
    assert api(world.staff).patch(f"/api/v1/models/{entry.pk}/", {"summary": "x"}).json()["summary"] == "x"
