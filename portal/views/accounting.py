"""/usage/: allocated vs used accelerator-hours with filters, a usage-over-time chart, budgets, and a CSV export.

The same reports as ``GET /api/v1/accounting/…`` (accounting.reports), scoped to what the user may see.
"""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone

from accounting import core, reports
from accounting.selectors import Filters
from accounting.windows import STEPS, WindowError, parse_step, parse_window

DIMENSION_CHOICES = [(d, d) for d in core.DIMENSIONS]
SERIES_CHOICES = [(d, d) for d in ("group", "tenant", "user", "partition")]


class UsageForm(forms.Form):
    start = forms.CharField(required=False, max_length=40, help_text="2026-03-01, 2026-03-01T08:00, -7d (UTC)")
    end = forms.CharField(required=False, max_length=40, help_text="as start; empty: now")
    by = forms.ChoiceField(choices=DIMENSION_CHOICES, required=False, initial="group")
    chart_by = forms.ChoiceField(choices=SERIES_CHOICES, required=False, initial="group", label="Chart by")
    step = forms.ChoiceField(choices=[("", "auto"), *((s, s) for s in STEPS)], required=False)
    tenant = forms.SlugField(required=False, max_length=64)
    group = forms.SlugField(required=False, max_length=64, help_text="and its subgroups")
    user = forms.CharField(required=False, max_length=150)
    partition = forms.CharField(required=False, max_length=64)

    def clean(self):
        data = super().clean()
        try:
            data["window"] = parse_window(data.get("start"), data.get("end"), timezone.now())
            data["step_delta"] = parse_step(data.get("step") or None, data["window"])
        except WindowError as exc:
            self.add_error(exc.field if exc.field in self.fields else None, str(exc))
        data["filters"] = Filters(**{k: data.get(k) or "" for k in ("tenant", "group", "user", "partition")})
        return data


def _valid_form(request) -> UsageForm:
    return UsageForm(request.GET or {"by": "group"})


@login_required
def usage(request):
    form = _valid_form(request)
    context = {"form": form}
    if form.is_valid():
        data = form.cleaned_data
        now = timezone.now()
        window, filters = data["window"], data["filters"]
        context["report"] = reports.usage(request.user, window, data.get("by") or "group", filters, now=now)
        context["series"] = reports.series(
            request.user, window, data["step_delta"], data.get("chart_by") or "group", filters, now=now
        )
        context["budgets"] = reports.budgets(request.user, now=now)
        context["query"] = request.GET.urlencode()
    return render(request, "accounting/usage.html", context)


@login_required
def usage_csv(request):
    form = _valid_form(request)
    if not form.is_valid():
        errors = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in form.errors.items())
        return HttpResponse(f"bad filters: {errors}\n", status=400, content_type="text/plain; charset=utf-8")
    data = form.cleaned_data
    report = reports.usage(request.user, data["window"], data.get("by") or "group", data["filters"], now=timezone.now())
    response = HttpResponse(reports.usage_csv(report), content_type="text/csv; charset=utf-8")
    name = f"usage-{report['by']}-{report['start']:%Y%m%dT%H%M}-{report['end']:%Y%m%dT%H%M}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
