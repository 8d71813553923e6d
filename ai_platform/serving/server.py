"""A small threaded HTTP server for one model: KServe v1 protocol, readiness, graceful stop on SIGTERM.

Why the standard library: a replica serves one model to one client (the gateway, over keep-alive connections), so
a thread per connection is plenty, and the job needs nothing installed beyond numpy.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ai_platform.serving.model import Model, ModelError

log = logging.getLogger("ai_platform.serving")
MAX_BODY = 4 * 1024 * 1024


class ModelServer(ThreadingHTTPServer):
    # In-flight requests finish before the process exits (a draining replica fails no request).
    daemon_threads = False
    block_on_close = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], model: Model | None = None) -> None:
        super().__init__(address, Handler)
        self.model = model
        self.ready = threading.Event()
        self.draining = False
        self.served = 0
        if model is not None:
            self.ready.set()

    def set_model(self, model: Model) -> None:
        self.model = model
        self.ready.set()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the gateway reuses connections
    timeout = 5  # an idle keep-alive connection does not hold up a stop for long
    # Headers and body leave in one write, without Nagle: two small writes would meet the client's delayed ACK
    # and add ~40 ms to every answer.
    wbufsize = -1
    disable_nagle_algorithm = True
    server: ModelServer

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base class's name)
        log.debug("%s " + format, self.address_string(), *args)

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.server.draining:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/healthz", "/v2/health/ready"):
            if self.server.ready.is_set() and not self.server.draining:
                self._send(HTTPStatus.OK, {"status": "ready", "model": self.server.model.name})
            else:
                self._send(
                    HTTPStatus.SERVICE_UNAVAILABLE, {"status": "draining" if self.server.draining else "loading"}
                )
        elif path in ("/livez", "/v2/health/live"):
            self._send(HTTPStatus.OK, {"status": "alive"})
        elif self.server.model is not None and path in ("", "/v1/models", f"/v1/models/{self.server.model.name}"):
            self._send(HTTPStatus.OK, self.server.model.metadata())
        else:
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no such path {path or '/'}"})

    def do_POST(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        model = self.server.model
        if not path.endswith(":predict") and path.rstrip("/") not in ("/predict", "/v1/predict"):
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no such path {path}; POST /v1/models/NAME:predict"})
            return
        if model is None:
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, {"error": "the model is still loading"})
            return
        body = self._body()
        if body is None:
            return
        try:
            predictions = model.predict(body.get("instances", body.get("inputs")))
        except ModelError as exc:
            self._send(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
            return
        self.server.served += 1
        self._send(HTTPStatus.OK, {"predictions": predictions, "model": model.name})

    def _body(self) -> dict | None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self._send(HTTPStatus.BAD_REQUEST, {"error": f"a JSON body of at most {MAX_BODY} bytes is needed"})
            return None
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError):
            self._send(HTTPStatus.BAD_REQUEST, {"error": 'the body must be JSON: {"instances": [[...], ...]}'})
            return None
        if not isinstance(body, dict):
            self._send(HTTPStatus.BAD_REQUEST, {"error": 'the body must be a JSON object: {"instances": [...]}'})
            return None
        return body


def advertised_url(server: ModelServer, bind_host: str) -> str:
    host, port = server.server_address[:2]
    if bind_host in ("0.0.0.0", "::", ""):
        host = socket.getfqdn()
    return f"http://{host}:{port}"


def publish_url(url_file: str | Path, url: str) -> None:
    """Write the URL atomically: the portal never reads half a line."""
    path = Path(url_file)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(url + "\n")
    os.replace(partial, path)
