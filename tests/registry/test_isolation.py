"""Another tenant's private model is a 404 everywhere: API, browser pages, download URLs, lists and search."""

import pytest

from registry.models import Visibility
from tests.registry.helpers import make_collection, publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def secret(world):
    model = make_collection(world.alice, world.ai_team, "secret-llm", parameters=7_000_000_000, summary="acme only")
    version = publish(world.alice, model, {"weights/model.bin": b"acme weights"}, aliases=["production"])
    return model, version, version.files.get()


def test_the_api_answers_404_for_every_url_of_it(world, api, secret):
    model, version, file = secret
    client = api(world.mallory)
    for url in (
        f"/api/v1/models/{model.pk}/",
        f"/api/v1/models/{model.pk}/versions/",
        f"/api/v1/models/{model.pk}/fit/",
        f"/api/v1/versions/{version.pk}/",
        f"/api/v1/versions/{version.pk}/files/",
        f"/api/v1/files/{file.pk}/",
        f"/api/v1/files/{file.pk}/download/",
    ):
        response = client.get(url)
        assert response.status_code == 404, url
        assert response.json() == {"code": "not_found", "detail": "not found", "errors": {}}, url


PAGES = (
    "/models/acme/secret-llm/",
    "/models/acme/secret-llm/versions/1/",
    "/models/acme/secret-llm/versions/1/files/weights/model.bin",
)


def test_the_browser_pages_and_download_url_are_404(world, client, secret):
    client.force_login(world.mallory)
    for url in PAGES:
        assert client.get(url).status_code == 404, url
    assert client.post("/models/acme/secret-llm/versions/new/").status_code == 404
    # the same URLs answer the owner: the 404s come from scoping, not from URLs that never resolve
    client.force_login(world.alice)
    assert [client.get(url).status_code for url in PAGES] == [200, 200, 200]


def test_lists_and_search_do_not_show_it(world, api, client, secret):
    assert "secret-llm" not in api(world.mallory).get("/api/v1/models/?search=secret").content.decode()
    client.force_login(world.mallory)
    assert "secret-llm" not in client.get("/models/?search=secret").content.decode()


def test_the_owner_sees_all_of_it(world, client, secret):
    client.force_login(world.bob)
    assert client.get("/models/acme/secret-llm/").status_code == 200
    download = client.get("/models/acme/secret-llm/versions/1/files/weights/model.bin")
    assert b"".join(download.streaming_content) == b"acme weights"


def test_group_visibility_hides_it_from_other_groups_of_the_same_tenant(world, client, secret):
    from tests.factories import GroupFactory, UserFactory, make_member

    other = make_member(UserFactory(username="olga"), GroupFactory(name="other-team", tenant=world.acme))
    client.force_login(other)
    assert client.get("/models/acme/secret-llm/").status_code == 404


def test_tenant_visibility_shows_it_to_the_whole_tenant_only(world, client, secret):
    from registry.services import collection_update
    from tests.factories import GroupFactory, UserFactory, make_member

    collection_update(actor=world.alice, collection=secret[0], visibility=Visibility.TENANT)
    other = make_member(UserFactory(username="olga"), GroupFactory(name="other-team", tenant=world.acme))
    client.force_login(other)
    assert client.get("/models/acme/secret-llm/").status_code == 200
    client.force_login(world.mallory)
    assert client.get("/models/acme/secret-llm/").status_code == 404


def test_a_public_model_is_visible_to_other_tenants_but_not_writable(world, api, secret):
    from registry.services import collection_update

    collection_update(actor=world.alice, collection=secret[0], visibility=Visibility.PUBLIC)
    client = api(world.mallory)
    assert client.get(f"/api/v1/models/{secret[0].pk}/").status_code == 200
    assert client.patch(f"/api/v1/models/{secret[0].pk}/", {"summary": "pwned"}).status_code == 403
    assert client.post(f"/api/v1/models/{secret[0].pk}/versions/", {}).status_code == 403
