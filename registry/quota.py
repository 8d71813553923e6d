"""Per-group storage quota in bytes, changed only by conditional UPDATEs (style.md §4).

A write first *reserves* what it will store (``size × replicas``), refused if stored + reserved + wanted would pass
the limit; finishing turns the reservation into stored bytes, failing gives it back. Two uploads racing for the
last gigabyte cannot both win: the database evaluates each UPDATE's condition on the current row.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import F, Q
from django.db.models.functions import Greatest

from portal.env import env_str
from registry.models import StorageQuota
from registry.names import NameError_, format_size, parse_size


def default_limit() -> int | None:
    raw = env_str("AIPOOL_STORAGE_QUOTA_DEFAULT")
    if not raw:
        return None
    try:
        return parse_size(raw)
    except NameError_ as exc:
        raise ValueError(f"AIPOOL_STORAGE_QUOTA_DEFAULT: {exc}") from exc


def quota_of(group) -> StorageQuota:
    quota, _ = StorageQuota.objects.get_or_create(group=group, defaults={"limit_bytes": default_limit()})
    return quota


def _within_limit(extra) -> Q:
    return Q(limit_bytes__isnull=True) | Q(limit_bytes__gte=F("used_bytes") + F("reserved_bytes") + extra)


def _refuse(group, wanted: int, field: str) -> ValidationError:
    quota = StorageQuota.objects.get(group=group)
    return ValidationError(
        {
            field: [
                f"over the storage quota of group {group.name}: {format_size(quota.used_bytes)} stored and "
                f"{format_size(quota.reserved_bytes)} reserved of {format_size(quota.limit_bytes)}, "
                f"{format_size(wanted)} more requested"
            ]
        }
    )


def reserve(group, nbytes: int, *, field: str = "size") -> None:
    if group is None or nbytes <= 0:
        return
    quota = quota_of(group)
    if not StorageQuota.objects.filter(_within_limit(nbytes), pk=quota.pk).update(
        reserved_bytes=F("reserved_bytes") + nbytes
    ):
        raise _refuse(group, nbytes, field)


def release(group, nbytes: int) -> None:
    if group is None or nbytes <= 0:
        return
    StorageQuota.objects.filter(group=group).update(reserved_bytes=Greatest(F("reserved_bytes") - nbytes, 0))


def settle(group, *, reserved: int, stored: int, field: str = "size") -> None:
    """Turn a reservation into stored bytes (which may differ if the replica count changed meanwhile)."""
    if group is None:
        return
    extra = stored - reserved
    updated = StorageQuota.objects.filter(_within_limit(extra) if extra > 0 else Q(), group=group).update(
        reserved_bytes=Greatest(F("reserved_bytes") - reserved, 0), used_bytes=F("used_bytes") + stored
    )
    if not updated:
        raise _refuse(group, extra, field)


def charge(group, nbytes: int, *, field: str = "replicas") -> None:
    """Stored bytes change without an upload (more or fewer replicas, files removed); growth is checked."""
    if group is None or nbytes == 0:
        return
    quota = quota_of(group)
    condition = _within_limit(nbytes) if nbytes > 0 else Q()
    if not StorageQuota.objects.filter(condition, pk=quota.pk).update(used_bytes=Greatest(F("used_bytes") + nbytes, 0)):
        raise _refuse(group, nbytes, field)
