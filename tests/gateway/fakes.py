"""In-process stand-ins for replicas and for the database side of the gateway."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from dataclasses import dataclass, field

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from multidict import CIMultiDict

from gateway.server import Gateway, Options, hash_key
from inference.selectors import GatewayRoute

ACME_KEY = "isk_acme-secret-key"
GLOBEX_KEY = "isk_globex-secret-key"


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class FakeReplica:
    """An aiohttp server that answers like a model server and says who it is and what it was sent."""

    def __init__(self, name: str):
        self.name = name
        self.hits = 0
        self.release = asyncio.Event()
        self.hold = False  # when set, requests wait for `release`
        self.status = 200
        self.delay_s = 0.0
        self.drop = False  # when set, the connection is closed under the request, as a crashing process would
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.server = TestServer(app, host="127.0.0.1")

    async def handle(self, request: web.Request) -> web.Response:
        self.hits += 1
        if self.drop:
            request.transport.close()
            raise ConnectionResetError("dropped on purpose")
        if self.hold:
            await self.release.wait()
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        body = await request.read()
        return web.json_response(
            {
                "replica": self.name,
                "method": request.method,
                "path": request.path,
                "query": request.query_string,
                "body": body.decode(),
                "saw_authorization": "Authorization" in request.headers,
                "saw_api_key": "X-Api-Key" in request.headers,
                "prefix": request.headers.get("X-Forwarded-Prefix"),
                "accept": request.headers.getall("Accept", []),
            },
            status=self.status,
            headers=CIMultiDict([("X-Model", "tiny"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")]),
        )

    @property
    def url(self) -> str:
        return str(self.server.make_url("")).rstrip("/")


@dataclass
class FakeDatabase:
    """What the gateway would read and write: a routing table to serve, and the flushes and reports it sent."""

    routes: dict = field(default_factory=dict)
    flushes: list = field(default_factory=list)
    failures: list = field(default_factory=list)
    down: bool = False

    def read_routes(self):
        if self.down:
            raise ConnectionError("database is down")
        return dict(self.routes)

    def flush(self, gateway_id, rows, used_keys):
        if self.down:
            raise ConnectionError("database is down")
        self.flushes.append((gateway_id, rows, used_keys))

    def report(self, replica_id, reason):
        self.failures.append((replica_id, reason))


def route(service_id: int, tenant: str, service: str, replicas, *, key: str, key_id: int = 1, rate: int = 1000):
    return GatewayRoute(
        service_id=service_id,
        tenant=tenant,
        service=service,
        rate_limit_rps=rate,
        key_hashes={hash_key(key): key_id},
        replicas=tuple(replicas),
    )


class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@contextlib.asynccontextmanager
async def running_gateway(database: FakeDatabase, clock=None, **options):
    gateway = Gateway(
        routes_source=database.read_routes,
        flush=database.flush,
        report_failure=database.report,
        options=Options(**({"refresh_s": 0.05, "flush_s": 3600, "gateway_id": "test:1"} | options)),
        **({"clock": clock} if clock else {}),
    )
    client = TestClient(TestServer(gateway.app()))
    await client.start_server()
    try:
        yield gateway, client
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def replicas(*names: str):
    started = [FakeReplica(name) for name in names]
    for replica in started:
        await replica.server.start_server()
    try:
        yield started
    finally:
        for replica in started:
            replica.release.set()
            await replica.server.close()


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}
