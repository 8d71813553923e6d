"""One error shape everywhere: unknown URLs, wrong methods, throttling and unexpected failures included."""

import pytest

from api.throttling import TokenRateThrottle

pytestmark = pytest.mark.django_db


def test_unknown_api_url_is_a_json_404(world, api):
    response = api(world.alice).get("/api/v1/nope/")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_a_missing_trailing_slash_is_pointed_out(world, api):
    response = api(world.alice).post("/api/v1/jobs", {}, format="json")
    assert response.status_code == 404 and "did you mean /api/v1/jobs/ ?" in response.json()["detail"]


def test_missing_object_is_a_json_404(world, api):
    response = api(world.alice).get("/api/v1/jobs/999999/")
    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "detail": "not found", "errors": {}}


def test_non_numeric_id_is_404(world, api):
    assert api(world.alice).get("/api/v1/jobs/abc/").status_code == 404


def test_wrong_method_is_405(world, api):
    response = api(world.alice).put(f"/api/v1/groups/{world.ai_team.pk}/", {}, format="json")
    assert response.status_code == 405 and response.json()["code"] == "method_not_allowed"


def test_too_many_requests_is_429_with_retry_after(world, api, monkeypatch):
    monkeypatch.setattr(TokenRateThrottle, "THROTTLE_RATES", {"api": "2/min"})
    client = api(world.alice)
    assert [client.get("/api/v1/me/").status_code for _ in range(2)] == [200, 200]
    response = client.get("/api/v1/me/")
    assert response.status_code == 429 and response.json()["code"] == "throttled"
    assert int(response["Retry-After"]) > 0
    assert api(world.alice).get("/api/v1/me/").status_code == 200  # counted per token


def test_unexpected_failure_is_a_json_500(world, api, monkeypatch):
    def boom(user):
        raise RuntimeError("bug")

    monkeypatch.setattr("api.views.me.quota_for", boom)
    response = api(world.alice).get("/api/v1/me/quota/")
    assert response.status_code == 500
    assert response.json() == {"code": "server_error", "detail": "internal server error", "errors": {}}
