"""Jobs: the filtered list (the API's FilterSet), a job's page with its live parts, and cancel."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from cluster.backends.base import BackendUnavailable
from cluster.backends.registry import get_backend
from cluster.models import Node
from jobs.filters import JobFilter
from jobs.models import Job
from jobs.selectors import job_explanation
from jobs.services import job_cancel
from portal.forms import PREFILL_FIELDS
from portal.views.common import is_htmx, job_or_404, may_change, submit_groups
from vocab.states import JobState

PAGE_SIZE = 50
STREAMS = ("stdout", "stderr")
TAIL_BYTES = 64 * 1024  # what a job page shows of a log at first; the API serves all of it
POLL_BYTES = 256 * 1024
STOP_POLLING = 286  # htmx stops polling an element answered with this status
STATE_FILTERS = [
    ("", "Any state"),
    ("PENDING,RUNNING", "Active (pending or running)"),
    *[(s.value, s.value) for s in JobState],
]


def _filtered(request) -> tuple[JobFilter, object]:
    queryset = Job.objects.visible_to(request.user).select_related("group", "user", "partition")
    filterset = JobFilter(request.GET, queryset=queryset, request=request)
    jobs = filterset.qs if filterset.is_valid() else queryset.none()
    return filterset, jobs


@login_required
def job_list(request):
    filterset, jobs = _filtered(request)
    page = Paginator(jobs.order_by("-id"), PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "filterset": filterset,
        "page": page,
        "jobs": page.object_list,
        "query": query.urlencode(),
        "state_filters": STATE_FILTERS,
        "groups": filterset.form.fields["group"].queryset,
        "partitions": filterset.form.fields["partition"].queryset,
        "filtered": any(v for k, v in request.GET.items() if k != "page"),
    }
    if is_htmx(request) and request.GET.get("partial") == "rows":
        return render(request, "jobs/_rows.html", context)
    return render(request, "jobs/list.html", context)


def _allocation_rows(job: Job) -> list[dict]:
    """Each allocated node with its leaf switch and which of its accelerators this job holds."""
    allocation = job.allocation or {}
    nodes = {n.name: n for n in Node.objects.filter(name__in=list(allocation)).select_related("switch")}
    rows = []
    for name in job.nodelist or list(allocation):
        node = nodes.get(name)
        held = set(allocation.get(name, []))
        total = node.accelerators if node else len(held)
        rows.append(
            {
                "name": name,
                "switch": node.switch.name if node else "",
                "indices": sorted(held),
                "slots": ["used" if i in held else "free" for i in range(total)],
            }
        )
    return rows


def _detail_context(request, job: Job) -> dict:
    return {
        "job": job,
        "events": list(job.events.all()),
        "may_change": may_change(request.user, job),
        "can_resubmit": submit_groups(request.user).filter(pk=job.group_id).exists(),
        "allocation_rows": _allocation_rows(job) if job.state == JobState.RUNNING or job.allocation else [],
    }


@login_required
def job_detail(request, pk: int):
    job = job_or_404(request.user, pk)
    context = _detail_context(request, job)
    context["logs"] = [_tail(job, stream) for stream in STREAMS]
    context.update(_explanation(job))
    return render(request, "jobs/detail.html", context)


@login_required
def job_live(request, pk: int):
    """The parts of a job's page that change: state, times, timeline, nodes, actions. Polled while it is active."""
    job = job_or_404(request.user, pk)
    return render(request, "jobs/_live.html", {**_detail_context(request, job), "oob": True})


@login_required
def job_explain(request, pk: int):
    """Why the job waits and what would start it sooner (the scheduler's explanation)."""
    job = job_or_404(request.user, pk)
    response = render(request, "jobs/_explain.html", {"job": job, **_explanation(job)})
    if job.state != JobState.PENDING:
        response.status_code = STOP_POLLING
    return response


def _explanation(job: Job) -> dict:
    if job.state != JobState.PENDING:
        return {"explanation": None, "suggestions": []}
    explanation = job_explanation(job)
    suggestions = []
    for suggestion in explanation.get("suggestions") or []:
        change = {k: v for k, v in (suggestion.get("change") or {}).items() if k in PREFILL_FIELDS}
        query = {"from": job.pk, **{k: _query_value(v) for k, v in change.items()}}
        suggestions.append({**suggestion, "url": reverse("job-new") + "?" + urlencode(query), "change": change})
    return {"explanation": explanation, "suggestions": suggestions}


def _query_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _read(job: Job, stream: str, offset: int, limit: int):
    """The API's log read (``jobs/{id}/logs/``): the job's backend, from a byte offset."""
    if not job.backend_job_id:
        return None
    return get_backend(job.backend or None).read_log(job.backend_job_id, stream, offset, limit)


def _tail(job: Job, stream: str) -> dict:
    log = {"stream": stream, "text": "", "offset": 0, "size": 0, "omitted": 0, "error": ""}
    try:
        probe = _read(job, stream, 0, 1)
        if probe is not None:
            start = max(0, probe.size - TAIL_BYTES)
            chunk = _read(job, stream, start, TAIL_BYTES)
            log.update(text=chunk.text, offset=chunk.offset, size=chunk.size, omitted=start)
    except BackendUnavailable:
        log["error"] = "the cluster backend cannot be reached now; retrying"
    log["follow"] = job.is_active or log["offset"] < log["size"]
    return log


@login_required
def job_log(request, pk: int, stream: str):
    """New output of one stream from `offset`: appended to the page's log by HTMX, which polls while it grows."""
    if stream not in STREAMS:
        raise Http404("no such stream")
    job = job_or_404(request.user, pk)
    try:
        offset = max(0, int(request.GET.get("offset", "0")))
    except ValueError:
        offset = 0
    log = {"stream": stream, "text": "", "offset": offset, "size": offset, "error": ""}
    try:
        chunk = _read(job, stream, offset, POLL_BYTES)
        if chunk is not None:
            log.update(text=chunk.text, offset=chunk.offset, size=chunk.size)
    except BackendUnavailable:
        log["error"] = "the cluster backend cannot be reached now; retrying"
    log["follow"] = job.is_active or log["offset"] < log["size"]
    return render(request, "jobs/_log_chunk.html", {"job": job, "log": log})


@login_required
@require_POST
def job_cancel_view(request, pk: int):
    job = job_or_404(request.user, pk)
    if not may_change(request.user, job):
        raise PermissionDenied(f"only the owner of job {job.pk} and admins of tenant {job.tenant.name} may cancel it")
    try:
        job_cancel(user=request.user, job=job)
    except ValidationError as exc:
        messages.error(request, exc.messages[0])
    else:
        messages.success(request, f"Job {job.pk} cancelled.")
    return redirect("job-detail", pk=job.pk)
