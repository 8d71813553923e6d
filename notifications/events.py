"""The events a user can be told about, in one list: the settings form, the API and the webhooks name them."""

from __future__ import annotations

from enum import StrEnum


class Event(StrEnum):
    JOB_STARTED_AFTER_WAIT = "job.started_after_wait"
    JOB_ENDED = "job.ended"  # COMPLETED or CANCELLED
    JOB_FAILED = "job.failed"  # FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY
    QUOTA_THRESHOLD = "quota.threshold"  # a group's running accelerators reached 80% / 90% of GrpTRES
    ACCELERATORS_IDLE = "job.idle"
    BUDGET_NEARLY_SPENT = "budget.nearly_spent"  # GrpTRESMins spent reached AIPOOL_BUDGET_WARN_PERCENT
    PING = "ping"  # a test delivery the user asked for


LABELS = {
    Event.JOB_STARTED_AFTER_WAIT: "a job of mine started after a long wait",
    Event.JOB_ENDED: "a job of mine ended (completed or cancelled)",
    Event.JOB_FAILED: "a job of mine failed (failed, timeout, node failure, out of memory)",
    Event.QUOTA_THRESHOLD: "a group of mine reached 80% or 90% of its accelerator limit",
    Event.ACCELERATORS_IDLE: "a job of mine holds idle accelerators",
    Event.BUDGET_NEARLY_SPENT: "a group of mine has nearly spent its GrpTRESMins budget",
}
SUBSCRIBABLE = tuple(LABELS)
