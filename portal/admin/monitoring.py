"""Admin for monitoring: per-tenant idle policies, idle episodes, and the worst idle offenders (staff only)."""

from __future__ import annotations

from django.contrib import admin
from django.template.response import TemplateResponse
from django.urls import path

from monitoring.models import IdleEpisode, IdlePolicy
from monitoring.offenders import worst_offenders
from tenants.services import audit


@admin.register(IdlePolicy)
class IdlePolicyAdmin(admin.ModelAdmin):
    list_display = ("tenant", "action", "threshold_percent", "minutes", "grace_minutes")
    list_select_related = ("tenant",)
    search_fields = ("tenant__name",)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        changes = {name: str(form.cleaned_data.get(name)) for name in form.changed_data}
        audit(actor=request.user, action="idle_policy.change", target=obj, tenant=obj.tenant, changes=changes)


@admin.register(IdleEpisode)
class IdleEpisodeAdmin(admin.ModelAdmin):
    list_display = ("job", "tenant", "owner", "accelerators", "utilisation_percent", "idle_since", "ended_at", "action")
    list_filter = ("action", "job__tenant")
    list_select_related = ("job__tenant", "job__user")
    search_fields = ("job__name", "job__user__username", "job__tenant__name")
    date_hierarchy = "flagged_at"
    change_list_template = "monitoring/admin_episodes.html"

    @admin.display(description="tenant", ordering="job__tenant__name")
    def tenant(self, obj):
        return obj.job.tenant.name

    @admin.display(description="owner", ordering="job__user__username")
    def owner(self, obj):
        return obj.job.user.username

    @admin.display(description="utilisation", ordering="utilisation")
    def utilisation_percent(self, obj):
        return f"{obj.utilisation * 100:.1f}%"

    # Episodes are the monitor's record of what happened; nobody edits them by hand.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def get_urls(self):
        view = self.admin_site.admin_view(self.offenders_view)
        return [path("offenders/", view, name="monitoring_idleepisode_offenders"), *super().get_urls()]

    def offenders_view(self, request):
        context = {
            **self.admin_site.each_context(request),
            "title": "Worst idle offenders (last 30 days)",
            "offenders": worst_offenders(days=30),
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "monitoring/admin_offenders.html", context)
