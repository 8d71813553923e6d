"""Template filters in Slurm's formats: time limits, memory, TRES strings, host lists, durations."""

from __future__ import annotations

import json
import re
from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.safestring import mark_safe

from jobs.selectors import REASON_MESSAGES
from vocab.slurmtime import format_minutes
from vocab.states import Reason
from vocab.tres import format_memory, format_tres

register = template.Library()

_NUMBERED = re.compile(r"^(.*?)(\d+)$")


@register.filter
def minutes(value):
    return format_minutes(value)


@register.filter
def memory(value):
    return "" if value in (None, "") else format_memory(int(value))


@register.filter
def tres(value):
    return format_tres(value) or "—"


@register.filter
def get(mapping, key):
    return (mapping or {}).get(key)


@register.filter
def hostlist(names) -> str:
    """``["node1", "node2", "node4"]`` → ``node[1-2,4]``, as Slurm prints a node list."""
    names = list(names or [])
    groups: dict[str, list[tuple[int, str]]] = {}
    plain = []
    for name in names:
        match = _NUMBERED.match(name)
        if match:
            groups.setdefault(match.group(1), []).append((int(match.group(2)), match.group(2)))
        else:
            plain.append(name)
    parts = []
    for prefix, numbers in groups.items():
        numbers.sort()
        if len(numbers) == 1:
            parts.append(f"{prefix}{numbers[0][1]}")
            continue
        ranges, start, prev = [], numbers[0], numbers[0]
        for current in numbers[1:]:
            if current[0] != prev[0] + 1:
                ranges.append(start[1] if start == prev else f"{start[1]}-{prev[1]}")
                start = current
            prev = current
        ranges.append(start[1] if start == prev else f"{start[1]}-{prev[1]}")
        parts.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(parts + plain)


@register.filter
def elapsed(job) -> str:
    """Run time so far (or in total), ``1-02:03:04`` style like sacct's Elapsed."""
    if job is None or job.started_at is None:
        return "—"
    end: datetime = job.ended_at or timezone.now()
    seconds = max(0, int((end - job.started_at).total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    mins, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{mins:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


@register.filter
def reason_text(job) -> str:
    """The reason a pending job waits, in plain words."""
    if job is None or not job.reason or job.reason == Reason.NONE and job.state != "PENDING":
        return ""
    template_text = REASON_MESSAGES.get(job.reason)
    if template_text is None:
        return job.reason
    return template_text.format(partition=job.partition.name, reason=job.reason)


@register.filter
def lower_state(state) -> str:
    return str(state or "").lower().replace("_", "-")


@register.filter
def pct(part, whole) -> int:
    try:
        return max(0, min(100, round(100 * float(part) / float(whole))))
    except (TypeError, ValueError, ZeroDivisionError):
        return 0


@register.simple_tag(takes_context=True)
def current(context, prefix: str, exact: bool = False) -> str:
    """``aria-current="page"`` on the nav link of the section the page belongs to."""
    request = context.get("request")
    path = getattr(request, "path", "")
    hit = path == prefix if exact else path.startswith(prefix)
    return mark_safe(' aria-current="page"') if hit else ""


@register.simple_tag(takes_context=True)
def managed_tenants(context):
    """Tenants the signed-in user administers: they get a link to the tenant pages."""
    from portal.views.common import admin_tenants

    user = context.get("user")
    if user is None or not user.is_authenticated:
        return []
    return list(admin_tenants(user).values_list("name", flat=True)[:10])


@register.filter
def amount(value) -> str:
    """A cause's number: a TRES dict in sacctmgr's form, anything else as it is."""
    if isinstance(value, dict):
        return format_tres(value) or "—"
    return "" if value is None else str(value)


@register.filter
def eta(value) -> str:
    """An estimated start (a datetime or ISO 8601 text) as "in 12 min (14:05 UTC)"."""
    if not value:
        return ""
    when = value
    if isinstance(value, str):
        when = parse_datetime(value)
        if when is None:
            return value
    now = timezone.now()
    if when <= now:
        return "now"
    minutes_left = int((when - now).total_seconds() // 60)
    if minutes_left < 1:
        soon = "in under a minute"
    elif minutes_left < 120:
        soon = f"in {minutes_left} min"
    elif minutes_left < 48 * 60:
        soon = f"in {minutes_left // 60} h {minutes_left % 60:02d} min"
    else:
        soon = f"in {minutes_left // 1440} days"
    return f"{soon} ({timezone.localtime(when):%b %d %H:%M} UTC)"


@register.filter
def tojson(value) -> str:
    """JSON for a data attribute (autoescaping makes it attribute-safe)."""
    return json.dumps(value, default=str)


@register.filter
def nonzero(mapping) -> dict:
    return {k: v for k, v in (mapping or {}).items() if v}
