"""Files in and out through the API: streamed to disk (memory stays flat), checked against SHA-256, resumable."""

import hashlib
import tracemalloc

import pytest
from django.test import Client

from registry.models import ArtifactFile, Upload, UploadState
from registry.services import version_create
from tests.registry.helpers import make_collection, sha

pytestmark = pytest.mark.django_db

MiB = 1 << 20


class GeneratedBody:
    """A request body made up on the fly, 1 MiB at a time: the test itself never holds the file."""

    def __init__(self, size: int, seed: int = 7):
        self.size, self.seed, self.sent = size, seed, 0
        self._block = hashlib.sha256(str(seed).encode()).digest() * (MiB // 32)

    def chunks(self):
        index = 0
        while index * MiB < self.size:
            # Every block differs (its index up front), so a swapped or repeated block changes the checksum.
            block = index.to_bytes(8, "big") + self._block[8:]
            yield block[: min(MiB, self.size - index * MiB)]
            index += 1

    def sha256(self) -> str:
        digest = hashlib.sha256()
        for chunk in self.chunks():
            digest.update(chunk)
        return digest.hexdigest()

    def reader(self):
        source = self.chunks()
        pending = b""

        class Reader:
            def read(_, n=-1):
                nonlocal pending
                while n < 0 or len(pending) < n:
                    chunk = next(source, None)
                    if chunk is None:
                        break
                    pending += chunk
                out, pending = (pending, b"") if n < 0 else (pending[:n], pending[n:])
                return out

            def readline(_, *args):
                return _.read(*args)

        return Reader()


@pytest.fixture
def draft(world):
    model = make_collection(world.alice, world.ai_team, "big-model", replicas=3)
    return version_create(actor=world.alice, collection=model)


def put_streaming(client, version, path, body: GeneratedBody, sha256: str, headers: dict):
    return client.generic(
        "PUT",
        f"/api/v1/versions/{version.pk}/upload/?path={path}&sha256={sha256}",
        b"",
        CONTENT_TYPE="application/octet-stream",
        CONTENT_LENGTH=str(body.size),
        **{"wsgi.input": body.reader()},
        **headers,
    )


def test_a_multi_hundred_megabyte_upload_streams_with_flat_memory_and_downloads_identically(world, draft, bearer):
    body = GeneratedBody(300 * MiB)
    expected = body.sha256()
    headers = bearer(world.alice)
    client = Client()
    tracemalloc.start()
    try:
        response = put_streaming(client, draft, "weights.bin", body, expected, headers)
        _, upload_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        download = client.get(f"/api/v1/files/{response.json()['id']}/download/", **headers)
        digest, received = hashlib.sha256(), 0
        for chunk in download.streaming_content:
            digest.update(chunk)
            received += len(chunk)
        _, download_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 201, response.content
    assert response.json()["sha256"] == expected and response.json()["size"] == body.size
    assert upload_peak < 16 * MiB, f"upload held {upload_peak / MiB:.0f} MiB"
    assert download.status_code == 200 and download["X-Checksum-SHA256"] == expected
    assert received == body.size and digest.hexdigest() == expected
    assert download_peak < 16 * MiB, f"download held {download_peak / MiB:.0f} MiB"


def test_an_upload_whose_bytes_do_not_match_the_declared_checksum_is_refused_and_frees_its_quota(world, draft, bearer):
    body = GeneratedBody(3 * MiB)
    response = put_streaming(Client(), draft, "weights.bin", body, "0" * 64, bearer(world.alice))
    assert response.status_code == 400 and "sha256" in response.json()["errors"]
    assert not ArtifactFile.objects.exists()
    quota = world.ai_team.storage_quota
    assert (quota.used_bytes, quota.reserved_bytes) == (0, 0)


def test_a_chunked_upload_resumes_from_the_offset_the_server_reports(world, draft, api):
    data = bytes(range(256)) * 4096  # 1 MiB
    client = api(world.alice)
    created = client.post(
        f"/api/v1/versions/{draft.pk}/uploads/", {"path": "shard-0.bin", "size": len(data), "sha256": sha(data)}
    )
    assert created.status_code == 201, created.content
    url = f"/api/v1/uploads/{created.json()['id']}/"
    first = client.patch(url, data[:300_000], content_type="application/octet-stream", HTTP_UPLOAD_OFFSET="0")
    assert first.status_code == 200 and first.json()["offset"] == 300_000
    # A retry of a chunk the server already has is refused with the offset to resume from.
    stale = client.patch(url, data[:1000], content_type="application/octet-stream", HTTP_UPLOAD_OFFSET="0")
    assert stale.status_code == 409 and "resume from 300000" in stale.json()["detail"]
    offset = client.get(url).json()["offset"]
    rest = client.patch(url, data[offset:], content_type="application/octet-stream", HTTP_UPLOAD_OFFSET=str(offset))
    assert rest.json()["offset"] == len(data)
    done = client.post(f"{url}complete/")
    assert done.status_code == 201 and done.json()["sha256"] == sha(data)
    assert b"".join(client.get(done.json()["download"]).streaming_content) == data


def test_completing_an_upload_before_all_bytes_arrived_is_refused(world, draft, api):
    client = api(world.alice)
    created = client.post(
        f"/api/v1/versions/{draft.pk}/uploads/", {"path": "a.bin", "size": 10, "sha256": sha(b"x" * 10)}
    )
    url = f"/api/v1/uploads/{created.json()['id']}/"
    client.patch(url, b"x" * 4, content_type="application/octet-stream", HTTP_UPLOAD_OFFSET="0")
    response = client.post(f"{url}complete/")
    assert response.status_code == 400 and "received 4 of 10 bytes" in response.json()["detail"]


def test_an_aborted_upload_gives_its_reservation_back(world, draft, api):
    client = api(world.alice)
    created = client.post(f"/api/v1/versions/{draft.pk}/uploads/", {"path": "a.bin", "size": 1000, "sha256": "a" * 64})
    assert world.ai_team.storage_quota.reserved_bytes == 3000  # three replicas
    assert client.delete(f"/api/v1/uploads/{created.json()['id']}/").status_code == 204
    world.ai_team.storage_quota.refresh_from_db()
    assert world.ai_team.storage_quota.reserved_bytes == 0
    assert Upload.objects.get().state == UploadState.ABORTED


def test_a_range_request_returns_the_asked_bytes(world, draft, api):
    from tests.registry.helpers import put_file

    data = b"0123456789" * 100
    file = put_file(world.alice, draft, "digits.txt", data)
    response = api(world.alice).get(f"/api/v1/files/{file.pk}/download/", HTTP_RANGE="bytes=10-19")
    assert response.status_code == 206 and response["Content-Range"] == "bytes 10-19/1000"
    assert b"".join(response.streaming_content) == data[10:20]


def test_uploading_into_a_published_version_is_a_conflict(world, draft, api):
    from registry.services import version_publish

    version_publish(actor=world.alice, version=draft)
    response = api(world.alice).put(
        f"/api/v1/versions/{draft.pk}/upload/?path=a&sha256={sha(b'a')}", b"a", content_type="application/octet-stream"
    )
    assert response.status_code == 409 and response.json()["code"] == "conflict"


def test_a_bad_file_path_is_a_400_naming_the_field(world, draft, api):
    response = api(world.alice).put(
        f"/api/v1/versions/{draft.pk}/upload/?path=../etc/passwd&sha256={sha(b'a')}",
        b"a",
        content_type="application/octet-stream",
    )
    assert response.status_code == 400 and "path" in response.json()["errors"]


def test_a_viewer_may_not_upload(world, draft, api):
    response = api(world.vic).put(
        f"/api/v1/versions/{draft.pk}/upload/?path=a&sha256={sha(b'a')}", b"a", content_type="application/octet-stream"
    )
    assert response.status_code == 403
