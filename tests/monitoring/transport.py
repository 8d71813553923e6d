"""The CLI's httpx client talking to the Django test client: the real CLI code against the real views, in-process."""

from __future__ import annotations

import httpx


def django_transport(client) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        response = client.generic(
            request.method,
            request.url.raw_path.decode(),
            data=request.content,
            content_type=request.headers.get("content-type", ""),
            HTTP_AUTHORIZATION=request.headers.get("authorization", ""),
            HTTP_ACCEPT=request.headers.get("accept", ""),
        )
        return httpx.Response(
            response.status_code, headers={"content-type": response["Content-Type"]}, content=response.content
        )

    return httpx.MockTransport(handler)


def run_cli(client, token: str, *args: str):
    from click.testing import CliRunner

    from aipool_cli.main import cli

    return CliRunner().invoke(
        cli, ["--url", "http://testserver", "--token", token, *args], obj={"transport": django_transport(client)}
    )
