"""Build repository rows through the services, as users would."""

from __future__ import annotations

import hashlib
import io

from registry import services
from registry.models import ArtifactFile, Collection, Kind, Version, Visibility
from tests.jobs.helpers import submit


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_collection(user, group, name="llama", *, kind=Kind.MODEL, visibility=Visibility.GROUP, **fields) -> Collection:
    return services.collection_create(actor=user, kind=kind, name=name, group=group, visibility=visibility, **fields)


def put_file(user, version: Version, path: str, data: bytes) -> ArtifactFile:
    return services.file_put(
        actor=user, version=version, path=path, stream=io.BytesIO(data), size=len(data), sha256=sha(data)
    )


def publish(user, collection: Collection, files: dict[str, bytes], aliases=()) -> Version:
    version = services.version_create(actor=user, collection=collection)
    for path, data in files.items():
        put_file(user, version, path, data)
    return services.version_publish(actor=user, version=version, aliases=aliases)


def populate(world) -> dict:
    """One row of every repository model for acme (private to ai-team) and for globex, jobs reading and writing."""
    rows = {}
    for tenant, user, group in (("acme", world.alice, world.ai_team), ("globex", world.mallory, world.rivals)):
        model = make_collection(user, group, f"{tenant}-secret-model", parameters=7_000_000_000)
        version = publish(user, model, {"config.json": b'{"layers": 2}'}, aliases=["production"])
        draft = services.version_create(actor=user, collection=model)
        upload = services.upload_start(actor=user, version=draft, path="big.bin", size=10, sha256=sha(b"0" * 10))
        job = submit(
            user,
            group,
            inputs=[f"model:{tenant}/{model.name}@production"],
            outputs=[{"model": f"{tenant}/{tenant}-output"}],
        )
        rows[tenant] = {"model": model, "version": version, "draft": draft, "upload": upload, "job": job}
    return rows


def acme_objects(world) -> dict[str, int]:
    """acme's repository objects by API resource name, for the exhaustive cross-tenant API test."""
    model = make_collection(world.alice, world.ai_team, "private-model", parameters=8_000_000_000)
    dataset = make_collection(world.alice, world.ai_team, "private-data", kind=Kind.DATASET)
    version = publish(world.alice, model, {"config.json": b"{}"})
    draft = services.version_create(actor=world.alice, collection=dataset)
    upload = services.upload_start(actor=world.alice, version=draft, path="a.bin", size=1, sha256=sha(b"a"))
    return {
        "model": model.pk,
        "dataset": dataset.pk,
        "version": version.pk,
        "file": version.files.get().pk,
        "upload": upload.pk,
        "storage": world.ai_team.pk,
    }


def snapshot() -> list:
    from registry.models import Alias, StorageQuota, Upload

    return [
        list(Collection.objects.values_list("pk", "visibility", "replicas", "summary")),
        list(Version.objects.values_list("pk", "state")),
        list(Alias.objects.values_list("pk", "version_id")),
        list(ArtifactFile.objects.values_list("pk", "sha256")),
        list(Upload.objects.values_list("pk", "state", "offset")),
        list(StorageQuota.objects.values_list("pk", "limit_bytes")),
    ]
