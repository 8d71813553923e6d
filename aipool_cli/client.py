"""The HTTP side of the CLI: one httpx client, bearer auth, retries, and the contract's errors as messages.

Tests inject an ``httpx.MockTransport`` (``Client(transport=...)``) and a no-op ``sleep``; nothing here reads a
global except :func:`make_client`'s environment defaults.
"""

from __future__ import annotations

import email.utils
import json
import os
import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit, urlunsplit

import click
import httpx

from aipool_cli import __version__

DEFAULT_URL = "http://127.0.0.1:8000"
API = "/api/v1"
TOKEN_HINT = "set AIPOOL_TOKEN (create one with manage.py create_token or on /tokens/)"

# exit statuses of the CLI's own errors (the job's exit status is `wait`'s business, see docs/cli.md)
EXIT_REFUSED = 1  # the server understood and said no: 400, 403, 404, 409
EXIT_TROUBLE = 2  # usage, cannot reach, not authenticated, server error


class AipoolError(click.ClickException):
    """An error shown as ``aipool: <message>`` (plus detail lines) on stderr, never as a traceback."""

    def __init__(
        self,
        message: str,
        exit_code: int = EXIT_REFUSED,
        details: list[str] | None = None,
        *,
        transient: bool = False,
        status: int | None = None,
    ):
        super().__init__(message)
        self.exit_code = exit_code
        self.details = details or []
        self.transient = transient  # worth retrying later (server down, 5xx, rate limited)
        self.status = status

    def show(self, file=None) -> None:
        click.echo(f"aipool: {self.message}", err=True)
        for line in self.details:
            click.echo(line, err=True)


class Client:
    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        retries: int = 2,
        rate_limit_retries: int = 3,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.base_url = (url or DEFAULT_URL).strip().rstrip("/")
        if "://" not in self.base_url:
            self.base_url = "http://" + self.base_url
        self.token = token or None
        self.retries = retries
        self.rate_limit_retries = rate_limit_retries
        self.sleep = sleep
        self.clock = clock
        headers = {"Accept": "application/json", "User-Agent": f"aipool-cli/{__version__}"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            self._http = httpx.Client(
                base_url=self.base_url,
                headers=headers,
                timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
                transport=transport,
                follow_redirects=False,
            )
        except (httpx.InvalidURL, ValueError) as exc:
            raise AipoolError(f"bad AIPOOL_URL {self.base_url!r}: {exc}", EXIT_TROUBLE) from exc

    def close(self) -> None:
        self._http.close()

    # --- verbs -----------------------------------------------------------------------------------------------

    def get(self, path: str, params: dict | None = None) -> dict | list:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: dict | None = None, headers: dict | None = None) -> dict:
        return self.request("POST", path, json=body, headers=headers)

    def request(self, method: str, path: str, *, params=None, json=None, headers=None):
        return self.request_full(method, path, params=params, json=json, headers=headers)[1]

    def request_full(self, method: str, path: str, *, params=None, json=None, headers=None):
        """Send with retries; return (status, decoded JSON) or raise :class:`AipoolError`."""
        idempotent = method in {"GET", "HEAD"} or bool(headers and "Idempotency-Key" in headers)
        url = self._url(path)
        failures = rate_limited = 0
        while True:
            try:
                resp = self._http.request(method, url, params=_clean(params), json=json, headers=headers)
            except httpx.TransportError as exc:
                # A refused or timed-out *connect* never reached the server: safe to retry for any method.
                safe = idempotent or isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
                if safe and failures < self.retries:
                    self.sleep(0.5 * 3**failures)
                    failures += 1
                    continue
                raise AipoolError(
                    f"cannot reach {self.base_url}: {_describe(exc)} (is the portal running? set AIPOOL_URL)",
                    EXIT_TROUBLE,
                    transient=True,
                ) from exc
            if resp.status_code == 429 and rate_limited < self.rate_limit_retries:
                self.sleep(_retry_after(resp))
                rate_limited += 1
                continue
            return resp.status_code, self._decode(resp)

    # --- pagination ------------------------------------------------------------------------------------------

    def paginate(self, path: str, params: dict | None = None) -> Iterator[dict]:
        """Every item of a cursor-paginated list, following ``next`` (a plain JSON list is one page)."""
        page = self.get(path, params)
        seen: set[str] = set()
        while True:
            if isinstance(page, list):
                yield from page
                return
            yield from page.get("results") or []
            nxt = page.get("next")
            if not nxt or nxt in seen:
                return
            seen.add(nxt)
            page = self.get(*self._follow(nxt, path, params))

    def _follow(self, nxt: str, path: str, params: dict | None) -> tuple[str, dict | None]:
        """``next`` as (URL, params): same host as AIPOOL_URL (a proxy may hide the real one), or a bare cursor."""
        parts = urlsplit(nxt)
        if not parts.scheme:
            if nxt.startswith("/"):
                return nxt, None
            if nxt.startswith("?"):
                return self._url(path) + nxt, None
            return path, {**(params or {}), "cursor": nxt}
        base = urlsplit(self.base_url)
        if (parts.scheme, parts.netloc) == (base.scheme, base.netloc):
            return nxt, None
        return urlunsplit((base.scheme, base.netloc, parts.path, parts.query, "")), None

    def _url(self, path: str) -> str:
        if "://" in path:
            return path
        if path.startswith(API) or path.startswith("/api/"):
            return path
        return f"{API}/{path.lstrip('/')}"

    # --- responses -------------------------------------------------------------------------------------------

    def _decode(self, resp: httpx.Response):
        status = resp.status_code
        where = str(resp.request.url)
        body = _json_or_none(resp)
        if 200 <= status < 300:
            if status == 204 or not resp.content:
                return {}
            if body is None:
                raise AipoolError(
                    f"unexpected answer from {where}: not JSON (is AIPOOL_URL the portal's address?)", EXIT_TROUBLE
                )
            return body
        detail, field_lines = _error_text(body)
        if 300 <= status < 400:
            location = resp.headers.get("location", "?")
            raise AipoolError(
                f"{where} redirects to {location}; set AIPOOL_URL to the portal's address (e.g. https://host)",
                EXIT_TROUBLE,
                status=status,
            )
        if status == 401:
            details = [f"  the server said: {detail}"] if self.token and detail else []
            raise AipoolError(f"not authenticated: {TOKEN_HINT}", EXIT_TROUBLE, details, status=401)
        if status == 400:
            raise AipoolError(f"error: {detail or 'the request was refused'}", EXIT_REFUSED, field_lines, status=400)
        if status == 429:
            raise AipoolError(
                f"rate limited by {self.base_url}: {detail or 'too many requests'}; try again later",
                EXIT_TROUBLE,
                transient=True,
                status=429,
            )
        if status >= 500:
            suffix = f": {detail}" if body is not None and detail else ""
            raise AipoolError(f"server error {status} at {where}{suffix}", EXIT_TROUBLE, transient=True, status=status)
        if body is None:  # an HTML 404 and friends: not the API at all
            raise AipoolError(
                f"{status} {resp.reason_phrase} at {where} (is AIPOOL_URL the portal's address?)",
                EXIT_TROUBLE,
                status=status,
            )
        raise AipoolError(detail or f"{status} {resp.reason_phrase}", EXIT_REFUSED, field_lines, status=status)


def make_client(
    url: str | None = None,
    token: str | None = None,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] | None = None,
) -> Client:
    """A client configured from the arguments, falling back to AIPOOL_URL / AIPOOL_TOKEN / AIPOOL_HTTP_TIMEOUT."""
    url = url or os.environ.get("AIPOOL_URL") or DEFAULT_URL
    token = token or os.environ.get("AIPOOL_TOKEN") or None
    try:
        timeout = float(os.environ.get("AIPOOL_HTTP_TIMEOUT") or 30)
    except ValueError:
        timeout = 30.0
    kwargs = {}
    if sleep is not None:
        kwargs["sleep"] = sleep
    if clock is not None:
        kwargs["clock"] = clock
    return Client(url, token, transport=transport, timeout=timeout, **kwargs)


# --- helpers ---------------------------------------------------------------------------------------------------


def _clean(params: dict | None) -> dict | None:
    if not params:
        return None
    return {k: v for k, v in params.items() if v is not None and v != ""}


def _json_or_none(resp: httpx.Response):
    if not resp.content:
        return None
    try:
        return resp.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        return None


def _describe(exc: httpx.TransportError) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        return "connection timed out"
    if isinstance(exc, httpx.TimeoutException):
        return "timed out waiting for an answer"
    if isinstance(exc, httpx.ConnectError):
        if "refused" in text.lower():
            return "connection refused"
        return text
    return text


def _retry_after(resp: httpx.Response) -> float:
    raw = (resp.headers.get("retry-after") or "").strip()
    if not raw:
        return 1.0
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
            seconds = when.timestamp() - time.time()
        except (TypeError, ValueError):
            seconds = 1.0
    return max(0.0, min(seconds, 60.0))


def _error_text(body) -> tuple[str, list[str]]:
    """The contract's ``{"code", "detail", "errors": {field: [msg]}}`` (or DRF's bare shapes) as text lines."""
    if body is None:
        return "", []
    if isinstance(body, str):
        return body, []
    if isinstance(body, list):
        return "; ".join(str(x) for x in body), []
    if not isinstance(body, dict):
        return str(body), []
    detail = body.get("detail")
    errors = body.get("errors")
    if errors is None and detail is None and "code" not in body:
        errors = body  # DRF's plain {"field": ["msg"]}
    lines = list(_field_lines(errors, "")) if errors else []
    if isinstance(detail, (dict, list)):
        detail = "; ".join(_flatten_messages(detail))
    if not detail:
        detail = str(body.get("message") or body.get("code") or "")
        if not detail and lines:
            detail = "invalid request"
    return str(detail), lines


def _field_lines(errors, prefix: str) -> Iterator[str]:
    if isinstance(errors, dict):
        for key, value in errors.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, dict):
                yield from _field_lines(value, name)
                continue
            for message in _flatten_messages(value):
                if key in ("non_field_errors", "__all__") and not prefix:
                    yield f"  {message}"
                else:
                    yield f"  {name}: {message}"
    else:
        for message in _flatten_messages(errors):
            yield f"  {prefix + ': ' if prefix else ''}{message}"


def _flatten_messages(value) -> list[str]:
    if isinstance(value, (list, tuple)):
        out: list[str] = []
        for item in value:
            out.extend(_flatten_messages(item))
        return out
    if isinstance(value, dict):
        if "message" in value:
            return [str(value["message"])]
        return [f"{k}: {m}" for k, v in value.items() for m in _flatten_messages(v)]
    return [str(value)]
