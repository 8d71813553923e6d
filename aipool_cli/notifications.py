"""``aipool notify``: your notification settings, webhook endpoints and delivery log (HTTP only).

aipool notify settings --events job.failed,quota.threshold --long-wait 30
aipool notify webhook-add https://ci.example.com/hooks/aipool --event job.ended --event job.failed
aipool notify ping 4
aipool notify log
"""

from __future__ import annotations

import click

from aipool_cli import formatting as fmt

SETTINGS = "notifications/settings/"
HOOKS = "notifications/webhooks/"
DELIVERIES = "notifications/deliveries/"


def _tools():
    from aipool_cli.main import emit_json, get_client, want_json

    return emit_json, get_client, want_json


def settings_text(data: dict) -> str:
    lines = [
        f"email:      {'on' if data['email'] else 'off'}",
        f"long wait:  {data['long_wait_minutes']} minutes (job.started_after_wait)",
        "events:",
    ]
    lines += [f"  [{'x' if e in data['events'] else ' '}] {e}" for e in data["available_events"]]
    return "\n".join(lines)


def endpoints_text(rows: list[dict]) -> str:
    if not rows:
        return "No webhook endpoints: add one with `aipool notify webhook-add URL`."
    body = [[r["id"], r["url"], ",".join(r["events"]) or "all", "yes" if r["active"] else "no"] for r in rows]
    return fmt.table(("ID", "URL", "EVENTS", "ACTIVE"), body, right=[0])


def deliveries_text(rows: list[dict]) -> str:
    if not rows:
        return "No deliveries yet."
    body = []
    for d in rows:
        last = d["attempt_log"][-1] if d["attempt_log"] else None
        result = "-" if last is None else ("ok" if last["ok"] else last["error"])
        code = "-" if last is None or last["response_code"] is None else last["response_code"]
        body.append([d["id"], d["created_at"], d["event"], d["channel"], d["status"], d["attempts"], code, result])
    headers = ("ID", "CREATED", "EVENT", "CHANNEL", "STATUS", "ATTEMPTS", "CODE", "LAST RESULT")
    return fmt.table(headers, body, right=[0, 5])


def _show(ctx, data, as_json: bool, text) -> None:
    emit_json, _, want_json = _tools()
    if want_json(ctx, as_json):
        emit_json(data)
    else:
        click.echo(text(data))


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


@click.group("notify")
def notify() -> None:
    """Notifications: settings, webhook endpoints (HMAC-signed) and the delivery log."""


@notify.command("settings")
@click.option("--events", metavar="E1,E2", help="Replace the events you hear about (comma-separated; '' for none)")
@click.option("--email/--no-email", default=None, help="Also mail notifications to your address.")
@click.option("--long-wait", type=click.IntRange(min=0), metavar="MINUTES", help="job.started_after_wait threshold")
@json_option
@click.pass_context
def settings_command(ctx, events, email, long_wait, as_json) -> None:
    """Show your settings, or change those given."""
    _, get_client, _ = _tools()
    client = get_client(ctx)
    body = {}
    if events is not None:
        body["events"] = [e.strip() for e in events.split(",") if e.strip()]
    if email is not None:
        body["email"] = email
    if long_wait is not None:
        body["long_wait_minutes"] = long_wait
    data = client.request("PATCH", SETTINGS, json=body) if body else client.get(SETTINGS)
    _show(ctx, data, as_json, settings_text)


@notify.command("webhooks")
@json_option
@click.pass_context
def webhooks(ctx, as_json) -> None:
    """List your webhook endpoints."""
    _, get_client, _ = _tools()
    _show(ctx, list(get_client(ctx).paginate(HOOKS)), as_json, endpoints_text)


@notify.command("webhook-add")
@click.argument("url")
@click.option("--event", "events", multiple=True, metavar="EVENT", help="Only this event (repeatable) [all yours]")
@json_option
@click.pass_context
def webhook_add(ctx, url, events, as_json) -> None:
    """Add a webhook endpoint; prints its signing secret once."""
    _, get_client, _ = _tools()
    data = get_client(ctx).post(HOOKS, {"url": url, "events": list(events)})
    _show(ctx, data, as_json, lambda d: f"endpoint {d['id']}: {d['url']}\nsecret (shown once): {d['secret']}")


@notify.command("webhook-rm")
@click.argument("endpoint_id", type=int)
@click.pass_context
def webhook_rm(ctx, endpoint_id) -> None:
    """Delete a webhook endpoint."""
    _, get_client, _ = _tools()
    get_client(ctx).request("DELETE", f"{HOOKS}{endpoint_id}/")
    click.echo(f"endpoint {endpoint_id} deleted")


@notify.command("ping")
@click.argument("endpoint_id", type=int)
@json_option
@click.pass_context
def ping(ctx, endpoint_id, as_json) -> None:
    """Send a signed test delivery to an endpoint; see it with `aipool notify log`."""
    _, get_client, _ = _tools()
    data = get_client(ctx).post(f"{HOOKS}{endpoint_id}/ping/")
    _show(ctx, data, as_json, lambda d: f"delivery {d['id']} queued ({d['status']})")


@notify.command("log")
@click.option("-n", "--limit", type=click.IntRange(1, 500), default=20, show_default=True)
@json_option
@click.pass_context
def log(ctx, limit, as_json) -> None:
    """Your latest deliveries with the result of their last attempt."""
    _, get_client, _ = _tools()
    page = get_client(ctx).get(DELIVERIES, {"page_size": limit})
    _show(ctx, page.get("results", []), as_json, deliveries_text)


COMMANDS: tuple = (notify,)
