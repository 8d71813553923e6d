"""Admin for tenants, groups, memberships and the audit log.

Every save and delete calls ``tenants.services``, never ``Model.save()``: the services lock, validate and
write the audit log, so a change made here reads in the log exactly like one made with the CLI or the API.
"""

from __future__ import annotations

from django.contrib import admin
from django.db import transaction
from django.db.models import F, IntegerField, OuterRef
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe

from portal.admin._common import (
    ServiceWritesMixin,
    adopt,
    audit_history_link,
    job_usage_annotations,
    other_tres_usage,
    running_jobs_cell,
    subquery_aggregate,
    subtree_correlation,
    tenant_correlation,
    tres_usage_cell,
    usage_cell,
)
from tenants import services
from tenants.forms import GroupForm, GroupMemberForm, TenantForm
from tenants.limits import FIELD_LABELS, TRES_FIELDS
from tenants.models import AssociationLimits, AuditLog, Group, GroupMember, Membership, Tenant
from vocab.slurmtime import format_minutes
from vocab.tres import ACCEL, CPU, KNOWN_TRES, format_tres

LIMITS_FIELDSET = ("Limits (Slurm association)", {"fields": AssociationLimits.LIMIT_FIELDS})


def _count(model, **correlation):
    return subquery_aggregate(model.objects.filter(**correlation), "COUNT", F("pk"), IntegerField())


class UsageColumnsMixin:
    """List columns and a change-page summary from the ``job_usage_annotations`` of the queryset."""

    @admin.display(description="accelerators", ordering="usage_accel")
    def accelerators(self, obj):
        return tres_usage_cell(obj, ACCEL)

    @admin.display(description="cpus", ordering="usage_cpu")
    def cpus(self, obj):
        return tres_usage_cell(obj, CPU)

    @admin.display(description="other GrpTRES")
    def other_tres(self, obj):
        return other_tres_usage(obj)

    @admin.display(description="jobs running / GrpJobs", ordering="usage_running")
    def running_jobs(self, obj):
        return running_jobs_cell(obj)

    @admin.display(description="pending jobs", ordering="usage_pending")
    def pending_jobs(self, obj):
        return obj.usage_pending

    @admin.display(description="usage now")
    def usage_summary(self, obj):
        cells = [tres_usage_cell(obj, tres) for tres in KNOWN_TRES]
        cells.append(running_jobs_cell(obj))
        cells.append(
            usage_cell("submitted (running + pending)", obj.usage_running + obj.usage_pending, obj.grp_submit_jobs)
        )
        return format_html_join(mark_safe("<br>"), "{}", ((cell,) for cell in cells))


@admin.register(Tenant)
class TenantAdmin(ServiceWritesMixin, UsageColumnsMixin, admin.ModelAdmin):
    form = TenantForm
    list_display = (
        "name",
        "groups_count",
        "members_count",
        "accelerators",
        "cpus",
        "other_tres",
        "running_jobs",
    )
    search_fields = ("name", "description")

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                groups_count=_count(Group, tenant=OuterRef("pk")),
                members_count=_count(Membership, tenant=OuterRef("pk")),
                **job_usage_annotations(**tenant_correlation()),
            )
        )

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return [(None, {"fields": ("name", "description", "shares")}), LIMITS_FIELDSET]
        return [
            (None, {"fields": ("name", "description", "shares", "audit_history")}),
            LIMITS_FIELDSET,
            ("Usage now (running jobs of the whole tenant)", {"fields": ("usage_summary",)}),
        ]

    def get_readonly_fields(self, request, obj=None):
        # No service renames a tenant or edits its description: its name is its Slurm-side identity.
        if obj is None:
            return ()
        return ("name", "description", "audit_history", "usage_summary")

    @admin.display(description="groups", ordering="groups_count")
    def groups_count(self, obj):
        return obj.groups_count

    @admin.display(description="members", ordering="members_count")
    def members_count(self, obj):
        return obj.members_count

    @admin.display(description="audit log")
    def audit_history(self, obj):
        return audit_history_link(tenant__id__exact=obj.pk)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if change:
            tenant = Tenant.objects.get(pk=obj.pk)
            if "shares" in data:
                tenant = services.tenant_update(actor=request.user, tenant=tenant, shares=data["shares"])
        else:
            tenant = services.tenant_create(
                actor=request.user, name=data["name"], description=data["description"], shares=data.get("shares", 1)
            )
        changes = form.limit_changes(tenant)
        if changes:
            tenant = services.limits_set(actor=request.user, target=tenant, changes=changes)
        adopt(obj, tenant)

    def delete_model(self, request, obj):
        services.tenant_delete(actor=request.user, tenant=obj)

    @transaction.atomic
    def delete_queryset(self, request, queryset):
        for tenant in queryset:
            services.tenant_delete(actor=request.user, tenant=tenant)


class GroupMemberInline(admin.TabularInline):
    model = GroupMember
    form = GroupMemberForm
    fields = ("user",)
    autocomplete_fields = ("user",)
    extra = 0

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("user", "group")

    def has_change_permission(self, request, obj=None):
        # Existing rows are read-only: moving a member is a removal plus an addition, each audited.
        return False


@admin.register(Group)
class GroupAdmin(ServiceWritesMixin, UsageColumnsMixin, admin.ModelAdmin):
    form = GroupForm
    inlines = (GroupMemberInline,)
    list_display = (
        "name",
        "tenant",
        "parent",
        "partitions",
        "shares",
        "accelerators",
        "cpus",
        "other_tres",
        "running_jobs",
        "pending_jobs",
    )
    list_filter = ("tenant",)
    list_select_related = ("tenant", "parent")
    search_fields = ("name", "description", "tenant__name")
    filter_horizontal = ("allowed_partitions",)

    def get_queryset(self, request):
        # Usage covers the group's subtree: a parent's GrpTRES binds the jobs of every group below it.
        return (
            super()
            .get_queryset(request)
            .select_related("tenant", "parent", "default_partition")
            .prefetch_related("allowed_partitions")
            .annotate(**job_usage_annotations(**subtree_correlation()))
        )

    def get_fieldsets(self, request, obj=None):
        partitions = (
            "Partitions and fairshare",
            {"fields": ("allowed_partitions", "default_partition", "shares")},
        )
        if obj is None:
            return [
                (None, {"fields": ("tenant", "name", "parent", "description")}),
                partitions,
                LIMITS_FIELDSET,
            ]
        return [
            (None, {"fields": ("tenant", "name", "parent", "path", "description", "audit_history")}),
            partitions,
            LIMITS_FIELDSET,
            (
                "Usage now (running jobs of this group and every group below it)",
                {"fields": ("usage_summary",)},
            ),
        ]

    def get_readonly_fields(self, request, obj=None):
        # Name and parent make the path of the group's whole subtree, and its jobs are charged to the tenant:
        # no service moves them.
        if obj is None:
            return ()
        return ("tenant", "name", "parent", "path", "audit_history", "usage_summary")

    @admin.display(description="partitions")
    def partitions(self, obj):
        return ", ".join(p.name for p in obj.allowed_partitions.all())

    @admin.display(description="audit log")
    def audit_history(self, obj):
        return audit_history_link(target_type="group", target_id=obj.pk)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if change:
            group = services.group_update(
                actor=request.user,
                group=obj,
                partitions=list(data["allowed_partitions"]),
                default_partition=data["default_partition"],
                shares=data["shares"],
                description=data["description"],
            )
        else:
            group = services.group_create(
                actor=request.user,
                tenant=data["tenant"],
                name=data["name"],
                parent=data["parent"],
                partitions=list(data["allowed_partitions"]),
                default_partition=data["default_partition"],
                shares=data["shares"],
                description=data["description"],
            )
        changes = form.limit_changes(group)
        if changes:
            group = services.limits_set(actor=request.user, target=group, changes=changes)
        adopt(obj, group)

    def save_related(self, request, form, formsets, change):
        # No form.save_m2m(): the partitions were set by group_create / group_update, with the audit entry.
        for formset in formsets:
            self.save_formset(request, form, formset, change)

    def save_formset(self, request, form, formset, change):
        formset.save(commit=False)
        for member in formset.deleted_objects:
            services.group_member_remove(actor=request.user, user=member.user, group=form.instance)
        for member in formset.new_objects:
            services.group_member_add(actor=request.user, user=member.user, group=form.instance)

    def delete_model(self, request, obj):
        services.group_delete(actor=request.user, group=obj)

    @transaction.atomic
    def delete_queryset(self, request, queryset):
        # Deepest first, so a parent selected together with its children goes after them.
        for group in sorted(queryset, key=lambda g: g.path.count("/"), reverse=True):
            services.group_delete(actor=request.user, group=group)


@admin.register(Membership)
class MembershipAdmin(ServiceWritesMixin, admin.ModelAdmin):
    list_display = ("user", "tenant", "role")
    list_filter = ("role", "tenant")
    list_select_related = ("user", "tenant")
    search_fields = ("user__username", "tenant__name")
    autocomplete_fields = ("user",)
    fields = ("user", "tenant", "role")

    def get_readonly_fields(self, request, obj=None):
        return ("user", "tenant") if obj is not None else ()

    def save_model(self, request, obj, form, change):
        membership = services.membership_set(actor=request.user, user=obj.user, tenant=obj.tenant, role=obj.role)
        adopt(obj, membership)

    def delete_model(self, request, obj):
        services.membership_remove(actor=request.user, user=obj.user, tenant=obj.tenant)

    @transaction.atomic
    def delete_queryset(self, request, queryset):
        for membership in queryset.select_related("user", "tenant"):
            services.membership_remove(actor=request.user, user=membership.user, tenant=membership.tenant)


@admin.register(GroupMember)
class GroupMemberAdmin(ServiceWritesMixin, admin.ModelAdmin):
    form = GroupMemberForm
    list_display = ("user", "group", "tenant")
    list_filter = ("group__tenant",)
    list_select_related = ("user", "group__tenant")
    search_fields = ("user__username", "group__name")
    autocomplete_fields = ("user", "group")

    @admin.display(description="tenant", ordering="group__tenant__name")
    def tenant(self, obj):
        return obj.group.tenant

    def has_change_permission(self, request, obj=None):
        # Moving a member is a removal plus an addition, each audited: no in-place edit.
        return False

    def save_model(self, request, obj, form, change):
        member = services.group_member_add(actor=request.user, user=obj.user, group=obj.group)
        adopt(obj, member)

    def delete_model(self, request, obj):
        services.group_member_remove(actor=request.user, user=obj.user, group=obj.group)

    @transaction.atomic
    def delete_queryset(self, request, queryset):
        for member in queryset.select_related("user", "group__tenant"):
            services.group_member_remove(actor=request.user, user=member.user, group=member.group)


# Audit entries name limits as sacctmgr does; these hold TRES dicts and minutes.
_TRES_KEYS = {FIELD_LABELS[field] for field in TRES_FIELDS} | set(TRES_FIELDS)
_MINUTES_KEYS = {FIELD_LABELS["max_wall"], "max_wall"}


def _format_audit_value(key: str, value) -> str:
    if key in _TRES_KEYS and isinstance(value, dict):
        return format_tres(value) or "none"
    if key in _MINUTES_KEYS and isinstance(value, int):
        return format_minutes(value)
    if value is None:
        return "none"
    if isinstance(value, list):
        return ", ".join(str(item) for item in value) or "none"
    return str(value)


def describe_changes(changes: dict) -> list[str]:
    """``{"GrpTRES": [{"gres/accelerator": 16}, {...: 800}]}`` → ``GrpTRES: gres/accelerator=16 → …=800``."""
    lines = []
    for key, pair in (changes or {}).items():
        if isinstance(pair, list) and len(pair) == 2:
            before, after = pair
            lines.append(f"{key}: {_format_audit_value(key, before)} → {_format_audit_value(key, after)}")
        else:
            lines.append(f"{key}: {_format_audit_value(key, pair)}")
    return lines


@admin.register(AuditLog)
class AuditLogAdmin(admin.ModelAdmin):
    list_display = ("at", "actor", "tenant", "action", "target_repr", "changes_display")
    list_filter = ("action", "tenant")
    list_select_related = ("actor", "tenant")
    search_fields = ("target_repr", "action", "actor__username")
    date_hierarchy = "at"
    fields = ("at", "actor", "tenant", "action", "target_type", "target_id", "target_repr", "changes_display")
    readonly_fields = fields

    @admin.display(description="changes")
    def changes_display(self, obj):
        return format_html_join(mark_safe("<br>"), "{}", ((line,) for line in describe_changes(obj.changes)))

    # The audit trail is evidence: written only by the services, never edited or pruned here.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
