"""Prometheus exposition: a custom collector that asks the database at scrape time (a handful of aggregate queries).

Nothing is kept in process memory, so every web worker answers the same numbers and a restart loses nothing.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from django.db.models import Avg, Count, F, Sum
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily

from cluster.models import Node, NodeState
from jobs.models import Job
from monitoring import conf
from monitoring.models import RAW, CeleryProbe, IdleEpisode, MetricSample
from tenants.models import Tenant
from vocab.states import JobState


class PoolCollector:
    def collect(self):
        yield from self._pool()
        yield from self._jobs()
        yield from self._tenants()
        yield from self._celery()

    def _pool(self):
        total = Node.objects.exclude(state=NodeState.DOWN).aggregate(n=Sum("accelerators"))["n"] or 0
        allocated = Job.objects.running().aggregate(n=Sum(F("nodes") * F("accelerators_per_node")))["n"] or 0
        accelerators = GaugeMetricFamily(
            "aipool_accelerators", "Accelerators of nodes that are not DOWN", labels=["state"]
        )
        accelerators.add_metric(["total"], total)
        accelerators.add_metric(["allocated"], allocated)
        yield accelerators
        yield GaugeMetricFamily(
            "aipool_pool_allocated_ratio", "Allocated / total accelerators", value=allocated / total if total else 0.0
        )
        since = datetime.now(UTC) - timedelta(seconds=3 * conf.sample_seconds())
        busy = MetricSample.objects.filter(resolution=RAW, ts__gte=since, job__state=JobState.RUNNING).aggregate(
            u=Avg("utilisation")
        )["u"]
        yield GaugeMetricFamily(
            "aipool_pool_busy_ratio",
            "Mean measured utilisation of running jobs' tasks over the last three sampling periods (0..1)",
            value=busy or 0.0,
        )

    def _jobs(self):
        by_state = dict(Job.objects.order_by().values_list("state").annotate(n=Count("id")))
        jobs = GaugeMetricFamily("aipool_jobs", "Jobs by state (Slurm's words)", labels=["state"])
        for state in JobState:
            jobs.add_metric([state.value], by_state.get(state.value, 0))
        yield jobs
        queue = GaugeMetricFamily("aipool_queue_length", "Pending jobs by reason code", labels=["reason"])
        for reason, count in Job.objects.pending().order_by().values_list("reason").annotate(n=Count("id")):
            queue.add_metric([reason], count)
        yield queue

    def _tenants(self):
        names = dict(Tenant.objects.values_list("id", "name"))
        active = (
            Job.objects.active()
            .order_by()
            .values_list("tenant_id", "state")
            .annotate(n=Count("id"), accel=Sum(F("nodes") * F("accelerators_per_node")))
        )
        jobs = GaugeMetricFamily(
            "aipool_tenant_jobs", "Running and pending jobs per tenant", labels=["tenant", "state"]
        )
        accel = GaugeMetricFamily(
            "aipool_tenant_allocated_accelerators", "Accelerators held by running jobs per tenant", labels=["tenant"]
        )
        counts = {(tenant_id, state): (n, a or 0) for tenant_id, state, n, a in active}
        for tenant_id, name in sorted(names.items(), key=lambda item: item[1]):
            for state in (JobState.RUNNING, JobState.PENDING):
                jobs.add_metric([name, state.value], counts.get((tenant_id, state.value), (0, 0))[0])
            accel.add_metric([name], counts.get((tenant_id, JobState.RUNNING.value), (0, 0))[1])
        yield jobs
        yield accel
        idle = GaugeMetricFamily(
            "aipool_tenant_idle_jobs", "Running jobs flagged for idle accelerators per tenant", labels=["tenant"]
        )
        flagged = dict(IdleEpisode.objects.open().order_by().values_list("job__tenant_id").annotate(n=Count("id")))
        for tenant_id, name in sorted(names.items(), key=lambda item: item[1]):
            idle.add_metric([name], flagged.get(tenant_id, 0))
        yield idle

    def _celery(self):
        latency = GaugeMetricFamily(
            "aipool_celery_task_latency_seconds", "Enqueue to start delay of the last probe task", labels=["probe"]
        )
        age = GaugeMetricFamily("aipool_celery_probe_age_seconds", "Seconds since the last probe ran", labels=["probe"])
        now = time.time()
        for probe in CeleryProbe.objects.all():
            latency.add_metric([probe.name], probe.latency_seconds)
            age.add_metric([probe.name], max(0.0, now - probe.started_at.timestamp()))
        yield latency
        yield age


def exposition() -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PoolCollector())
    return generate_latest(registry)
