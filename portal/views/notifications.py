"""/notifications/: your settings, webhook endpoints (secret shown once), test pings and the delivery log."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from notifications import services
from notifications.events import LABELS
from notifications.models import Delivery, WebhookEndpoint
from notifications.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER
from tenants.scoping import CHANGE, VIEW

EVENT_CHOICES = [(str(event), label) for event, label in LABELS.items()]
LOG_LENGTH = 50


class SettingsForm(forms.Form):
    events = forms.MultipleChoiceField(choices=EVENT_CHOICES, required=False, widget=forms.CheckboxSelectMultiple)
    email = forms.BooleanField(required=False, label="Also send email", help_text="to the address of your account")
    long_wait_minutes = forms.IntegerField(
        min_value=0,
        max_value=services.MAX_LONG_WAIT_MINUTES,
        label="Long wait (minutes)",
        help_text="tell me a job started only if it waited at least this long",
    )


class EndpointForm(forms.Form):
    url = forms.CharField(max_length=500, label="URL", help_text="https://… receives a signed POST per event")
    events = forms.MultipleChoiceField(
        choices=EVENT_CHOICES,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="none ticked: all of yours",
    )


def _page(request, *, settings_form=None, endpoint_form=None, created=None, status=200):
    current = services.settings_for(request.user)
    settings_form = settings_form or SettingsForm(
        initial={"events": current.events, "email": current.email, "long_wait_minutes": current.long_wait_minutes}
    )
    context = {
        "settings_form": settings_form,
        "endpoint_form": endpoint_form or EndpointForm(),
        "endpoints": WebhookEndpoint.objects.visible_to(request.user, VIEW).order_by("-id"),
        "deliveries": Delivery.objects.visible_to(request.user, VIEW).select_related("endpoint")[:LOG_LENGTH],
        "created": created,
        "has_email": bool(request.user.email),
        "timestamp_header": TIMESTAMP_HEADER,
        "signature_header": SIGNATURE_HEADER,
    }
    return render(request, "notifications/page.html", context, status=status)


def _form_errors(form: forms.Form, exc: ValidationError) -> None:
    for field, errors in exc.message_dict.items():
        form.add_error(field if field in form.fields else None, errors)


@login_required
def page(request):
    if request.method != "POST":
        return _page(request)
    form = SettingsForm(request.POST)
    if form.is_valid():
        try:
            services.settings_update(user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            _form_errors(form, exc)
        else:
            messages.success(request, "Notification settings saved.")
            return redirect("/notifications/")
    return _page(request, settings_form=form, status=400)


@login_required
@require_POST
def endpoint_add(request):
    form = EndpointForm(request.POST)
    if form.is_valid():
        try:
            endpoint, secret = services.endpoint_create(user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            _form_errors(form, exc)
        else:
            return _page(request, created=(endpoint, secret))
    return _page(request, endpoint_form=form, status=400)


def _endpoint_or_404(request, pk: int) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.visible_to(request.user, CHANGE).filter(pk=pk).first()
    if endpoint is None:
        raise Http404("no such webhook endpoint")
    return endpoint


@login_required
@require_POST
def endpoint_delete(request, pk: int):
    endpoint = _endpoint_or_404(request, pk)
    services.endpoint_delete(user=request.user, endpoint=endpoint)
    messages.success(request, f"Webhook endpoint {endpoint.url} deleted.")
    return redirect("/notifications/")


@login_required
@require_POST
def endpoint_ping(request, pk: int):
    endpoint = _endpoint_or_404(request, pk)
    delivery = services.ping(user=request.user, endpoint=endpoint)
    messages.info(request, f"Test delivery {delivery.pk} queued to {endpoint.url}: see the log below.")
    return redirect("/notifications/")


@login_required
def delivery_detail(request, pk: int):
    delivery = (
        Delivery.objects.visible_to(request.user, VIEW)
        .select_related("endpoint")
        .prefetch_related("attempt_log")
        .filter(pk=pk)
        .first()
    )
    if delivery is None:
        raise Http404("no such delivery")
    return render(request, "notifications/delivery.html", {"delivery": delivery})
