"""Inference services: apply the seed's YAML (or the same as JSON), list, show, scale, delete; keys; scaling events.

``POST inference-services/`` is ``kubectl apply``: it creates the service or updates the one of that name (200).
"""

from __future__ import annotations

from django.db.models import Count, Q
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import exceptions, mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.parsers import BaseParser, JSONParser
from rest_framework.response import Response

from api.permissions import require_change
from api.views.base import ApiViewSet
from inference import services
from inference.models import InferenceService, Replica, ReplicaState, ScalingEvent, ServiceKey
from inference.spec import load_document, ordered_document, parse_service_spec, with_model
from tenants.models import Group

WHEN = "2026-03-02T09:15:04Z"
SEED_DOCUMENT = {
    "apiVersion": "serving.ai/v1",
    "kind": "InferenceService",
    "metadata": {"name": "image-classifier", "group": "ai-team"},
    "spec": {
        "model": "acme/classifier:production",
        "minReplicas": 2,
        "maxReplicas": 20,
        "scaling": {"metric": "qps", "target": 1000},
        "resources": {"accelerator": "nvidia-h100-80gb", "memory": "32Gi"},
    },
}
STORED_SPEC = {
    **SEED_DOCUMENT,
    "spec": {
        **SEED_DOCUMENT["spec"],
        "resources": {"accelerator": "nvidia-h100-80gb", "accelerators": 1, "memory": "32Gi", "cpus": 8},
        "rateLimit": {"perKeyRps": 100},
    },
}


class YAMLParser(BaseParser):
    """The seed's YAML as it is written; a JSON body is the same document."""

    media_type = "application/yaml"

    def parse(self, stream, media_type=None, parser_context=None):
        from django.core.exceptions import ValidationError

        try:
            return load_document(stream.read())
        except ValidationError as exc:
            raise exceptions.ParseError("; ".join(exc.messages)) from exc


class TextYAMLParser(YAMLParser):
    media_type = "text/yaml"


class XYAMLParser(YAMLParser):
    media_type = "application/x-yaml"


# --- serializers ------------------------------------------------------------------------------------------------------


class ServiceConditionSerializer(serializers.Serializer):
    type = serializers.CharField(help_text="Ready, ScaleUpBlocked, ReplicaFailure")
    status = serializers.CharField(help_text="True or False")
    reason = serializers.CharField()
    message = serializers.CharField(allow_blank=True, help_text='e.g. "scale-up blocked: group ai-team uses 16/16 …"')
    since = serializers.CharField(help_text="ISO 8601: when the status last flipped")


class ServiceReplicaSerializer(serializers.ModelSerializer):
    job = serializers.IntegerField(source="job_id", allow_null=True, help_text="the replica's job id (aipool show)")
    job_state = serializers.SerializerMethodField()
    # Plain text, not an enum: every app has a "state", and one enum name per field name collides in the schema.
    state = serializers.CharField(read_only=True, help_text="PENDING, STARTING, READY, DRAINING, TERMINATED, FAILED")

    class Meta:
        model = Replica
        fields = ["id", "generation", "state", "url", "job", "job_state", "message", "ready_at", "created_at"]

    def get_job_state(self, replica) -> str | None:
        return replica.job.state if replica.job_id else None


class InferenceServiceSerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="name", read_only=True)
    group = serializers.SlugRelatedField(slug_field="name", read_only=True)
    state = serializers.CharField(read_only=True, help_text="PENDING, READY, UPDATING or DEGRADED")
    model = serializers.CharField(source="model_ref", help_text="as written: namespace/name:version or :alias")
    model_version = serializers.SerializerMethodField(help_text="the version number it resolved to")
    ready_replicas = serializers.SerializerMethodField()
    conditions = ServiceConditionSerializer(many=True)
    gateway_path = serializers.SerializerMethodField()

    class Meta:
        model = InferenceService
        fields = [
            "id",
            "name",
            "tenant",
            "group",
            "state",
            "model",
            "model_version",
            "min_replicas",
            "max_replicas",
            "desired_replicas",
            "ready_replicas",
            "scale_metric",
            "scale_target",
            "accelerator_type",
            "accelerators_per_replica",
            "memory_mb",
            "rate_limit_rps",
            "generation",
            "conditions",
            "gateway_path",
            "created_at",
            "updated_at",
        ]

    def get_model_version(self, service) -> int | None:
        return service.model_version.number if service.model_version_id else None

    def get_ready_replicas(self, service) -> int:
        ready = getattr(service, "ready_count", None)
        return ready if ready is not None else service.replicas.filter(state=ReplicaState.READY).count()

    def get_gateway_path(self, service) -> str:
        return f"/serve/{service.tenant.name}/{service.name}/"


class InferenceServiceDetailSerializer(InferenceServiceSerializer):
    spec = serializers.SerializerMethodField(help_text="the normalised document, as applied")
    replicas = serializers.SerializerMethodField()

    class Meta(InferenceServiceSerializer.Meta):
        fields = [*InferenceServiceSerializer.Meta.fields, "spec", "replicas"]

    @extend_schema_field(serializers.JSONField())
    def get_spec(self, service) -> dict:
        return ordered_document(service.spec)

    @extend_schema_field(ServiceReplicaSerializer(many=True))
    def get_replicas(self, service) -> list[dict]:
        replicas = service.replicas.exclude(state=ReplicaState.TERMINATED).select_related("job").order_by("id")
        return ServiceReplicaSerializer(replicas, many=True).data


class InferenceServiceDocumentSerializer(serializers.Serializer):
    """For the schema: the InferenceService document. Validation is done by inference.spec, field by field."""

    apiVersion = serializers.CharField(help_text="serving.ai/v1")  # noqa: N815 (the document's own names)
    kind = serializers.CharField(help_text="InferenceService")
    metadata = serializers.DictField(help_text="name (required), group (optional if you are in one group)")
    spec = serializers.DictField(
        help_text="model, minReplicas, maxReplicas, scaling {metric, target} (or KServe's scaleMetric, scaleTarget), "
        "resources {accelerator, accelerators, memory}, rateLimit {perKeyRps}"
    )


class ServiceScaleSerializer(serializers.Serializer):
    replicas = serializers.IntegerField(min_value=0, max_value=1000, help_text="clamped to [min, max]")


class ServiceKeySerializer(serializers.ModelSerializer):
    service = serializers.SlugRelatedField(slug_field="name", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = ServiceKey
        fields = ["id", "name", "service", "prefix", "created_by", "created_at", "last_used_at", "revoked_at"]


class ServiceKeyCreatedSerializer(ServiceKeySerializer):
    key = serializers.CharField(help_text="the raw key: shown this once, store it now")

    class Meta(ServiceKeySerializer.Meta):
        fields = [*ServiceKeySerializer.Meta.fields, "key"]


class ServiceKeyCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=64, help_text="what the key is for, e.g. web-frontend")


class ScalingEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = ScalingEvent
        fields = ["id", "at", "from_replicas", "to_replicas", "wanted", "reason", "inputs", "blocked_by_quota"]


# --- examples ---------------------------------------------------------------------------------------------------------

SERVICE_EXAMPLE = {
    "id": 7,
    "name": "image-classifier",
    "tenant": "acme",
    "group": "ai-team",
    "state": "READY",
    "model": "acme/classifier:production",
    "model_version": 3,
    "min_replicas": 2,
    "max_replicas": 20,
    "desired_replicas": 2,
    "ready_replicas": 2,
    "scale_metric": "qps",
    "scale_target": 1000,
    "accelerator_type": "nvidia-h100-80gb",
    "accelerators_per_replica": 1,
    "memory_mb": 32768,
    "rate_limit_rps": 100,
    "generation": 1,
    "conditions": [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Ready",
            "message": "2/2 replicas of generation 1 ready",
            "since": WHEN,
        }
    ],
    "gateway_path": "/serve/acme/image-classifier/",
    "created_at": WHEN,
    "updated_at": WHEN,
}
REPLICA_EXAMPLE = {
    "id": 41,
    "generation": 1,
    "state": "READY",
    "url": "http://127.0.0.1:41234",
    "job": 1021,
    "job_state": "RUNNING",
    "message": "",
    "ready_at": WHEN,
    "created_at": WHEN,
}
DETAIL_EXAMPLE = {**SERVICE_EXAMPLE, "spec": STORED_SPEC, "replicas": [REPLICA_EXAMPLE, {**REPLICA_EXAMPLE, "id": 42}]}
KEY_EXAMPLE = {
    "id": 5,
    "name": "web-frontend",
    "service": "image-classifier",
    "prefix": "isk_Q2x9Lm",
    "created_by": "alice",
    "created_at": WHEN,
    "last_used_at": None,
    "revoked_at": None,
}
EVENT_EXAMPLE = {
    "id": 90,
    "at": WHEN,
    "from_replicas": 14,
    "to_replicas": 16,
    "wanted": 20,
    "reason": "panic: 19,400 qps over 2 × target",
    "inputs": {"observed_qps": 19400, "target": 1000, "ready": 14, "quota_headroom_replicas": 2},
    "blocked_by_quota": True,
}
VALIDATION_EXAMPLE = OpenApiExample(
    "Rejected: bad memory units and min above max",
    response_only=True,
    status_codes=["400"],
    value={
        "code": "validation_error",
        "detail": "spec.minReplicas: minReplicas (5) is greater than maxReplicas (2)",
        "errors": {
            "spec.minReplicas": ["minReplicas (5) is greater than maxReplicas (2)"],
            "spec.resources.memory": ["bad memory quantity '32Gx': use a number and a unit such as 32Gi, 512Mi or 32G"],
        },
    },
)


def _page(name: str, row: dict) -> OpenApiExample:
    return OpenApiExample(name, value={"next": None, "previous": None, "results": [row]}, response_only=True)


def _one(name: str, value, codes=("200",)) -> OpenApiExample:
    return OpenApiExample(name, value=value, response_only=True, status_codes=list(codes))


MODEL_PARAMETER = OpenApiParameter(
    "model",
    OpenApiTypes.STR,
    required=False,
    description="the model to serve (acme/classifier:production), for a document without spec.model",
)
GROUP_PARAMETER = OpenApiParameter(
    "group", OpenApiTypes.STR, required=False, description="the group that runs it, if the document does not say"
)
NAME_PARAMETER = OpenApiParameter("name", OpenApiTypes.STR, required=False, description="only the service of this name")


# --- views ------------------------------------------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        summary="Inference services you can see",
        parameters=[NAME_PARAMETER],
        examples=[_page("One service", SERVICE_EXAMPLE)],
    ),
    retrieve=extend_schema(
        summary="A service: replicas, conditions, the applied spec",
        responses=InferenceServiceDetailSerializer,
        examples=[_one("Two ready replicas", DETAIL_EXAMPLE)],
    ),
    destroy=extend_schema(summary="Delete a service; its replica jobs are cancelled"),
)
class InferenceServiceViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, ApiViewSet):
    queryset = InferenceService.objects.none()  # for the schema only; get_queryset() scopes every request
    serializer_class = InferenceServiceSerializer
    parser_classes = [JSONParser, YAMLParser, TextYAMLParser, XYAMLParser]
    cursor_ordering = "id"
    filter_backends: list = []

    def get_queryset(self):
        services_ = (
            InferenceService.objects.visible_to(self.request.user)
            .select_related("tenant", "group", "model_version")
            .annotate(ready_count=Count("replicas", filter=Q(replicas__state=ReplicaState.READY)))
        )
        name = self.request.query_params.get("name")
        if self.action == "list" and name:
            services_ = services_.filter(name=name.replace("\x00", ""))
        return services_

    def get_serializer_class(self):
        return InferenceServiceDetailSerializer if self.action == "retrieve" else InferenceServiceSerializer

    def _writable(self, service: InferenceService) -> InferenceService:
        require_change(self.request, service, f"only members of group {service.group.name} may change {service.name}")
        return service

    def _detail(self, service: InferenceService, code=status.HTTP_200_OK) -> Response:
        fresh = self.get_queryset().get(pk=service.pk)
        return Response(
            InferenceServiceDetailSerializer(fresh, context=self.get_serializer_context()).data, status=code
        )

    @extend_schema(
        summary="Apply an InferenceService document (YAML or JSON): create it, or update the one of that name",
        description="The seed's YAML as it is (Content-Type: application/yaml), or the same document as JSON. "
        "A change of model version or resources is a rolling update. 201 when created, 200 when updated.",
        parameters=[GROUP_PARAMETER, MODEL_PARAMETER],
        request={
            "application/json": InferenceServiceDocumentSerializer,
            "application/yaml": InferenceServiceDocumentSerializer,
        },
        responses={201: InferenceServiceDetailSerializer, 200: InferenceServiceDetailSerializer},
        examples=[
            OpenApiExample("The seed's service", value=SEED_DOCUMENT, request_only=True),
            _one("Created", DETAIL_EXAMPLE, ("201", "200")),
            VALIDATION_EXAMPLE,
        ],
    )
    def create(self, request, *args, **kwargs):
        if not isinstance(request.data, dict):
            raise exceptions.ValidationError({"body": ["expected an InferenceService document (an object)"]})
        spec = parse_service_spec(with_model(request.data, self.request.query_params.get("model")))
        service, created = services.service_apply(user=request.user, spec=spec, group=self._group_param())
        return self._detail(service, status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    def _group_param(self) -> Group | None:
        name = self.request.query_params.get("group")
        if not name:
            return None
        group = Group.objects.visible_to(self.request.user).filter(name=name.replace("\x00", "")).first()
        if group is None:
            raise exceptions.ValidationError({"group": [f"unknown group {name!r}"]})
        return group

    def destroy(self, request, *args, **kwargs):
        services.service_delete(user=request.user, service=self._writable(self.get_object()))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Set desired replicas by hand (within [min, max]; the autoscaler may move it again)",
        request=ServiceScaleSerializer,
        responses=InferenceServiceDetailSerializer,
        examples=[
            OpenApiExample("Three replicas", value={"replicas": 3}, request_only=True),
            _one("Scaled", {**DETAIL_EXAMPLE, "desired_replicas": 3}),
        ],
    )
    @action(detail=True, methods=["post"])
    def scale(self, request, pk=None):
        service = self._writable(self.get_object())
        data = ServiceScaleSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.scale_manually(user=request.user, service=service, replicas=data.validated_data["replicas"])
        return self._detail(service)

    @extend_schema(
        methods=["GET"],
        summary="The service's gateway keys (active and revoked)",
        responses=ServiceKeySerializer(many=True),
        examples=[_page("One key", KEY_EXAMPLE)],
    )
    @extend_schema(
        methods=["POST"],
        summary="A new gateway key: the raw key is in the answer, this once",
        request=ServiceKeyCreateSerializer,
        responses={201: ServiceKeyCreatedSerializer},
        examples=[
            OpenApiExample("A key for the web frontend", value={"name": "web-frontend"}, request_only=True),
            _one("Created", {**KEY_EXAMPLE, "key": "isk_Q2x9Lm3v0aTqkP1cWb8nRz5yUe7hJd4s"}, ("201",)),
        ],
    )
    @action(detail=True, methods=["get", "post"])
    def keys(self, request, pk=None):
        service = self.get_object()
        if request.method == "POST":
            self._writable(service)
            data = ServiceKeyCreateSerializer(data=request.data)
            data.is_valid(raise_exception=True)
            key, raw = services.key_create(user=request.user, service=service, name=data.validated_data["name"])
            body = ServiceKeySerializer(key).data | {"key": raw}
            return Response(body, status=status.HTTP_201_CREATED)
        self.cursor_ordering = "-id"
        keys = ServiceKey.objects.visible_to(request.user).filter(service=service).select_related("created_by")
        page = self.paginate_queryset(keys.select_related("service"))
        return self.get_paginated_response(ServiceKeySerializer(page, many=True).data)

    @extend_schema(
        summary="Scaling events, newest first: every decision with its inputs",
        responses=ScalingEventSerializer(many=True),
        examples=[_page("A scale-up stopped by quota", EVENT_EXAMPLE)],
    )
    @action(detail=True, methods=["get"])
    def events(self, request, pk=None):
        service = self.get_object()
        self.cursor_ordering = "-id"
        page = self.paginate_queryset(ScalingEvent.objects.visible_to(request.user).filter(service=service))
        return self.get_paginated_response(ScalingEventSerializer(page, many=True).data)


@extend_schema_view(
    list=extend_schema(summary="Gateway keys of every service you can see", examples=[_page("One key", KEY_EXAMPLE)]),
    retrieve=extend_schema(summary="A gateway key (never the raw key)", examples=[_one("Active", KEY_EXAMPLE)]),
    destroy=extend_schema(summary="Revoke a key: the gateway refuses it from its next route refresh"),
)
class ServiceKeyViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, ApiViewSet):
    queryset = ServiceKey.objects.none()
    serializer_class = ServiceKeySerializer
    cursor_ordering = "-id"
    filter_backends: list = []

    def get_queryset(self):
        return ServiceKey.objects.visible_to(self.request.user).select_related("service", "created_by")

    def destroy(self, request, *args, **kwargs):
        key = self.get_object()
        require_change(request, key, f"only members of group {key.service.group.name} may revoke its keys")
        services.key_revoke(user=request.user, key=key)
        return Response(status=status.HTTP_204_NO_CONTENT)


ROUTES: list = [
    ("inference-services", InferenceServiceViewSet, "inferenceservice"),
    ("inference-keys", ServiceKeyViewSet, "servicekey"),
]
PATHS: list = []
