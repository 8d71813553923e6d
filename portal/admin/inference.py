"""Admin for inference services: services with their replicas, keys and scaling events, read-only. What changes
them goes through ``inference.services`` (delete cancels the replica jobs; revoke keeps the key's row)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Count, Q

from inference import services
from inference.models import InferenceService, Replica, ReplicaState, ScalingEvent, ServiceKey


class ReadOnlyMixin:
    """Rows written by services and the reconcile only; the admin shows them."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class ReplicaInline(ReadOnlyMixin, admin.TabularInline):
    model = Replica
    fields = ("generation", "state", "job", "url", "message", "ready_at", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def get_queryset(self, request):
        return super().get_queryset(request).exclude(state=ReplicaState.TERMINATED).select_related("job")


@admin.register(InferenceService)
class InferenceServiceAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("name", "tenant", "group", "state", "ready", "desired_replicas", "min_replicas", "max_replicas",
                    "accelerator_type", "generation", "updated_at")  # fmt: skip
    list_filter = ("state", "accelerator_type", "tenant")
    list_select_related = ("tenant", "group")
    search_fields = ("name", "model_ref")
    inlines = (ReplicaInline,)
    readonly_fields = ("conditions", "spec")

    def get_queryset(self, request):
        ready = Count("replicas", filter=Q(replicas__state=ReplicaState.READY))
        return super().get_queryset(request).annotate(ready_count=ready)

    @admin.display(description="ready", ordering="ready_count")
    def ready(self, obj):
        return obj.ready_count

    def get_deleted_objects(self, objs, request):
        # Keys and events go with their service (the cascade); they are never deleted on their own, so their own
        # missing delete permission must not block deleting the service.
        deleted, counts, _perms_needed, protected = super().get_deleted_objects(objs, request)
        return deleted, counts, set(), protected

    def delete_model(self, request, obj):
        services.service_delete(user=request.user, service=obj)

    def delete_queryset(self, request, queryset):
        for service in queryset:
            services.service_delete(user=request.user, service=service)


@admin.register(ServiceKey)
class ServiceKeyAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("name", "prefix", "service", "tenant", "created_by", "created_at", "last_used_at", "revoked_at")
    list_filter = ("tenant",)
    list_select_related = ("service", "tenant", "created_by")
    search_fields = ("name", "prefix", "service__name")
    exclude = ("key_hash",)
    actions = ("revoke",)

    def has_delete_permission(self, request, obj=None):
        return False  # revoked, never deleted: the audit trail names the key

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request, queryset):
        for key in queryset.filter(revoked_at__isnull=True):
            services.key_revoke(user=request.user, key=key)
        messages.success(request, "Revoked.")


@admin.register(ScalingEvent)
class ScalingEventAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("at", "service", "from_replicas", "to_replicas", "wanted", "blocked_by_quota", "reason")
    list_filter = ("blocked_by_quota",)
    list_select_related = ("service",)
    search_fields = ("service__name", "reason")
    date_hierarchy = "at"

    def has_delete_permission(self, request, obj=None):
        return False
