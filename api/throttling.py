"""Request rate limits per token (or per signed-in user, or per address), rates from AIPOOL_API_RATE.

Counted in fixed windows in a cache every web worker shares (Redis, when the pool has one): a per-process count
would let each gunicorn worker grant the full rate again. One atomic increment per request, whatever the rate.
"""

from __future__ import annotations

import functools
import math

from django.conf import settings
from django.core.cache import caches
from rest_framework.throttling import SimpleRateThrottle

from api.models import ApiToken
from portal.env import env_str

LOCAL = "local"


def throttle_cache():
    """AIPOOL_THROTTLE_CACHE: a redis:// URL, or ``local`` for this process's default cache. Unset: the Redis
    broker when Celery uses one, else the default cache (the embedded default runs one web worker per core)."""
    url = env_str("AIPOOL_THROTTLE_CACHE") or env_str("CELERY_BROKER_URL") or env_str("REDIS_URL")
    if not url.startswith(("redis://", "rediss://")):
        url = LOCAL
    return _cache(url, settings.DATABASES["default"]["NAME"])


@functools.cache
def _cache(url: str, database: str):
    if url == LOCAL:
        return caches["default"]
    from django.core.cache.backends.redis import RedisCache

    # Prefixed with the database: pools (and test stacks) sharing one Redis never share counters of token ids.
    return RedisCache(url, {"KEY_PREFIX": f"aipool-throttle:{database}"})


def count_hit(cache, key: str, *, timeout: int) -> int:
    """Add one to the window's count and return it; the key lives `timeout` seconds from its first hit."""
    from django.core.cache.backends.redis import RedisCache

    if isinstance(cache, RedisCache):
        # One round trip: Django's add + incr take three (incr asks EXISTS first), on every API request.
        key = cache.make_and_validate_key(key)
        pipe = cache._cache.get_client(key, write=True).pipeline(transaction=False)
        pipe.set(key, 0, ex=timeout, nx=True)
        pipe.incr(key)
        return pipe.execute()[1]
    cache.add(key, 0, timeout=timeout)
    try:
        return cache.incr(key)
    except ValueError:  # the window's key expired between add and incr
        cache.set(key, 1, timeout=timeout)
        return 1


class TokenRateThrottle(SimpleRateThrottle):
    scope = "api"

    def get_cache_key(self, request, view) -> str:
        # Keyed on the token rather than the user: a runaway script with one token does not lock its owner
        # out of the browser or of their other tokens.
        if isinstance(request.auth, ApiToken):
            ident = f"token:{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"addr:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def allow_request(self, request, view) -> bool:
        if self.rate is None:
            return True
        self.now = self.timer()
        window = int(self.now // self.duration)
        self.window_end = (window + 1) * self.duration
        key = f"{self.get_cache_key(request, view)}:{window}"
        return count_hit(throttle_cache(), key, timeout=self.duration + 1) <= self.num_requests

    def wait(self) -> float:
        return max(1, math.ceil(self.window_end - self.now))
