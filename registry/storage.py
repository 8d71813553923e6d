"""Where file bytes live: N replica locations, each a Django storage (local directories by default).

``AIPOOL_REPLICA_LOCATIONS`` is a comma-separated list of ``NAME=PATH`` (or bare ``PATH``, named r1, r2, … by
position) where PATH is a directory or ``s3://bucket/prefix`` (django-storages' S3 backend, when installed). Default:
three directories under ``DATA_DIR/replicas/``. Read at call time, like every setting from the environment.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.files.storage import FileSystemStorage, Storage

from portal.env import env_list

CHUNK = 1 << 20
DEFAULT_LOCATIONS = ("r1", "r2", "r3")


class ReplicaStorage(FileSystemStorage):
    """A local directory whose saves are atomic (temporary file, fsync, rename) and read-only once written.

    A repair replaces a bad copy in one step, so a reader sees the old file or the new one, never half of one.
    """

    def get_available_name(self, name, max_length=None):
        return name  # names are unique by construction; a repair overwrites on purpose

    def _save(self, name, content):
        full_path = Path(self.path(name))
        full_path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=full_path.parent, prefix=".incoming-")
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in content.chunks(CHUNK):
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, 0o444)
            os.replace(tmp, full_path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return name


@dataclass(frozen=True)
class Location:
    name: str
    storage: Storage
    root: Path | None  # local directory, when the storage is one (jobs read their inputs from it)

    def local_path(self, storage_name: str) -> Path | None:
        return self.root / storage_name if self.root is not None else None


def _make(name: str, target: str) -> Location:
    if target.startswith("s3://"):
        try:
            from storages.backends.s3 import S3Storage
        except ImportError as exc:
            raise ImproperlyConfigured(
                f"replica location {name}={target} needs django-storages[s3] (pip install 'django-storages[s3]')"
            ) from exc
        bucket, _, prefix = target.removeprefix("s3://").partition("/")
        return Location(name, S3Storage(bucket_name=bucket, location=prefix, file_overwrite=True), None)
    root = Path(target).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    return Location(name, ReplicaStorage(location=root), root)


def locations() -> list[Location]:
    entries = env_list("AIPOOL_REPLICA_LOCATIONS")
    if not entries:
        base = Path(settings.DATA_DIR) / "replicas"
        return [_make(name, str(base / name)) for name in DEFAULT_LOCATIONS]
    found, names = [], set()
    for index, entry in enumerate(entries, start=1):
        name, sep, target = entry.partition("=")
        if not sep or "/" in name or name.startswith("s3:"):
            name, target = f"r{index}", entry
        if name in names:
            raise ImproperlyConfigured(f"AIPOOL_REPLICA_LOCATIONS: location name {name!r} appears twice")
        names.add(name)
        found.append(_make(name.strip(), target.strip()))
    return found


def by_name() -> dict[str, Location]:
    return {loc.name: loc for loc in locations()}


def placement(storage_name: str, count: int, available: list[Location]) -> list[Location]:
    """The `count` locations a file belongs in: rendezvous hashing spreads files evenly and moves few when the
    list of locations changes."""

    def score(loc: Location) -> str:
        return hashlib.sha256(f"{loc.name}/{storage_name}".encode()).hexdigest()

    return sorted(available, key=score)[: max(1, min(count, len(available)))]


def new_storage_name() -> str:
    key = uuid.uuid4().hex
    return f"objects/{key[:2]}/{key}"


def staging_dir() -> Path:
    path = Path(settings.DATA_DIR) / "registry" / "staging"
    path.mkdir(parents=True, exist_ok=True)
    return path


def views_dir() -> Path:
    path = Path(settings.DATA_DIR) / "registry" / "views"
    path.mkdir(parents=True, exist_ok=True)
    return path


def outputs_dir() -> Path:
    path = Path(settings.DATA_DIR) / "registry" / "outputs"
    path.mkdir(parents=True, exist_ok=True)
    return path
