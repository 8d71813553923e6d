import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from api.services import token_create


@pytest.fixture(autouse=True)
def _fresh_throttle_counters(monkeypatch):
    """Throttle counters live in the cache, which outlives a test's database rollback: keep them in this process's
    cache (not the shared Redis one) and start each test from zero."""
    monkeypatch.setenv("AIPOOL_THROTTLE_CACHE", "local")
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def api():
    """``api(user, scopes=...)``: an APIClient sending a fresh personal access token of `user`; no user: anonymous."""

    def make(user=None, scopes=("read", "write"), expires_days=None) -> APIClient:
        client = APIClient()
        if user is not None:
            _, secret = token_create(user=user, name="test", scopes=scopes, expires_days=expires_days)
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client

    return make
