"""Browser pages of the notifications app."""

from django.urls import path

from portal.views import notifications

urlpatterns: list = [
    path("notifications/", notifications.page, name="notifications"),
    path("notifications/webhooks/", notifications.endpoint_add, name="notifications-webhook-add"),
    path("notifications/webhooks/<int:pk>/delete/", notifications.endpoint_delete, name="notifications-webhook-delete"),
    path("notifications/webhooks/<int:pk>/ping/", notifications.endpoint_ping, name="notifications-webhook-ping"),
    path("notifications/deliveries/<int:pk>/", notifications.delivery_detail, name="notifications-delivery"),
]
