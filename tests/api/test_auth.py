"""Authentication: every endpoint answers 401 JSON with a Bearer challenge without a valid token."""

import pytest

from tests.api.routes import api_v1_routes

pytestmark = pytest.mark.django_db

CALLS = [(route, method) for route in api_v1_routes() for method in route.methods]


def _call(client, method, url):
    return getattr(client, method)(url, data={}, format="json")


@pytest.mark.parametrize(("route", "method"), CALLS, ids=[f"{m.upper()} {r.route}" for r, m in CALLS])
def test_every_endpoint_answers_401_json_without_a_token(world, api, route, method):
    response = _call(api(), method, route.url())
    assert response.status_code == 401, response.content
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["code"] == "not_authenticated"


@pytest.mark.parametrize(("route", "method"), CALLS, ids=[f"{m.upper()} {r.route}" for r, m in CALLS])
def test_every_endpoint_answers_401_json_with_an_unknown_token(world, api, route, method):
    client = api()
    client.credentials(HTTP_AUTHORIZATION="Bearer aip_not-a-real-token-0000000000000000000000000")
    response = _call(client, method, route.url())
    assert response.status_code == 401, response.content
    assert response.json() == {"code": "not_authenticated", "detail": "invalid token", "errors": {}}


@pytest.mark.parametrize(
    "header",
    ["Bearer", "Bearer a b", "Bearer not-an-aipool-token", "bearer aip_lowercase-keyword-but-unknown"],
)
def test_malformed_bearer_headers_are_401(world, api, header):
    client = api()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/v1/me/")
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"


def test_session_login_works_for_the_browser(world, api):
    client = api()
    client.force_login(world.alice)
    assert client.get("/api/v1/me/").json()["username"] == "alice"


def test_a_valid_token_authenticates(world, api):
    response = api(world.alice).get("/api/v1/me/")
    assert response.status_code == 200
    assert response.json()["username"] == "alice"
