"""Browser pages of the monitoring app, and Prometheus's /metrics (no session needed; see docs/monitoring.md)."""

from django.urls import path

from portal.views import monitoring

urlpatterns: list = [
    path("jobs/<int:pk>/health/", monitoring.job_health_panel, name="job-health"),
    path("metrics", monitoring.prometheus_metrics, name="prometheus-metrics"),
]
