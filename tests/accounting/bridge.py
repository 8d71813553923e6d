"""Run the `aipool` CLI against the Django app in-process: an httpx transport that forwards to the test client."""

import httpx
from click.testing import CliRunner
from django.test import Client

from aipool_cli.main import cli
from api.services import token_create


def django_transport() -> httpx.MockTransport:
    client = Client()

    def handle(request: httpx.Request) -> httpx.Response:
        query = request.url.query.decode()
        path = request.url.path + (f"?{query}" if query else "")
        response = client.generic(
            request.method,
            path,
            data=request.content,
            content_type=request.headers.get("content-type", "application/json"),
            HTTP_AUTHORIZATION=request.headers.get("authorization", ""),
        )
        return httpx.Response(
            response.status_code,
            content=response.content,
            headers={"content-type": response.get("Content-Type", "application/json")},
        )

    return httpx.MockTransport(handle)


def run_cli(user, args: list[str]):
    _, secret = token_create(user=user, name="cli", scopes=("read",), expires_days=None)
    env = {"AIPOOL_URL": "http://testserver", "AIPOOL_TOKEN": secret, "AIPOOL_DEBUG": "1"}
    return CliRunner().invoke(cli, args, obj={"transport": django_transport()}, env=env, catch_exceptions=False)
