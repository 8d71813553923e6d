"""Monitoring in the browser: the job page's health panel (an HTMX partial) and Prometheus's /metrics."""

from __future__ import annotations

import hmac

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from monitoring import conf
from monitoring.prometheus import exposition
from monitoring.selectors import job_health
from portal.views.common import job_or_404

STOP_POLLING = 286  # htmx stops polling an element answered with this status


@login_required
@require_GET
def job_health_panel(request, pk: int):
    job = job_or_404(request.user, pk)
    health = job_health(job)
    response = render(request, "monitoring/_health.html", {"job": job, "health": health, "poll": True})
    if not health["active"]:
        response.status_code = STOP_POLLING
    return response


@require_GET
def prometheus_metrics(request):
    """Prometheus text format. With AIPOOL_METRICS_TOKEN set, only ``Authorization: Bearer <token>`` (or a staff
    session) may read it; without, it is open like most exporters: keep it off the public network then."""
    token = conf.metrics_token()
    if token and not (_bearer_matches(request, token) or request.user.is_staff):
        response = HttpResponse("metrics need Authorization: Bearer <AIPOOL_METRICS_TOKEN>\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="aipool-metrics"'
        response["Content-Type"] = "text/plain; charset=utf-8"
        return response
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)


def _bearer_matches(request, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
