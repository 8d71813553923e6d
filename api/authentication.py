"""``Authorization: Bearer aip_…`` personal access tokens."""

from __future__ import annotations

from rest_framework import authentication, exceptions

from api.services import token_authenticate, token_touch


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            # Not ours: let session authentication try (the browser and the browsable API).
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("malformed Authorization header: use 'Bearer <token>'")
        try:
            secret = header[1].decode()
        except UnicodeError as exc:
            raise exceptions.AuthenticationFailed("malformed token") from exc
        token = token_authenticate(secret)
        # One message for unknown, revoked and expired alike would hide why a CLI stopped working; these
        # messages reveal nothing about other people's tokens, since the caller holds the secret.
        if token is None:
            raise exceptions.AuthenticationFailed("invalid token")
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed("token revoked")
        if token.is_expired():
            raise exceptions.AuthenticationFailed("token expired")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("user inactive")
        token_touch(token)
        return token.user, token

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (not 403) with a challenge when credentials are missing or wrong.
        return f'{self.keyword} realm="api"'
