"""Fixtures of the inference tests. Imports are inside fixtures: the pure tests here also run with ``-p no:django``."""

import pytest


@pytest.fixture
def api(monkeypatch, db):
    """``api(user)``: an APIClient sending a fresh personal access token of `user` (as tests/api's fixture)."""
    from django.core.cache import cache
    from rest_framework.test import APIClient

    from api.services import token_create

    # Throttle counts live in the cache, which outlives a test's rollback: this process's cache, from zero.
    monkeypatch.setenv("AIPOOL_THROTTLE_CACHE", "local")
    cache.clear()

    def make(user=None, scopes=("read", "write")) -> APIClient:
        client = APIClient()
        if user is not None:
            _, secret = token_create(user=user, name="test", scopes=scopes, expires_days=None)
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client

    yield make
    cache.clear()
