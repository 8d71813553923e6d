"""The one error shape of the API: ``{"code": "...", "detail": "...", "errors": {field: [messages]}}``.

Service-layer exceptions (Django's ValidationError and PermissionDenied, IdempotencyConflict, …) are translated here,
so views call services without try/except and every error reads the same to the CLI.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError
from django.http import Http404, JsonResponse
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from api import services as api_services
from cluster.backends.base import BackendUnavailable
from jobs.services import IdempotencyConflict

log = logging.getLogger(__name__)

NON_FIELD = "non_field_errors"
# psycopg's message when text holds a NUL character, which PostgreSQL cannot store (SQLite can).
NUL_MESSAGE = "NUL (0x00)"
NUL_DETAIL = "text cannot contain NUL (0x00) characters"


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "the request conflicts with the current state of the resource"
    default_code = "conflict"


class IdempotencyKeyConflict(Conflict):
    default_code = "idempotency_conflict"


class ServiceUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "the cluster backend cannot be reached now; try again shortly"
    default_code = "backend_unavailable"


CODES: list[tuple[type[exceptions.APIException], str]] = [
    (exceptions.ValidationError, "validation_error"),
    (exceptions.ParseError, "validation_error"),
    (exceptions.NotAuthenticated, "not_authenticated"),
    (exceptions.AuthenticationFailed, "not_authenticated"),
    (exceptions.NotFound, "not_found"),
    (exceptions.MethodNotAllowed, "method_not_allowed"),
    (exceptions.Throttled, "throttled"),
    (exceptions.NotAcceptable, "not_acceptable"),
    (exceptions.UnsupportedMediaType, "unsupported_media_type"),
]


def error_body(code: str, detail: str, errors: dict | None = None) -> dict:
    return {"code": code, "detail": detail, "errors": errors or {}}


def exception_handler(exc, context):
    exc = _translate(exc)
    if not isinstance(exc, exceptions.APIException):
        if settings.DEBUG:
            return None  # Django's debug page is more useful to a developer than a JSON 500
        log.exception("unhandled error in %s", context.get("view").__class__.__name__, exc_info=exc)
        set_rollback()
        return Response(error_body("server_error", "internal server error"), status=500)
    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))
    set_rollback()
    return Response(_body(exc), status=exc.status_code, headers=headers)


def _translate(exc):
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            detail = {NON_FIELD if k == "__all__" else k: v for k, v in exc.message_dict.items()}
        else:
            detail = exc.messages
        return exceptions.ValidationError(detail)
    if isinstance(exc, DjangoPermissionDenied):
        return exceptions.PermissionDenied(str(exc) or None)
    if isinstance(exc, Http404):
        return exceptions.NotFound("not found")
    if isinstance(exc, IdempotencyConflict):
        return IdempotencyKeyConflict(str(exc))
    if isinstance(exc, api_services.Conflict):
        return Conflict(str(exc))
    if isinstance(exc, BackendUnavailable):
        return ServiceUnavailable()
    if isinstance(exc, DataError) and NUL_MESSAGE in str(exc):
        # Fields check their own text; this catches the rest (filters, ids in bodies) before PostgreSQL does.
        return exceptions.ValidationError({NON_FIELD: [NUL_DETAIL]})
    return exc


def _body(exc: exceptions.APIException) -> dict:
    if isinstance(exc, exceptions.ValidationError):
        errors = flatten(exc.detail)
        return error_body("validation_error", summary(errors), errors)
    if isinstance(exc, exceptions.ParseError):
        return error_body("validation_error", str(exc.detail), {"body": [str(exc.detail)]})
    code = next((c for cls, c in CODES if isinstance(exc, cls)), None)
    if code is None:
        # PermissionDenied carries its code per instance (insufficient_scope vs permission_denied).
        code = getattr(exc.detail, "code", None) or exc.default_code
    return error_body(code, str(exc.detail))


def flatten(detail, prefix: str = "") -> dict[str, list[str]]:
    """DRF error details (nested dicts and lists) as ``{"field" or "field.sub": [messages]}``."""
    if isinstance(detail, dict):
        flat: dict[str, list[str]] = {}
        for key, value in detail.items():
            # List items (ListField errors are keyed by index) report under the list's own name.
            if isinstance(key, int):
                name = prefix or NON_FIELD
            else:
                name = f"{prefix}.{key}" if prefix else str(key)
            for sub_key, messages in flatten(value, name).items():
                flat.setdefault(sub_key, []).extend(messages)
        return flat
    if isinstance(detail, list):
        flat = {}
        for item in detail:
            for key, messages in flatten(item, prefix).items():
                flat.setdefault(key, []).extend(messages)
        return flat
    return {prefix or NON_FIELD: [str(detail)]}


def summary(errors: dict[str, list[str]]) -> str:
    parts = [f"{field}: {messages[0]}" if field != NON_FIELD else messages[0] for field, messages in errors.items()]
    text = "; ".join(parts) or "invalid input"
    return text if len(text) <= 500 else text[:497] + "..."


@csrf_exempt  # a DELETE to an unknown URL is a 404, not Django's HTML "CSRF cookie not set" page
def not_found(request, *args, **kwargs) -> JsonResponse:
    """Unknown URLs under /api/ answer in the API's shape, not with the portal's HTML 404 page."""
    detail = f"no API endpoint at {request.path}"
    # This catch-all also swallows APPEND_SLASH's redirect, which a POST could not follow anyway: say it instead.
    if not request.path.endswith("/"):
        try:
            match = resolve(f"{request.path}/")
        except Resolver404:
            match = None
        if match is not None and match.url_name != "not-found":
            detail += f" (did you mean {request.path}/ ?)"
    return JsonResponse(error_body("not_found", detail), status=404)
