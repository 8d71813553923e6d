import pytest


@pytest.fixture
def api():
    """``api(user)``: an APIClient with a fresh read-only token of `user`."""
    from rest_framework.test import APIClient

    from api.services import token_create

    def make(user):
        client = APIClient()
        _, secret = token_create(user=user, name="test", scopes=("read",), expires_days=None)
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client

    return make
