"""Request rate limits per token (or per signed-in user, or per address), rates from AIPOOL_API_RATE."""

from __future__ import annotations

from rest_framework.throttling import SimpleRateThrottle

from api.models import ApiToken


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
