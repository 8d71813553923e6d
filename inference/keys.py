"""Gateway keys: ``isk_`` and 32 random URL-safe characters. Only a hash is stored; the raw key is shown once."""

from __future__ import annotations

import hashlib
import secrets

KEY_PREFIX = "isk_"
SHOWN_PREFIX_LENGTH = 10


def new_raw_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(24)


def hash_key(raw: str) -> str:
    """sha256 hex of the raw key: deterministic, so the gateway finds a key by hashing what it was sent.

    A plain hash is enough (no salt, no slow KDF): keys are 192 random bits, not passwords a person chose.
    """
    return hashlib.sha256(raw.encode()).hexdigest()


def shown_prefix(raw: str) -> str:
    return raw[:SHOWN_PREFIX_LENGTH]
