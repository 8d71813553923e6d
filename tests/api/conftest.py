import pytest


@pytest.fixture(autouse=True)
def _fresh_throttle_counters(fresh_throttle_counters):
    yield
