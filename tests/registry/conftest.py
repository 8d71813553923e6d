import pytest
from django.core.cache import cache

from api.services import token_create


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def bearer():
    def make(user) -> dict:
        _, secret = token_create(user=user, name="test", scopes=("read", "write"), expires_days=None)
        return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}

    return make
