"""OpenAPI generation: the Bearer scheme, and the error shape documented on every operation."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema

ERROR_DESCRIPTIONS = {
    "400": "validation_error: bad input, with messages per field",
    "401": "not_authenticated: missing, invalid, expired or revoked token",
    "403": "permission_denied, or insufficient_scope for a read-only token",
    "404": "not_found: does not exist, or belongs to another tenant",
    "429": "throttled: too many requests; see Retry-After",
}


class AutoSchema(SpectacularAutoSchema):
    """Adds the error responses every operation can give, so clients see one documented shape everywhere."""

    def _get_response_bodies(self, direction="response"):
        from api.serializers import ErrorSerializer

        responses = super()._get_response_bodies(direction)
        codes = ["401", "403", "429"]
        if self.method in ("POST", "PUT", "PATCH") or (self.method == "GET" and self._is_list_view()):
            codes.append("400")
        if "{" in self.path:
            codes.append("404")
        for code in sorted(codes):
            if code not in responses:
                response = self._get_response_for_code(ErrorSerializer, code, direction=direction)
                response["description"] = ERROR_DESCRIPTIONS[code]
                responses[code] = response
        return responses


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "aip_…",
            "description": "A personal access token: `python manage.py create_token USERNAME` or POST /api/v1/tokens/",
        }
