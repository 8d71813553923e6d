"""The dashboard: my running and pending jobs, my groups' usage against every limit, and what the pool has free."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from jobs.models import Job
from jobs.selectors import quota_for
from portal.views.meters import meters_for
from portal.views.pool import pool_status
from vocab.states import ACTIVE_STATES

RECENT = 5


def _my_jobs(user) -> dict:
    mine = Job.objects.visible_to(user).filter(user=user).select_related("group", "partition")
    active = list(mine.filter(state__in=[s.value for s in ACTIVE_STATES]).order_by("-id")[:50])
    return {
        "active_jobs": active,
        "running_count": sum(1 for j in active if j.state == "RUNNING"),
        "pending_count": sum(1 for j in active if j.state == "PENDING"),
        "recent_jobs": list(mine.exclude(state__in=[s.value for s in ACTIVE_STATES]).order_by("-id")[:RECENT]),
    }


def _usage(user) -> dict:
    return {"group_meters": [meters_for(q) for q in quota_for(user)]}


def _pool() -> dict:
    partitions = pool_status()
    return {
        "partitions": partitions,
        "pool_free": sum(p.free for p in partitions),
        "pool_total": sum(p.total for p in partitions),
        "pool_idle_nodes": len({n.name for p in partitions for n in p.nodes if n.whole_free}),
    }


@login_required
def dashboard(request):
    context = {**_my_jobs(request.user), **_usage(request.user), **_pool()}
    return render(request, "portal/dashboard.html", context)


@login_required
def dashboard_jobs(request):
    return render(request, "portal/_dashboard_jobs.html", {**_my_jobs(request.user), **_pool()})


@login_required
def dashboard_usage(request):
    return render(request, "portal/_usage.html", _usage(request.user))


@login_required
def dashboard_pool(request):
    return render(request, "portal/_pool.html", _pool())
