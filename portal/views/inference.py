"""Inference services in the browser: the list, a service's page (live replicas, conditions, scaling events,
traffic), create or update from YAML, keys (the raw key shown once), delete. Every lookup goes through
``InferenceService.objects.visible_to``; writes call inference.services."""

from __future__ import annotations

import time

import yaml
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Q
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from inference import services
from inference.models import InferenceService, ReplicaState, ServiceKey
from inference.placement import known_accelerator_types
from inference.spec import load_document, ordered_document, parse_service_spec
from portal.views.common import may_change, submit_groups
from tenants.scoping import CHANGE, VIEW

TRAFFIC_SECONDS = 60
EVENTS_SHOWN = 20


def service_or_404(user, pk: int, action: str = VIEW) -> InferenceService:
    service = (
        InferenceService.objects.visible_to(user, action)
        .select_related("tenant", "group", "model_version__collection", "run_as")
        .filter(pk=pk)
        .first()
    )
    if service is None:
        raise Http404("no such service")
    return service


def _changeable(request, pk: int) -> InferenceService:
    """404 for what the user cannot see, 403 for what they see but may not change (a viewer)."""
    service = service_or_404(request.user, pk)
    if not may_change(request.user, service):
        raise PermissionDenied(f"only members of group {service.group.name} may change {service.name}")
    return service


@login_required
def service_list(request):
    rows = (
        InferenceService.objects.visible_to(request.user)
        .select_related("tenant", "group", "model_version__collection")
        .annotate(ready=Count("replicas", filter=Q(replicas__state=ReplicaState.READY)))
        .order_by("tenant__name", "name")
    )
    context = {"services": rows, "may_create": submit_groups(request.user).exists()}
    return render(request, "inference/list.html", context)


def example_yaml(user) -> str:
    group = submit_groups(user).first()
    accelerator = next(iter(known_accelerator_types()), "nvidia-h100-80gb")
    namespace = group.tenant.name if group else "acme"
    return (
        "apiVersion: serving.ai/v1\n"
        "kind: InferenceService\n"
        "metadata:\n"
        "  name: image-classifier\n"
        f"  group: {group.name if group else 'ai-team'}\n"
        "spec:\n"
        f"  model: {namespace}/classifier:production\n"
        "  minReplicas: 2\n"
        "  maxReplicas: 20\n"
        "  scaling:\n"
        "    metric: qps\n"
        "    target: 1000\n"
        "  resources:\n"
        f"    accelerator: {accelerator}\n"
        "    memory: 32Gi\n"
    )


@login_required
def service_new(request):
    """Apply a document: a new service, or an update of the one of that name (``?from=ID`` starts from its spec)."""
    if not submit_groups(request.user).exists():
        raise PermissionDenied("you belong to no group that may run services")
    text, errors = _initial_text(request), {}
    if request.method == "POST":
        text = request.POST.get("document", "")
        try:
            service, created = services.service_apply(user=request.user, spec=parse_service_spec(load_document(text)))
        except ValidationError as exc:
            errors = exc.message_dict if hasattr(exc, "error_dict") else {"document": exc.messages}
        except PermissionDenied as exc:
            errors = {"document": [str(exc)]}
        else:
            verb = "created" if created else "updated"
            messages.success(request, f"Service {service.name} {verb} (generation {service.generation}).")
            return redirect(f"/services/{service.pk}/")
    context = {"document": text, "errors": errors, "accelerators": known_accelerator_types()}
    return render(request, "inference/new.html", context, status=400 if errors else 200)


def _initial_text(request) -> str:
    source = request.GET.get("from", "")
    if source.isdigit():
        service = service_or_404(request.user, int(source))
        document = ordered_document(service.spec)
        (document.get("spec", {}).get("resources") or {}).pop("cpus", None)
        return yaml.safe_dump(document, sort_keys=False)
    return example_yaml(request.user)


def _traffic(service: InferenceService) -> dict | None:
    """The gateway's figures for the last minute, when a gateway records traffic for this pool."""
    try:
        from gateway import selectors as gateway
    except ImportError:  # pragma: no cover - the gateway app is optional to this page
        return None
    now = time.time()
    series = gateway.traffic_series(service.pk, seconds=TRAFFIC_SECONDS, now=now)
    if not series:
        return None
    requests = sum(s.requests for s in series)
    p50 = [s.p50_ms for s in series if s.p50_ms is not None]
    p99 = [s.p99_ms for s in series if s.p99_ms is not None]
    return {
        "seconds": TRAFFIC_SECONDS,
        "qps": round(requests / TRAFFIC_SECONDS, 1),
        "requests": requests,
        "errors": sum(s.errors for s in series),
        "retries": sum(s.retries for s in series),
        "throttled": sum(s.throttled for s in series),
        "p50_ms": sorted(p50)[len(p50) // 2] if p50 else None,
        "p99_ms": max(p99) if p99 else None,
        "series": series[-20:],
    }


def _live_context(request, service: InferenceService) -> dict:
    replicas = service.replicas.exclude(state=ReplicaState.TERMINATED).select_related("job").order_by("-id")[:50]
    return {
        "service": service,
        "replicas": replicas,
        "conditions": service.conditions,
        "blocked": next(
            (c for c in service.conditions if c.get("type") == "ScaleUpBlocked" and c.get("status") == "True"), None
        ),
        "events": service.scaling_events.all()[:EVENTS_SHOWN],
        "traffic": _traffic(service),
    }


@login_required
def service_detail(request, pk: int):
    service = service_or_404(request.user, pk)
    context = _live_context(request, service)
    context.update(
        {
            "spec_yaml": yaml.safe_dump(ordered_document(service.spec), sort_keys=False),
            "keys": ServiceKey.objects.visible_to(request.user).filter(service=service).select_related("created_by"),
            "may_change": may_change(request.user, service),
            "new_key": request.session.pop(f"isvc-new-key-{service.pk}", None),
        }
    )
    return render(request, "inference/detail.html", context)


@login_required
def service_live(request, pk: int):
    """The parts of a service's page that change: state, conditions, replicas, events, traffic. Polled."""
    service = service_or_404(request.user, pk)
    return render(request, "inference/_live.html", _live_context(request, service))


@login_required
@require_POST
def service_delete_view(request, pk: int):
    service = _changeable(request, pk)
    services.service_delete(user=request.user, service=service)
    messages.success(request, f"Service {service.name} deleted; its replica jobs are being cancelled.")
    return redirect("/services/")


@login_required
@require_POST
def key_create_view(request, pk: int):
    service = _changeable(request, pk)
    try:
        key, raw = services.key_create(user=request.user, service=service, name=request.POST.get("name", ""))
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
        return redirect(f"/services/{service.pk}/#keys")
    # Shown on the next page view only: the session carries it across the redirect, then forgets it.
    request.session[f"isvc-new-key-{service.pk}"] = {"name": key.name, "raw": raw}
    return redirect(f"/services/{service.pk}/#keys")


@login_required
@require_POST
def key_revoke_view(request, pk: int, key_pk: int):
    service = service_or_404(request.user, pk)
    key = ServiceKey.objects.visible_to(request.user).filter(pk=key_pk, service=service).first()
    if key is None:
        raise Http404("no such key")
    if not ServiceKey.objects.visible_to(request.user, CHANGE).filter(pk=key.pk).exists():
        raise PermissionDenied(f"only members of group {service.group.name} may revoke its keys")
    services.key_revoke(user=request.user, key=key)
    messages.success(request, f"Key {key.name} revoked.")
    return redirect(f"/services/{service.pk}/#keys")
