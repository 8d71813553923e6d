"""``aipool simulate``: the what-if replay on this machine, offline, through the same pure scheduler core the portal
runs (the `scheduler` package; no server, no Django). Replays of the pool's own history and the live quotas run on the
server: ``manage.py simulate --trace history`` or the /simulate/ page (docs/simulation.md). ``--pool live`` and
``--quotas live`` read this pool's nodes and the limits your token may see over the API (AIPOOL_URL, AIPOOL_TOKEN).

    aipool simulate openb_pod_list_default.csv                     # openb: its node list is found next to it
    aipool simulate jobs.csv --nodes 64 --policies easy,learned --json
    aipool simulate sacct.json --pool cluster/pools/default.yaml --quotas quotas.txt --plots plots/
    aipool simulate jobs.csv --pool live --quotas live
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import click
import yaml

from scheduler.compare import Scenario, compare, format_table, tenant_table, to_json
from scheduler.model import AssocLimits
from scheduler.plots import write_plots
from scheduler.policies import policy_names
from scheduler.workload import (
    DEFAULT_TENANTS,
    Workload,
    WorkloadError,
    pool_from_description,
    pool_node,
    read_canonical,
    read_openb_nodes,
    read_openb_pods,
    read_quotas,
    read_sacct_json,
    read_text,
    scale_arrivals,
    shrink_pool,
    uniform_pool,
)

OPENB_NODES = "openb_node_list_gpu_node.csv"
LIVE = "live"
DOWN_STATES = ("DOWN", "DRAIN")


def live_pool(client):
    """This pool's nodes (GET nodes/), all free: the replay starts on an idle pool."""
    nodes = []
    for row in client.paginate("nodes/"):
        node = pool_node(row["name"], row["switch"], int(row["accelerators_total"]), row["partitions"])
        node.up = row.get("state") not in DOWN_STATES
        nodes.append(node)
    return nodes


def live_limits(client) -> dict[str, AssocLimits]:
    """GrpTRES, GrpJobs and MaxTRESPerUser of the tenants and groups the token may see (staff: all)."""
    limits = {}
    for kind, path in (("tenant", "tenants/"), ("group", "groups/")):
        for row in client.paginate(path):
            raw = row.get("limits") or {}
            limits[f"{kind}:{row['name']}"] = AssocLimits(
                f"{kind} {row['name']}",
                grp_tres=dict(raw.get("grp_tres") or {}),
                grp_jobs=raw.get("grp_jobs"),
                max_tres_per_user=dict(raw.get("max_tres_per_user") or {}),
            )
    return limits


def _kind(path: Path, text: str) -> str:
    if path.suffix == ".json" or text.lstrip().startswith("{"):
        return "sacct"
    header = text.split("\n", 1)[0]
    return "openb" if "num_gpu" in header and "gpu_milli" in header else "csv"


def _pool(kind: str, trace: Path, pool_file, node_list: str | None, nodes: int | None):
    if callable(pool_file):
        return pool_file()
    if pool_file:
        try:
            return pool_from_description(yaml.safe_load(read_text(pool_file)))
        except yaml.YAMLError as exc:
            raise WorkloadError(f"{pool_file}: not YAML: {exc}") from None
    if node_list or (kind == "openb" and (trace.parent / OPENB_NODES).exists()):
        return read_openb_nodes(read_text(node_list or trace.parent / OPENB_NODES))
    if nodes:
        return uniform_pool(nodes)
    raise WorkloadError("which pool? give --pool FILE.yaml, --node-list CSV (openb format) or --nodes N")


def load_workload(trace: str, *, pool_file, node_list, nodes, tenants, load, pool_fraction, quotas) -> Workload:
    path = Path(trace)
    text = read_text(path)
    kind = _kind(path, text)
    notes: list[str] = []
    if kind == "openb":
        jobs, notes = read_openb_pods(text, tenants=tenants)
    elif kind == "sacct":
        jobs = read_sacct_json(text, tenants=tenants)
    else:
        jobs = read_canonical(text, tenants=tenants)
    pool = shrink_pool(_pool(kind, path, pool_file, node_list, nodes), pool_fraction)
    if callable(quotas):
        limits = quotas()
    else:
        limits = read_quotas(read_text(quotas)) if quotas else {}
    if load != 1.0:
        notes.append(f"arrivals {load:g}x as fast as in the trace")
    return Workload(scale_arrivals(jobs, load), pool, limits, kind, tuple(notes))


@click.command("simulate")
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option("--policies", default="all", show_default=True, help="all, or some of fifo,easy,multifactor,learned")
@click.option("--pool", "pool_file", help="pool description YAML (cluster/pools/*.yaml), or live (over the API)")
@click.option("--node-list", help="node list CSV in openb's format (sn,cpu_milli,memory_mib,gpu,model)")
@click.option("--nodes", type=click.IntRange(min=1), help="a uniform pool of N nodes x 8 accelerators")
@click.option("--pool-fraction", type=click.FloatRange(min=0.001, max=1.0), default=1.0, help="keep every (1/F)th node")
@click.option("--load", type=click.FloatRange(min=0.01), default=1.0, help="arrivals this many times as fast")
@click.option("--tenants", type=click.IntRange(min=1), default=DEFAULT_TENANTS, help="tenants for owner-less traces")
@click.option("--quotas", help="limits file (tenant|group NAME GrpTRES=... per line), or live (over the API)")
@click.option("--plots", type=click.Path(file_okay=False), help="write PNG plots into this folder")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def simulate(ctx, trace, policies, pool_file, node_list, nodes, pool_fraction, load, tenants, quotas, plots, as_json):
    """Replay TRACE (canonical CSV, openb pod list, or sacct --json) under several policies, side by side."""
    if LIVE in (pool_file, quotas):
        from aipool_cli.main import get_client  # main imports this module

        client = get_client(ctx)
        # Read only once the trace has parsed: a bad file should not cost a round trip first.
        pool_file = partial(live_pool, client) if pool_file == LIVE else pool_file
        quotas = partial(live_limits, client) if quotas == LIVE else quotas
    try:
        names = policy_names(policies)
        workload = load_workload(
            trace,
            pool_file=pool_file,
            node_list=node_list,
            nodes=nodes,
            tenants=tenants,
            load=load,
            pool_fraction=pool_fraction,
            quotas=quotas,
        )
        reports = compare(Scenario.from_workload(workload), names)
    except (WorkloadError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(to_json(reports))
    else:
        click.echo(format_table(reports))
        click.echo("")
        click.echo(tenant_table(reports))
        for note in workload.notes:
            click.echo(f"note: {note}")
    if plots:
        for path in write_plots([json.loads(json.dumps(r.as_dict())) for r in reports], Path(plots)):
            click.echo(f"wrote {path}", err=True)


COMMANDS = (simulate,)
