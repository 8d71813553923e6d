"""Browser pages of the model and dataset repository: browse and search, a page per model with its card, versions,
files, lineage and fit check; create, upload, publish. Reads start from ``visible_to``; writes call the services."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_POST
from rest_framework.exceptions import APIException

from api.views.registry import file_response
from registry import fit, selectors, services
from registry.filters import CollectionFilter
from registry.markdown import render as render_markdown
from registry.models import ArtifactFile, Collection, Kind, Version, VersionState, Visibility
from registry.names import NameError_, check_path, format_count, format_size
from tenants.models import Group
from tenants.scoping import CHANGE

KINDS = {"models": Kind.MODEL, "datasets": Kind.DATASET}
PAGE_SIZE = 50
MAX_NUMBER = 2**31 - 1  # version numbers are database integers; a longer number in a URL is simply not found


def _kind(kind_slug: str) -> str:
    if kind_slug not in KINDS:
        raise Http404
    return KINDS[kind_slug]


def _collection(request, kind_slug: str, namespace: str, name: str) -> Collection:
    collection = selectors.collection_by_name(request.user, _kind(kind_slug), namespace, name)
    if collection is None:
        raise Http404
    return collection


def _may_change(user, collection: Collection) -> bool:
    return Collection.objects.visible_to(user, CHANGE).filter(pk=collection.pk).exists()


def _page_url(collection: Collection, suffix: str = "") -> str:
    return f"/{collection.kind}s/{collection.namespace}/{collection.name}/{suffix}"


def _refused(request, exc: Exception) -> None:
    if isinstance(exc, ValidationError):
        text = (
            "; ".join(f"{k}: {', '.join(v)}" for k, v in exc.message_dict.items())
            if hasattr(exc, "error_dict")
            else "; ".join(exc.messages)
        )
    else:
        text = str(exc)
    messages.error(request, text)


# --- browse ------------------------------------------------------------------------------------------------------


def _facets(queryset, field: str) -> list[tuple[str, int]]:
    rows = queryset.order_by().values(field).annotate(n=Count("id")).order_by("-n", field)
    return [(row[field], row["n"]) for row in rows if row[field]][:30]


@login_required
def collection_list(request, kind_slug: str):
    kind = _kind(kind_slug)
    base = selectors.collections_for(request.user, kind)
    filterset = CollectionFilter(request.GET, queryset=base.order_by("namespace", "name"), request=request)
    if not filterset.is_valid():
        results = base.none()
    else:
        results = filterset.qs
    page = Paginator(results, PAGE_SIZE).get_page(request.GET.get("page"))
    query = {k: v for k, v in request.GET.items() if k != "page" and v}
    return render(
        request,
        "registry/list.html",
        {
            "kind": kind,
            "kind_slug": kind_slug,
            "page": page,
            "rows": [_row(c) for c in page],
            "filter": filterset,
            "query": query,
            "query_string": urlencode(query),
            "tasks": _facets(base, "task"),
            "licenses": _facets(base, "license"),
            "may_create": Group.objects.visible_to(request.user).filter(members__user=request.user).exists(),
        },
    )


@dataclass
class Row:
    collection: Collection
    url: str
    parameters: str


def _row(collection: Collection) -> Row:
    return Row(collection=collection, url=_page_url(collection), parameters=format_count(collection.parameters))


# --- create --------------------------------------------------------------------------------------------------------


class CollectionForm(forms.Form):
    name = forms.CharField(max_length=128, help_text="Letters, digits, '.', '_' or '-'; the full name is TENANT/NAME")
    group = forms.ModelChoiceField(queryset=Group.objects.none(), help_text="Its storage quota pays for the files")
    visibility = forms.ChoiceField(choices=Visibility.choices, initial=Visibility.GROUP)
    replicas = forms.IntegerField(min_value=1, max_value=32, initial=1)
    summary = forms.CharField(max_length=300, required=False)
    license = forms.CharField(max_length=64, required=False)
    task = forms.CharField(max_length=64, required=False, help_text="e.g. text-generation")
    parameters = forms.IntegerField(min_value=1, required=False)
    card = forms.CharField(widget=forms.Textarea, required=False, help_text="Markdown")

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["group"].queryset = (
            Group.objects.visible_to(user).filter(members__user=user).select_related("tenant")
        )


@login_required
def collection_new(request, kind_slug: str):
    kind = _kind(kind_slug)
    form = CollectionForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = {k: v for k, v in form.cleaned_data.items() if v not in (None, "")}
        try:
            collection = services.collection_create(actor=request.user, kind=kind, **data)
        except (ValidationError, PermissionDenied) as exc:
            _refused(request, exc)
        else:
            return HttpResponseRedirect(_page_url(collection))
    return render(request, "registry/new.html", {"kind": kind, "kind_slug": kind_slug, "form": form})


# --- a model or dataset --------------------------------------------------------------------------------------------


class FitForm(forms.Form):
    mode = forms.ChoiceField(choices=[(m, m) for m in fit.MODES], initial="serve")
    precision = forms.ChoiceField(choices=[(p, p) for p in fit.BYTES_PER_PARAMETER], initial="bf16")


class UploadForm(forms.Form):
    file = forms.FileField()
    path = forms.CharField(max_length=1024, required=False, help_text="Default: the file's name")
    sha256 = forms.RegexField(regex=r"^[0-9a-fA-F]{64}$", required=False, help_text="Optional: checked if given")


@login_required
def collection_detail(request, kind_slug: str, namespace: str, name: str):
    collection = _collection(request, kind_slug, namespace, name)
    versions = list(selectors.versions_of(collection).order_by("-number"))
    shown = next((v for v in versions if v.state == VersionState.PUBLISHED), versions[0] if versions else None)
    context = _version_context(request, collection, shown, versions)
    fit_form = FitForm(request.GET or None)
    if collection.parameters and collection.kind == Kind.MODEL:
        params = fit_form.cleaned_data if fit_form.is_valid() else {"mode": "serve", "precision": "bf16"}
        context["fit"] = selectors.fit_check(collection, request.user, **params)
    context["fit_form"] = fit_form
    return render(request, "registry/detail.html", context)


@login_required
def version_detail(request, kind_slug: str, namespace: str, name: str, number: int):
    collection = _collection(request, kind_slug, namespace, name)
    versions = list(selectors.versions_of(collection).order_by("-number"))
    shown = next((v for v in versions if v.number == number), None)  # compared in Python: no overflow
    if shown is None:
        raise Http404
    return render(request, "registry/detail.html", _version_context(request, collection, shown, versions))


def _version_context(request, collection: Collection, shown: Version | None, versions: list[Version]) -> dict:
    files = list(selectors.files_of(shown)) if shown else []
    return {
        "collection": collection,
        "kind_slug": f"{collection.kind}s",
        "url": _page_url(collection),
        "card_html": render_markdown(collection.card),
        "parameters": format_count(collection.parameters),
        "active_parameters": format_count(collection.active_parameters),
        "versions": versions,
        "version": shown,
        "files": [(f, format_size(f.size)) for f in files],
        "total_size": format_size(sum(f.size for f in files)),
        "lineage": selectors.lineage(shown, request.user) if shown else None,
        "aliases": sorted(collection.aliases.select_related("version"), key=lambda a: a.name),
        "may_change": _may_change(request.user, collection),
        "upload_form": UploadForm(),
    }


def _version(request, collection: Collection, number: int) -> Version:
    version = collection.versions.filter(number=number).first() if number <= MAX_NUMBER else None
    if version is None:
        raise Http404
    return version


def _writable(request, kind_slug, namespace, name) -> Collection:
    collection = _collection(request, kind_slug, namespace, name)
    if not _may_change(request.user, collection):
        raise PermissionDenied(f"you may not change {collection.full_name}")
    return collection


@login_required
@require_POST
def version_new(request, kind_slug: str, namespace: str, name: str):
    collection = _writable(request, kind_slug, namespace, name)
    version = services.version_create(
        actor=request.user, collection=collection, message=request.POST.get("message", "")
    )
    return HttpResponseRedirect(_page_url(collection, f"versions/{version.number}/"))


@login_required
@require_POST
def version_upload(request, kind_slug: str, namespace: str, name: str, number: int):
    collection = _writable(request, kind_slug, namespace, name)
    version = _version(request, collection, number)
    form = UploadForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, "; ".join(f"{k}: {', '.join(v)}" for k, v in form.errors.items()))
        return HttpResponseRedirect(_page_url(collection, f"versions/{number}/"))
    upload = form.cleaned_data["file"]
    try:
        path = check_path(form.cleaned_data["path"] or upload.name)
        # Django spooled the body to a temporary file as it arrived; it is read here in chunks, never whole.
        digest = hashlib.sha256()
        for chunk in upload.chunks():
            digest.update(chunk)
        upload.seek(0)
        declared = (form.cleaned_data["sha256"] or digest.hexdigest()).lower()
        services.file_put(
            actor=request.user, version=version, path=path, stream=upload, size=upload.size, sha256=declared
        )
    except NameError_ as exc:
        messages.error(request, f"path: {exc}")
    except (ValidationError, services.Conflict) as exc:
        _refused(request, exc)
    else:
        messages.success(request, f"{path} stored ({format_size(upload.size)}, sha256 {digest.hexdigest()[:12]}…)")
    return HttpResponseRedirect(_page_url(collection, f"versions/{number}/"))


@login_required
@require_POST
def version_publish(request, kind_slug: str, namespace: str, name: str, number: int):
    collection = _writable(request, kind_slug, namespace, name)
    version = _version(request, collection, number)
    aliases = [a.strip() for a in request.POST.get("aliases", "").split(",") if a.strip()]
    try:
        services.version_publish(actor=request.user, version=version, aliases=aliases)
    except (ValidationError, services.Conflict) as exc:
        _refused(request, exc)
    return HttpResponseRedirect(_page_url(collection, f"versions/{number}/"))


@login_required
def file_download(request, kind_slug: str, namespace: str, name: str, number: int, path: str):
    collection = _collection(request, kind_slug, namespace, name)
    if number > MAX_NUMBER:
        raise Http404
    file = (
        ArtifactFile.objects.visible_to(request.user)
        .filter(version__collection=collection, version__number=number, path=path)
        .prefetch_related("replica_set")
        .first()
    )
    if file is None:
        raise Http404
    try:
        return file_response(file, request.headers.get("Range"))
    except APIException as exc:
        return render(request, "registry/unavailable.html", {"detail": exc.detail}, status=exc.status_code)
