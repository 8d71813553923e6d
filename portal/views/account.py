"""The signed-in user's own pages: quota (``quota -u $USER``) and personal access tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from api.models import ApiToken
from api.services import token_create, token_revoke
from jobs.selectors import quota_for
from portal.forms import TokenForm
from portal.views.meters import meters_for
from tenants.scoping import CHANGE, VIEW


@login_required
def quota(request):
    quotas = quota_for(request.user)
    return render(request, "portal/quota.html", {"quotas": [(q, meters_for(q)) for q in quotas]})


def _tokens_page(request, form: TokenForm, created: tuple[ApiToken, str] | None = None):
    tokens = ApiToken.objects.visible_to(request.user, VIEW).order_by("-id")
    context = {"form": form, "tokens": tokens, "created": created[0] if created else None}
    if created:
        context["secret"] = created[1]
    return render(request, "portal/tokens.html", context)


@login_required
def tokens(request):
    if request.method != "POST":
        return _tokens_page(request, TokenForm())
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _tokens_page(request, form)
    data = form.cleaned_data
    try:
        created = token_create(
            user=request.user, name=data["name"], scopes=data["scopes"], expires_days=data.get("expires_days")
        )
    except ValidationError as exc:
        for field, errors in exc.message_dict.items():
            for error in errors:
                form.add_error(field if field in form.fields else None, error)
        return _tokens_page(request, form)
    # Rendered, not redirected: the secret lives in this one response and nowhere else.
    return _tokens_page(request, TokenForm(), created=created)


@login_required
@require_POST
def token_revoke_view(request, pk: int):
    token = ApiToken.objects.visible_to(request.user, CHANGE).filter(pk=pk).first()
    if token is None:
        raise Http404("no such token")
    token_revoke(user=request.user, token=token)
    messages.success(request, f"Token {token.name} revoked: requests with it now get 401.")
    return redirect("tokens")
