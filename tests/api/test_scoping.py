"""Cross-tenant isolation, for every API route read from the URL resolver (style.md §1).

mallory (tenant globex) asks for acme's objects by id with every method a route answers: always 404, exactly like
an id that does not exist, and nothing changes. Every list mallory can call never shows one of acme's rows.
A new detail route fails here until its tenant-owned object is added to ``acme_objects`` (or it is declared shared).
"""

import json

import pytest

from api.models import ApiToken
from api.services import token_create
from jobs.models import Job
from tenants.models import Group, Membership, Tenant
from tests.api.routes import api_v1_routes
from tests.inference import helpers as inference
from tests.jobs.helpers import submit
from tests.notifications import helpers as notifications
from tests.registry import helpers as registry

pytestmark = pytest.mark.django_db

# The pool's inventory is shared by every tenant, as sinfo shows it to everyone.
SHARED = {"partition", "node"}
ACME_WORDS = ('"acme"', '"ai-team"', '"alice"', '"bob"', '"ada"', '"vic"')
# A body that would change something on every writable resource if it were accepted.
HOSTILE_BODY = {"limits": {"GrpTRES": "accelerator=1"}, "role": "admin", "description": "pwned", "shares": 99}


def resource_of(route) -> str:
    return route.name.split(":", 1)[1].split("-", 1)[0]


def acme_objects(world) -> dict[str, int]:
    job = submit(world.alice, world.ai_team)
    token, _ = token_create(user=world.alice, name="alice-ci", scopes="read,write")
    return {
        "job": job.pk,
        "group": world.ai_team.pk,
        "membership": Membership.objects.get(user=world.alice, tenant=world.acme).pk,
        "token": token.pk,
        "tenant": world.acme.pk,
        **registry.acme_objects(world),
        **inference.acme_objects(world),
        **notifications.acme_objects(world),
    }


def snapshot(world) -> tuple:
    return (
        list(Job.objects.values_list("pk", "state")),
        list(Group.objects.values_list("pk", "grp_tres", "shares", "description")),
        list(Membership.objects.values_list("pk", "role")),
        list(ApiToken.objects.values_list("pk", "revoked_at")),
        list(Tenant.objects.values_list("pk", "grp_tres")),
        registry.snapshot(),
        inference.snapshot(),
    )


DETAIL_CALLS = [
    (route, method) for route in api_v1_routes() if route.is_detail and resource_of(route) not in SHARED
    for method in route.methods
]  # fmt: skip
LIST_ROUTES = [route for route in api_v1_routes() if not route.is_detail and "get" in route.methods]


@pytest.mark.parametrize(("route", "method"), DETAIL_CALLS, ids=[f"{m.upper()} {r.route}" for r, m in DETAIL_CALLS])
def test_another_tenants_object_is_404_for_every_method(world, api, route, method):
    objects = acme_objects(world)
    resource = resource_of(route)
    assert resource in objects, f"{route.route}: classify its object in acme_objects or SHARED"
    client = api(world.mallory)
    before = snapshot(world)
    response = getattr(client, method)(route.url(pk=objects[resource]), HOSTILE_BODY, format="json")
    assert response.status_code == 404, (route.route, method, response.content)
    assert response.json()["code"] == "not_found"
    assert snapshot(world) == before


@pytest.mark.parametrize("route", [r for r, m in DETAIL_CALLS if m == "get"], ids=lambda r: r.route)
def test_the_same_urls_answer_the_owner(world, api, route):
    """Guards the test above: the 404s come from scoping, not from URLs that never resolve."""
    objects = acme_objects(world)
    response = api(world.alice).get(route.url(pk=objects[resource_of(route)]))
    assert response.status_code == 200, response.content


@pytest.mark.parametrize("route", LIST_ROUTES, ids=lambda r: r.route)
def test_lists_never_show_another_tenants_rows(world, api, route):
    objects = acme_objects(world)
    submit(world.mallory, world.rivals)
    response = api(world.mallory).get(route.url())
    assert response.status_code == 200, response.content
    text = response.content.decode()
    leaked = [word for word in ACME_WORDS if word in text]
    assert not leaked, f"{route.route} shows {leaked}: {json.dumps(response.json())[:500]}"
    resource = resource_of(route)
    if resource in objects:
        # A list of jobs' priorities names each job by job_id.
        assert objects[resource] not in [row.get("id", row.get("job_id")) for row in response.json()["results"]]
