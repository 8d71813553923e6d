"""Every browser page, read from the URL resolver, as mallory (tenant globex) with acme's object ids and names.

Each page answers 404, or answers without a trace of acme's data, and nothing of acme's changes — for GET and for
POST with a hostile body. A new page is covered the day it is added; nobody keeps a list.
"""

from __future__ import annotations

import itertools
import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from api.models import ApiToken
from api.services import token_create
from jobs.models import Job
from tenants.models import Group, GroupMember, Membership, Tenant
from tests.jobs.helpers import submit, tick

pytestmark = pytest.mark.django_db

SKIPPED_PREFIXES = ("admin/", "api/", "static/")
ACME_SECRETS = ("secret-acme-job", "acme-secret-command", "acme-ci-token", "ai-team", "alice")
HOSTILE = {
    "role": "viewer",
    "groups": ["ai-team"],
    "username": "mallory",
    "name": "hijack",
    "grp_tres": "gres/accelerator=1",
    "group": "ai-team",
    "command": "true",
    "time_limit": "5",
    "nodes": "1",
    "accelerators_per_node": "1",
    "mode": "command",
}


def _walk(patterns, prefix=""):
    for pattern in patterns:
        text = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern.url_patterns, text)
        elif isinstance(pattern, URLPattern):
            yield text, pattern


def portal_patterns() -> list[tuple[str, URLPattern]]:
    found = [(text, p) for text, p in _walk(get_resolver().url_patterns) if not text.startswith(SKIPPED_PREFIXES)]
    assert len(found) > 10, "no portal pages found: is portal.urls the ROOT_URLCONF?"
    return found


def _candidates(world, acme: dict) -> dict[str, list[str]]:
    """Values for each URL converter: acme's ids and names (some of another kind than the parameter means)."""
    return {
        "int": [str(v) for v in acme["ids"]],
        "slug": ["acme", "ai-team", "alice"],
        "str": ["stdout", "acme", "ai-team"],
        "path": ["acme"],
        "uuid": ["00000000-0000-0000-0000-000000000000"],
    }


_PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")


def urls_for(route: str, values: dict[str, list[str]]) -> list[str]:
    params = _PARAM.findall(route)
    if not params:
        return ["/" + route]
    choices = [values.get(conv or "str", ["x"]) for conv, _ in params]
    urls = []
    for combo in itertools.product(*choices):
        values_in_order = iter(combo)
        urls.append("/" + _PARAM.sub(lambda _m, values=values_in_order: next(values), route))
    return urls


@pytest.fixture
def acme(world):
    job = submit(world.alice, world.ai_team, name="secret-acme-job", command="echo acme-secret-command")
    tick()
    job.refresh_from_db()
    token, _ = token_create(user=world.alice, name="acme-ci-token", scopes="read,write")
    membership = Membership.objects.get(user=world.alice, tenant=world.acme)
    group_member = GroupMember.objects.get(user=world.alice, group=world.ai_team)
    return {"job": job, "ids": sorted({job.pk, token.pk, membership.pk, group_member.pk, world.ai_team.pk})}


def snapshot() -> tuple:
    return (
        list(Job.objects.order_by("pk").values_list("pk", "state", "name")),
        list(Group.objects.order_by("pk").values_list("pk", "name", "grp_tres", "description")),
        list(Membership.objects.order_by("pk").values_list("pk", "user_id", "role")),
        list(GroupMember.objects.order_by("pk").values_list("pk", "user_id", "group_id")),
        list(ApiToken.objects.order_by("pk").values_list("pk", "revoked_at")),
        list(Tenant.objects.order_by("pk").values_list("pk", "grp_tres")),
    )


def _leaks(response, sent: dict) -> list[str]:
    if response.status_code in (301, 302, 303, 404, 405):
        return []
    text = response.content.decode(errors="replace")
    # What mallory typed may come back next to its error ("ai-team is not one of the choices"): that is no leak.
    echoed = {str(v) for value in sent.values() for v in (value if isinstance(value, list) else [value])}
    return [word for word in ACME_SECRETS if word in text and word not in echoed]


def test_every_portal_page_hides_another_tenants_objects(client, world, acme):
    values = _candidates(world, acme)
    before = snapshot()
    checked = 0
    for route, _pattern in portal_patterns():
        for url in urls_for(route, values):
            for method in ("get", "post"):
                client.force_login(world.mallory)
                # GET without a query (a page echoes its own query back, which is no leak); POST a hostile body.
                response = client.get(url) if method == "get" else client.post(url, HOSTILE)
                assert response.status_code < 500, (method, url, response.status_code)
                leaked = _leaks(response, {} if method == "get" else HOSTILE)
                assert not leaked, f"{method.upper()} {url} shows acme's {leaked}"
                checked += 1
    assert snapshot() == before, "a request of mallory changed acme's data"
    assert checked > 40


def test_another_tenants_object_pages_are_404(client, world, acme):
    """The pages about one object: 404 for every acme id, exactly like ids that do not exist."""
    job = acme["job"]
    client.force_login(world.mallory)
    for url in (
        f"/jobs/{job.pk}/",
        f"/jobs/{job.pk}/live/",
        f"/jobs/{job.pk}/explain/",
        f"/jobs/{job.pk}/log/stdout/",
        f"/jobs/new/?from={job.pk}",
        "/groups/ai-team/",
        "/tenants/acme/",
    ):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/jobs/{job.pk}/cancel/").status_code == 404
    assert client.post("/groups/ai-team/limits/", {"grp_tres": "gres/accelerator=1"}).status_code == 404
    assert client.post("/tenants/acme/members/", {"username": "mallory", "role": "admin"}).status_code == 404


def test_the_walk_reaches_pages_that_answer_their_owner(client, world, acme):
    """Guards the walk: acme's own admin gets 200 on the same URLs, so the 404s above come from scoping."""
    job = acme["job"]
    client.force_login(world.ada)
    for url in (f"/jobs/{job.pk}/", f"/jobs/{job.pk}/live/", "/groups/ai-team/", "/tenants/acme/"):
        response = client.get(url)
        assert response.status_code == 200, url
    assert "secret-acme-job" in client.get(f"/jobs/{job.pk}/").content.decode()
