"""The worst idle offenders: who left the most allocated accelerator-hours idle recently (for pool admins)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from monitoring.models import IdleEpisode

MAX_EPISODES = 20_000  # a bound on the scan; far more than a pool produces in the window


@dataclass
class Offender:
    tenant: str
    user: str
    episodes: int = 0
    cancelled: int = 0
    idle_accelerator_hours: float = 0.0
    last_flagged: datetime | None = None


def worst_offenders(*, days: int = 30, limit: int = 20, now: datetime | None = None) -> list[Offender]:
    """Users ranked by idle accelerator-hours (accelerators × idle time) of episodes flagged in the last `days`."""
    now = now or timezone.now()
    episodes = (
        IdleEpisode.objects.filter(flagged_at__gte=now - timedelta(days=days))
        .select_related("job__tenant", "job__user")
        .order_by("-flagged_at")[:MAX_EPISODES]
    )
    table: dict[tuple[str, str], Offender] = {}
    for episode in episodes:
        key = (episode.job.tenant.name, episode.job.user.username)
        row = table.setdefault(key, Offender(*key))
        row.episodes += 1
        row.cancelled += episode.action == "cancelled"
        hours = ((episode.ended_at or now) - episode.idle_since).total_seconds() / 3600
        row.idle_accelerator_hours += max(0.0, hours) * episode.accelerators
        row.last_flagged = max(filter(None, (row.last_flagged, episode.flagged_at)))
    return sorted(table.values(), key=lambda r: -r.idle_accelerator_hours)[:limit]
