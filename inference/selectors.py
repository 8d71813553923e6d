"""Reads over inference services for the gateway, the autoscaler and the pages (style.md §2).

``gateway_routes`` and ``autoscale_inputs`` are system reads (no user): the gateway and the beat task act for the pool.
Every read on behalf of a person starts from ``InferenceService.objects.visible_to(user)``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Count, F, Prefetch, Q

from inference.models import InferenceService, Replica, ReplicaState, ServiceKey
from inference.quota import ReplicaShape, headroom_for
from tenants.models import Group


@dataclass(frozen=True)
class GatewayRoute:
    service_id: int
    tenant: str
    service: str
    rate_limit_rps: int
    key_hashes: dict[str, int] = field(default_factory=dict)  # key_hash -> key id, active keys only
    replicas: tuple[tuple[int, str], ...] = ()  # (replica id, base url) of READY replicas only


def gateway_routes() -> dict[tuple[str, str], GatewayRoute]:
    """Every service by (tenant name, service name), with its active keys and ready replicas. Three queries."""
    services = InferenceService.objects.select_related("tenant").prefetch_related(
        Prefetch(
            "keys",
            queryset=ServiceKey.objects.filter(revoked_at__isnull=True).only("id", "key_hash", "service_id"),
            to_attr="active_keys",
        ),
        Prefetch(
            "replicas",
            queryset=Replica.objects.filter(state=ReplicaState.READY).exclude(url="").order_by("id"),
            to_attr="ready_replicas",
        ),
    )
    return {
        (s.tenant.name, s.name): GatewayRoute(
            service_id=s.pk,
            tenant=s.tenant.name,
            service=s.name,
            rate_limit_rps=s.rate_limit_rps,
            key_hashes={k.key_hash: k.pk for k in s.active_keys},
            replicas=tuple((r.pk, r.url) for r in s.ready_replicas),
        )
        for s in services
    }


@dataclass(frozen=True)
class AutoscaleTarget:
    service_id: int
    min_replicas: int
    max_replicas: int
    scale_metric: str  # "qps" | "concurrency"
    scale_target: int  # per replica
    desired_replicas: int
    ready_replicas: int
    quota_headroom_replicas: int | None  # how many MORE replicas the limits admit now; None = no limit binds
    quota_message: str  # the binding limit, e.g. "group ai-team uses 796/800 accelerators"; "" when none binds


def autoscale_inputs() -> list[AutoscaleTarget]:
    """Every service that can scale (max > min), with its quota headroom. A fixed number of queries."""
    services = list(
        InferenceService.objects.filter(max_replicas__gt=F("min_replicas"))
        .select_related("group")
        .annotate(ready=Count("replicas", filter=Q(replicas__state=ReplicaState.READY)))
        .order_by("pk")
    )
    headroom = headroom_for([(s.group, _shape(s)) for s in services])
    targets = []
    for service in services:
        room = headroom[(service.group_id, _shape(service))]
        targets.append(
            AutoscaleTarget(
                service_id=service.pk,
                min_replicas=service.min_replicas,
                max_replicas=service.max_replicas,
                scale_metric=service.scale_metric,
                scale_target=service.scale_target,
                desired_replicas=service.desired_replicas,
                ready_replicas=service.ready,
                quota_headroom_replicas=room.replicas,
                quota_message=room.message,
            )
        )
    return targets


def _shape(service: InferenceService) -> ReplicaShape:
    return ReplicaShape.of(service)


# --- pages and API ----------------------------------------------------------------------------------------------------


def replica_counts(services) -> dict[int, dict[str, int]]:
    """Replicas per state for each service, one query (lists never count per row)."""
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    rows = Replica.objects.filter(service__in=services).values("service_id", "state").annotate(n=Count("id")).order_by()
    for row in rows:
        counts[row["service_id"]][row["state"]] = row["n"]
    return counts


def groups_for_apply(user):
    """Groups `user` may run services in: their group memberships (staff: any group)."""
    groups = Group.objects.visible_to(user).select_related("tenant")
    if user.is_staff:
        return groups
    return groups.filter(members__user=user)
