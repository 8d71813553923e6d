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


def test_a_write_to_an_unknown_url_is_a_json_404_not_a_csrf_page(world, api):
    client = api(world.alice)
    client.handler.enforce_csrf_checks = True
    response = client.delete("/api/v1/jobs/0.5/")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


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
    monkeypatch.setattr(TokenRateThrottle, "timer", lambda self: 1_000_000.0)  # 20 s before a minute ends
    client = api(world.alice)
    assert [client.get("/api/v1/me/").status_code for _ in range(2)] == [200, 200]
    response = client.get("/api/v1/me/")
    assert response.status_code == 429 and response.json()["code"] == "throttled"
    assert response["Retry-After"] == "20"
    assert api(world.alice).get("/api/v1/me/").status_code == 200  # counted per token


def test_unexpected_failure_is_a_json_500(world, api, monkeypatch):
    def boom(user):
        raise RuntimeError("bug")

    monkeypatch.setattr("api.views.me.quota_for", boom)
    response = api(world.alice).get("/api/v1/me/quota/")
    assert response.status_code == 500
    assert response.json() == {"code": "server_error", "detail": "internal server error", "errors": {}}


# PostgreSQL cannot store or compare text with NUL characters; each of these was a 500 there.


def test_a_nul_character_in_a_job_request_is_400(world, api):
    body = {"group": "ai-team", "name": "a\x00b", "time_limit": "10", "command": "true"}
    response = api(world.alice).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 400 and "NUL" in response.json()["errors"]["name"][0]


def test_a_nul_character_in_a_name_reference_reads_as_unknown(world, api):
    response = api(world.ada).post("/api/v1/groups/", {"tenant": "ac\x00me", "name": "vision"}, format="json")
    assert response.status_code == 400 and "tenant" in response.json()["errors"]


def test_a_nul_character_in_a_filter_is_400(world, api):
    response = api(world.alice).get("/api/v1/jobs/?group=ai%00team")
    assert response.status_code == 400 and response.json()["code"] == "validation_error"


def test_a_nul_character_that_reaches_postgresql_is_400_not_500():
    from django.db import DataError

    from api.errors import exception_handler

    response = exception_handler(DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes"), {})
    assert response.status_code == 400 and response.data["code"] == "validation_error"
