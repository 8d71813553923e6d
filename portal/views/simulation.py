"""Staff pages of the what-if replay: /simulate/ (start a run, list runs), a run's report, its plots.

Replays read the whole pool's history, so only staff see these pages; anyone else gets 404, as for a page that does
not exist.
"""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from scheduler.plots import PLOTS
from scheduler.plots import render as render_plot
from simulation.forms import CompareForm, WhatIfForm
from simulation.models import RunKind, SimulationRun
from simulation.services import simulation_start


def staff_only(view):
    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_staff:
            raise Http404("no such page")
        return view(request, *args, **kwargs)

    return wrapped


def _run_or_404(pk: int) -> SimulationRun:
    run = SimulationRun.objects.select_related("created_by").filter(pk=pk).first()
    if run is None:
        raise Http404("no such simulation")
    return run


def _home(request, compare_form=None, whatif_form=None, status=200):
    runs = SimulationRun.objects.select_related("created_by").defer("result", "params")[:30]
    context = {
        "runs": runs,
        "compare_form": compare_form or CompareForm(),
        "whatif_form": whatif_form or WhatIfForm(),
    }
    return render(request, "simulation/home.html", context, status=status)


@staff_only
@require_GET
def home(request):
    return _home(request)


@staff_only
@require_POST
def start_compare(request):
    form = CompareForm(request.POST, request.FILES)
    if not form.is_valid():
        return _home(request, compare_form=form, status=400)
    run = simulation_start(user=request.user, kind=RunKind.COMPARE, params=form.params())
    return redirect("simulation-run", pk=run.pk)


@staff_only
@require_POST
def start_whatif(request):
    form = WhatIfForm(request.POST)
    if not form.is_valid():
        return _home(request, whatif_form=form, status=400)
    run = simulation_start(user=request.user, kind=RunKind.WHATIF, params=form.params())
    return redirect("simulation-run", pk=run.pk)


def _report_context(run: SimulationRun) -> dict:
    policies = run.result.get("policies") or []
    base = next((p for p in policies if p["policy"] == "easy"), None)
    rows = []
    for report in policies:
        rows.append(
            {
                **report,
                "jct_ratio": report["jct"]["mean"] / base["jct"]["mean"] if base and base["jct"]["mean"] else None,
                "wait_ratio": report["wait"]["mean"] / base["wait"]["mean"] if base and base["wait"]["mean"] else None,
            }
        )
    tenants = sorted({t for p in policies for t in p["tenant_wait"]})
    tenant_rows = [(t, [p["tenant_wait"].get(t) for p in policies]) for t in tenants]
    params = {k: v for k, v in run.params.items() if k != "data"}
    return {
        "run": run,
        "params": params,
        "rows": rows,
        "tenant_rows": tenant_rows,
        "whatif": run.result.get("whatif"),
        "notes": run.result.get("notes") or [],
        "plots": PLOTS if policies else (),
        "has_baseline": base is not None,
    }


@staff_only
@require_GET
def run_detail(request, pk: int):
    return render(request, "simulation/run.html", _report_context(_run_or_404(pk)))


@staff_only
@require_GET
def run_report(request, pk: int):
    """The report part alone: HTMX polls it until the run is done."""
    return render(request, "simulation/_report.html", _report_context(_run_or_404(pk)))


@staff_only
@require_GET
def run_plot(request, pk: int, name: str):
    run = _run_or_404(pk)
    policies = run.result.get("policies") or []
    if name not in PLOTS or not policies:
        raise Http404("no such plot")
    response = HttpResponse(render_plot(policies, name), content_type="image/png")
    response["Cache-Control"] = "private, max-age=3600"
    return response
