"""Admin for the model and dataset repository: the catalog, versions, files with the state of every replica,
storage quotas, uploads and job inputs/outputs. Writes go through ``registry.services``; replica checks through
``registry.replicas``, the same code the scrub runs."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db import models, transaction

from portal.admin._common import ServiceWritesMixin, adopt
from registry import replicas, services
from registry.models import (
    ArtifactFile,
    Collection,
    JobInput,
    JobOutput,
    Replica,
    ReplicaState,
    StorageQuota,
    Upload,
    Version,
)
from registry.names import format_count, format_size


class ReadOnlyMixin:
    """Rows written by services and tasks only; the admin shows them."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class VersionInline(ReadOnlyMixin, admin.TabularInline):
    model = Version
    fields = ("number", "state", "message", "published_at", "source_job", "checkpoint")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Collection)
class CollectionAdmin(ServiceWritesMixin, admin.ModelAdmin):
    list_display = ("full_name", "kind", "tenant", "group", "visibility", "task", "license", "params", "replicas")
    list_filter = ("kind", "visibility", "from_catalog", "task", "license", "tenant")
    list_select_related = ("tenant", "group")
    search_fields = ("namespace", "name", "organisation", "summary")
    inlines = (VersionInline,)
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    fieldsets = (
        (None, {"fields": ("kind", "namespace", "name", "group", "visibility", "replicas")}),
        (
            "Card",
            {
                "fields": (
                    "summary",
                    "organisation",
                    "license",
                    "task",
                    "library",
                    "parameters",
                    "active_parameters",
                    "context_length",
                    "base_models",
                    "datasets",
                    "languages",
                    "metrics",
                    "tags",
                    "size_description",
                    "source_url",
                    "card",
                )
            },
        ),
    )

    @admin.display(description="parameters", ordering="parameters")
    def params(self, obj):
        return format_count(obj.parameters)

    def get_readonly_fields(self, request, obj=None):
        return ("kind", "namespace", "name", "group") if obj is not None else ()

    def save_model(self, request, obj, form, change):
        card = {name: form.cleaned_data[name] for name in services.CARD_FIELDS if name in form.cleaned_data}
        if change:
            saved = services.collection_update(
                actor=request.user,
                collection=obj,
                visibility=form.cleaned_data["visibility"],
                replicas=form.cleaned_data["replicas"],
                **card,
            )
        else:
            saved = services.collection_create(
                actor=request.user,
                kind=form.cleaned_data["kind"],
                name=form.cleaned_data["name"],
                namespace=form.cleaned_data.get("namespace"),
                group=form.cleaned_data.get("group"),
                visibility=form.cleaned_data["visibility"],
                replicas=form.cleaned_data["replicas"],
                **card,
            )
        adopt(obj, saved)

    def delete_model(self, request, obj):
        services.collection_delete(actor=request.user, collection=obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for collection in queryset:
                services.collection_delete(actor=request.user, collection=collection)


class ReplicaInline(ReadOnlyMixin, admin.TabularInline):
    model = Replica
    fields = ("location", "state", "verified_at", "checked_at", "repaired_at", "detail")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.action(description="Verify and repair the replicas of the selected files now")
def verify_files(modeladmin, request, queryset):
    _verify(modeladmin, request, queryset)


def _verify(modeladmin, request, files) -> None:
    available = replicas.locations()
    damaged = repaired = lost = 0
    for file in files.select_related("version__collection"):
        check = replicas.check_and_repair(file, available)
        damaged += len(check.damaged)
        repaired += len(check.repaired)
        lost += int(check.lost)
    level = messages.ERROR if lost else (messages.WARNING if damaged else messages.SUCCESS)
    modeladmin.message_user(
        request, f"{damaged} damaged replica(s) found, {repaired} repaired, {lost} file(s) with no good copy", level
    )


@admin.register(ArtifactFile)
class ArtifactFileAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("path", "version", "human_size", "sha256", "replicas_ok", "created_at")
    list_select_related = ("version__collection",)
    search_fields = ("path", "sha256", "version__collection__name")
    readonly_fields = ("version", "path", "size", "sha256", "storage_name", "created_at")
    inlines = (ReplicaInline,)
    actions = (verify_files,)

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("replica_set")

    @admin.display(description="size", ordering="size")
    def human_size(self, obj):
        return format_size(obj.size)

    @admin.display(description="replicas ok")
    def replicas_ok(self, obj):
        rows = obj.replica_set.all()
        return f"{sum(r.state == ReplicaState.OK for r in rows)} / {len(rows)}"

    def delete_model(self, request, obj):
        services.file_delete(actor=request.user, file=obj)


@admin.action(description="Verify and repair the files of the selected replicas now")
def verify_replicas(modeladmin, request, queryset):
    _verify(modeladmin, request, ArtifactFile.objects.filter(pk__in=queryset.values("file_id")))


@admin.register(Replica)
class ReplicaAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("file", "location", "state", "verified_at", "checked_at", "repaired_at", "detail")
    list_filter = ("state", "location")
    list_select_related = ("file__version__collection",)
    search_fields = ("file__path", "file__storage_name", "file__version__collection__name")
    readonly_fields = list_display
    actions = (verify_replicas,)

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(StorageQuota)
class StorageQuotaAdmin(ServiceWritesMixin, admin.ModelAdmin):
    list_display = ("group", "tenant", "limit", "stored", "reserved")
    list_select_related = ("group__tenant",)
    search_fields = ("group__name", "group__tenant__name")
    fields = ("group", "limit_bytes", "used_bytes", "reserved_bytes")
    readonly_fields = ("group", "used_bytes", "reserved_bytes")
    actions = ("recount",)

    def has_add_permission(self, request):
        return False  # a group gets its row when it first stores something

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="tenant", ordering="group__tenant__name")
    def tenant(self, obj):
        return obj.group.tenant

    @admin.display(description="limit", ordering="limit_bytes")
    def limit(self, obj):
        return format_size(obj.limit_bytes)

    @admin.display(description="stored (size × replicas)", ordering="used_bytes")
    def stored(self, obj):
        return format_size(obj.used_bytes)

    @admin.display(description="reserved by uploads", ordering="reserved_bytes")
    def reserved(self, obj):
        return format_size(obj.reserved_bytes)

    def save_model(self, request, obj, form, change):
        saved = services.storage_quota_set(
            actor=request.user, group=obj.group, limit_bytes=form.cleaned_data["limit_bytes"]
        )
        adopt(obj, saved)

    @admin.action(description="Recount stored and reserved bytes from the files (repairs drift)")
    def recount(self, request, queryset):
        for quota in queryset.select_related("group"):
            services.storage_recount(actor=request.user, group=quota.group)
        self.message_user(request, f"{queryset.count()} quota(s) recounted", messages.SUCCESS)


@admin.register(Upload)
class UploadAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("id", "path", "version", "state", "offset", "size", "created_by", "updated_at")
    list_filter = ("state",)
    list_select_related = ("version__collection", "created_by")
    readonly_fields = ("version", "path", "size", "sha256", "offset", "state", "reserved_bytes", "file", "created_by")


@admin.register(JobInput)
class JobInputAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("job", "ref", "version", "env_name")
    list_select_related = ("job", "version__collection")
    readonly_fields = list_display

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(JobOutput)
class JobOutputAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("job", "collection", "env_name", "checkpoint", "state", "version", "detail")
    list_filter = ("state",)
    list_select_related = ("job", "collection", "version")
    readonly_fields = list_display

    def has_delete_permission(self, request, obj=None):
        return False
