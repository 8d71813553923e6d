"""The inference gateway: an aiohttp server in front of the replicas of every inference service.

    /serve/<tenant>/<service>/<path…>   → a READY replica of that service, at <path…>

Why aiohttp: one event loop holds thousands of connections to clients and keep-alive connections to replicas at
once, with no thread per request; it is already a dependency (the in-job SDK and the model server use it) and it
has both the server and a pooled client in one package. See docs/gateway.md for the measured overhead.

Nothing here touches the database on the event loop. The routing table, the traffic flush and the failure reports
are plain functions handed in by the caller (the `manage.py gateway` command passes Django-backed ones, tests pass
stubs) and run on one worker thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from gateway.metrics import Recorder, TrafficRow
from gateway.routing import (
    NOT_FOUND,
    UNAUTHORIZED,
    LeastOutstanding,
    Route,
    RouteTable,
    Suspects,
    TokenBuckets,
    retry_after_header,
)

log = logging.getLogger("aipool.gateway")

# Hop-by-hop headers (RFC 9110 §7.6.1) and the ones the gateway sets itself; the key never reaches a replica.
DROPPED_REQUEST_HEADERS = frozenset(
    h.lower()
    for h in (
        "Connection",
        "Keep-Alive",
        "Proxy-Authenticate",
        "Proxy-Authorization",
        "TE",
        "Trailer",
        "Transfer-Encoding",
        "Upgrade",
        "Host",
        "Content-Length",
        "Authorization",
        "X-Api-Key",
    )
)
DROPPED_RESPONSE_HEADERS = frozenset(
    h.lower() for h in ("Connection", "Keep-Alive", "Transfer-Encoding", "Upgrade", "Content-Length", "Trailer")
)
# Failures where the replica is gone (refused, unreachable, reset, closed before an answer), as opposed to slow.
REPLICA_GONE = (
    aiohttp.ClientConnectorError,
    aiohttp.ConnectionTimeoutError,
    aiohttp.ServerDisconnectedError,
    aiohttp.ClientOSError,
)
# ...and of those, the ones where no request reached it: proof that it is gone, not merely closing a connection.
NEVER_CONNECTED = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)


@dataclass(frozen=True)
class Options:
    refresh_s: float = 1.0  # how often the routing table is read again
    flush_s: float = 1.0  # how often finished seconds of traffic are written
    timeout_s: float = 60.0  # one attempt at one replica
    connect_timeout_s: float = 2.0
    attempts: int = 3  # replicas tried for one request when they are gone
    max_body_bytes: int = 64 * 1024 * 1024
    suspect_hold_s: float = 5.0  # how long a replica that refused is skipped
    gateway_id: str = "gateway"  # tells the rows of several gateway processes apart


RoutesSource = Callable[[], Mapping[tuple[str, str], Route]]
Flush = Callable[[str, list[TrafficRow], dict[int, float]], None]
ReportFailure = Callable[[int, str], None]


def error_response(status: int, code: str, detail: str, headers: dict | None = None) -> web.Response:
    """The API's error shape (api/errors.py), so the CLI and clients read gateway errors like any other."""
    return web.json_response({"code": code, "detail": detail, "errors": {}}, status=status, headers=headers)


def key_from(request: web.Request) -> str | None:
    auth = request.headers.get("Authorization", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return request.headers.get("X-Api-Key", "").strip() or None


def hash_key(raw: str) -> str:
    # The same digest as inference.keys.hash_key; kept here so the hot path imports nothing of Django's apps.
    return hashlib.sha256(raw.encode()).hexdigest()


class Gateway:
    def __init__(
        self,
        *,
        routes_source: RoutesSource,
        flush: Flush,
        report_failure: ReportFailure,
        options: Options | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.routes_source = routes_source
        self.flush = flush
        self.report_failure = report_failure
        self.options = options or Options()
        self.clock = clock
        self.table = RouteTable({})
        self.table_read_at: float | None = None
        self.recorder = Recorder()
        self.balancer = LeastOutstanding()
        self.buckets = TokenBuckets()
        self.suspects = Suspects(self.options.suspect_hold_s)
        self.used_keys: dict[int, float] = {}
        # One thread for every database call: one connection, and the event loop never waits on a query.
        self.db = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gateway-db")
        self.session: aiohttp.ClientSession | None = None
        self._tasks: set[asyncio.Task] = set()

    # --- lifecycle ----------------------------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.options.max_body_bytes)
        app.router.add_route("*", "/serve/{tenant}/{service}/{tail:.*}", self.serve)
        app.router.add_route("*", "/serve/{tenant}/{service}", self.serve)
        app.router.add_get("/healthz", self.health)
        app.router.add_route("*", "/{tail:.*}", self.elsewhere)
        app.on_startup.append(self._start)
        app.on_cleanup.append(self._stop)
        return app

    async def _start(self, _app) -> None:
        self.session = aiohttp.ClientSession(
            # Idle connections are dropped before replicas drop them (the model server: after 5 s), so a request is
            # seldom sent on a connection the replica is closing at that moment.
            connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=4),
            # A replica on a host that went away does not refuse, it never answers: give up connecting quickly.
            timeout=aiohttp.ClientTimeout(total=self.options.timeout_s, sock_connect=self.options.connect_timeout_s),
            auto_decompress=False,
        )
        await self.refresh()
        self._spawn(self._every(self.options.refresh_s, self.refresh))
        self._spawn(self._every(self.options.flush_s, self.flush_traffic))

    async def _stop(self, _app) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.flush_traffic(final=True)
        if self.session:
            await self.session.close()
        self.db.shutdown(wait=True)

    def _spawn(self, coroutine) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _every(self, period: float, job) -> None:
        while True:
            await asyncio.sleep(period)
            await job()

    async def _in_db_thread(self, function, *args):
        return await asyncio.get_running_loop().run_in_executor(self.db, function, *args)

    async def refresh(self) -> None:
        try:
            routes = await self._in_db_thread(self.routes_source)
        except Exception:  # a database that is down: keep serving from the last table
            log.exception("could not read the routing table; serving from the one read %s", self.table_read_at)
            return
        self.table = RouteTable(routes)
        self.table_read_at = self.clock()
        self.suspects.keep_only(self.table.replica_ids())

    async def flush_traffic(self, final: bool = False) -> None:
        now = self.clock()
        rows = self.recorder.take_closed(now + 1 if final else now)
        if not rows:
            return  # keys in use ride along with the seconds they were counted in
        used, self.used_keys = self.used_keys, {}
        try:
            await self._in_db_thread(self.flush, self.options.gateway_id, rows, used)
        except Exception:
            log.exception("could not write %d seconds of traffic; kept for the next flush", len(rows))
            self.recorder.put_back([r for r in rows if now - r.second < 300])
            self.used_keys = used | self.used_keys
        self.buckets.forget_idle(now)

    # --- requests -----------------------------------------------------------------------------------------------

    async def health(self, request: web.Request) -> web.Response:
        # Public like every path of the gateway: how fresh the routing table is, nothing about anyone's services.
        if self.table_read_at is None:
            return web.json_response({"status": "starting", "table_age_s": None}, status=503)
        return web.json_response({"status": "ok", "table_age_s": round(self.clock() - self.table_read_at, 3)})

    async def elsewhere(self, request: web.Request) -> web.Response:
        return error_response(
            404, "not_found", f"no gateway endpoint at {request.path}; use /serve/<tenant>/<service>/"
        )

    async def serve(self, request: web.Request) -> web.StreamResponse:
        raw = key_from(request)
        access = self.table.check(
            request.match_info["tenant"], request.match_info["service"], hash_key(raw) if raw else None
        )
        if access.refusal == UNAUTHORIZED:
            detail = "an inference key is required" if raw is None else "unknown or revoked inference key"
            return error_response(401, "not_authenticated", detail, {"WWW-Authenticate": 'Bearer realm="aipool"'})
        if access.refusal == NOT_FOUND:
            return error_response(404, "not_found", f"no inference service at {request.path}")
        route, key_id = access.route, access.key_id
        now = self.clock()
        wait = self.buckets.take(key_id, route.rate_limit_rps, now)
        if wait:
            self.recorder.throttled(route.service_id, now)
            detail = f"rate limit of {route.rate_limit_rps} requests/s for this key"
            return error_response(429, "throttled", detail, {"Retry-After": retry_after_header(wait)})
        self.used_keys[key_id] = now
        self.recorder.arrived(route.service_id, now)
        started = time.perf_counter()
        response = await self._forward(request, route)
        latency_ms = (time.perf_counter() - started) * 1000
        self.recorder.finished(route.service_id, self.clock(), latency_ms, error=response.status >= 500)
        return response

    async def _forward(self, request: web.Request, route: Route) -> web.StreamResponse:
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return error_response(413, "validation_error", f"request body over {self.options.max_body_bytes} bytes")
        tail = request.match_info.get("tail", "")
        # A multidict: a header sent twice is forwarded twice.
        headers = CIMultiDict((k, v) for k, v in request.headers.items() if k.lower() not in DROPPED_REQUEST_HEADERS)
        headers["X-Forwarded-For"] = request.remote or ""
        headers["X-Forwarded-Prefix"] = f"/serve/{route.tenant}/{route.service}"
        tried: set[int] = set()
        for attempt in range(self.options.attempts):
            replica = self.balancer.choose(route.replicas, tried | self.suspects.current(self.clock()))
            if replica is None:
                break
            replica_id, base = replica
            tried.add(replica_id)
            if attempt:
                self.recorder.retried(route.service_id, self.clock())
            self.balancer.begin(replica_id)
            try:
                return await self._attempt(request.method, f"{base.rstrip('/')}/{tail}", request, headers, body)
            except REPLICA_GONE as exc:
                self._replica_gone(replica_id, exc, refused=isinstance(exc, NEVER_CONNECTED))
            except TimeoutError:
                # Slow, not gone: another attempt would double the load on a service that is already behind.
                detail = f"the replica did not answer in {self.options.timeout_s:g} s"
                return error_response(504, "gateway_timeout", detail)
            finally:
                self.balancer.end(replica_id)
        if not tried:
            return error_response(503, "unavailable", "no replica of this service is ready", {"Retry-After": "1"})
        return error_response(502, "bad_gateway", f"no replica answered ({len(tried)} tried)")

    async def _attempt(self, method, url, request, headers, body) -> web.Response:
        if request.query_string:
            url = f"{url}?{request.query_string}"
        target = URL(url, encoded=True)  # the query exactly as the client sent it
        async with self.session.request(
            method, target, headers=headers, data=body or None, allow_redirects=False
        ) as upstream:
            payload = await upstream.read()
            out_headers = CIMultiDict(
                (k, v) for k, v in upstream.headers.items() if k.lower() not in DROPPED_RESPONSE_HEADERS
            )
            return web.Response(status=upstream.status, body=payload, headers=out_headers)

    def _replica_gone(self, replica_id: int, exc: Exception, *, refused: bool) -> None:
        first = self.suspects.mark(replica_id, self.clock())
        # Only a refused connection proves the replica is gone. A connection closed under a request is also what a
        # draining replica does to keep-alive connections: skip the replica for a while, but report nothing.
        if not (first and refused):
            return
        reason = f"gateway could not reach it: {type(exc).__name__}: {exc}"[:300]
        log.warning("replica %s unreachable (%s); retrying elsewhere", replica_id, reason)
        self._spawn(self._report(replica_id, reason))

    async def _report(self, replica_id: int, reason: str) -> None:
        try:
            await self._in_db_thread(self.report_failure, replica_id, reason)
        except Exception:  # the reconcile notices a dead replica on its own, later
            log.exception("could not report replica %s as failed", replica_id)
