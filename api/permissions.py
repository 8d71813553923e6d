"""Permissions: token scopes, and the 403 for objects a user sees but may not change (``visible_to`` decides)."""

from __future__ import annotations

from rest_framework import exceptions, permissions

from api.models import READ, WRITE, ApiToken
from tenants.scoping import CHANGE


class TokenScope(permissions.BasePermission):
    """A token needs the read scope for safe methods and the write scope for everything else.

    Session-authenticated requests carry no token and are not limited by scopes.
    """

    code = "insufficient_scope"

    def has_permission(self, request, view) -> bool:
        token = request.auth
        if not isinstance(token, ApiToken):
            return True
        if request.method in permissions.SAFE_METHODS:
            needed = (READ, WRITE)
        else:
            needed = (WRITE,)
        if any(token.has_scope(scope) for scope in needed):
            return True
        self.message = f"this token lacks the '{needed[0]}' scope needed for {request.method}"
        return False


def require_change(request, obj, message: str) -> None:
    """Raise 403 unless `request.user` may change `obj`. Callers fetch `obj` through VIEW first, so a row the user
    cannot see has already been answered with 404 and this never tells anyone that it exists."""
    if not type(obj).objects.visible_to(request.user, CHANGE).filter(pk=obj.pk).exists():
        raise exceptions.PermissionDenied(message)
