import pytest


@pytest.fixture
def api(api):
    """``api(user)``: an APIClient with a fresh read-only token of `user`: reports need no more."""
    return lambda user: api(user, scopes=("read",))
