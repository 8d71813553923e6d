"""The quota page (quota -u) and the tokens page (create shown once, list, revoke)."""

import pytest

from api.models import ApiToken
from api.services import token_create
from tests.factories import GroupFactory, make_member
from tests.jobs.helpers import submit, tick

pytestmark = pytest.mark.django_db


def test_quota_page_lists_every_group_with_limits_and_usage(client, world):
    world.ai_team.grp_jobs = 3
    world.ai_team.max_wall = 72 * 60
    world.ai_team.save()
    submit(world.alice, world.ai_team, nodes=1, accelerators_per_node=4, command="sleep 30")
    tick()
    submit(world.bob, world.ai_team, nodes=1, accelerators_per_node=2)
    client.force_login(world.alice)
    page = client.get("/quota/").content.decode()
    assert "quota -u alice" in page and "/ai-team/" in page
    assert '<td class="right num"><strong>4</strong></td>' in page  # accelerators in use by the group
    assert '<td class="right num">2</td>' in page  # pending
    assert "GrpJobs" in page and "MaxWall" in page and "3-00:00:00" in page


def test_quota_page_shows_the_limits_above_the_group(client, world):
    world.acme.grp_tres = {"gres/accelerator": 64}
    world.acme.save()
    child = GroupFactory(name="ai-child", tenant=world.acme, parent=world.ai_team, partitions=[world.partition])
    make_member(world.alice, child)
    client.force_login(world.alice)
    page = client.get("/quota/").content.decode()
    assert "Also bound by tenant acme" in page and "GrpTRES=gres/accelerator=64" in page
    assert "Also bound by group ai-team" in page


def test_quota_page_without_groups_has_an_empty_state(client, world):
    client.force_login(world.staff)
    assert "No groups, no quota" in client.get("/quota/").content.decode()


def test_quota_page_shows_no_other_tenants_group(client, world):
    client.force_login(world.mallory)
    page = client.get("/quota/").content.decode()
    assert "rivals" in page and "ai-team" not in page


def test_created_token_is_shown_once_with_a_copy_button(client, world):
    client.force_login(world.alice)
    response = client.post("/tokens/", {"name": "ci", "scopes": ["read", "write"], "expires_days": "30"})
    page = response.content.decode()
    token = ApiToken.objects.get(user=world.alice)
    secret = page.split('id="new-token" value="', 1)[1].split('"', 1)[0]
    assert secret.startswith("aip_") and token.prefix in secret
    assert 'data-copy="#new-token"' in page
    assert secret not in client.get("/tokens/").content.decode()


def test_created_token_authenticates_against_the_api(client, world):
    client.force_login(world.alice)
    page = client.post("/tokens/", {"name": "ci", "scopes": ["read"]}).content.decode()
    secret = page.split('id="new-token" value="', 1)[1].split('"', 1)[0]
    client.logout()
    response = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 200 and response.json()["username"] == "alice"


def test_token_form_reports_errors(client, world):
    client.force_login(world.alice)
    page = client.post("/tokens/", {"name": "", "scopes": []}).content.decode()
    assert page.count('<div class="field-errors"><p>') >= 2 and not ApiToken.objects.exists()


def test_tokens_page_lists_only_my_tokens(client, world):
    token_create(user=world.alice, name="alice-laptop", scopes="read")
    token_create(user=world.bob, name="bob-laptop", scopes="read")
    client.force_login(world.alice)
    page = client.get("/tokens/").content.decode()
    assert "alice-laptop" in page and "bob-laptop" not in page


def test_tokens_page_without_tokens_has_an_empty_state(client, world):
    client.force_login(world.alice)
    assert "No tokens yet" in client.get("/tokens/").content.decode()


def test_revoking_a_token(client, world):
    token, secret = token_create(user=world.alice, name="old", scopes="read")
    client.force_login(world.alice)
    response = client.post(f"/tokens/{token.pk}/revoke/", follow=True)
    token.refresh_from_db()
    assert token.revoked_at is not None and "revoked" in response.content.decode()
    assert client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 401


def test_revoking_someone_elses_token_is_404(client, world):
    token, _ = token_create(user=world.bob, name="bobs", scopes="read")
    client.force_login(world.alice)
    assert client.post(f"/tokens/{token.pk}/revoke/").status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None
