"""A run's parameters → the scenario the pure replay takes. Files come from the shared traces folder or the upload.

Parameters (a SimulationRun's `params`, the management command's options):
``source`` openb | history | csv | sacct; ``policies``; ``load`` (arrivals sped up); ``pool_fraction``;
``tenants`` (for traces without them); ``start``/``end`` (history window, ISO 8601); ``data`` (csv / sacct text);
``pool`` live | openb (for csv and sacct); ``quotas`` (sacctmgr-style lines: proposed limits).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings

from jobs.scheduling import policy_from_env
from portal.env import env_str
from scheduler.compare import Scenario
from scheduler.model import AssocLimits
from scheduler.workload import (
    DEFAULT_TENANTS,
    Workload,
    WorkloadError,
    read_canonical,
    read_openb_nodes,
    read_openb_pods,
    read_quotas,
    read_sacct_json,
    read_text,
    scale_arrivals,
    shrink_pool,
)
from simulation.selectors import pool_inputs

SOURCES = ("openb", "history", "csv", "sacct")
OPENB_PODS = "openb_pod_list_default.csv"
OPENB_NODES = "openb_node_list_gpu_node.csv"


def traces_dir() -> Path:
    """AIPOOL_TRACES_DIR, else the shared traces folder next to the checkout."""
    return Path(env_str("AIPOOL_TRACES_DIR", "") or Path(settings.BASE_DIR).parent / "shared" / "traces")


def openb_nodes(fraction: float = 1.0):
    return shrink_pool(read_openb_nodes(read_text(traces_dir() / OPENB_NODES)), fraction)


def scenario(params: dict) -> Scenario:
    source = params.get("source", "openb")
    if source not in SOURCES:
        raise WorkloadError(f"source {source!r}: expected one of {', '.join(SOURCES)}")
    if source == "history":
        return history_scenario(params)
    tenants = int(params.get("tenants") or DEFAULT_TENANTS)
    fraction = float(params.get("pool_fraction") or 1.0)
    notes: list[str] = []
    if source == "openb":
        jobs, notes = read_openb_pods(read_text(traces_dir() / OPENB_PODS), tenants=tenants)
        nodes = openb_nodes(fraction)
    else:
        text = params.get("data") or ""
        jobs = read_canonical(text, tenants=tenants) if source == "csv" else read_sacct_json(text, tenants=tenants)
        nodes = openb_nodes(fraction) if params.get("pool") == "openb" else shrink_pool(pool_inputs().nodes, fraction)
        notes = [f"{source}: {len(jobs)} jobs; missing tenants: sha256(group or user) mod {tenants}"]
    load = float(params.get("load") or 1.0)
    if load != 1.0:
        notes.append(f"arrivals {load:g}x as fast as in the trace")
    if fraction < 1.0:
        notes.append(f"pool: every {round(1 / fraction)}th node ({len(nodes)} nodes)")
    limits = read_quotas(params.get("quotas") or "")
    workload = Workload(scale_arrivals(jobs, load), nodes, limits, source, tuple(notes))
    return Scenario.from_workload(workload)


def parse_when(value: str | datetime, name: str) -> datetime:
    if not isinstance(value, datetime):
        try:
            value = datetime.fromisoformat(str(value))
        except ValueError:
            raise WorkloadError(f"{name}: {value!r} is not an ISO 8601 time (2026-11-01T00:00)") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)  # times without a zone are UTC, as everywhere here


def history_scenario(params: dict) -> Scenario:
    """The pool's own jobs in the window, under the live limits, priority weights and fair-share tree."""
    start, end = parse_when(params.get("start"), "start"), parse_when(params.get("end"), "end")
    if end <= start:
        raise WorkloadError("end must be after start")
    inputs = pool_inputs(start=start, end=end)
    return Scenario(
        inputs.nodes,
        inputs.requests,
        inputs.runtimes,
        inputs.limits,
        tree=inputs.tree,
        partition_tier=inputs.partition_tier,
        labels=inputs.labels,
        notes=inputs.notes,
        policy=policy_from_env(),
    )


def proposed_limits(text: str, scenario: Scenario) -> dict[str, AssocLimits]:
    """Quota lines naming the pool's tenants and groups → limits keyed as the scenario keys them.

    A proposal replaces GrpTRES/GrpJobs of that association and keeps its other limits."""
    by_name = {(key.split(":", 1)[0], name): key for key, name in scenario.labels.items()}
    proposed = {}
    for key, limit in read_quotas(text).items():
        kind, name = key.split(":", 1)
        target = by_name.get((kind, name), key if not scenario.labels else None)
        if target is None:
            raise WorkloadError(f"no {kind} named {name!r} in this pool")
        current = scenario.limits.get(target) or AssocLimits(f"{kind} {name}")
        proposed[target] = replace(current, grp_tres=limit.grp_tres, grp_jobs=limit.grp_jobs)
    if not proposed:
        raise WorkloadError("the proposal changes no limit: give lines such as 'tenant acme GrpTRES=accelerator=16'")
    return proposed
