"""What every API view shares."""

from __future__ import annotations

from rest_framework import exceptions, viewsets

from tenants.scoping import is_pool_admin


class ApiViewSet(viewsets.GenericViewSet):
    cursor_ordering = "-id"

    def require_pool_admin(self, what: str) -> None:
        if not is_pool_admin(self.request.user):
            raise exceptions.PermissionDenied(f"only pool administrators may {what}")
