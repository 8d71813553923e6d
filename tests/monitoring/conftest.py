from tests.api.conftest import _fresh_throttle_counters, api  # noqa: F401  (the API tests' fixtures, reused)
