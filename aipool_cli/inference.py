"""``aipool apply -f`` / ``aipool get isvc`` / ``aipool delete isvc`` / ``aipool key``: inference services (HTTP only).

``apply`` sends the file as it is written (``Content-Type: application/yaml``): the server parses and checks it, so
the CLI and the API give the same messages for the same mistakes.
"""

from __future__ import annotations

import json
import sys

import click
import httpx

from aipool_cli import formatting as fmt
from aipool_cli.client import EXIT_REFUSED, EXIT_TROUBLE, AipoolError, Client

SERVICES = "inference-services/"
KINDS = ("isvc", "isvcs", "inferenceservice", "inferenceservices")


def _client(ctx: click.Context) -> Client:
    from aipool_cli.main import get_client

    return get_client(ctx)


def _json_wanted(ctx: click.Context, local: bool) -> bool:
    from aipool_cli.main import want_json

    return want_json(ctx, local)


def _check_kind(ctx: click.Context, kind: str) -> None:
    if kind.lower() not in KINDS:
        raise click.UsageError(f"unknown kind {kind!r}: use isvc (inference services)", ctx)


def _post_yaml(client: Client, text: str, group: str | None, model: str | None = None) -> tuple[dict, int]:
    headers = {"Content-Type": "application/yaml"}
    params = {k: v for k, v in (("group", group), ("model", model)) if v}
    try:
        response = client._http.request(
            "POST",
            client._url(SERVICES),
            content=text.encode(),
            headers=headers,
            params=params or None,
        )
    except httpx.TransportError as exc:
        raise AipoolError(
            f"cannot reach {client.base_url}: {exc} (is the portal running? set AIPOOL_URL)", EXIT_TROUBLE
        ) from exc
    return client._decode(response), response.status_code


def find_service(client: Client, name: str) -> dict:
    page = client.get(SERVICES, {"name": name})
    rows = page.get("results", []) if isinstance(page, dict) else page
    if not rows:
        raise AipoolError(f"no inference service {name!r} (or it is not yours)", EXIT_REFUSED, status=404)
    return rows[0]


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise AipoolError(f"cannot read {path}: {exc}", EXIT_TROUBLE) from exc


# --- apply --------------------------------------------------------------------------------------------------------


@click.command("apply")
@click.option(
    "-f", "--filename", "path", required=True, metavar="FILE", help="The InferenceService YAML (- for stdin)."
)
@click.option("-A", "--account", "group", metavar="GROUP", help="The group that runs it, if the file does not say.")
@click.option(
    "--model", metavar="REF", help="The model to serve (acme/classifier:production), if the file does not say."
)
@click.option("--json", "as_json", is_flag=True, help="Print the service as JSON.")
@click.pass_context
def apply_command(ctx, path, group, model, as_json) -> None:
    """Create or update an inference service from its YAML (like kubectl apply).

    \b
      aipool apply -f image-classifier.yaml
      aipool apply -f service.yaml -A ai-team --model acme/classifier:production
    """
    body, status = _post_yaml(_client(ctx), _read(path), group, model)
    if _json_wanted(ctx, as_json):
        click.echo(json.dumps(body, indent=2))
        return
    verb = "created" if status == 201 else "configured"
    click.echo(f"inferenceservice/{body['name']} {verb} (generation {body['generation']}, id {body['id']})")


# --- get ----------------------------------------------------------------------------------------------------------


def _ready(service: dict) -> str:
    return f"{service.get('ready_replicas', 0)}/{service.get('desired_replicas', 0)}"


def print_table(services: list[dict]) -> None:
    rows = [
        (
            s["name"],
            s["state"],
            _ready(s),
            f"{s['min_replicas']}-{s['max_replicas']}",
            f"{s['scale_metric']}={s['scale_target']}",
            f"{s['model']} (v{s['model_version'] or '?'})",
            f"{s['accelerators_per_replica']}x{s['accelerator_type']}",
            s["group"],
            _blocked(s),
        )
        for s in services
    ]
    header = ("NAME", "STATE", "READY", "MIN-MAX", "TARGET", "MODEL", "ACCELERATORS", "GROUP", "NOTE")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        click.echo("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def _blocked(service: dict) -> str:
    for condition in service.get("conditions") or []:
        if condition.get("type") == "ScaleUpBlocked" and condition.get("status") == "True":
            return condition.get("message", "")
    return ""


def print_detail(client: Client, service: dict) -> None:
    lines = [
        ("Name", f"{service['tenant']}/{service['name']} (id {service['id']})"),
        ("Group", service["group"]),
        ("State", f"{service['state']}, generation {service['generation']}"),
        ("Model", f"{service['model']} → version {service['model_version'] or '(deleted)'}"),
        ("Replicas", f"{_ready(service)} ready, min {service['min_replicas']}, max {service['max_replicas']}"),
        ("Scaling", f"{service['scale_metric']} target {service['scale_target']} per replica"),
        (
            "Resources",
            f"{service['accelerators_per_replica']} x {service['accelerator_type']}, {service['memory_mb']}M",
        ),
        ("Rate limit", f"{service['rate_limit_rps']} requests/s per key"),
        ("Gateway", service["gateway_path"]),
    ]
    for label, value in lines:
        click.echo(f"{label + ':':<12}{value}")
    click.echo("Conditions:")
    for c in service.get("conditions") or []:
        click.echo(f"  {c['type']:<15}{c['status']:<6}{c['reason']:<15}{c['message']}")
    click.echo("Replicas:")
    for r in service.get("replicas") or []:
        click.echo(f"  {r['id']:<6}gen {r['generation']:<4}{r['state']:<11}job {r['job'] or '-':<8}{r['url'] or '-'}")
    events = client.get(f"{SERVICES}{service['id']}/events/", {"page_size": 5}).get("results", [])
    click.echo("Scaling events:")
    for e in events:
        blocked = " [blocked by quota]" if e["blocked_by_quota"] else ""
        when = fmt.format_dt(e["at"])
        click.echo(
            f"  {when}  {e['from_replicas']} → {e['to_replicas']} (wanted {e['wanted']}){blocked}: {e['reason']}"
        )


@click.command("get")
@click.argument("kind")
@click.argument("name", required=False)
@click.option("-o", "--output", type=click.Choice(["table", "yaml", "json"]), default="table", help="How to print.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def get_command(ctx, kind, name, output, as_json) -> None:
    """List inference services, or show one (replicas, conditions, scaling events).

    \b
      aipool get isvc
      aipool get isvc image-classifier
      aipool get isvc image-classifier -o yaml     # the applied spec, ready to edit and apply again
    """
    _check_kind(ctx, kind)
    client = _client(ctx)
    if name is None:
        services = list(client.paginate(SERVICES))
        if _json_wanted(ctx, as_json) or output == "json":
            click.echo(json.dumps(services, indent=2))
        elif not services:
            click.echo("No inference services.")
        else:
            print_table(services)
        return
    service = client.get(f"{SERVICES}{find_service(client, name)['id']}/")
    if _json_wanted(ctx, as_json) or output == "json":
        click.echo(json.dumps(service, indent=2))
    elif output == "yaml":
        import yaml

        spec = json.loads(json.dumps(service["spec"]))
        spec.get("spec", {}).get("resources", {}).pop("cpus", None)
        click.echo(yaml.safe_dump(spec, sort_keys=False).rstrip())
    else:
        print_detail(client, service)


# --- delete -------------------------------------------------------------------------------------------------------


@click.command("delete")
@click.argument("kind")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def delete_command(ctx, kind, name, as_json) -> None:
    """Delete an inference service; its replica jobs are cancelled.

    \b
      aipool delete isvc image-classifier
    """
    _check_kind(ctx, kind)
    client = _client(ctx)
    service = find_service(client, name)
    client.request("DELETE", f"{SERVICES}{service['id']}/")
    if _json_wanted(ctx, as_json):
        click.echo(json.dumps({"deleted": service["name"], "id": service["id"]}))
    else:
        click.echo(f'inferenceservice "{service["name"]}" deleted')


# --- keys ---------------------------------------------------------------------------------------------------------


@click.group("key")
def key_group() -> None:
    """Gateway keys of an inference service (create shows the key once)."""


@key_group.command("create")
@click.argument("service")
@click.option("--name", default="default", show_default=True, help="What the key is for.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def key_create(ctx, service, name, as_json) -> None:
    """A new key for SERVICE; the raw key is printed this once.

    \b
      aipool key create image-classifier --name web-frontend
    """
    client = _client(ctx)
    found = find_service(client, service)
    key = client.post(f"{SERVICES}{found['id']}/keys/", {"name": name})
    if _json_wanted(ctx, as_json):
        click.echo(json.dumps(key, indent=2))
        return
    click.echo(key["key"])
    click.echo(
        f"aipool: key {key['id']} ({key['name']}) for {found['gateway_path']}: store it now, it is not shown again",
        err=True,
    )


@key_group.command("list")
@click.argument("service")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def key_list(ctx, service, as_json) -> None:
    """The keys of SERVICE (prefixes only)."""
    client = _client(ctx)
    keys = list(client.paginate(f"{SERVICES}{find_service(client, service)['id']}/keys/"))
    if _json_wanted(ctx, as_json):
        click.echo(json.dumps(keys, indent=2))
        return
    click.echo(f"{'ID':<6}{'NAME':<20}{'PREFIX':<14}{'CREATED':<22}{'STATE'}")
    for k in keys:
        state = "revoked" if k["revoked_at"] else "active"
        click.echo(f"{k['id']:<6}{k['name']:<20}{k['prefix'] + '…':<14}{fmt.format_dt(k['created_at']):<22}{state}")


@key_group.command("revoke")
@click.argument("key_id", type=int)
@click.pass_context
def key_revoke(ctx, key_id) -> None:
    """Revoke key KEY_ID (see `aipool key list`)."""
    _client(ctx).request("DELETE", f"inference-keys/{key_id}/")
    click.echo(f"key {key_id} revoked")


COMMANDS: tuple = (apply_command, get_command, delete_command, key_group)
