"""The API tests' fixtures (``api``, fresh throttle counters), imported lazily so pure tests run with -p no:django."""

import pytest


@pytest.fixture(autouse=True)
def _fresh_throttle_counters(request, monkeypatch):
    if not request.config.pluginmanager.hasplugin("django"):
        yield
        return
    from django.core.cache import cache

    monkeypatch.setenv("AIPOOL_THROTTLE_CACHE", "local")
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def api():
    """``api(user)``: an APIClient sending a fresh read/write token of `user`; no user: anonymous."""
    from rest_framework.test import APIClient

    from api.services import token_create

    def make(user=None):
        client = APIClient()
        if user is not None:
            _, secret = token_create(user=user, name="test", scopes=("read", "write"))
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client

    return make
