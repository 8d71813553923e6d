"""Admin for jobs (read-only: jobs change state through the scheduler and the job services) and runtimes."""

from __future__ import annotations

from django.contrib import admin

from jobs.models import Job, JobEvent, Runtime


@admin.register(Runtime)
class RuntimeAdmin(admin.ModelAdmin):
    list_display = ("name", "description")
    search_fields = ("name", "description")


class JobEventInline(admin.TabularInline):
    model = JobEvent
    fields = ("at", "from_state", "to_state", "reason", "cause")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "tenant", "group", "user", "state", "reason", "size", "submitted_at")
    list_filter = ("state", "partition", "tenant")
    list_select_related = ("tenant", "group", "user")
    search_fields = ("name", "user__username", "group__name", "backend_job_id")
    date_hierarchy = "submitted_at"
    inlines = (JobEventInline,)

    @admin.display(description="nodes × accelerators", ordering="nodes")
    def size(self, obj):
        return f"{obj.nodes}×{obj.accelerators_per_node}"

    # A job's row is accounting history; the scheduler and job services own every change to it.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
