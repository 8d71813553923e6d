"""Accounting settings, read at call time: Django settings first (tests override them), else the environment."""

from django.conf import settings

from portal.env import env_int


def budget_lookback_days() -> int:
    """AIPOOL_BUDGET_LOOKBACK_DAYS (7): the window whose mean burn rate the budget forecast extends."""
    return getattr(settings, "AIPOOL_BUDGET_LOOKBACK_DAYS", None) or env_int("AIPOOL_BUDGET_LOOKBACK_DAYS", 7)
