"""Jobs: submit (idempotent), list, show, cancel, logs, explain."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import exceptions, mixins, status
from rest_framework.decorators import action
from rest_framework.response import Response

from api import examples
from api.errors import Conflict
from api.permissions import require_change
from api.serializers import (
    ErrorSerializer,
    ExplainSerializer,
    JobCreateSerializer,
    JobDetailSerializer,
    JobPrioritySerializer,
    JobSerializer,
    LogChunkSerializer,
    LogQuerySerializer,
)
from api.views.base import ApiViewSet
from cluster.backends.registry import get_backend
from jobs.filters import JobFilter
from jobs.models import Job
from jobs.selectors import job_explanation, pending_priority_factors, priority_factors
from jobs.services import job_cancel, job_submit
from tenants.scoping import CHANGE, VIEW
from vocab.states import JobState

IDEMPOTENCY_HEADER = "Idempotency-Key"
MAX_IDEMPOTENCY_KEY = 128

IDEMPOTENCY_PARAMETER = OpenApiParameter(
    IDEMPOTENCY_HEADER,
    OpenApiTypes.STR,
    location=OpenApiParameter.HEADER,
    required=False,
    description="Retry-safe submission: the same key and body return the same job (200); "
    "the same key with a different body is 409 idempotency_conflict. At most 128 characters.",
)

CREATE_EXAMPLES = [
    OpenApiExample(
        "Two full nodes, topology-aware",
        request_only=True,
        value={
            "group": "ai-team",
            "name": "llm-pretrain",
            "partition": "main",
            "nodes": 2,
            "accelerators_per_node": 8,
            "time_limit": "72:00:00",
            "topology_aware": True,
            "max_switches": 1,
            "command": "python train.py --config big.yaml",
            "environment": {"WANDB_PROJECT": "llm"},
            "runtime": "ai-suite/2.1",
        },
    ),
    OpenApiExample(
        "Batch script on the group's default partition",
        request_only=True,
        value={
            "group": "ai-team",
            "name": "eval",
            "nodes": 1,
            "accelerators_per_node": 1,
            "memory_per_node": "64G",
            "time_limit": "30",
            "script": "#!/bin/bash\nset -e\npython eval.py\n",
        },
    ),
    OpenApiExample(
        "Rejected: more accelerators per node than the partition's nodes have",
        response_only=True,
        status_codes=["400"],
        value={
            "code": "validation_error",
            "detail": "accelerators_per_node: 9 requested, nodes in partition 'main' have 8",
            "errors": {"accelerators_per_node": ["9 requested, nodes in partition 'main' have 8"]},
        },
    ),
]


# The columns a list row is built from: JobSerializer's fields as model fields, and the related rows' names only.
_RELATED_NAMES = {"tenant": "tenant__name", "group": "group__name", "user": "user__username",
                  "partition": "partition__name", "runtime": "runtime__name"}  # fmt: skip
_MODEL_FIELDS = {"time_limit_minutes": "time_limit", "memory_per_node_mb": "memory_per_node"}
LIST_COLUMNS = tuple(dict.fromkeys(_RELATED_NAMES.get(f) or _MODEL_FIELDS.get(f, f) for f in JobSerializer.Meta.fields))

# Each ordering with its tie-breaker: the cursor pages by the first field, the id keeps ties in a stable order.
ORDERINGS = {
    "-id": ("-id",),
    "id": ("id",),
    "-priority": ("-priority", "id"),
    "priority": ("priority", "-id"),
}
ORDERING_PARAMETER = OpenApiParameter(
    "ordering",
    OpenApiTypes.STR,
    enum=list(ORDERINGS),
    description="-id: newest first (the default); id: oldest first (job ids follow submission order); "
    "-priority: highest priority first, as the scheduler considers the queue (the priority of the last "
    "scheduling pass; ties oldest first); priority: lowest first.",
)


@extend_schema_view(
    list=extend_schema(summary="Jobs you may see (squeue / sacct), newest first", parameters=[ORDERING_PARAMETER]),
    retrieve=extend_schema(summary="One job (scontrol show job)", responses=JobDetailSerializer),
)
@extend_schema(tags=["jobs"])
class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ApiViewSet):
    queryset = Job.objects.none()  # for the schema only; get_queryset() scopes every request
    serializer_class = JobSerializer
    filterset_class = JobFilter
    cursor_ordering = "-id"

    def get_queryset(self):
        queryset = Job.objects.visible_to(self.request.user, VIEW).select_related(
            "tenant", "group", "user", "partition", "runtime"
        )
        if self.action == "list":
            # Only the columns a list row shows: the tenant's and group's limits, the user's password hash and the
            # job's script, environment and allocation would be read and JSON-decoded 50 times per page for nothing.
            queryset = queryset.only(*LIST_COLUMNS)
        if self.action == "retrieve":
            queryset = queryset.prefetch_related("events")
        return queryset

    def get_serializer_class(self):
        return JobDetailSerializer if self.action == "retrieve" else JobSerializer

    def list(self, request, *args, **kwargs):
        ordering = request.query_params.get("ordering") or "-id"
        if ordering not in ORDERINGS:
            raise exceptions.ValidationError({"ordering": [f"use one of {', '.join(ORDERINGS)}"]})
        # Read by the cursor paginator: unique (with the tie-breaker), indexed orderings keep cursors exact and fast.
        self.cursor_ordering = ORDERINGS[ordering]
        return super().list(request, *args, **kwargs)

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if self.action == "retrieve" and self.kwargs.get("pk"):
            context["may_change"] = self._may_change(self.kwargs["pk"])
        return context

    def _may_change(self, pk) -> bool:
        return Job.objects.visible_to(self.request.user, CHANGE).filter(pk=pk).exists()

    def _detail(self, job: Job) -> dict:
        job = self.get_queryset().prefetch_related("events").get(pk=job.pk)
        context = {**super().get_serializer_context(), "may_change": self._may_change(job.pk)}
        return JobDetailSerializer(job, context=context).data

    @extend_schema(
        summary="Submit a job (sbatch)",
        request=JobCreateSerializer,
        parameters=[IDEMPOTENCY_PARAMETER],
        responses={
            201: JobDetailSerializer,
            200: OpenApiResponse(JobDetailSerializer, description="Replay: this key was used with the same body"),
            400: OpenApiResponse(
                ErrorSerializer, description="Invalid, or can never run: says which limit and by how much"
            ),
            409: OpenApiResponse(ErrorSerializer, description="idempotency_conflict: key used with a different body"),
        },
        examples=[*CREATE_EXAMPLES, *examples.JOB_SUBMITTED],
    )
    def create(self, request, *args, **kwargs):
        key = request.headers.get(IDEMPOTENCY_HEADER) or None
        if key is not None and (len(key) > MAX_IDEMPOTENCY_KEY or not key.isprintable()):
            raise exceptions.ValidationError(
                {IDEMPOTENCY_HEADER: [f"at most {MAX_IDEMPOTENCY_KEY} printable characters"]}
            )
        serializer = JobCreateSerializer(data=request.data, context=self.get_serializer_context())
        serializer.is_valid(raise_exception=True)
        job, created = job_submit(user=request.user, idempotency_key=key, **serializer.validated_data)
        if not created:
            return Response(self._detail(job), status=status.HTTP_200_OK)
        # The new job holds every related row the service loaded, and its environment is the one this request
        # sent: answering from memory saves reading it back through the scoping subqueries on the hot path.
        context = {**super().get_serializer_context(), "may_change": True}
        return Response(JobDetailSerializer(job, context=context).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Cancel a job (scancel): its owner or a tenant admin",
        request=None,
        responses={
            200: JobDetailSerializer,
            409: OpenApiResponse(ErrorSerializer, description="conflict: the job has already ended"),
        },
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        job = self.get_object()
        require_change(
            request, job, f"only the owner of job {job.pk} and admins of tenant {job.tenant.name} may cancel it"
        )
        try:
            job = job_cancel(user=request.user, job=job)
        except DjangoValidationError as exc:
            raise Conflict(exc.messages[0]) from exc
        return Response(self._detail(job))

    @extend_schema(
        summary="Read a job's output from a byte offset (poll with the returned offset to follow it)",
        parameters=[LogQuerySerializer],
        responses={
            200: LogChunkSerializer,
            400: OpenApiResponse(ErrorSerializer, description="Bad stream or offset"),
            503: OpenApiResponse(ErrorSerializer, description="backend_unavailable"),
        },
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def logs(self, request, pk=None):
        job = self.get_object()
        query = LogQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        chunk = {"text": "", "offset": 0, "size": 0}
        if job.backend_job_id:
            read = get_backend(job.backend or None).read_log(
                job.backend_job_id, params["stream"], params["offset"], params["limit"]
            )
            chunk = {"text": read.text, "offset": read.offset, "size": read.size}
        return Response(LogChunkSerializer({**chunk, "state": job.state}).data)

    @extend_schema(
        summary="Why a job is not running yet, and what would make it start sooner", responses=ExplainSerializer
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def explain(self, request, pk=None):
        return Response(ExplainSerializer(job_explanation(self.get_object())).data)

    @extend_schema(
        summary="The job's multifactor priority, factor by factor (sprio -l -j ID)",
        responses=JobPrioritySerializer,
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def priority(self, request, pk=None):
        return Response(priority_factors(self.get_object()))

    @extend_schema(
        summary="Pending jobs' priorities, highest first, factor by factor (sprio -l)",
        description="The list filters apply (group, user=me, partition, …); only PENDING jobs are listed, in the "
        "order of the last scheduling pass's priority. Each entry is the priority now.",
        responses=JobPrioritySerializer(many=True),
    )
    @action(detail=False, methods=["get"])
    def priorities(self, request):
        self.cursor_ordering = ORDERINGS["-priority"]
        jobs = self.filter_queryset(self.get_queryset()).filter(state=JobState.PENDING)
        page = self.paginate_queryset(jobs)
        return self.get_paginated_response(pending_priority_factors(page))
