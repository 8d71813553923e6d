"""Writes of the gateway and the autoscaler (style.md §2): keyword-only, atomic.

Traffic counters are metrics, not decisions of a person: they are not written to the audit log. Scaling decisions
are, through inference.services.service_scale.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from gateway.metrics import TrafficRow
from gateway.models import AutoscalerState, TrafficWindow
from inference.autoscaler import ScalerState
from inference.models import InferenceService, ServiceKey

# last_used_at is for people ("was this key used this week?"): once a minute per key is plenty.
KEY_TOUCH_EVERY = timedelta(seconds=60)


@transaction.atomic
def record_traffic(*, gateway: str, rows: list[TrafficRow], used_keys: dict[int, float] | None = None) -> int:
    """One batch of finished seconds from one gateway process: one INSERT, plus one UPDATE for keys' last use."""
    wanted = {row.service_id for row in rows}
    # A service deleted since the gateway read its routes: its seconds are dropped, not a foreign-key error that
    # would fail every later flush too.
    existing = set(InferenceService.objects.filter(pk__in=wanted).values_list("pk", flat=True)) if wanted else set()
    TrafficWindow.objects.bulk_create(
        [
            TrafficWindow(
                service_id=row.service_id,
                second=row.second,
                gateway=gateway[:100],
                requests=row.counts.requests,
                errors=row.counts.errors,
                retries=row.counts.retries,
                throttled=row.counts.throttled,
                latency_sum_ms=row.counts.latency_sum_ms,
                latency_buckets=row.counts.buckets,
            )
            for row in rows
            if row.service_id in existing
        ],
        ignore_conflicts=True,  # a batch written twice (a flush retried after a lost answer) counts once
    )
    if used_keys:
        now = timezone.now()
        ServiceKey.objects.filter(pk__in=list(used_keys)).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - KEY_TOUCH_EVERY)
        ).update(last_used_at=now)
    return len(existing)


def purge_traffic(*, keep_seconds: int, now: float) -> int:
    """Drop traffic rows older than `keep_seconds`; one DELETE on the `second` index."""
    deleted, _ = TrafficWindow.objects.filter(second__lt=int(now) - keep_seconds).delete()
    return deleted


def claim_decision(*, service_id: int, now: float, min_gap_s: float) -> ScalerState | None:
    """Claim the right to decide for `service_id` at `now`, race-free; None when another run decided moments ago.

    Two beat runs that overlap (a slow worker, a retried task) must not both apply a decision from the same state.
    """
    claimed = AutoscalerState.objects.filter(service_id=service_id, decided_at__lte=now - min_gap_s).update(
        decided_at=now
    )
    if not claimed:
        # Either decided moments ago, or never: the first run to create the row is the one that decides.
        _, created = AutoscalerState.objects.get_or_create(service_id=service_id, defaults={"decided_at": now})
        return ScalerState() if created else None
    row = AutoscalerState.objects.get(service_id=service_id)
    return ScalerState(
        panic_since=row.panic_since,
        panic_last_over=row.panic_last_over,
        panic_max=row.panic_max,
        recent=tuple((float(t), int(n)) for t, n in row.recent or ()),
    )


def save_scaler_state(*, service_id: int, state: ScalerState) -> None:
    AutoscalerState.objects.filter(service_id=service_id).update(
        panic_since=state.panic_since,
        panic_last_over=state.panic_last_over,
        panic_max=state.panic_max,
        recent=[list(entry) for entry in state.recent],
    )
