"""Notifications: your settings, your webhook endpoints (with a test ping) and your delivery log.

All personal: another user's endpoint or delivery is a 404, like one that does not exist (``visible_to``).
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from api.views.base import ApiViewSet
from notifications import services
from notifications.events import SUBSCRIBABLE
from notifications.models import Delivery, WebhookEndpoint
from notifications.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER
from tenants.scoping import CHANGE, VIEW


def event_field() -> serializers.ChoiceField:
    return serializers.ChoiceField(choices=[str(e) for e in SUBSCRIBABLE])


class SettingsSerializer(serializers.Serializer):
    events = serializers.ListField(child=event_field(), help_text="events you want to hear about", max_length=20)
    email = serializers.BooleanField(help_text="also mail them to your address")
    long_wait_minutes = serializers.IntegerField(
        min_value=0, max_value=services.MAX_LONG_WAIT_MINUTES, help_text="job.started_after_wait threshold"
    )
    available_events = serializers.SerializerMethodField()

    def get_available_events(self, obj) -> list[str]:
        return [str(e) for e in SUBSCRIBABLE]


class SettingsWriteSerializer(serializers.Serializer):
    events = serializers.ListField(child=event_field(), required=False, max_length=20)
    email = serializers.BooleanField(required=False)
    long_wait_minutes = serializers.IntegerField(min_value=0, max_value=services.MAX_LONG_WAIT_MINUTES, required=False)


class EndpointSerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "events", "active", "created_at"]
        read_only_fields = fields


class EndpointCreatedSerializer(EndpointSerializer):
    secret = serializers.CharField(help_text="the signing secret: shown in this response only")

    class Meta(EndpointSerializer.Meta):
        fields = [*EndpointSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class EndpointWriteSerializer(serializers.Serializer):
    url = serializers.CharField(max_length=500, help_text="http(s) URL that receives signed POSTs")
    events = serializers.ListField(
        child=event_field(), required=False, max_length=20, help_text="empty: all you enabled"
    )
    active = serializers.BooleanField(required=False)


class AttemptSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    at = serializers.DateTimeField()
    ok = serializers.BooleanField()
    response_code = serializers.IntegerField(allow_null=True)
    duration_ms = serializers.IntegerField()
    error = serializers.CharField()


class DeliverySerializer(serializers.ModelSerializer):
    attempt_log = AttemptSerializer(many=True, read_only=True)

    class Meta:
        model = Delivery
        fields = [
            "id",
            "event",
            "channel",
            "endpoint",
            "subject",
            "status",
            "attempts",
            "next_attempt_at",
            "created_at",
            "delivered_at",
            "attempt_log",
        ]
        read_only_fields = fields


SETTINGS_EXAMPLE = {
    "events": ["job.ended", "job.failed", "quota.threshold"],
    "email": True,
    "long_wait_minutes": 60,
    "available_events": [str(e) for e in SUBSCRIBABLE],
}
ENDPOINT_EXAMPLE = {
    "id": 4,
    "url": "https://ci.acme.example/hooks/aipool",
    "events": ["job.ended", "job.failed"],
    "active": True,
    "created_at": "2026-03-02T09:15:04Z",
}
DELIVERY_EXAMPLE = {
    "id": 31,
    "event": "job.failed",
    "channel": "webhook",
    "endpoint": 4,
    "subject": "job 1234 (train) FAILED",
    "status": "delivered",
    "attempts": 2,
    "next_attempt_at": None,
    "created_at": "2026-03-02T09:15:04Z",
    "delivered_at": "2026-03-02T09:15:35Z",
    "attempt_log": [
        {"number": 1, "at": "2026-03-02T09:15:04Z", "ok": False, "response_code": 500, "duration_ms": 41,
         "error": "HTTP 500"},
        {"number": 2, "at": "2026-03-02T09:15:35Z", "ok": True, "response_code": 200, "duration_ms": 12, "error": ""},
    ],
}  # fmt: skip


def _examples(name: str, value, *, request=None) -> list[OpenApiExample]:
    answer = [OpenApiExample(name, value=value, response_only=True)]
    if request is not None:
        answer.append(OpenApiExample(name, value=request, request_only=True))
    return answer


def _valid(serializer_class, data, **kwargs) -> dict:
    serializer = serializer_class(data=data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class SettingsView(APIView):
    @extend_schema(
        operation_id="notification_settings_retrieve",
        tags=["notifications"],
        summary="Your notification settings",
        responses=SettingsSerializer,
        examples=_examples("Settings", SETTINGS_EXAMPLE),
    )
    def get(self, request):
        return Response(SettingsSerializer(services.settings_for(request.user)).data)

    @extend_schema(
        operation_id="notification_settings_update",
        tags=["notifications"],
        summary="Change your notification settings (fields left out stay as they are)",
        request=SettingsWriteSerializer,
        responses=SettingsSerializer,
        examples=_examples("Settings", SETTINGS_EXAMPLE, request={"events": ["job.failed"], "long_wait_minutes": 30}),
    )
    def patch(self, request):
        data = _valid(SettingsWriteSerializer, request.data)
        updated = services.settings_update(user=request.user, **data)
        return Response(SettingsSerializer(updated).data)


@extend_schema_view(
    list=extend_schema(summary="Your webhook endpoints", examples=_examples("Endpoints", [ENDPOINT_EXAMPLE])),
    retrieve=extend_schema(summary="One of your webhook endpoints", examples=_examples("Endpoint", ENDPOINT_EXAMPLE)),
    create=extend_schema(
        summary=f"Add a webhook endpoint; its secret signs every POST ({TIMESTAMP_HEADER}, {SIGNATURE_HEADER})",
        request=EndpointWriteSerializer,
        responses={201: EndpointCreatedSerializer},
        examples=_examples(
            "New endpoint",
            {**ENDPOINT_EXAMPLE, "secret": "whsec_3q2-7wJrRk1v0kzq9sWcO4XnVbQ2m7yLwqCkTz0aP8E"},
            request={"url": "https://ci.acme.example/hooks/aipool", "events": ["job.ended", "job.failed"]},
        ),
    ),
    partial_update=extend_schema(
        summary="Change an endpoint's URL, events or active flag",
        request=EndpointWriteSerializer,
        responses=EndpointSerializer,
        examples=_examples("Endpoint", ENDPOINT_EXAMPLE, request={"active": False}),
    ),
    destroy=extend_schema(summary="Delete a webhook endpoint and its deliveries"),
)
@extend_schema(tags=["notifications"])
class WebhookViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin, ApiViewSet
):
    queryset = WebhookEndpoint.objects.none()  # for the schema only; get_queryset() scopes every request
    serializer_class = EndpointSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        action_ = VIEW if self.request.method in ("GET", "HEAD", "OPTIONS") else CHANGE
        return WebhookEndpoint.objects.visible_to(self.request.user, action_)

    def create(self, request, *args, **kwargs):
        data = _valid(EndpointWriteSerializer, request.data)
        endpoint, secret = services.endpoint_create(user=request.user, url=data["url"], events=data.get("events", []))
        return Response({**EndpointSerializer(endpoint).data, "secret": secret}, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        endpoint = self.get_object()
        data = _valid(EndpointWriteSerializer, request.data, partial=True)
        endpoint = services.endpoint_update(user=request.user, endpoint=endpoint, **data)
        return Response(EndpointSerializer(endpoint).data)

    def destroy(self, request, *args, **kwargs):
        services.endpoint_delete(user=request.user, endpoint=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Send a signed test delivery (event ping) to this endpoint now",
        request=None,
        responses={202: DeliverySerializer},
        examples=_examples("Queued ping", {**DELIVERY_EXAMPLE, "event": "ping", "status": "pending", "attempts": 0,
                                            "delivered_at": None, "attempt_log": []}),
    )  # fmt: skip
    @action(detail=True, methods=["post"], filter_backends=[], pagination_class=None)
    def ping(self, request, pk=None):
        delivery = services.ping(user=request.user, endpoint=self.get_object())
        return Response(DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)


@extend_schema_view(
    list=extend_schema(summary="Your delivery log, newest first", examples=_examples("Log", [DELIVERY_EXAMPLE])),
    retrieve=extend_schema(summary="One delivery with every attempt", examples=_examples("Delivery", DELIVERY_EXAMPLE)),
)
@extend_schema(tags=["notifications"])
class DeliveryViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ApiViewSet):
    queryset = Delivery.objects.none()  # for the schema only; get_queryset() scopes every request
    serializer_class = DeliverySerializer

    def get_queryset(self):
        return Delivery.objects.visible_to(self.request.user).prefetch_related("attempt_log")


# (prefix, viewset, basename) registered on the v1 router, and extra django paths under /api/v1/.
ROUTES: list = [
    ("notifications/webhooks", WebhookViewSet, "webhook"),
    ("notifications/deliveries", DeliveryViewSet, "delivery"),
]
PATHS: list = [path("notifications/settings/", SettingsView.as_view(), name="notification-settings")]
