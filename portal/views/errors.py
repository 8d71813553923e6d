"""Error pages in the portal's look; under /api/ the API's JSON error shape instead."""

from __future__ import annotations

from django.http import HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template import loader

from api.errors import error_body

API_PREFIX = "/api/"


def _api(request) -> bool:
    return request.path.startswith(API_PREFIX)


def bad_request(request, exception=None):
    if _api(request):
        return JsonResponse(error_body("validation_error", "bad request"), status=400)
    return render(request, "400.html", status=400)


def permission_denied(request, exception=None):
    message = str(exception) if exception and str(exception) else ""
    if _api(request):
        return JsonResponse(error_body("permission_denied", message or "permission denied"), status=403)
    return render(request, "403.html", {"message": message}, status=403)


def page_not_found(request, exception=None):
    if _api(request):
        return JsonResponse(error_body("not_found", f"nothing at {request.path}"), status=404)
    return render(request, "404.html", {"path": request.path}, status=404)


def server_error(request):
    if _api(request):
        return JsonResponse(error_body("server_error", "internal server error"), status=500)
    # No request context: whatever broke the page (the database, a context processor) must not break this one too.
    return HttpResponseServerError(loader.get_template("500.html").render({}))
