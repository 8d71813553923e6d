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
