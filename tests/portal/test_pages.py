"""Login, the dashboard and its live parts, error pages."""

import pytest
from django.test import override_settings

from tenants.models import Role
from tests.factories import GroupFactory, UserFactory, make_member
from tests.jobs.helpers import submit, tick

pytestmark = pytest.mark.django_db


def test_login_page_renders(client):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert b"Log in to aipool" in response.content
    assert b'for="id_username"' in response.content and b'for="id_password"' in response.content


def test_login_with_the_form_lands_on_the_dashboard(client, world):
    response = client.post("/accounts/login/", {"username": "alice", "password": "correct-horse-battery"}, follow=True)
    assert response.redirect_chain[-1][0] == "/"
    assert b"Dashboard" in response.content


def test_wrong_password_says_so(client, world):
    response = client.post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert "didn't match" in response.content.decode()


def test_logout_returns_to_the_login_page(client, world):
    client.force_login(world.alice)
    response = client.post("/accounts/logout/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert client.get("/").status_code == 302


def test_password_reset_page_is_in_the_portals_look(client, world):
    response = client.get("/accounts/password_reset/")
    assert response.status_code == 200
    assert b"aipool/aipool.css" in response.content and b"Reset your password" in response.content


def test_dashboard_requires_login(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_dashboard_shows_my_jobs_and_not_other_tenants(client, world):
    mine = submit(world.alice, world.ai_team, name="mine")
    submit(world.mallory, world.rivals, name="theirs")
    client.force_login(world.alice)
    page = client.get("/").content.decode()
    assert f'<a href="/jobs/{mine.pk}/">{mine.pk}</a>' in page and "mine" in page
    assert "theirs" not in page and "rivals" not in page


def test_dashboard_without_jobs_says_how_to_start(client, world):
    client.force_login(world.alice)
    page = client.get("/").content.decode()
    assert "Nothing running or waiting" in page and 'href="/jobs/new/"' in page


def test_dashboard_of_a_user_without_groups_says_whom_to_ask(client, world):
    loner = UserFactory(username="loner")
    client.force_login(loner)
    assert "You are not in a group yet" in client.get("/").content.decode()


def test_usage_bar_shows_in_use_pending_and_limit(client, world):
    submit(world.alice, world.ai_team, nodes=1, accelerators_per_node=8, command="sleep 30")
    submit(world.alice, world.ai_team, nodes=1, accelerators_per_node=8, command="sleep 30")
    tick()
    submit(world.alice, world.ai_team, nodes=1, accelerators_per_node=4)
    client.force_login(world.alice)
    page = client.get("/dashboard/usage/").content.decode()
    # 16 running (two jobs started), 4 pending, limit 16
    assert "<strong>16</strong> / 16 · 4 pending · 100%" in page
    assert "level-critical" in page


@pytest.mark.parametrize(
    ("running", "level"),
    [(2, "ok"), (13, "warn"), (15, "critical")],
    ids=["under-80", "80-to-90", "over-90"],
)
def test_usage_bar_colour_changes_at_80_and_90_percent(client, world, running, level):
    world.ai_team.grp_tres = {"gres/accelerator": 16}
    world.ai_team.save()
    submit(world.alice, world.ai_team, nodes=1, accelerators_per_node=min(8, running), command="sleep 30")
    if running > 8:
        submit(world.alice, world.ai_team, nodes=1, accelerators_per_node=running - 8, command="sleep 30")
    tick()
    client.force_login(world.alice)
    page = client.get("/dashboard/usage/").content.decode()
    assert f'class="meter level-{level}"' in page


def test_every_limit_of_a_group_gets_a_bar(client, world):
    world.ai_team.grp_tres = {"gres/accelerator": 16, "cpu": 256}
    world.ai_team.grp_jobs = 4
    world.ai_team.grp_submit_jobs = 10
    world.ai_team.max_tres_per_user = {"gres/accelerator": 8}
    world.ai_team.grp_tres_mins = {"gres/accelerator": 1000}
    world.ai_team.save()
    client.force_login(world.alice)
    page = client.get("/dashboard/usage/").content.decode()
    for label in ("GrpTRES", "GrpJobs", "GrpSubmitJobs", "MaxTRESPerUser", "GrpTRESMins"):
        assert f"<small>{label}</small>" in page, label
    assert page.count('role="meter"') == 6  # accelerators and cpus under GrpTRES


def test_pool_availability_counts_free_accelerators_nodes_and_switches(client, world):
    submit(world.alice, world.ai_team, nodes=1, accelerators_per_node=3, command="sleep 30")
    tick()
    client.force_login(world.bob)
    page = client.get("/dashboard/pool/").content.decode()
    assert '<strong class="num">29</strong> / 32 accelerators free' in page
    assert '<strong class="num">3</strong> / 4 whole nodes free' in page
    assert "switch <b>leaf0</b></span><span>13/16 free · 1 idle node" in page
    assert "switch <b>leaf1</b></span><span>16/16 free · 2 idle nodes" in page


def test_dashboard_parts_poll_for_updates(client, world):
    client.force_login(world.alice)
    page = client.get("/").content.decode()
    for part in ("/dashboard/jobs/", "/dashboard/pool/", "/dashboard/usage/"):
        assert f'hx-get="{part}"' in page
        assert client.get(part).status_code == 200


def test_tenant_admins_get_a_manage_link(client, world):
    client.force_login(world.ada)
    assert 'href="/tenants/acme/"' in client.get("/").content.decode()
    client.force_login(world.alice)
    assert 'href="/tenants/acme/"' not in client.get("/").content.decode()


def test_nav_links_to_every_section(client, world):
    client.force_login(world.alice)
    page = client.get("/").content.decode()
    for href in ("/jobs/", "/jobs/new/", "/quota/", "/tokens/", "/models/", "/datasets/", "/services/"):
        assert f'href="{href}"' in page, href


def test_pages_load_htmx_from_the_pool_not_a_cdn(client, world):
    client.force_login(world.alice)
    page = client.get("/").content.decode()
    assert 'src="/static/vendor/htmx.min.js"' in page
    assert "https://" not in page.split("<body")[0]


# --- error pages -----------------------------------------------------------------------------------------------


def test_unknown_page_is_a_404_in_the_portals_look(client, world):
    client.force_login(world.alice)
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    assert b"Nothing here" in response.content and b"aipool/aipool.css" in response.content


def test_unknown_api_url_keeps_the_json_error(client, world):
    client.force_login(world.alice)
    response = client.get("/api/v1/no-such-thing/")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_forbidden_action_is_a_403_in_the_portals_look(client, world):
    job = submit(world.alice, world.ai_team)
    client.force_login(world.vic)  # a viewer sees the job but may not cancel it
    response = client.post(f"/jobs/{job.pk}/cancel/")
    assert response.status_code == 403
    assert b"You may not do that" in response.content and b"may cancel it" in response.content


def test_server_error_page_renders_without_a_request_context(rf):
    from portal.views.errors import server_error

    response = server_error(rf.get("/"))
    assert response.status_code == 500 and b"Something broke on our side" in response.content


def test_server_error_under_the_api_is_json(rf):
    from portal.views.errors import server_error

    response = server_error(rf.get("/api/v1/jobs/"))
    assert response.status_code == 500 and b'"server_error"' in response.content


@override_settings(DEBUG=False)
def test_a_view_that_crashes_shows_the_500_page(client, world, monkeypatch):
    import portal.views.account as account

    def boom(user):
        raise RuntimeError("boom")

    monkeypatch.setattr(account, "quota_for", boom)
    client.raise_request_exception = False
    client.force_login(world.alice)
    response = client.get("/quota/")
    assert response.status_code == 500 and b"Something broke" in response.content


def test_viewer_sees_the_dashboard_but_no_groups_to_submit_to(client, world):
    other = GroupFactory(name="vision", tenant=world.acme, partitions=[world.partition])
    make_member(world.vic, other, role=Role.VIEWER)
    client.force_login(world.vic)
    assert client.get("/").status_code == 200
    assert "You cannot submit jobs yet" in client.get("/jobs/new/").content.decode()


def test_password_reset_mails_a_link(client, world, mailoutbox):
    world.alice.email = "alice@acme.example"
    world.alice.save()
    response = client.post("/accounts/password_reset/", {"email": "alice@acme.example"})
    assert response.status_code == 302 and response["Location"] == "/accounts/password_reset/done/"
    assert len(mailoutbox) == 1 and "/accounts/reset/" in mailoutbox[0].body
