"""API v1 views of the monitoring app: a job's health (the seed's three rules) and its metric series."""

from __future__ import annotations

from datetime import UTC

from django.http import Http404
from django.urls import path
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs.models import Job
from monitoring.selectors import RESOLUTION_BY_NAME, job_health, job_series
from tenants.scoping import VIEW


class JobHealthRuleSerializer(serializers.Serializer):
    rule = serializers.ChoiceField(choices=["utilisation", "communication", "swapping"])
    title = serializers.CharField()
    value = serializers.FloatField(allow_null=True, help_text="ratio 0..1 (utilisation, communication) or bytes")
    display = serializers.CharField(help_text="the value as people read it: 42%, 1.5 GiB")
    target = serializers.CharField(help_text="the seed's rule of thumb: above 85%, below 15%, 0")
    status = serializers.CharField(help_text="ok, warn, bad or unknown")
    advice = serializers.CharField(help_text="what the numbers mean and what to try, with the numbers")


class JobTaskMetricsSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    node = serializers.CharField(allow_blank=True)
    at = serializers.DateTimeField()
    utilisation = serializers.FloatField(allow_null=True, help_text="0..1, accelerators or their CPU stand-in")
    cpu_cores = serializers.FloatField(allow_null=True, help_text="busy CPU cores")
    accel_util = serializers.FloatField(allow_null=True, help_text="0..1 measured on the accelerators (NVML, Slurm)")
    accel_memory_bytes = serializers.IntegerField(allow_null=True)
    rss_bytes = serializers.IntegerField(allow_null=True)
    swap_bytes = serializers.IntegerField(allow_null=True)
    swap_rate = serializers.FloatField(allow_null=True, help_text="bytes/s moved into swap")
    step_time_s = serializers.FloatField(allow_null=True, help_text="mean step time the SDK reported")
    comm_share = serializers.FloatField(allow_null=True)
    compute_share = serializers.FloatField(allow_null=True)
    data_share = serializers.FloatField(allow_null=True)
    throughput = serializers.FloatField(allow_null=True, help_text="samples/s")


class JobIdleEpisodeSerializer(serializers.Serializer):
    flagged = serializers.BooleanField()
    idle_since = serializers.DateTimeField()
    flagged_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    utilisation = serializers.FloatField()
    threshold = serializers.FloatField()
    action = serializers.ChoiceField(choices=["warned", "cancelled"])
    cancel_at = serializers.DateTimeField(allow_null=True)


class JobHealthSerializer(serializers.Serializer):
    job_id = serializers.IntegerField()
    state = serializers.CharField()
    status = serializers.CharField(help_text="the worst of the rules: ok, warn, bad or unknown")
    measured_at = serializers.DateTimeField(allow_null=True)
    resolution = serializers.ChoiceField(choices=list(RESOLUTION_BY_NAME), allow_null=True)
    utilisation_source = serializers.ChoiceField(choices=["cpu", "nvml", "slurm"])
    note = serializers.CharField(allow_blank=True)
    rules = JobHealthRuleSerializer(many=True)
    tasks = JobTaskMetricsSerializer(many=True)
    idle = JobIdleEpisodeSerializer(allow_null=True)
    sampling_seconds = serializers.FloatField()
    active = serializers.BooleanField()


class JobMetricPointSerializer(JobTaskMetricsSerializer):
    at = None
    node = None
    ts = serializers.DateTimeField()


class JobMetricSeriesSerializer(serializers.Serializer):
    job_id = serializers.IntegerField()
    resolution = serializers.ChoiceField(choices=list(RESOLUTION_BY_NAME))
    utilisation_source = serializers.ChoiceField(choices=["cpu", "nvml", "slurm"])
    points = JobMetricPointSerializer(many=True, help_text="oldest first; at most 5000, the newest kept")


class JobMetricQuerySerializer(serializers.Serializer):
    resolution = serializers.ChoiceField(
        choices=["auto", *RESOLUTION_BY_NAME], default="auto", help_text="auto: the finest that has samples"
    )
    since = serializers.DateTimeField(required=False, help_text="ISO 8601; only samples at or after it")
    rank = serializers.IntegerField(required=False, min_value=0, max_value=1_000_000)

    def validate_since(self, value):
        try:
            # In UTC: PostgreSQL refuses offsets beyond ±15:59 that ISO 8601 parsing accepts.
            return value.astimezone(UTC)
        except OverflowError as exc:
            raise serializers.ValidationError("time out of range") from exc


_TASK = {
    "rank": 0, "node": "node1", "at": "2026-01-05T10:00:10Z", "utilisation": 0.42, "cpu_cores": 0.42,
    "accel_util": None, "accel_memory_bytes": None, "rss_bytes": 2147483648, "swap_bytes": 0, "swap_rate": 0.0,
    "step_time_s": 0.52, "comm_share": 0.31, "compute_share": 0.61, "data_share": 0.08, "throughput": 1230.0,
}  # fmt: skip
HEALTH_EXAMPLE = OpenApiExample(
    "A running job that communicates too much",
    response_only=True,
    value={
        "job_id": 7,
        "state": "RUNNING",
        "status": "bad",
        "measured_at": "2026-01-05T10:00:10Z",
        "resolution": "raw",
        "utilisation_source": "cpu",
        "note": "No accelerator telemetry on this pool: CPU utilisation stands in for accelerator utilisation.",
        "rules": [
            {
                "rule": "utilisation", "title": "Compute utilisation", "value": 0.42, "display": "42%",
                "target": "above 85%", "status": "bad",
                "advice": "compute utilisation is 42%, target above 85%: 31% of each step is communication",
            },
            {
                "rule": "communication", "title": "Communication share of step", "value": 0.31, "display": "31%",
                "target": "below 15%", "status": "bad",
                "advice": "communication is 31% of a 0.52 s step, target below 15%: the job spans 2 switches — try "
                "topology-aware placement (--network=topology_aware --switches=1) or gradient compression",
            },
            {
                "rule": "swapping", "title": "Memory swapping", "value": 0.0, "display": "0 B", "target": "0",
                "status": "ok", "advice": "no memory in swap",
            },
        ],
        "tasks": [_TASK],
        "idle": None,
        "sampling_seconds": 10.0,
        "active": True,
    },
)  # fmt: skip
SERIES_EXAMPLE = OpenApiExample(
    "Raw samples of one rank",
    response_only=True,
    value={
        "job_id": 7,
        "resolution": "raw",
        "utilisation_source": "cpu",
        "points": [{**{k: v for k, v in _TASK.items() if k not in ("at", "node")}, "ts": "2026-01-05T10:00:10Z"}],
    },
)


def _job(request, pk: int) -> Job:
    job = Job.objects.visible_to(request.user, VIEW).filter(pk=pk).first()
    if job is None:
        raise Http404("no such job")
    return job


class JobHealthView(APIView):
    @extend_schema(
        operation_id="jobs_health_retrieve",
        tags=["jobs"],
        summary="The job's health: compute utilisation, communication share, swapping (ai-monitor's rules)",
        responses=JobHealthSerializer,
        examples=[HEALTH_EXAMPLE],
    )
    def get(self, request, pk: int):
        return Response(JobHealthSerializer(job_health(_job(request, pk))).data)


class JobMetricsView(APIView):
    @extend_schema(
        operation_id="jobs_metrics_retrieve",
        tags=["jobs"],
        summary="The job's metric time series per task (raw, 1-minute or 10-minute samples)",
        parameters=[JobMetricQuerySerializer],
        responses=JobMetricSeriesSerializer,
        examples=[SERIES_EXAMPLE],
    )
    def get(self, request, pk: int):
        job = _job(request, pk)
        query = JobMetricQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(JobMetricSeriesSerializer(job_series(job, **query.validated_data)).data)


# (prefix, viewset, basename) registered on the v1 router, and extra django paths under /api/v1/.
ROUTES: list = []
PATHS: list = [
    path("jobs/<int:pk>/health/", JobHealthView.as_view(), name="job-health"),
    path("jobs/<int:pk>/metrics/", JobMetricsView.as_view(), name="job-metrics"),
]
