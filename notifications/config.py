"""Notification settings, read at call time: Django settings first (tests override them), else the environment."""

from django.conf import settings

from portal.env import env_int


def _setting(name: str, default: int) -> int:
    value = getattr(settings, name, None)
    return int(value) if value is not None else env_int(name, default)


def max_attempts() -> int:
    """AIPOOL_NOTIFY_MAX_ATTEMPTS (6): tries of one delivery before it is marked failed."""
    return max(1, _setting("AIPOOL_NOTIFY_MAX_ATTEMPTS", 6))


def backoff_seconds() -> int:
    """AIPOOL_NOTIFY_BACKOFF_SECONDS (30): wait before the first retry; doubled before each next one."""
    return _setting("AIPOOL_NOTIFY_BACKOFF_SECONDS", 30)


def timeout_seconds() -> int:
    """AIPOOL_WEBHOOK_TIMEOUT (10): seconds a webhook receiver has to answer."""
    return max(1, _setting("AIPOOL_WEBHOOK_TIMEOUT", 10))


def budget_warn_percent() -> int:
    """AIPOOL_BUDGET_WARN_PERCENT (90): budget.nearly_spent once a GrpTRESMins budget is this much spent."""
    return _setting("AIPOOL_BUDGET_WARN_PERCENT", 90)


def backoff_for(attempt: int) -> int:
    """Seconds before attempt `attempt + 1`: base, 2 x base, 4 x base, …"""
    return backoff_seconds() * 2 ** (attempt - 1)
