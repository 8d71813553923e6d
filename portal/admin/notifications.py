"""Admin for notifications: the delivery log with its attempts, webhook endpoints, thresholds told (staff only).

Read-only: deliveries are a record of what happened, and endpoints belong to their users (they manage them on
/notifications/). Signing secrets never show here.
"""

from __future__ import annotations

from django.contrib import admin

from notifications.models import Delivery, DeliveryAttempt, ThresholdState, WebhookEndpoint


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class AttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    fields = ("number", "at", "ok", "response_code", "duration_ms", "error")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = ("id", "event", "user", "channel", "endpoint", "status", "attempts", "created_at", "delivered_at")
    list_filter = ("status", "channel", "event")
    list_select_related = ("user", "endpoint")
    search_fields = ("user__username", "subject", "endpoint__url")
    date_hierarchy = "created_at"
    exclude = ("payload",)
    readonly_fields = ("user", "endpoint", "channel", "destination", "event", "dedupe_key", "subject", "status",
                       "attempts", "next_attempt_at", "delivered_at")  # fmt: skip
    inlines = [AttemptInline]


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyAdmin):
    list_display = ("id", "url", "user", "active", "created_at")
    list_filter = ("active",)
    list_select_related = ("user",)
    search_fields = ("url", "user__username")
    exclude = ("secret",)


@admin.register(ThresholdState)
class ThresholdStateAdmin(ReadOnlyAdmin):
    list_display = ("group", "limit", "level", "changed_at")
    list_select_related = ("group",)
    search_fields = ("group__name",)
