"""The gateway's and the autoscaler's settings, read from the environment at call time (portal/env.py)."""

from __future__ import annotations

import os
import socket

from portal.env import env_int, env_str


def autoscale_seconds() -> int:
    return max(1, env_int("AIPOOL_AUTOSCALE_SECONDS", 2))


def traffic_keep_seconds() -> int:
    return max(60, env_int("AIPOOL_GATEWAY_TRAFFIC_KEEP_SECONDS", 6 * 3600))


def host() -> str:
    return env_str("AIPOOL_GATEWAY_HOST", env_str("AIPOOL_HOST", "127.0.0.1"))


def port() -> int:
    return env_int("AIPOOL_GATEWAY_PORT", 8001)


def timeout_seconds() -> int:
    return max(1, env_int("AIPOOL_GATEWAY_TIMEOUT", 60))


def attempts() -> int:
    return max(1, env_int("AIPOOL_GATEWAY_ATTEMPTS", 3))


def max_body_bytes() -> int:
    return max(1, env_int("AIPOOL_GATEWAY_MAX_BODY_MB", 64)) * 1024 * 1024


def gateway_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def autoscale_policy():
    """Knative's windows unless the environment shortens them (tests and demos, as AIPOOL_SECONDS_PER_MINUTE)."""
    from inference.autoscaler import Policy

    return Policy(
        stable_window_s=float(env_int("AIPOOL_AUTOSCALE_STABLE_WINDOW", 60)),
        panic_window_s=float(env_int("AIPOOL_AUTOSCALE_PANIC_WINDOW", 6)),
        max_scale_down_rate=_env_float("AIPOOL_AUTOSCALE_SCALE_DOWN_RATE", 2.0),
        scale_down_delay_s=_env_float("AIPOOL_AUTOSCALE_SCALE_DOWN_DELAY", 0.0),
    )


def _env_float(name: str, default: float) -> float:
    raw = env_str(name)
    if raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None
