import pytest

from tests.jobs.helpers import submit

pytestmark = pytest.mark.django_db


def test_login_page_renders(client):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert b"Log in to aipool" in response.content


def test_dashboard_requires_login(client):
    assert client.get("/").status_code == 302


def test_dashboard_shows_my_jobs_and_not_other_tenants(client, world):
    mine = submit(world.alice, world.ai_team, name="mine")
    submit(world.mallory, world.rivals, name="theirs")
    client.force_login(world.alice)
    page = client.get("/").content.decode()
    assert f"<td>{mine.pk}</td><td>mine</td>" in page
    assert "theirs" not in page and "rivals" not in page
