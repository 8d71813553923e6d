"""The one place that decides which tenant-owned rows a user may see or change (style.md §1).

Every view, viewset, form, admin page for non-staff and selector starts from ``Model.objects.visible_to(user, action)``.
Rows outside the result are answered with 404, exactly like rows that do not exist.

The user's tenants and groups are read once (one query) and inlined into the filter as id lists: ``tenant_id IN
(3, 7)`` lets PostgreSQL estimate the rows a user sees from its statistics, where an OR of membership subqueries made
it guess, and pick a plan that scanned a million jobs for a user whose jobs are all old (issue 5's list benchmark).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models
from django.db.models import Value
from django.db.models.signals import post_delete, post_save

VIEW = "view"
CHANGE = "change"
ACTIONS = (VIEW, CHANGE)

# Rows of the union in `memberships_of` that are group memberships, not tenant roles.
_GROUP_ROW = ""
_CACHE_ATTR = "_aipool_memberships"
# Bumped whenever any membership changes in this process, which drops every user's cached memberships. A user object
# lives for one request (or task), so what another process changes is seen from the next request on.
_generation = 0


@dataclass(frozen=True)
class Memberships:
    """What `user` belongs to: tenant id → role, and the ids of its groups."""

    roles: dict[int, str]
    group_tenants: dict[int, int]  # group id → its tenant's id

    @property
    def group_ids(self) -> tuple[int, ...]:
        return tuple(sorted(self.group_tenants))

    def groups_in(self, tenant_ids) -> list[int]:
        """The user's groups whose tenant is one of `tenant_ids`."""
        return sorted(g for g, t in self.group_tenants.items() if t in tenant_ids)

    def tenant_ids(self, roles: tuple[str, ...] | None = None) -> list[int]:
        return sorted(t for t, role in self.roles.items() if roles is None or role in roles)


def is_pool_admin(user) -> bool:
    return bool(user and user.is_authenticated and (user.is_staff or user.is_superuser))


def memberships_of(user) -> Memberships:
    """The tenants (with roles) and groups of `user`: one query, kept on the user object until a membership changes."""
    cached = getattr(user, _CACHE_ATTR, None)
    if cached is not None and cached[0] == _generation:
        return cached[1]
    generation = _generation
    memberships = _read_memberships(user)
    if user.pk is not None:
        setattr(user, _CACHE_ATTR, (generation, memberships))
    return memberships


def _read_memberships(user) -> Memberships:
    from tenants.models import GroupMember, Membership

    tenants = Membership.objects.filter(user=user).order_by().values_list("tenant_id", "role", Value(0))
    groups = (
        GroupMember.objects.filter(user=user).order_by().values_list("group_id", Value(_GROUP_ROW), "group__tenant_id")
    )
    roles: dict[int, str] = {}
    group_tenants: dict[int, int] = {}
    for pk, role, group_tenant in tenants.union(groups, all=True):
        if role == _GROUP_ROW:
            group_tenants[pk] = group_tenant
        else:
            roles[pk] = role
    return Memberships(roles=roles, group_tenants=group_tenants)


def _forget_memberships(**_kwargs) -> None:
    global _generation
    _generation += 1


for _model in ("tenants.Membership", "tenants.GroupMember"):
    post_save.connect(_forget_memberships, sender=_model, dispatch_uid=f"scoping-forget-{_model}")
    post_delete.connect(_forget_memberships, sender=_model, dispatch_uid=f"scoping-forget-{_model}-delete")


def member_tenant_ids(user, *, roles: tuple[str, ...] | None = None) -> list[int]:
    """The ids of the tenants `user` belongs to (optionally with one of `roles`), as a list to inline in a filter."""
    return memberships_of(user).tenant_ids(roles)


def member_group_ids(user) -> list[int]:
    return list(memberships_of(user).group_ids)


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
