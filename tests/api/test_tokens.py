"""Personal access tokens: shown once, stored hashed, scoped, expiring, revocable, audited."""

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from api.models import ApiToken
from api.services import hash_secret, token_create
from tenants.models import AuditLog

pytestmark = pytest.mark.django_db


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_token_created_over_a_session_is_shown_once_and_stored_hashed(world):
    client = APIClient()
    client.force_login(world.alice)
    response = client.post("/api/v1/tokens/", {"name": "laptop", "scopes": ["read"], "expires_days": 30}, format="json")
    assert response.status_code == 201
    body = response.json()
    secret = body["token"]
    assert secret.startswith("aip_") and len(secret) >= 4 + 43
    assert body["prefix"] == secret[:12] and body["scopes"] == ["read"] and body["active"] is True
    token = ApiToken.objects.get(pk=body["id"])
    assert token.token_hash == hash_secret(secret) and secret not in str(token.__dict__)
    listed = client.get("/api/v1/tokens/").json()["results"]
    assert [t["id"] for t in listed] == [token.pk] and "token" not in listed[0]
    assert AuditLog.objects.filter(action="token.create", target_id=str(token.pk), tenant=None).exists()


def test_a_write_token_can_create_another_token(world, api):
    response = api(world.alice).post("/api/v1/tokens/", {"name": "ci"}, format="json")
    assert response.status_code == 201
    assert bearer(response.json()["token"]).get("/api/v1/me/").json()["username"] == "alice"


def test_a_token_made_with_an_expiring_token_cannot_outlive_it(world, api):
    client = api(world.alice, expires_days=7)
    response = client.post("/api/v1/tokens/", {"name": "ci", "expires_days": 30}, format="json")
    assert response.status_code == 400
    assert "expires in 6 days" in response.json()["errors"]["expires_days"][0]
    assert client.post("/api/v1/tokens/", {"name": "ci"}, format="json").status_code == 400
    assert client.post("/api/v1/tokens/", {"name": "ci", "expires_days": 6}, format="json").status_code == 201


def test_read_token_may_read_but_not_write(world, api):
    client = api(world.alice, scopes=("read",))
    assert client.get("/api/v1/jobs/").status_code == 200
    response = client.post("/api/v1/tokens/", {"name": "escalate"}, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "insufficient_scope"
    response = client.post("/api/v1/jobs/", {"group": "ai-team", "time_limit": "10", "command": "true"}, format="json")
    assert response.status_code == 403 and response.json()["code"] == "insufficient_scope"


def test_revoked_token_is_rejected_and_revocation_is_audited(world, api):
    _, secret = token_create(user=world.alice, name="old", scopes="read,write")
    client = bearer(secret)
    token = ApiToken.objects.get(token_hash=hash_secret(secret))
    assert client.delete(f"/api/v1/tokens/{token.pk}/").status_code == 204
    response = client.get("/api/v1/me/")
    assert response.status_code == 401 and response.json()["detail"] == "token revoked"
    assert AuditLog.objects.filter(action="token.revoke", target_id=str(token.pk), tenant=None).count() == 1


def test_revoking_twice_changes_nothing(world, api):
    client = api(world.alice)
    token, _ = token_create(user=world.alice, name="spare", scopes="read")
    assert client.delete(f"/api/v1/tokens/{token.pk}/").status_code == 204
    first = ApiToken.objects.get(pk=token.pk).revoked_at
    assert client.delete(f"/api/v1/tokens/{token.pk}/").status_code == 204
    assert ApiToken.objects.get(pk=token.pk).revoked_at == first
    assert AuditLog.objects.filter(action="token.revoke", target_id=str(token.pk)).count() == 1


def test_expired_token_is_rejected(world):
    token, secret = token_create(user=world.alice, name="short", scopes="read", expires_days=1)
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = bearer(secret).get("/api/v1/me/")
    assert response.status_code == 401 and response.json()["detail"] == "token expired"


def test_token_of_an_inactive_user_is_rejected(world):
    _, secret = token_create(user=world.alice, name="t", scopes="read")
    world.alice.is_active = False
    world.alice.save(update_fields=["is_active"])
    assert bearer(secret).get("/api/v1/me/").status_code == 401


def test_last_used_is_written_at_most_once_a_minute(world):
    token, secret = token_create(user=world.alice, name="t", scopes="read")
    client = bearer(secret)
    client.get("/api/v1/me/")
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    with CaptureQueriesContext(connection) as queries:
        client.get("/api/v1/me/")
    assert not [q for q in queries if q["sql"].startswith("UPDATE") and "api_apitoken" in q["sql"]]
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=2))
    client.get("/api/v1/me/")
    assert ApiToken.objects.get(pk=token.pk).last_used_at > first - timedelta(minutes=2)


def test_users_list_and_revoke_only_their_own_tokens(world, api):
    theirs, _ = token_create(user=world.bob, name="bobs", scopes="read")
    client = api(world.alice)
    assert theirs.pk not in [t["id"] for t in client.get("/api/v1/tokens/").json()["results"]]
    assert client.delete(f"/api/v1/tokens/{theirs.pk}/").status_code == 404
    assert ApiToken.objects.get(pk=theirs.pk).revoked_at is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "x", "scopes": ["admin"]}, "scopes"),
        ({"name": "x", "expires_days": 0}, "expires_days"),
    ],
)
def test_token_create_rejects_bad_input(world, api, body, field):
    response = api(world.alice).post("/api/v1/tokens/", body, format="json")
    assert response.status_code == 400 and field in response.json()["errors"]


def test_create_token_command_prints_only_the_token(world, capsys):
    call_command("create_token", "alice", "--scopes", "read", "--expires-days", "3", "--name", "ci")
    out = capsys.readouterr().out
    secret = out.strip()
    assert out == secret + "\n" and secret.startswith("aip_")
    token = ApiToken.objects.get(token_hash=hash_secret(secret))
    assert token.user == world.alice and token.scopes == ["read"] and token.name == "ci" and token.expires_at
    assert bearer(secret).get("/api/v1/me/").status_code == 200


@pytest.mark.parametrize(
    ("args", "words"),
    [(["nobody"], "unknown user 'nobody'"), (["alice", "--scopes", "root"], "unknown scope 'root'")],
)
def test_create_token_command_errors_are_one_line(world, args, words):
    with pytest.raises(CommandError) as info:
        call_command("create_token", *args)
    assert words in str(info.value) and "\n" not in str(info.value)
