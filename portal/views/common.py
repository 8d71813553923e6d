"""What several pages share: which groups a user may submit to, and scoped lookups that answer 404."""

from __future__ import annotations

from django.http import Http404

from jobs.models import Job
from tenants.models import Group, Membership, Role, Tenant
from tenants.scoping import CHANGE, VIEW


def submit_groups(user):
    """Groups `user` may charge jobs to: their groups in tenants where they are not a viewer (staff: every group)."""
    groups = Group.objects.visible_to(user, VIEW).select_related("tenant", "default_partition")
    if user.is_staff:
        return groups.order_by("tenant__name", "name")
    not_viewer = Membership.objects.filter(user=user).exclude(role=Role.VIEWER).values("tenant_id")
    return groups.filter(members__user=user, tenant__in=not_viewer).order_by("tenant__name", "name")


def my_groups(user):
    """Groups `user` is a member of (what ``quota -u`` lists)."""
    return (
        Group.objects.visible_to(user, VIEW)
        .filter(members__user=user)
        .select_related("tenant", "parent")
        .order_by("tenant__name", "name")
    )


def admin_tenants(user):
    """Tenants whose members and groups `user` may manage."""
    return Tenant.objects.visible_to(user, CHANGE).order_by("name")


def job_or_404(user, pk: int, action: str = VIEW) -> Job:
    job = (
        Job.objects.visible_to(user, action)
        .select_related("tenant", "group", "user", "partition", "runtime")
        .filter(pk=pk)
        .first()
    )
    if job is None:
        raise Http404("no such job")
    return job


def may_change(user, obj) -> bool:
    return type(obj).objects.visible_to(user, CHANGE).filter(pk=obj.pk).exists()


def is_htmx(request) -> bool:
    return request.headers.get("HX-Request") == "true"
