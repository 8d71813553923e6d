"""Service conditions, Kubernetes-style: ``{"type", "status", "reason", "message", "since"}``. Pure functions.

``since`` moves only when the status flips, so a page can say how long a service has been blocked.
"""

from __future__ import annotations

from datetime import datetime

READY = "Ready"
SCALE_UP_BLOCKED = "ScaleUpBlocked"
REPLICA_FAILURE = "ReplicaFailure"

TRUE, FALSE = "True", "False"


def find(conditions: list[dict], type_: str) -> dict | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def is_true(conditions: list[dict], type_: str) -> bool:
    found = find(conditions, type_)
    return bool(found and found.get("status") == TRUE)


def set_condition(
    conditions: list[dict], *, type_: str, status: str, reason: str, message: str, now: datetime
) -> list[dict]:
    """A new list with `type_` set; unchanged entries keep their ``since``."""
    previous = find(conditions, type_)
    since = previous["since"] if previous and previous.get("status") == status else now.isoformat()
    entry = {"type": type_, "status": status, "reason": reason, "message": message, "since": since}
    return [entry if c.get("type") == type_ else c for c in conditions] if previous else [*conditions, entry]


def remove(conditions: list[dict], type_: str) -> list[dict]:
    return [c for c in conditions if c.get("type") != type_]
