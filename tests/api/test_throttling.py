"""Rate limits are counted where every web worker sees the same count."""

import os
import random

import pytest
import redis
from django.core.cache import caches

from api.throttling import TokenRateThrottle, throttle_cache

pytestmark = pytest.mark.django_db


def _redis_url() -> str:
    url = os.environ.get("CELERY_BROKER_URL") or os.environ.get("REDIS_URL") or ""
    if not url.startswith("redis://"):
        pytest.skip("no Redis configured (embedded default)")
    try:
        redis.Redis.from_url(url).ping()
    except redis.ConnectionError:
        pytest.skip("Redis is not reachable")
    return url


@pytest.fixture
def shared_counts(monkeypatch):
    monkeypatch.setenv("AIPOOL_THROTTLE_CACHE", _redis_url())
    monkeypatch.setattr(TokenRateThrottle, "THROTTLE_RATES", {"api": "2/min"})
    # A window of its own in the far future: counts of earlier runs against the same Redis cannot leak in.
    start = 60.0 * random.randrange(10**9, 2 * 10**9)
    monkeypatch.setattr(TokenRateThrottle, "timer", lambda self: start + 5)


def test_the_default_cache_is_redis_when_celery_uses_it(monkeypatch):
    monkeypatch.delenv("AIPOOL_THROTTLE_CACHE")
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    assert type(throttle_cache()).__name__ == "RedisCache"


def test_without_redis_the_count_stays_in_the_process(monkeypatch):
    monkeypatch.delenv("AIPOOL_THROTTLE_CACHE")
    monkeypatch.setenv("CELERY_BROKER_URL", "sqla+sqlite:///var/celery.sqlite3")
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert type(throttle_cache()).__name__ != "RedisCache"


def test_requests_of_one_token_are_counted_across_workers(world, api, shared_counts):
    client = api(world.alice)
    assert [client.get("/api/v1/me/").status_code for _ in range(2)] == [200, 200]
    # Another gunicorn worker has its own process memory and the same Redis.
    caches["default"].clear()
    response = client.get("/api/v1/me/")
    assert response.status_code == 429 and response["Retry-After"] == "55"
