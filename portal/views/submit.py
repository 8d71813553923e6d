"""The submission form: knows the user's groups, partitions and limits, checks as you type, says now or when."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from cluster.models import NodeState
from jobs.selectors import GroupQuota, Usage, group_usage, quota_for
from jobs.services import IdempotencyConflict, job_submit
from portal.forms import JobForm, initial_from_job, initial_from_query
from portal.views.common import job_or_404, submit_groups
from portal.views.meters import meters_for
from portal.views.pool import pool_status
from portal.views.preview import preview_submission
from tenants.models import Group
from vocab.slurmtime import format_minutes

ALL_TOUCHED = "*"
# Fields without an error slot on the page (hidden, or a choice that cannot be wrong): an OOB swap needs a target.
NO_SLOT = {"idempotency_key", "mode"}


def _partitions_by_group(groups: list[Group], partitions) -> dict[str, list[str]]:
    names = [p.partition.name for p in partitions]
    return {g.name: [p.name for p in g.allowed_partitions.all()] or names for g in groups}


def _group_context(user, group: Group | None, partitions) -> dict | None:
    """The selected group's limits and usage, and the shape of the partitions it may use."""
    if group is None:
        return None
    quota = next((q for q in quota_for(user) if q.group.pk == group.pk), None)
    if quota is None:  # staff submitting to a group they are not in
        usage = group_usage([group]).get(group.pk) or Usage()
        quota = GroupQuota(group=group, usage=usage, user_usage=Usage())
    allowed = {p.name for p in group.allowed_partitions.all()}
    shapes = []
    for view in partitions:
        if allowed and view.partition.name not in allowed:
            continue
        up = [n for n in view.nodes if n.state not in (NodeState.DOWN, NodeState.DRAIN)]
        shapes.append(
            {
                "name": view.partition.name,
                "default": view.partition.pk == group.default_partition_id
                or (not group.default_partition_id and view.partition.is_default),
                "max_time": format_minutes(view.partition.max_time),
                "nodes": len(up),
                "per_node": max((n.accelerators for n in up), default=0),
                "free": view.free,
                "whole_nodes_free": view.whole_nodes_free,
                "switches": len(view.switches),
            }
        )
    return {"meters": meters_for(quota), "partitions": shapes}


def _touched(request) -> str | set[str]:
    touched = {t for t in request.POST.get("touched", "").split(",") if t}
    return ALL_TOUCHED if ALL_TOUCHED in touched else touched


def _error_slots(form: JobForm, touched: str | set[str]) -> tuple[dict[str, list[str]], int]:
    """Errors to show per field: only for fields the person has touched, so a fresh form is not a wall of red."""
    if not form.is_bound:
        return {}, 0
    shown, hidden = {}, 0
    for name in form.fields:
        if name in NO_SLOT:
            continue
        errors = list(form.errors.get(name, []))
        if touched == ALL_TOUCHED or name in touched:
            shown[name] = errors
        else:
            shown[name] = []
            hidden += len(errors)
    shown["__all__"] = list(form.non_field_errors())
    return shown, hidden


def _context(request, form: JobForm, groups: list[Group], touched: str | set[str] = "", **extra) -> dict:
    partitions = pool_status()
    slots, hidden = _error_slots(form, touched)
    group = None
    if form.is_bound and hasattr(form, "cleaned_data"):
        group = form.group_obj
    if group is None:
        name = form.data.get("group") if form.is_bound else form.initial.get("group")
        group = next((g for g in groups if g.name == name), groups[0] if groups else None)
    return {
        "form": form,
        "groups": groups,
        "partitions_by_group": _partitions_by_group(groups, partitions),
        "group_context": _group_context(request.user, group, partitions),
        "field_errors": slots,
        "hidden_errors": hidden,
        "visible_error_count": sum(len(errors) for errors in slots.values()),
        "touched": touched if isinstance(touched, str) else ",".join(sorted(touched)),
        **extra,
    }


def _groups(user) -> list[Group]:
    return list(submit_groups(user).prefetch_related("allowed_partitions"))


@login_required
def job_new(request):
    groups = _groups(request.user)
    if request.method == "POST":
        form = JobForm(request.POST, groups=groups)
        job = _submit(request, form)
        if job is not None:
            return redirect("job-detail", pk=job.pk)
        return render(request, "jobs/new.html", _context(request, form, groups, touched=ALL_TOUCHED, checked=True))
    initial = {}
    prefilled = False
    if request.GET.get("from"):
        try:
            source = job_or_404(request.user, int(request.GET["from"]))
        except ValueError:
            source = None
        if source is not None:
            initial = initial_from_job(source)
            prefilled = True
    query_initial = initial_from_query(request.GET)
    prefilled = prefilled or bool(query_initial)
    initial.update(query_initial)
    if not initial.get("group") and groups:
        initial["group"] = groups[0].name
    form = JobForm(initial=initial, groups=groups)
    return render(
        request,
        "jobs/new.html",
        _context(request, form, groups, touched=ALL_TOUCHED if prefilled else "", prefilled=prefilled),
    )


def _submit(request, form: JobForm):
    if not form.is_valid() or form.spec is None:
        return None
    group = form.group_obj
    if group is None:
        form.add_error("group", "choose one of your groups")
        return None
    try:
        job, created = job_submit(
            user=request.user,
            group=group,
            spec=form.spec,
            idempotency_key=form.cleaned_data.get("idempotency_key") or None,
        )
    except ValidationError as exc:
        form.add_spec_errors(exc)
        return None
    except PermissionDenied as exc:
        form.add_error("group", str(exc))
        return None
    except IdempotencyConflict as exc:
        form.add_error(
            None, f"This form was already used to submit job {exc.job.pk}; reload the page to submit another."
        )
        return None
    if created:
        messages.success(request, f"Job {job.pk} submitted to {group.name}.")
    return job


@login_required
@require_POST
def job_check(request):
    """Validate without creating anything: the form's errors, and whether the job would start now, later or never."""
    groups = _groups(request.user)
    form = JobForm(request.POST, groups=groups)
    verdict = None
    if form.is_valid() and form.spec is not None:
        group = form.group_obj
        if group is None:
            form.add_error("group", "choose one of your groups")
        else:
            verdict = preview_submission(user=request.user, group=group, spec=form.spec)
            if verdict.errors:
                form.add_spec_errors(ValidationError(verdict.errors))
    touched = _touched(request)
    return render(
        request,
        "jobs/_check.html",
        _context(request, form, groups, touched=touched, verdict=verdict, checked=True),
    )
