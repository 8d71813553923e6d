"""Monitoring settings, read at call time: django.conf.settings when set there (tests), else the environment.

| variable | default | meaning |
| AIPOOL_MONITOR_SECONDS | 10 | sampling period |
| AIPOOL_MONITOR_RAW_HOURS | 6 | raw samples kept |
| AIPOOL_MONITOR_MINUTE_HOURS | 48 | 1-minute rollups kept |
| AIPOOL_MONITOR_TEN_MINUTE_DAYS | 90 | 10-minute rollups kept |
| AIPOOL_IDLE_THRESHOLD | 10 | percent utilisation below which allocated accelerators count as idle |
| AIPOOL_IDLE_MINUTES | 30 | idle this long is flagged |
| AIPOOL_METRICS_TOKEN | (none) | bearer token /metrics requires; unset: /metrics is open |
"""

from __future__ import annotations

import os

from django.conf import settings

DEFAULTS = {
    "AIPOOL_MONITOR_SECONDS": 10.0,
    "AIPOOL_MONITOR_RAW_HOURS": 6.0,
    "AIPOOL_MONITOR_MINUTE_HOURS": 48.0,
    "AIPOOL_MONITOR_TEN_MINUTE_DAYS": 90.0,
    "AIPOOL_IDLE_THRESHOLD": 10.0,
    "AIPOOL_IDLE_MINUTES": 30.0,
}


def number(name: str) -> float:
    """A positive number setting; a bad value names the variable instead of failing somewhere deep."""
    value = getattr(settings, name, None)
    if value is None:
        raw = os.environ.get(name, "")
        value = raw if raw.strip() else DEFAULTS[name]
    try:
        result = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a number, got {value!r}") from exc
    if result < 0 or (result == 0 and name != "AIPOOL_IDLE_THRESHOLD"):
        raise ValueError(f"{name} must be positive, got {value!r}")
    return result


def sample_seconds() -> float:
    return number("AIPOOL_MONITOR_SECONDS")


def idle_threshold() -> float:
    """0..1 (the setting is in percent)."""
    return min(number("AIPOOL_IDLE_THRESHOLD"), 100.0) / 100.0


def idle_minutes() -> float:
    return number("AIPOOL_IDLE_MINUTES")


def retention_seconds() -> dict[int, float]:
    """How long samples of each resolution are kept."""
    return {
        0: number("AIPOOL_MONITOR_RAW_HOURS") * 3600,
        60: number("AIPOOL_MONITOR_MINUTE_HOURS") * 3600,
        600: number("AIPOOL_MONITOR_TEN_MINUTE_DAYS") * 86400,
    }


def metrics_token() -> str:
    value = getattr(settings, "AIPOOL_METRICS_TOKEN", None)
    return (value if value is not None else os.environ.get("AIPOOL_METRICS_TOKEN", "")).strip()
