import pytest

from tests.notifications.receiver import Receiver


@pytest.fixture
def receiver():
    running = Receiver().start()
    yield running
    running.stop()


@pytest.fixture(autouse=True)
def _quick_retries(settings):
    settings.AIPOOL_NOTIFY_BACKOFF_SECONDS = 1
    settings.AIPOOL_WEBHOOK_TIMEOUT = 5


@pytest.fixture
def api():
    """``api(user)``: an APIClient with a fresh read+write token of `user`."""
    from rest_framework.test import APIClient

    from api.services import token_create

    def make(user):
        client = APIClient()
        _, secret = token_create(user=user, name="test", scopes=("read", "write"), expires_days=None)
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client

    return make
