"""Group pages for members, and the tenant admin's pages: members, roles, groups and group limits of their tenant.

Reads start from ``visible_to(user, VIEW)`` (another tenant's page is 404); changes need ``visible_to(user, CHANGE)``
(a member of the tenant who is not its admin gets 403). Writes go through the tenant services, which audit them.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Prefetch
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from api import services as api_services
from cluster.models import Partition
from jobs.models import Job
from jobs.selectors import GroupQuota, Usage, group_usage, quota_for
from portal.forms import GroupCreateForm, GroupLimitsForm, MemberAddForm, MemberChangeForm
from portal.views.meters import meters_for
from tenants import services as tenant_services
from tenants.models import Group, GroupMember, Membership, Tenant
from tenants.scoping import CHANGE, VIEW


def _tenant(user, name: str, action: str = CHANGE) -> Tenant:
    tenant = Tenant.objects.visible_to(user, VIEW).filter(name=name).first()
    if tenant is None:
        raise Http404("no such tenant")
    if action == CHANGE and not Tenant.objects.visible_to(user, CHANGE).filter(pk=tenant.pk).exists():
        raise PermissionDenied(f"only admins of tenant {tenant.name} manage its members and groups")
    return tenant


def _group(user, name: str) -> Group:
    group = (
        Group.objects.visible_to(user, VIEW)
        .select_related("tenant", "parent", "default_partition")
        .prefetch_related("allowed_partitions")
        .filter(name=name)
        .first()
    )
    if group is None:
        raise Http404("no such group")
    return group


def _tenant_groups(user, tenant: Tenant) -> list[Group]:
    return list(Group.objects.visible_to(user, VIEW).filter(tenant=tenant).order_by("path"))


def _messages_from(request, exc: Exception) -> None:
    if isinstance(exc, ValidationError):
        for text in exc.messages:
            messages.error(request, text)
    else:
        messages.error(request, str(exc))


# --- tenant admin ------------------------------------------------------------------------------------------------


@login_required
def tenant_detail(request, name: str):
    tenant = _tenant(request.user, name)
    groups = _tenant_groups(request.user, tenant)
    usage = group_usage(groups)
    memberships = (
        Membership.objects.visible_to(request.user, VIEW)
        .filter(tenant=tenant)
        .select_related("user")
        .prefetch_related(
            Prefetch(
                "user__group_memberships",
                queryset=GroupMember.objects.visible_to(request.user, VIEW)
                .filter(group__tenant=tenant)
                .select_related("group"),
            )
        )
        .order_by("user__username")
    )
    members = []
    for membership in memberships:
        current = sorted(gm.group.name for gm in membership.user.group_memberships.all())
        form = MemberChangeForm(
            initial={"role": membership.role, "groups": current}, tenant_groups=groups, prefix=f"m{membership.pk}"
        )
        members.append({"membership": membership, "groups": current, "form": form})
    job_counts = dict(
        Job.objects.visible_to(request.user, VIEW)
        .filter(tenant=tenant)
        .active()
        .values_list("group_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    group_rows = [
        {
            "group": g,
            "meters": meters_for(GroupQuota(group=g, usage=usage.get(g.pk) or Usage(), user_usage=Usage())),
            "active_jobs": job_counts.get(g.pk, 0),
            "depth": g.path.strip("/").count("/"),
        }
        for g in groups
    ]
    context = {
        "tenant": tenant,
        "members": members,
        "group_rows": group_rows,
        "add_form": MemberAddForm(tenant_groups=groups),
        "group_form": GroupCreateForm(tenant_groups=groups),
        "tab": request.GET.get("tab", "members"),
    }
    return render(request, "tenants/detail.html", context)


@login_required
@require_POST
def tenant_member_add(request, name: str):
    tenant = _tenant(request.user, name)
    groups = _tenant_groups(request.user, tenant)
    form = MemberAddForm(request.POST, tenant_groups=groups)
    if form.is_valid():
        chosen = [g for g in groups if g.name in form.cleaned_data["groups"]]
        try:
            api_services.membership_create(
                actor=request.user, user=form.user, tenant=tenant, role=form.cleaned_data["role"], groups=chosen
            )
        except (ValidationError, api_services.Conflict) as exc:
            _messages_from(request, exc)
        else:
            messages.success(request, f"{form.user.username} added to {tenant.name} as {form.cleaned_data['role']}.")
    else:
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, error)
    return redirect("tenant-detail", name=tenant.name)


def _membership(user, tenant: Tenant, pk: int) -> Membership:
    membership = (
        Membership.objects.visible_to(user, CHANGE)
        .filter(tenant=tenant, pk=pk)
        .select_related("user", "tenant")
        .first()
    )
    if membership is None:
        raise Http404("no such membership")
    return membership


@login_required
@require_POST
def tenant_member_change(request, name: str, pk: int):
    tenant = _tenant(request.user, name)
    membership = _membership(request.user, tenant, pk)
    groups = _tenant_groups(request.user, tenant)
    form = MemberChangeForm(request.POST, tenant_groups=groups, prefix=f"m{membership.pk}")
    if form.is_valid():
        chosen = [g for g in groups if g.name in form.cleaned_data["groups"]]
        try:
            api_services.membership_update(
                actor=request.user, membership=membership, role=form.cleaned_data["role"], groups=chosen
            )
        except ValidationError as exc:
            _messages_from(request, exc)
        else:
            messages.success(request, f"Saved {membership.user.username}: {form.cleaned_data['role']}.")
    else:
        messages.error(request, "Choose a role and the member's groups.")
    return redirect("tenant-detail", name=tenant.name)


@login_required
@require_POST
def tenant_member_remove(request, name: str, pk: int):
    tenant = _tenant(request.user, name)
    membership = _membership(request.user, tenant, pk)
    try:
        tenant_services.membership_remove(actor=request.user, user=membership.user, tenant=tenant)
    except ValidationError as exc:
        _messages_from(request, exc)
    else:
        messages.success(request, f"{membership.user.username} removed from {tenant.name} and its groups.")
    return redirect("tenant-detail", name=tenant.name)


@login_required
@require_POST
def tenant_group_add(request, name: str):
    tenant = _tenant(request.user, name)
    groups = _tenant_groups(request.user, tenant)
    form = GroupCreateForm(request.POST, tenant_groups=groups)
    if form.is_valid():
        data = form.cleaned_data
        parent = next((g for g in groups if g.name == data["parent"]), None)
        partitions = list(Partition.objects.filter(name__in=data["partitions"]))
        try:
            group = api_services.group_create(
                actor=request.user,
                tenant=tenant,
                name=data["name"],
                parent=parent,
                partitions=partitions,
                description=data["description"],
            )
        except ValidationError as exc:
            _messages_from(request, exc)
        else:
            messages.success(request, f"Group {group.name} created. Set its limits below.")
            return redirect("group-detail", name=group.name)
    else:
        for field, errors in form.errors.items():
            for error in errors:
                messages.error(request, f"{field}: {error}")
    return redirect(f"/tenants/{tenant.name}/?tab=groups")


# --- group pages -------------------------------------------------------------------------------------------------


@login_required
def group_detail(request, name: str):
    group = _group(request.user, name)
    admin = Group.objects.visible_to(request.user, CHANGE).filter(pk=group.pk).exists()
    quota = next((q for q in quota_for(request.user) if q.group.pk == group.pk), None)
    if quota is None:
        quota = GroupQuota(group=group, usage=group_usage([group]).get(group.pk) or Usage(), user_usage=Usage())
    members = GroupMember.objects.visible_to(request.user, VIEW).filter(group=group).select_related("user")
    jobs = (
        Job.objects.visible_to(request.user, VIEW)
        .filter(group=group)
        .select_related("user", "partition", "group")
        .order_by("-id")[:20]
    )
    context = {
        "group": group,
        "meters": meters_for(quota),
        "members": members,
        "jobs": jobs,
        "admin": admin,
        "limits_form": GroupLimitsForm(initial=group.limits_snapshot()) if admin else None,
        "partitions": [p.name for p in group.allowed_partitions.all()],
    }
    return render(request, "tenants/group.html", context)


@login_required
@require_POST
def group_limits(request, name: str):
    group = _group(request.user, name)
    if not Group.objects.visible_to(request.user, CHANGE).filter(pk=group.pk).exists():
        raise PermissionDenied(f"only admins of tenant {group.tenant.name} may change group {group.name}")
    form = GroupLimitsForm(request.POST)
    if form.is_valid():
        try:
            tenant_services.limits_set(actor=request.user, target=group, changes=form.limit_changes(group))
        except ValidationError as exc:
            _messages_from(request, exc)
        else:
            messages.success(request, f"Limits of {group.name} saved.")
    else:
        for field, errors in form.errors.items():
            for error in errors:
                messages.error(request, f"{GroupLimitsForm.LABELS.get(field, field)}: {error}")
    return redirect("group-detail", name=group.name)
