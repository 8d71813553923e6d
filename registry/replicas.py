"""Bytes in and out of the replica locations, always checked against the file's SHA-256.

- ``write_replicas``: store a verified staging file in every location it belongs in;
- ``verify``: read one replica through and compare size and checksum;
- ``pick_verified``: the location of a replica that verifies now (downloads never serve a corrupt copy);
- ``check_and_repair``: the scrub's unit of work — verify every replica of a file, rebuild the bad or missing ones
  from a good one, drop the ones no longer wanted.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.core.files import File
from django.db import transaction
from django.utils import timezone

from registry.models import ArtifactFile, Replica, ReplicaState
from registry.storage import CHUNK, Location, by_name, locations, placement

log = logging.getLogger(__name__)


class NoVerifiedReplica(Exception):
    """Every replica of a file is missing or corrupt: the bytes cannot be served."""


class ChecksumChanged(OSError):
    """A replica changed under a reader after it was verified; the response is cut rather than finished wrong."""


def hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class _HashingReader(File):
    """Hands a source's chunks to a storage's save while hashing them: one read gives a copy and its checksum."""

    def __init__(self, handle, size: int):
        super().__init__(handle)
        self.digest = hashlib.sha256()
        self._size = size

    @property
    def size(self):
        return self._size

    def chunks(self, chunk_size=None):
        while chunk := self.read(chunk_size or CHUNK):
            yield chunk

    # Storages that read() instead of chunks() (S3's upload_fileobj) rewind first: the digest starts over with them.
    def read(self, size=-1):
        chunk = self.file.read(size)
        self.digest.update(chunk)
        return chunk

    def seek(self, offset, whence=0):
        if offset == 0 and whence == 0:
            self.digest = hashlib.sha256()
        return self.file.seek(offset, whence)


def verify(location: Location, file: ArtifactFile) -> tuple[str, str]:
    """(state, detail) of the copy of `file` in `location`: read in full, so bit rot is found too."""
    storage = location.storage
    try:
        if not storage.exists(file.storage_name):
            return ReplicaState.MISSING, "no such object"
        size = storage.size(file.storage_name)
        if size != file.size:
            return ReplicaState.CORRUPT, f"size {size}, expected {file.size}"
        digest = hashlib.sha256()
        with storage.open(file.storage_name, "rb") as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
    except OSError as exc:
        return ReplicaState.MISSING, f"unreadable: {exc}"[:300]
    if digest.hexdigest() != file.sha256:
        return ReplicaState.CORRUPT, f"sha256 {digest.hexdigest()[:16]}…, expected {file.sha256[:16]}…"
    return ReplicaState.OK, ""


def write_replicas(*, storage_name: str, source: Path, size: int, sha256: str, targets: list[Location]) -> None:
    """Copy a verified staging file into each target; any failure removes what was written and raises."""
    written: list[Location] = []
    try:
        for location in targets:
            with open(source, "rb") as handle:
                reader = _HashingReader(handle, size)
                location.storage.save(storage_name, reader)
            written.append(location)
            if reader.digest.hexdigest() != sha256:
                raise ChecksumChanged(f"staging file {source} changed while it was copied to {location.name}")
    except BaseException:
        for location in written:
            _delete_quietly(location, storage_name)
        raise


def copy_verified(*, file: ArtifactFile, source: Location, target: Location) -> bool:
    """Rebuild the copy in `target` from `source`, checking the bytes on the way; False (and nothing left) if they
    do not match the file's checksum."""
    with source.storage.open(file.storage_name, "rb") as handle:
        reader = _HashingReader(handle, file.size)
        target.storage.save(file.storage_name, reader)
    if reader.digest.hexdigest() != file.sha256:
        _delete_quietly(target, file.storage_name)
        return False
    return True


def delete_objects(storage_names: list[str]) -> None:
    """Remove objects from every location (after the rows are gone, on commit)."""
    for location in locations():
        for name in storage_names:
            _delete_quietly(location, name)


def _delete_quietly(location: Location, storage_name: str) -> None:
    try:
        location.storage.delete(storage_name)
    except OSError:
        log.warning("could not delete %s from replica location %s", storage_name, location.name)


# --- reading ----------------------------------------------------------------------------------------------------------


def _record(file: ArtifactFile, location_name: str, state: str, detail: str, *, repaired: bool = False) -> None:
    now = timezone.now()
    fields = {"state": state, "detail": detail, "checked_at": now}
    if state == ReplicaState.OK:
        fields["verified_at"] = now
    if repaired:
        fields["repaired_at"] = now
    Replica.objects.update_or_create(file=file, location=location_name, defaults=fields)


def pick_verified(file: ArtifactFile) -> Location:
    """A location whose copy verifies now. Bad copies found on the way are recorded and queued for repair."""
    known = by_name()
    rows = sorted(file.replica_set.all(), key=lambda r: (r.state != ReplicaState.OK, r.location))
    damaged = False
    for row in rows:
        location = known.get(row.location)
        if location is None:
            continue
        state, detail = verify(location, file)
        if state == ReplicaState.OK:
            if row.state != ReplicaState.OK:
                _record(file, row.location, state, detail)
            else:
                Replica.objects.filter(pk=row.pk).update(verified_at=timezone.now(), checked_at=timezone.now())
            if damaged:
                _queue_repair(file.pk)
            return location
        damaged = True
        log.warning("replica of %s in %s is %s (%s)", file.storage_name, row.location, state, detail)
        _record(file, row.location, state, detail)
    if damaged:
        _queue_repair(file.pk)
    raise NoVerifiedReplica(f"no replica of {file.path} verifies")


def _queue_repair(file_id: int) -> None:
    from registry.tasks import repair_file

    transaction.on_commit(lambda: repair_file.delay(file_id))


def stream(location: Location, file: ArtifactFile, start: int = 0, end: int | None = None) -> Iterator[bytes]:
    """The bytes [start, end] of a verified copy. A whole-file read is checked again as it goes out: a copy that
    changed since it was verified is cut off (the client sees a short body) instead of served wrong."""
    whole = start == 0 and (end is None or end == file.size - 1)
    remaining = (file.size if end is None else end + 1) - start
    digest = hashlib.sha256() if whole else None
    with location.storage.open(file.storage_name, "rb") as handle:
        if start:
            handle.seek(start)
        while remaining > 0:
            chunk = handle.read(min(CHUNK, remaining))
            if not chunk:
                raise ChecksumChanged(f"{file.storage_name} in {location.name} is shorter than {file.size} bytes")
            remaining -= len(chunk)
            if digest is not None:
                digest.update(chunk)
            yield chunk
    if digest is not None and digest.hexdigest() != file.sha256:
        _queue_repair(file.pk)
        raise ChecksumChanged(f"{file.storage_name} in {location.name} changed while it was being sent")


# --- scrub ------------------------------------------------------------------------------------------------------------


@dataclass
class FileCheck:
    verified: int = 0
    damaged: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    lost: bool = False
    bytes_read: int = 0


def wanted_locations(file: ArtifactFile, available: list[Location]) -> list[Location]:
    return placement(file.storage_name, file.version.collection.replicas, available)


def check_and_repair(file: ArtifactFile, available: list[Location] | None = None) -> FileCheck:
    """Verify every copy of `file`, rebuild missing or corrupt wanted copies from a good one, drop surplus copies."""
    available = available if available is not None else locations()
    known = {loc.name: loc for loc in available}
    wanted = {loc.name for loc in wanted_locations(file, available)}
    rows = {row.location: row for row in file.replica_set.all()}
    result = FileCheck()
    good: Location | None = None
    states: dict[str, str] = {}
    for name in sorted(wanted | (set(rows) & set(known))):
        state, detail = verify(known[name], file)
        result.bytes_read += file.size if state == ReplicaState.OK else 0
        states[name] = state
        _record(file, name, state, detail)
        if state == ReplicaState.OK:
            result.verified += 1
            good = good or known[name]
        else:
            result.damaged.append(name)
    if good is None:
        result.lost = True
        log.error("file %s (%s) has no good replica left", file.pk, file.storage_name)
        return result
    for name in sorted(wanted):
        if states[name] == ReplicaState.OK:
            continue
        if copy_verified(file=file, source=good, target=known[name]):
            _record(file, name, ReplicaState.OK, "repaired from " + good.name, repaired=True)
            states[name] = ReplicaState.OK
            result.repaired.append(name)
    if all(states[name] == ReplicaState.OK for name in wanted):
        for name in sorted(set(rows) - wanted):
            # Surplus after the replica count went down, or a location taken out of the configuration.
            if name in known:
                _delete_quietly(known[name], file.storage_name)
            Replica.objects.filter(file=file, location=name).delete()
            result.removed.append(name)
    return result
