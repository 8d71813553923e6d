"""Webhook signatures: HMAC-SHA256 over ``"<timestamp>.<body>"`` with the endpoint's secret.

Headers: ``X-Aipool-Timestamp: <unix seconds>`` and ``X-Aipool-Signature: v1=<hex digest>``. A receiver recomputes
the digest over the raw body, compares in constant time, and refuses timestamps older than a few minutes (replays).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

TIMESTAMP_HEADER = "X-Aipool-Timestamp"
SIGNATURE_HEADER = "X-Aipool-Signature"
EVENT_HEADER = "X-Aipool-Event"
DELIVERY_HEADER = "X-Aipool-Delivery"
VERSION = "v1"
TOLERANCE_SECONDS = 300


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


def sign(secret: str, timestamp: int, body: bytes) -> str:
    message = str(timestamp).encode() + b"." + body
    return f"{VERSION}=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def verify(secret: str, timestamp: str, signature: str, body: bytes, now: float, tolerance: int = TOLERANCE_SECONDS):
    """What a receiver does (and what the docs show): True only for a fresh timestamp and a matching signature."""
    if not timestamp.isdigit() or abs(now - int(timestamp)) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, int(timestamp), body), signature)
