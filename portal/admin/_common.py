"""Pieces the admin modules share: service errors as messages, and "used / limit" cells."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import BigIntegerField, F, Func, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from jobs.models import Job
from vocab.states import JobState
from vocab.tres import ACCEL, CPU, MEM, NODE, format_memory, tres_label

# A cell turns red at this share of its limit: the tenant admin's cue to raise it before jobs start to pend.
NEAR_LIMIT = 0.9

# Annotation name -> (TRES, per-job expression) for the running-usage columns.
USAGE_EXPRESSIONS = {
    "usage_cpu": (CPU, F("nodes") * F("cpus_per_node")),
    "usage_mem": (MEM, F("nodes") * F("memory_per_node")),
    "usage_node": (NODE, F("nodes")),
    "usage_accel": (ACCEL, F("nodes") * F("accelerators_per_node")),
}
USAGE_BY_TRES = {tres: name for name, (tres, _) in USAGE_EXPRESSIONS.items()}


def subquery_aggregate(rows, function: str, expression, output_field):
    # An aggregate over the whole filtered set in a correlated subquery: one row, no GROUP BY, and the outer
    # changelist stays a single query however many rows it shows. ORDER BY is dropped for PostgreSQL's sake.
    total = Func(expression, function=function, output_field=output_field)
    return Subquery(rows.order_by().annotate(total=total).values("total"), output_field=output_field)


def job_usage_annotations(**correlation) -> dict:
    """TRES held by running jobs, and running and pending job counts, of the jobs matching `correlation`.

    `correlation` filters jobs against the outer row, e.g. ``tenant=OuterRef("pk")`` or
    ``group__path__startswith=OuterRef("path")`` (a group's subtree, since a parent's limits bind it).
    """
    running = Job.objects.filter(state=JobState.RUNNING, **correlation)
    pending = Job.objects.filter(state=JobState.PENDING, **correlation)
    annotations = {
        name: Coalesce(
            subquery_aggregate(running, "SUM", expression, BigIntegerField()),
            0,
            output_field=BigIntegerField(),
        )
        for name, (_, expression) in USAGE_EXPRESSIONS.items()
    }
    annotations["usage_running"] = subquery_aggregate(running, "COUNT", F("pk"), IntegerField())
    annotations["usage_pending"] = subquery_aggregate(pending, "COUNT", F("pk"), IntegerField())
    return annotations


def tenant_correlation() -> dict:
    return {"tenant": OuterRef("pk")}


def subtree_correlation() -> dict:
    return {"group__path__startswith": OuterRef("path")}


def usage_cell(label: str, used: int, limit: int | None, fmt: Callable[[int], str] = str):
    """``accelerators 612 / 800``, red from NEAR_LIMIT of the limit on; ``/ ∞`` when there is no limit."""
    used = used or 0
    if limit is None:
        return f"{label} {fmt(used)} / ∞"
    text = f"{label} {fmt(used)} / {fmt(limit)}"
    if used >= NEAR_LIMIT * limit:
        share = round(100 * used / limit) if limit else 100
        return format_html('<strong style="color:#ba2121" title="{}% of the limit">{}</strong>', share, text)
    return text


def tres_usage_cell(obj, tres: str):
    fmt = format_memory if tres == MEM else str
    return usage_cell(tres_label(tres), getattr(obj, USAGE_BY_TRES[tres]), (obj.grp_tres or {}).get(tres), fmt)


def other_tres_usage(obj):
    """Memory and node usage, only where the association limits them (most limit accelerators and cpus)."""
    cells = [tres_usage_cell(obj, tres) for tres in (MEM, NODE) if tres in (obj.grp_tres or {})]
    if not cells:
        return "-"
    return format_html_join(mark_safe("<br>"), "{}", ((cell,) for cell in cells))


def running_jobs_cell(obj):
    return usage_cell("running", obj.usage_running, obj.grp_jobs)


def audit_history_link(**filters):
    url = reverse("admin:tenants_auditlog_changelist") + "?" + urlencode(filters)
    return format_html('<a href="{}">history in audit log</a>', url)


class ServiceWritesMixin:
    """For admins whose saves and deletes go through ``tenants.services``.

    Forms check what they can up front; a service may still refuse (a race, a rule only it knows). Its
    ValidationError then becomes an error message, and the view's transaction rolls back whatever was
    half-written, instead of a 500.
    """

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ValidationError as exc:
            return self._refused(request, exc)

    def delete_view(self, request, object_id, extra_context=None):
        try:
            return super().delete_view(request, object_id, extra_context)
        except ValidationError as exc:
            return self._refused(request, exc)

    def changelist_view(self, request, extra_context=None):
        # Bulk "delete selected" runs through delete_queryset, i.e. through the services as well.
        try:
            return super().changelist_view(request, extra_context)
        except ValidationError as exc:
            return self._refused(request, exc)

    def _refused(self, request, exc: ValidationError):
        self.message_user(request, "; ".join(exc.messages), messages.ERROR)
        return HttpResponseRedirect(request.get_full_path())


def adopt(obj, saved) -> None:
    """Make the admin's in-memory `obj` the row a service saved, so the admin's redirects and log use it."""
    for field in saved._meta.concrete_fields:
        setattr(obj, field.attname, getattr(saved, field.attname))
    obj.__dict__.pop("_prefetched_objects_cache", None)
    obj._state.adding = False
    obj._state.db = saved._state.db
