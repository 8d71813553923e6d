import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from api.services import token_create


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def api():
    """``api(user)``: an APIClient sending a fresh personal access token of `user`."""

    def make(user, scopes=("read", "write")) -> APIClient:
        client = APIClient()
        _, secret = token_create(user=user, name="test", scopes=scopes, expires_days=None)
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client

    return make


@pytest.fixture
def bearer():
    def make(user) -> dict:
        _, secret = token_create(user=user, name="test", scopes=("read", "write"), expires_days=None)
        return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}

    return make
