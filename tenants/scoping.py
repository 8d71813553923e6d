"""The one place that decides which tenant-owned rows a user may see or change (style.md §1).

Every view, viewset, form, admin page for non-staff and selector starts from ``Model.objects.visible_to(user, action)``.
Rows outside the result are answered with 404, exactly like rows that do not exist.
"""

from __future__ import annotations

from django.db import models

VIEW = "view"
CHANGE = "change"
ACTIONS = (VIEW, CHANGE)


def is_pool_admin(user) -> bool:
    return bool(user and user.is_authenticated and (user.is_staff or user.is_superuser))


def member_tenant_ids(user, *, roles: tuple[str, ...] | None = None):
    """A subquery of the ids of the tenants `user` belongs to (optionally with one of `roles`)."""
    from tenants.models import Membership

    memberships = Membership.objects.filter(user=user)
    if roles:
        memberships = memberships.filter(role__in=roles)
    return memberships.values("tenant_id")


def member_group_ids(user):
    from tenants.models import GroupMember

    return GroupMember.objects.filter(user=user).values("group_id")


class TenantScopedQuerySet(models.QuerySet):
    """Default manager of every tenant-owned model. Subclasses set `tenant_field` (the lookup to the tenant id)."""

    tenant_field = "tenant"

    def visible_to(self, user, action: str = VIEW):
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r}")
        if user is None or not user.is_authenticated or not user.is_active:
            return self.none()
        if is_pool_admin(user):
            return self.all()
        return self._restrict(user, action)

    def _restrict(self, user, action: str):
        from tenants.models import Role

        roles = None if action == VIEW else (Role.ADMIN,)
        return self.filter(**{f"{self.tenant_field}__in": member_tenant_ids(user, roles=roles)})
