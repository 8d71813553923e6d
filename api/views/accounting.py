"""Accounting (sreport): allocated vs used accelerator-hours over any window, usage over time, GrpTRESMins budgets.

Read-only; every number comes from the jobs the caller may see (``Job.objects.visible_to``), so another tenant's
usage never appears. Windows take sreport's -S/-E habits (``2026-03-01``, ``2026-03-01T08:00``, ``now``, ``-7d``).
"""

from __future__ import annotations

from django.urls import path
from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounting import core, reports
from accounting.selectors import Filters
from accounting.windows import STEPS, WindowError, parse_step, parse_window
from api.serializers import ErrorSerializer


class WindowQuery(serializers.Serializer):
    start = serializers.CharField(required=False, max_length=40, help_text="-S: 2026-03-01, 2026-03-01T08:00, -7d")
    end = serializers.CharField(required=False, max_length=40, help_text="-E: as start; default now")
    tenant = serializers.SlugField(required=False, max_length=64)
    group = serializers.SlugField(required=False, max_length=64, help_text="the group and its subgroups")
    user = serializers.CharField(required=False, max_length=150)
    partition = serializers.CharField(required=False, max_length=64)

    def window_and_filters(self) -> tuple[core.Window, Filters]:
        data = self.validated_data
        try:
            window = parse_window(data.get("start"), data.get("end"), timezone.now())
        except WindowError as exc:
            raise exceptions.ValidationError({exc.field: [str(exc)]}) from exc
        filters = Filters(**{k: data.get(k, "") for k in ("tenant", "group", "user", "partition")})
        return window, filters


class UsageQuery(WindowQuery):
    by = serializers.ChoiceField(choices=core.DIMENSIONS, default="group")


class SeriesQuery(WindowQuery):
    by = serializers.ChoiceField(choices=("tenant", "group", "user", "partition"), default="group")
    step = serializers.ChoiceField(choices=tuple(STEPS), required=False, help_text="default: from the window")


class UsageRowSerializer(serializers.Serializer):
    name = serializers.CharField()
    allocated_minutes = serializers.IntegerField(help_text="accelerator-minutes allocated in the window")
    allocated_hours = serializers.FloatField()
    measured_hours = serializers.FloatField(help_text="the part of allocated hours monitoring sampled")
    used_hours = serializers.FloatField(allow_null=True, help_text="null: not measured")
    efficiency = serializers.FloatField(allow_null=True, help_text="used / measured, 0..1; null: not measured")
    jobs = serializers.IntegerField()


class UsageReportSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    by = serializers.CharField()
    rows = UsageRowSerializer(many=True)
    total = UsageRowSerializer()
    pool_capacity_hours = serializers.FloatField(help_text="accelerator-hours the pool's nodes offer in the window")
    pool_allocated_percent = serializers.FloatField(allow_null=True)
    used_method = serializers.CharField()


class SeriesLineSerializer(serializers.Serializer):
    name = serializers.CharField()
    allocated_hours = serializers.ListField(child=serializers.FloatField())


class SeriesSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    step_seconds = serializers.IntegerField()
    step = serializers.CharField(help_text="hour, day or week")
    by = serializers.CharField()
    times = serializers.ListField(child=serializers.DateTimeField(), help_text="the start of each step")
    series = SeriesLineSerializer(many=True)


class BurnDownPointSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    remaining_minutes = serializers.IntegerField()


class BudgetSerializer(serializers.Serializer):
    group = serializers.CharField()
    tenant = serializers.CharField()
    budget_minutes = serializers.IntegerField(help_text="GrpTRESMins gres/accelerator (time-limit minutes)")
    spent_minutes = serializers.IntegerField(help_text="by the group's subtree, running jobs up to now")
    remaining_minutes = serializers.IntegerField()
    spent_percent = serializers.FloatField()
    burn_per_day = serializers.FloatField(help_text="mean accelerator-minutes a day over the lookback")
    runs_out_at = serializers.DateTimeField(allow_null=True, help_text="null: nothing burns, it never runs out")
    burn_down = BurnDownPointSerializer(many=True, help_text="budget left once a day over the lookback, up to now")


class BudgetsSerializer(serializers.Serializer):
    method = serializers.CharField()
    lookback_days = serializers.FloatField(allow_null=True)
    budgets = BudgetSerializer(many=True)


ROW = {
    "name": "ai-team",
    "allocated_minutes": 5760,
    "allocated_hours": 96.0,
    "measured_hours": 48.0,
    "used_hours": 40.8,
    "efficiency": 0.85,
    "jobs": 3,
}
USAGE_EXAMPLE = OpenApiExample(
    "Usage by group over two days",
    value={
        "start": "2026-03-01T00:00:00Z",
        "end": "2026-03-03T00:00:00Z",
        "by": "group",
        "rows": [ROW],
        "total": {**ROW, "name": "total"},
        "pool_capacity_hours": 1536.0,
        "pool_allocated_percent": 6.25,
        "used_method": reports.USED_METHOD,
    },
    response_only=True,
)
SERIES_EXAMPLE = OpenApiExample(
    "Daily allocated hours per group",
    value={
        "start": "2026-03-01T00:00:00Z",
        "end": "2026-03-03T00:00:00Z",
        "step_seconds": 86400,
        "step": "day",
        "by": "group",
        "times": ["2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"],
        "series": [{"name": "ai-team", "allocated_hours": [64.0, 32.0]}],
    },
    response_only=True,
)
BUDGETS_EXAMPLE = OpenApiExample(
    "One group with a budget",
    value={
        "method": "linear: budget left / mean burn rate of the last 7 days",
        "lookback_days": 7.0,
        "budgets": [
            {
                "group": "ai-team",
                "tenant": "acme",
                "budget_minutes": 100000,
                "spent_minutes": 61000,
                "remaining_minutes": 39000,
                "spent_percent": 61.0,
                "burn_per_day": 3900.0,
                "runs_out_at": "2026-03-12T09:00:00Z",
                "burn_down": [
                    {"at": "2026-03-01T09:00:00Z", "remaining_minutes": 66300},
                    {"at": "2026-03-02T09:00:00Z", "remaining_minutes": 62100},
                    {"at": "2026-03-08T09:00:00Z", "remaining_minutes": 39000},
                ],
            }
        ],
    },
    response_only=True,
)


BAD_QUERY = OpenApiResponse(ErrorSerializer, description="validation_error: a bad window, filter or dimension")


def _query(serializer_class, request):
    query = serializer_class(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query


class UsageView(APIView):
    @extend_schema(
        operation_id="accounting_usage",
        tags=["accounting"],
        summary="sreport: allocated vs used accelerator-hours by cluster, tenant, group, user or partition",
        parameters=[UsageQuery],
        responses={200: UsageReportSerializer, 400: BAD_QUERY},
        examples=[USAGE_EXAMPLE],
    )
    def get(self, request):
        query = _query(UsageQuery, request)
        window, filters = query.window_and_filters()
        data = reports.usage(request.user, window, query.validated_data["by"], filters, now=timezone.now())
        return Response(UsageReportSerializer(data).data)


class SeriesView(APIView):
    @extend_schema(
        operation_id="accounting_series",
        tags=["accounting"],
        summary="Allocated accelerator-hours per step (hour, day, week) and per group, tenant, user or partition",
        parameters=[SeriesQuery],
        responses={200: SeriesSerializer, 400: BAD_QUERY},
        examples=[SERIES_EXAMPLE],
    )
    def get(self, request):
        query = _query(SeriesQuery, request)
        window, filters = query.window_and_filters()
        try:
            step = parse_step(query.validated_data.get("step"), window)
        except WindowError as exc:
            raise exceptions.ValidationError({exc.field: [str(exc)]}) from exc
        data = reports.series(request.user, window, step, query.validated_data["by"], filters, now=timezone.now())
        return Response(SeriesSerializer(data).data)


class BudgetsView(APIView):
    @extend_schema(
        operation_id="accounting_budgets",
        tags=["accounting"],
        summary="GrpTRESMins budgets: spent, left, burn rate and when each runs out (linear forecast)",
        responses=BudgetsSerializer,
        examples=[BUDGETS_EXAMPLE],
    )
    def get(self, request):
        return Response(BudgetsSerializer(reports.budgets(request.user, now=timezone.now())).data)


# (prefix, viewset, basename) registered on the v1 router, and extra django paths under /api/v1/.
ROUTES: list = []
PATHS: list = [
    path("accounting/usage/", UsageView.as_view(), name="accounting-usage"),
    path("accounting/series/", SeriesView.as_view(), name="accounting-series"),
    path("accounting/budgets/", BudgetsView.as_view(), name="accounting-budgets"),
]
