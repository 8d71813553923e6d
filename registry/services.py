"""Writes on the repository (style.md §2): keyword-only, audited; database changes in ``transaction.atomic``.

File bytes move outside transactions (a multi-GB copy must not hold row locks); the rows that make a file exist are
written in one short transaction at the end, and the quota reservation taken at the start guarantees the bytes fit.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Max, Sum
from django.utils import timezone

from registry import quota
from registry.models import (
    Alias,
    ArtifactFile,
    Collection,
    JobInput,
    Kind,
    Replica,
    ReplicaState,
    StorageQuota,
    Upload,
    UploadState,
    Version,
    VersionState,
    Visibility,
)
from registry.names import SHA256, NameError_, check_alias, check_name, check_namespace, check_path
from registry.replicas import delete_objects, hash_file, pick_verified, write_replicas
from registry.storage import CHUNK, locations, new_storage_name, placement, staging_dir
from tenants.models import GroupMember, Membership, Role
from tenants.scoping import is_pool_admin
from tenants.services import audit
from vocab.states import ACTIVE_STATES

log = logging.getLogger(__name__)

CARD_FIELDS = (
    "summary",
    "card",
    "organisation",
    "license",
    "task",
    "library",
    "parameters",
    "active_parameters",
    "context_length",
    "base_models",
    "datasets",
    "languages",
    "metrics",
    "tags",
    "size_description",
    "source_url",
)
# A chunk that stalls this long (its client gone mid-request) no longer blocks the upload from resuming.
RECEIVING_STALE = timedelta(minutes=10)


class Conflict(Exception):
    """The request conflicts with the current state (HTTP 409): a published version, a wrong upload offset, …"""


def _audit(actor, action: str, target, collection: Collection, changes: dict | None = None) -> None:
    audit(actor=actor, action=action, target=target, tenant=collection.tenant, changes=changes)


def _field_error(field: str, exc: Exception) -> ValidationError:
    return ValidationError({field: [str(exc)]})


def check_replicas(count: int) -> int:
    available = len(locations())
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= available:
        raise ValidationError(
            {"replicas": [f"must be between 1 and {available} (the pool has {available} replica locations)"]}
        )
    return count


def may_write_in(user, group) -> bool:
    """Staff, the group's tenant admins, and members (not viewers) of the group."""
    if is_pool_admin(user):
        return True
    role = Membership.objects.filter(user=user, tenant_id=group.tenant_id).values_list("role", flat=True).first()
    if role == Role.ADMIN:
        return True
    return role == Role.MEMBER and GroupMember.objects.filter(user=user, group=group).exists()


def _lock(collection: Collection) -> Collection:
    return Collection.objects.select_for_update().get(pk=collection.pk)


def _stored_bytes(collection: Collection) -> int:
    total = ArtifactFile.objects.filter(version__collection=collection).aggregate(total=Sum("size"))["total"]
    return (total or 0) * collection.replicas


# --- collections ------------------------------------------------------------------------------------------------------


@transaction.atomic
def collection_create(
    *,
    actor,
    kind: str,
    name: str,
    group=None,
    namespace: str | None = None,
    visibility: str = Visibility.GROUP,
    replicas: int = 1,
    **card,
) -> Collection:
    if kind not in Kind.values:
        raise ValidationError({"kind": [f"use one of {', '.join(Kind.values)}"]})
    try:
        check_name(name)
    except NameError_ as exc:
        raise _field_error("name", exc) from exc
    if visibility not in Visibility.values:
        raise ValidationError({"visibility": [f"use one of {', '.join(Visibility.values)}"]})
    check_replicas(replicas)
    unknown = set(card) - set(CARD_FIELDS)
    if unknown:
        raise ValidationError({"card": [f"unknown fields: {', '.join(sorted(unknown))}"]})
    if group is None:
        namespace = _catalog_namespace(actor, namespace, visibility)
        tenant = None
    else:
        if not may_write_in(actor, group):
            raise PermissionDenied(f"only members of group {group.name} and admins of its tenant may add to it")
        if namespace not in (None, "", group.tenant.name):
            raise ValidationError({"namespace": [f"collections of group {group.name} live in {group.tenant.name}/"]})
        namespace, tenant = group.tenant.name, group.tenant
    if Collection.objects.filter(kind=kind, namespace=namespace, name=name).exists():
        raise ValidationError({"name": [f"{kind} {namespace}/{name} already exists"]})
    collection = Collection(
        kind=kind,
        namespace=namespace,
        name=name,
        tenant=tenant,
        group=group,
        visibility=visibility,
        replicas=replicas,
        created_by=actor if getattr(actor, "pk", None) else None,
        **card,
    )
    collection.full_clean(validate_unique=False, validate_constraints=False)
    try:
        with transaction.atomic():
            collection.save()
    except IntegrityError as exc:
        raise ValidationError({"name": [f"{kind} {namespace}/{name} already exists"]}) from exc
    _audit(actor, "collection.create", collection, collection, {"name": [None, collection.full_name]})
    return collection


def _catalog_namespace(actor, namespace: str | None, visibility: str) -> str:
    if not is_pool_admin(actor):
        raise ValidationError({"group": ["name the group that owns it (its storage quota pays for the files)"]})
    if visibility != Visibility.PUBLIC:
        raise ValidationError({"visibility": ["entries of the pool's catalog (no group) are public"]})
    try:
        return check_namespace(namespace or "")
    except NameError_ as exc:
        raise _field_error("namespace", exc) from exc


@transaction.atomic
def collection_update(*, actor, collection: Collection, **fields) -> Collection:
    collection = _lock(collection)
    unknown = set(fields) - set(CARD_FIELDS) - {"visibility", "replicas"}
    if unknown:
        raise ValidationError({"non_field_errors": [f"cannot change: {', '.join(sorted(unknown))}"]})
    changes = {}
    if "visibility" in fields and fields["visibility"] != collection.visibility:
        if collection.tenant_id is None and fields["visibility"] != Visibility.PUBLIC:
            raise ValidationError({"visibility": ["entries of the pool's catalog are public"]})
        if fields["visibility"] not in Visibility.values:
            raise ValidationError({"visibility": [f"use one of {', '.join(Visibility.values)}"]})
    if "replicas" in fields and fields["replicas"] != collection.replicas:
        _change_replicas(collection, check_replicas(fields["replicas"]))
        changes["replicas"] = [collection.replicas, fields["replicas"]]
    for key, value in fields.items():
        if getattr(collection, key) != value and key != "replicas":
            changes[key] = [getattr(collection, key), value] if key not in ("card",) else ["…", "…"]
        setattr(collection, key, value)
    collection.full_clean(validate_unique=False, validate_constraints=False)
    collection.save()
    if changes:
        _audit(actor, "collection.modify", collection, collection, changes)
    if "replicas" in changes:
        from registry.tasks import scrub_collection

        transaction.on_commit(lambda: scrub_collection.delay(collection.pk))
    return collection


def _change_replicas(collection: Collection, new: int) -> None:
    """Charge (or refund) the quota for every stored file; the scrub then adds or drops copies."""
    total = ArtifactFile.objects.filter(version__collection=collection).aggregate(total=Sum("size"))["total"] or 0
    quota.charge(collection.group, total * (new - collection.replicas))


@transaction.atomic
def collection_delete(*, actor, collection: Collection) -> None:
    collection = _lock(collection)
    names = list(ArtifactFile.objects.filter(version__collection=collection).values_list("storage_name", flat=True))
    _refuse_if_read_by_active_jobs(Version.objects.filter(collection=collection))
    quota.charge(collection.group, -_stored_bytes(collection))
    _abort_uploads(Upload.objects.filter(version__collection=collection))
    _audit(actor, "collection.delete", collection, collection, {"name": [collection.full_name, None]})
    collection.delete()
    transaction.on_commit(lambda: delete_objects(names))


def _refuse_if_read_by_active_jobs(versions) -> None:
    readers = list(
        JobInput.objects.filter(version__in=versions, job__state__in=[s.value for s in ACTIVE_STATES])
        .values_list("job_id", flat=True)
        .distinct()[:5]
    )
    if readers:
        raise Conflict(f"jobs {', '.join(map(str, readers))} still read it; wait until they end")


# --- versions and aliases ---------------------------------------------------------------------------------------------


@transaction.atomic
def version_create(*, actor, collection: Collection, message: str = "") -> Version:
    collection = _lock(collection)
    number = (collection.versions.aggregate(top=Max("number"))["top"] or 0) + 1
    version = Version.objects.create(
        collection=collection,
        number=number,
        message=message[:300],
        created_by=actor if getattr(actor, "pk", None) else None,
    )
    _audit(actor, "version.create", version, collection, {"number": [None, number]})
    return version


@transaction.atomic
def version_publish(*, actor, version: Version, aliases=()) -> Version:
    collection = _lock(version.collection)
    version = Version.objects.get(pk=version.pk)
    aliases = [_alias_name(a) for a in aliases]
    if version.state == VersionState.PUBLISHED:
        raise Conflict(f"version {version.number} of {collection.full_name} is already published")
    open_uploads = Upload.objects.unfinished().filter(version=version).count()
    if open_uploads:
        raise Conflict(f"{open_uploads} upload(s) into version {version.number} are not finished: complete or abort")
    version.state = VersionState.PUBLISHED
    version.published_at = timezone.now()
    version.save(update_fields=["state", "published_at"])
    _move_latest(collection)
    for name in aliases:
        Alias.objects.update_or_create(collection=collection, name=name, defaults={"version": version})
    _audit(actor, "version.publish", version, collection, {"aliases": [None, aliases]})
    return version


def _alias_name(name: str) -> str:
    try:
        check_alias(name)
    except NameError_ as exc:
        raise _field_error("aliases", exc) from exc
    if name == Alias.LATEST:
        raise ValidationError({"aliases": ["'latest' always names the newest published version; it moves by itself"]})
    return name


def _move_latest(collection: Collection) -> None:
    newest = collection.versions.published().order_by("-number").first()
    if newest is None:
        Alias.objects.filter(collection=collection, name=Alias.LATEST).delete()
    else:
        Alias.objects.update_or_create(collection=collection, name=Alias.LATEST, defaults={"version": newest})


@transaction.atomic
def alias_set(*, actor, collection: Collection, name: str, version: Version | None) -> Alias | None:
    """Point `name` at a published version of `collection`; ``version=None`` removes the alias."""
    collection = _lock(collection)
    name = _alias_name(name)
    before = Alias.objects.filter(collection=collection, name=name).values_list("version__number", flat=True).first()
    if version is None:
        Alias.objects.filter(collection=collection, name=name).delete()
        alias = None
    else:
        if version.collection_id != collection.pk:
            raise ValidationError({"version": [f"not a version of {collection.full_name}"]})
        if version.state != VersionState.PUBLISHED:
            raise ValidationError({"version": [f"version {version.number} is a draft: publish it first"]})
        alias, _ = Alias.objects.update_or_create(collection=collection, name=name, defaults={"version": version})
    after = version.number if version else None
    _audit(actor, "alias.set", collection, collection, {name: [before, after]})
    return alias


@transaction.atomic
def version_delete(*, actor, version: Version) -> None:
    collection = _lock(version.collection)
    _refuse_if_read_by_active_jobs([version])
    files = ArtifactFile.objects.filter(version=version)
    names = list(files.values_list("storage_name", flat=True))
    size = files.aggregate(total=Sum("size"))["total"] or 0
    quota.charge(collection.group, -size * collection.replicas)
    _abort_uploads(Upload.objects.filter(version=version))
    _audit(actor, "version.delete", version, collection, {"number": [version.number, None]})
    version.delete()
    _move_latest(collection)
    transaction.on_commit(lambda: delete_objects(names))


# --- uploads ----------------------------------------------------------------------------------------------------------


def staging_path(upload: Upload) -> Path:
    return staging_dir() / f"upload-{upload.pk}.part"


@transaction.atomic
def upload_start(*, actor, version: Version, path: str, size: int, sha256: str = "") -> Upload:
    try:
        path = check_path(path)
    except NameError_ as exc:
        raise _field_error("path", exc) from exc
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ValidationError({"size": ["must be a whole number of bytes, 0 or more"]})
    sha256 = (sha256 or "").strip().lower()
    if sha256 and not SHA256.match(sha256):
        raise ValidationError({"sha256": ["must be 64 hexadecimal digits"]})
    collection = _lock(version.collection)
    version = Version.objects.get(pk=version.pk)
    if version.state != VersionState.DRAFT:
        raise Conflict(f"version {version.number} of {collection.full_name} is published: files are frozen")
    reserved = size * collection.replicas
    quota.reserve(collection.group, reserved)
    upload = Upload.objects.create(
        version=version, path=path, size=size, sha256=sha256, reserved_bytes=reserved, created_by=actor
    )
    staging_path(upload).write_bytes(b"")
    return upload


def _claim(upload: Upload, **conditions) -> bool:
    """OPEN → RECEIVING for one request at a time; a RECEIVING left behind by a client that vanished is taken over."""
    now = timezone.now()
    rows = Upload.objects.filter(pk=upload.pk, **conditions)
    if rows.filter(state=UploadState.OPEN).update(state=UploadState.RECEIVING, updated_at=now):
        return True
    stale = rows.filter(state=UploadState.RECEIVING, updated_at__lt=now - RECEIVING_STALE)
    return bool(stale.update(updated_at=now))


def _why_not_claimed(upload: Upload, offset: int | None) -> Exception:
    upload.refresh_from_db()
    if upload.state in (UploadState.COMPLETE, UploadState.ABORTED):
        return Conflict(f"upload {upload.pk} is {upload.state}")
    if upload.state == UploadState.RECEIVING:
        return Conflict(f"upload {upload.pk} is receiving another chunk; retry shortly")
    return Conflict(f"upload {upload.pk} is at offset {upload.offset}, not {offset}: resume from {upload.offset}")


def upload_append(*, upload: Upload, offset: int, stream, length: int, hasher=None) -> Upload:
    """Write `length` bytes read from `stream` at `offset`. Bytes that arrived before a broken connection count.

    `hasher` (a hashlib object) sees the bytes as they pass, so a one-request upload is hashed without a re-read.
    """
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValidationError({"Upload-Offset": ["must be a whole number of bytes"]})
    if offset + length > upload.size:
        raise ValidationError({"body": [f"{offset + length} bytes would pass the declared size of {upload.size}"]})
    if not _claim(upload, offset=offset):
        raise _why_not_claimed(upload, offset)
    written = 0
    try:
        target = staging_path(upload)
        with open(target, "r+b" if target.exists() else "w+b") as out:
            out.seek(offset)
            out.truncate(offset)
            while written < length:
                chunk = stream.read(min(CHUNK, length - written))
                if not chunk:
                    break
                out.write(chunk)
                written += len(chunk)
                if hasher is not None:
                    hasher.update(chunk)
    finally:
        Upload.objects.filter(pk=upload.pk, state=UploadState.RECEIVING).update(
            state=UploadState.OPEN, offset=offset + written, updated_at=timezone.now()
        )
    upload.refresh_from_db()
    if written < length:
        raise ValidationError(
            {"body": [f"the body ended after {written} of {length} bytes; resume from offset {upload.offset}"]}
        )
    return upload


def upload_complete(*, actor, upload: Upload, digest: str | None = None) -> ArtifactFile:
    """Check the received bytes against the declared SHA-256, store them in every replica, record the file.

    `digest` is the hash of the staging file when the caller computed it while the bytes arrived.
    """
    if not _claim(upload, offset=F("size")):
        upload.refresh_from_db()
        if upload.state == UploadState.OPEN:
            raise ValidationError({"size": [f"received {upload.offset} of {upload.size} bytes: send the rest first"]})
        raise _why_not_claimed(upload, None)
    source = staging_path(upload)
    try:
        digest = digest or hash_file(source)
        if source.stat().st_size != upload.size or (upload.sha256 and digest != upload.sha256):
            _abort(upload)
            raise ValidationError(
                {"sha256": [f"the bytes received hash to {digest}, not the declared {upload.sha256}: upload again"]}
            )
        collection = upload.version.collection
        storage_name = new_storage_name()
        targets = placement(storage_name, collection.replicas, locations())
        write_replicas(storage_name=storage_name, source=source, size=upload.size, sha256=digest, targets=targets)
        try:
            file = _record_file(actor, upload, storage_name, digest, [t.name for t in targets])
        except BaseException:
            delete_objects([storage_name])
            raise
    except BaseException:
        Upload.objects.filter(pk=upload.pk, state=UploadState.RECEIVING).update(state=UploadState.OPEN)
        raise
    source.unlink(missing_ok=True)
    return file


@transaction.atomic
def _record_file(actor, upload: Upload, storage_name: str, digest: str, where: list[str]) -> ArtifactFile:
    collection = _lock(upload.version.collection)
    version = Version.objects.get(pk=upload.version_id)
    if version.state != VersionState.DRAFT:
        raise Conflict(f"version {version.number} was published while the upload ran; start a new version")
    replaced = ArtifactFile.objects.filter(version=version, path=upload.path).first()
    if replaced is not None:
        quota.charge(collection.group, -replaced.size * collection.replicas)
        old_name = replaced.storage_name
        replaced.delete()
        transaction.on_commit(lambda: delete_objects([old_name]))
    quota.settle(collection.group, reserved=upload.reserved_bytes, stored=upload.size * collection.replicas)
    file = ArtifactFile.objects.create(
        version=version, path=upload.path, size=upload.size, sha256=digest, storage_name=storage_name
    )
    now = timezone.now()
    Replica.objects.bulk_create(
        [Replica(file=file, location=name, state=ReplicaState.OK, verified_at=now, checked_at=now) for name in where]
    )
    Upload.objects.filter(pk=upload.pk).update(state=UploadState.COMPLETE, file=file, reserved_bytes=0)
    _audit(actor, "file.add", file, collection, {"path": [None, file.path], "sha256": [None, digest]})
    return file


def _abort(upload: Upload) -> bool:
    claimed = Upload.objects.filter(pk=upload.pk, state__in=[UploadState.OPEN, UploadState.RECEIVING]).update(
        state=UploadState.ABORTED, reserved_bytes=0
    )
    if claimed:
        quota.release(upload.version.collection.group, upload.reserved_bytes)
        staging_path(upload).unlink(missing_ok=True)
    return bool(claimed)


def _abort_uploads(uploads) -> None:
    for upload in uploads.unfinished().select_related("version__collection__group"):
        _abort(upload)


@transaction.atomic
def upload_abort(*, actor, upload: Upload) -> None:
    upload = Upload.objects.select_related("version__collection__group").get(pk=upload.pk)
    if upload.state == UploadState.RECEIVING and upload.updated_at > timezone.now() - RECEIVING_STALE:
        raise Conflict(f"upload {upload.pk} is receiving a chunk; abort it after the chunk ends")
    if not _abort(upload):
        raise Conflict(f"upload {upload.pk} is {upload.state}")


def expire_uploads(*, older_than: timedelta) -> int:
    """Give back the reservations of uploads nobody has touched for `older_than` (clients that went away)."""
    stale = Upload.objects.unfinished().filter(updated_at__lt=timezone.now() - older_than)
    count = 0
    for upload in stale.select_related("version__collection__group"):
        with transaction.atomic():
            count += _abort(upload)
    return count


def file_put(*, actor, version: Version, path: str, stream, size: int, sha256: str = "") -> ArtifactFile:
    """One-request upload: reserve, stream the body to disk while counting, check, store."""
    upload = upload_start(actor=actor, version=version, path=path, size=size, sha256=sha256)
    hasher = hashlib.sha256()
    try:
        upload_append(upload=upload, offset=0, stream=stream, length=size, hasher=hasher)
        return upload_complete(actor=actor, upload=upload, digest=hasher.hexdigest())
    except BaseException:
        with transaction.atomic():
            _abort(upload)
        raise


def file_ingest(*, actor, version: Version, path: str, source: Path) -> ArtifactFile:
    with open(source, "rb") as handle:
        return file_put(actor=actor, version=version, path=path, stream=handle, size=source.stat().st_size)


@transaction.atomic
def file_delete(*, actor, file: ArtifactFile) -> None:
    collection = _lock(file.version.collection)
    file = ArtifactFile.objects.select_related("version").get(pk=file.pk)
    if file.version.state != VersionState.DRAFT:
        raise Conflict(f"version {file.version.number} is published: its files are frozen")
    quota.charge(collection.group, -file.size * collection.replicas)
    name = file.storage_name
    _audit(actor, "file.delete", file, collection, {"path": [file.path, None]})
    file.delete()
    transaction.on_commit(lambda: delete_objects([name]))


def version_copy(*, actor, source: Version, target: Collection, message: str = "", aliases=()) -> Version:
    """``aipool cp`` between repository entries: a new published version of `target` with `source`'s files,
    read from verified replicas and stored with `target`'s replica count."""
    if source.state != VersionState.PUBLISHED:
        raise ValidationError({"source": [f"version {source.number} is a draft: publish it first"]})
    copy = version_create(actor=actor, collection=target, message=message or f"copy of {source}")
    try:
        for file in source.files.all():
            location = pick_verified(file)
            with location.storage.open(file.storage_name, "rb") as handle:
                file_put(actor=actor, version=copy, path=file.path, stream=handle, size=file.size, sha256=file.sha256)
        with transaction.atomic():
            Version.objects.get(pk=copy.pk).parents.add(source)
        return version_publish(actor=actor, version=copy, aliases=aliases)
    except BaseException:
        version_delete(actor=actor, version=copy)
        raise


# --- storage quota ----------------------------------------------------------------------------------------------------


@transaction.atomic
def storage_quota_set(*, actor, group, limit_bytes: int | None) -> StorageQuota:
    if not is_pool_admin(actor):
        raise PermissionDenied("only pool administrators set storage quotas")
    if limit_bytes is not None and limit_bytes < 0:
        raise ValidationError({"limit_bytes": ["must not be negative (empty means no limit)"]})
    current = quota.quota_of(group)
    current = StorageQuota.objects.select_for_update().get(pk=current.pk)
    before = current.limit_bytes
    current.limit_bytes = limit_bytes
    current.save(update_fields=["limit_bytes"])
    if before != limit_bytes:
        audit(
            actor=actor,
            action="storage.quota",
            target=group,
            tenant=group.tenant,
            changes={"limit": [before, limit_bytes]},
        )
    return current


@transaction.atomic
def storage_recount(*, actor, group) -> StorageQuota:
    """Recompute a group's stored and reserved bytes from its files and open uploads (repairs drift after a crash)."""
    current = StorageQuota.objects.select_for_update().get(pk=quota.quota_of(group).pk)
    used = (
        ArtifactFile.objects.filter(version__collection__group=group)
        .annotate(charge=F("size") * F("version__collection__replicas"))
        .aggregate(total=Sum("charge"))["total"]
        or 0
    )
    reserved = (
        Upload.objects.unfinished()
        .filter(version__collection__group=group)
        .aggregate(total=Sum("reserved_bytes"))["total"]
        or 0
    )
    changes = {"used": [current.used_bytes, used], "reserved": [current.reserved_bytes, reserved]}
    current.used_bytes, current.reserved_bytes = used, reserved
    current.save(update_fields=["used_bytes", "reserved_bytes"])
    audit(actor=actor, action="storage.recount", target=group, tenant=group.tenant, changes=changes)
    return current
