"""The browser pages: create a model, upload a file through a form, publish, read the card safely."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from registry.models import Collection, Version
from tests.registry.helpers import make_collection, publish, sha

pytestmark = pytest.mark.django_db


def test_a_member_creates_a_model_uploads_a_file_and_publishes_it_in_the_browser(world, client):
    client.force_login(world.alice)
    created = client.post(
        "/models/new/",
        {"name": "my-llm", "group": world.ai_team.pk, "visibility": "group", "replicas": 2, "license": "mit"},
    )
    assert created.status_code == 302 and created["Location"] == "/models/acme/my-llm/"
    new_version = client.post("/models/acme/my-llm/versions/new/")
    assert new_version["Location"] == "/models/acme/my-llm/versions/1/"
    upload = SimpleUploadedFile("config.json", b'{"a": 1}')
    client.post("/models/acme/my-llm/versions/1/upload/", {"file": upload, "path": "cfg/config.json"})
    client.post("/models/acme/my-llm/versions/1/publish/", {"aliases": "production"})
    version = Version.objects.get(collection__name="my-llm")
    assert version.state == "published" and version.files.get().sha256 == sha(b'{"a": 1}')
    page = client.get("/models/acme/my-llm/").content.decode()
    assert "cfg/config.json" in page and "production → v1" in page


def test_a_browser_upload_with_a_wrong_checksum_is_refused(world, client):
    make_collection(world.alice, world.ai_team, "m")
    client.force_login(world.alice)
    client.post("/models/acme/m/versions/new/")
    response = client.post(
        "/models/acme/m/versions/1/upload/",
        {"file": SimpleUploadedFile("a.bin", b"abc"), "sha256": "0" * 64},
        follow=True,
    )
    assert "hash to" in response.content.decode()
    assert not Version.objects.get().files.exists()


def test_a_viewer_cannot_create_versions_in_the_browser(world, client):
    make_collection(world.alice, world.ai_team, "m")
    client.force_login(world.vic)
    assert client.get("/models/acme/m/").status_code == 200
    assert client.post("/models/acme/m/versions/new/").status_code == 403


def test_html_in_a_card_is_shown_as_text(world, client):
    make_collection(
        world.alice, world.ai_team, "m", card="# Title\n<script>alert('x')</script>\n[x](javascript:alert(1))"
    )
    client.force_login(world.alice)
    page = client.get("/models/acme/m/").content.decode()
    assert "<h1>Title</h1>" in page
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert 'href="javascript:' not in page


def test_a_version_page_shows_its_lineage(world, client):
    base = make_collection(world.alice, world.ai_team, "base")
    v1 = publish(world.alice, base, {"w": b"1"})
    derived = make_collection(world.alice, world.ai_team, "derived")
    v2 = publish(world.alice, derived, {"w": b"2"})
    v2.parents.add(v1)
    client.force_login(world.alice)
    page = client.get("/models/acme/derived/versions/1/").content.decode()
    assert "model:acme/base@1" in page
    assert "model:acme/derived@1" in client.get("/models/acme/base/versions/1/").content.decode()


def test_the_list_needs_a_login(client):
    assert client.get("/models/").status_code == 302


def test_an_unknown_kind_of_page_is_404(world, client):
    client.force_login(world.alice)
    assert client.get("/widgets/acme/x/").status_code == 404
    assert Collection.objects.count() == 0


def test_a_version_number_past_the_database_range_is_404(world, client):
    publish(world.alice, make_collection(world.alice, world.ai_team, "m"), {"a": b"1"})
    client.force_login(world.alice)
    huge = "9" * 30
    assert client.get(f"/models/acme/m/versions/{huge}/").status_code == 404
    assert client.get(f"/models/acme/m/versions/{huge}/files/a").status_code == 404
    assert client.post(f"/models/acme/m/versions/{huge}/publish/").status_code == 404
