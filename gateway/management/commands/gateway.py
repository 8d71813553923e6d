"""``manage.py gateway``: the inference gateway on AIPOOL_GATEWAY_PORT (docs/gateway.md)."""

from __future__ import annotations

import logging

from aiohttp import web
from django.core.management.base import BaseCommand
from django.db import close_old_connections

from gateway import conf
from gateway.server import Gateway, Options


def _fresh_connection(function):
    """A database that restarted, or a connection past its age, is reconnected before each call, not mid-flush."""

    def call(*args):
        close_old_connections()
        try:
            return function(*args)
        finally:
            close_old_connections()

    return call


def load_routes():
    from inference.selectors import gateway_routes

    return gateway_routes()


def write_traffic(gateway_id, rows, used_keys):
    from gateway.services import record_traffic

    record_traffic(gateway=gateway_id, rows=rows, used_keys=used_keys)


def report_failure(replica_id, reason):
    from inference.services import replica_failed

    replica_failed(replica_id=replica_id, reason=reason)


def build_gateway() -> Gateway:
    options = Options(
        timeout_s=conf.timeout_seconds(),
        attempts=conf.attempts(),
        max_body_bytes=conf.max_body_bytes(),
        gateway_id=conf.gateway_id(),
    )
    return Gateway(
        routes_source=_fresh_connection(load_routes),
        flush=_fresh_connection(write_traffic),
        report_failure=_fresh_connection(report_failure),
        options=options,
    )


class Command(BaseCommand):
    help = "Run the inference gateway: /serve/<tenant>/<service>/… to the ready replicas, with keys and rate limits."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=None, help="default: $AIPOOL_GATEWAY_HOST, else $AIPOOL_HOST")
        parser.add_argument("--port", type=int, default=None, help="default: $AIPOOL_GATEWAY_PORT or 8001")

    def handle(self, *args, **options):
        logging.basicConfig(level=logging.INFO, format="%(asctime)s gateway %(levelname)s %(message)s")
        host = options["host"] or conf.host()
        port = options["port"] or conf.port()
        self.stdout.write(f"inference gateway on http://{host}:{port}/serve/<tenant>/<service>/")
        # No access log: one line per request would cost more than the proxying; traffic is counted per second.
        web.run_app(build_gateway().app(), host=host, port=port, access_log=None, print=None)
