"""One canonical workload for replays, and the importers that produce it. Pure: no Django, usable offline by the CLI.

Canonical CSV header (extra columns are ignored, except an optional ``partition``):
``submit_time,duration,time_limit,nodes,accelerators_per_node,tenant,group,user``
Times are seconds from the trace start; ``time_limit`` may be empty (see `default_time_limit`); ``tenant``,
``group`` and ``user`` may be empty and are then assigned deterministically (see `fill_owners`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from scheduler.model import AssocLimits, JobRequest, NodeView
from vocab.tres import TRESError, parse_tres

CANONICAL_HEADER = (
    "submit_time",
    "duration",
    "time_limit",
    "nodes",
    "accelerators_per_node",
    "tenant",
    "group",
    "user",
)
DEFAULT_PARTITION = "main"
DEFAULT_TENANTS = 8
HOUR, DAY = 3600.0, 86400.0
# Users pick round time limits, well above what their jobs need: a replay without limits gets the smallest of these
# that covers the run (a job of 50 min gets 1 h, one of 5 h gets 8 h), so backfill sees the usual overestimate.
ROUND_LIMITS = tuple(h * HOUR for h in (1, 2, 4, 8, 12, 24, 48, 72)) + tuple(d * DAY for d in (7, 14, 30))
SWITCH_SIZE = 32  # nodes per leaf switch where a trace says nothing about topology


class WorkloadError(ValueError):
    """Bad input, with the file and line in the message."""


@dataclass(frozen=True, slots=True)
class WorkloadJob:
    id: int
    submit_time: float
    duration: float
    time_limit: float | None  # seconds; None: `default_time_limit`
    nodes: int
    accelerators_per_node: int
    tenant: str = ""
    group: str = ""
    user: str = ""
    partition: str = DEFAULT_PARTITION

    @property
    def limit_seconds(self) -> float:
        return self.time_limit if self.time_limit else default_time_limit(self.duration)


@dataclass
class Workload:
    jobs: list[WorkloadJob]
    nodes: list[NodeView]
    limits: dict[str, AssocLimits]
    source: str = ""
    notes: tuple[str, ...] = ()  # how the input was mapped (assignments, dropped rows): reports print them

    def requests(self) -> tuple[list[JobRequest], dict[int, float]]:
        """Core requests (time limits in whole minutes) and each job's actual run time in seconds."""
        requests, runtimes = [], {}
        for job in self.jobs:
            minutes = max(1, math.ceil(job.limit_seconds / 60.0))
            requests.append(
                JobRequest(
                    id=job.id,
                    partition=job.partition,
                    nodes=job.nodes,
                    accelerators_per_node=job.accelerators_per_node,
                    cpus_per_node=0,
                    memory_per_node=0,
                    time_limit=minutes,
                    associations=chain_of(job),
                    user=job.user,
                    submitted_at=job.submit_time,
                )
            )
            runtimes[job.id] = job.duration
        return requests, runtimes

    def tenants(self) -> list[str]:
        return sorted({job.tenant for job in self.jobs})


def chain_of(job: WorkloadJob) -> tuple[str, ...]:
    return (f"tenant:{job.tenant}", f"group:{job.group}")


def default_time_limit(duration: float) -> float:
    for limit in ROUND_LIMITS:
        if duration <= limit:
            return limit
    return math.ceil(duration / (30 * DAY)) * 30 * DAY


def bucket(name: str, count: int) -> int:
    """A stable bucket for a name: the same on every machine and Python (unlike hash())."""
    return int(hashlib.sha256(name.encode()).hexdigest()[:12], 16) % count


def fill_owners(job: WorkloadJob, tenants: int = DEFAULT_TENANTS) -> WorkloadJob:
    """Missing owners: user `user-<id>`; tenant `tenant-<k>`, k = sha256(group or user) mod `tenants`; group
    `<tenant>-default`. Jobs of one group (or one user) always land in the same tenant."""
    user = job.user or f"user-{job.id}"
    tenant = job.tenant or f"tenant-{bucket(job.group or user, tenants)}"
    group = job.group or f"{tenant}-default"
    if (user, tenant, group) == (job.user, job.tenant, job.group):
        return job
    return replace(job, user=user, tenant=tenant, group=group)


# --- canonical CSV ------------------------------------------------------------------------------------------------


def _number(row: dict, name: str, line: int, *, integer: bool = False, optional: bool = False) -> float | None:
    raw = (row.get(name) or "").strip()
    if not raw:
        if optional:
            return None
        raise WorkloadError(f"line {line}: {name} is empty")
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        raise WorkloadError(f"line {line}: {name}={raw!r} is not a {'whole ' if integer else ''}number") from None
    if value < 0 or (isinstance(value, float) and not math.isfinite(value)):
        raise WorkloadError(f"line {line}: {name}={raw!r} must be a finite number >= 0")
    return value


def read_canonical(text: str, *, tenants: int = DEFAULT_TENANTS) -> list[WorkloadJob]:
    reader = csv.DictReader(io.StringIO(text))
    missing = [name for name in CANONICAL_HEADER if name not in (reader.fieldnames or ())]
    if missing:
        raise WorkloadError(f"header lacks {', '.join(missing)}; expected {','.join(CANONICAL_HEADER)}")
    jobs = []
    for line, row in enumerate(reader, start=2):
        nodes = _number(row, "nodes", line, integer=True)
        if nodes < 1:
            raise WorkloadError(f"line {line}: nodes must be at least 1")
        job = WorkloadJob(
            id=len(jobs) + 1,
            submit_time=_number(row, "submit_time", line),
            duration=_number(row, "duration", line),
            time_limit=_number(row, "time_limit", line, optional=True) or None,
            nodes=int(nodes),
            accelerators_per_node=int(_number(row, "accelerators_per_node", line, integer=True)),
            tenant=(row.get("tenant") or "").strip(),
            group=(row.get("group") or "").strip(),
            user=(row.get("user") or "").strip(),
            partition=(row.get("partition") or "").strip() or DEFAULT_PARTITION,
        )
        jobs.append(fill_owners(job, tenants))
    return jobs


def write_canonical(jobs: Iterable[WorkloadJob]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CANONICAL_HEADER)
    for job in jobs:
        limit = "" if job.time_limit is None else _compact(job.time_limit)
        writer.writerow(
            [
                _compact(job.submit_time),
                _compact(job.duration),
                limit,
                job.nodes,
                job.accelerators_per_node,
                job.tenant,
                job.group,
                job.user,
            ]
        )
    return out.getvalue()


def _compact(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


# --- openb (Alibaba cluster-trace-gpu-v2023) ----------------------------------------------------------------------


def read_openb_pods(text: str, *, tenants: int = DEFAULT_TENANTS) -> tuple[list[WorkloadJob], list[str]]:
    """GPU pods → one-node jobs. Returns the jobs and notes saying what was mapped how.

    - a pod asks for num_gpu whole GPUs, or a fraction (gpu_milli/1000) of one: the core allocates whole
      accelerators, so a fractional pod takes one whole accelerator (sharing is what the trace's paper is about;
      this pool does not share);
    - pods that never got a GPU node (pod_phase Pending, no scheduled_time) never ran and are left out, as are
      CPU-only pods (num_gpu 0): this pool schedules accelerators;
    - run time = deletion_time - scheduled_time (the trace's own queueing is what a replay recomputes);
    - user: pods with the same resource request (cpu, memory, gpus, gpu share, qos) are taken for one user's
      repeated job, the name the trace hides; tenant = sha256(user) mod `tenants`; group = tenant + qos.
    """
    jobs: list[WorkloadJob] = []
    skipped_pending = skipped_cpu = fractional = 0
    for line, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        try:
            gpus = int(row["num_gpu"])
            created = float(row["creation_time"])
            scheduled = (row.get("scheduled_time") or "").strip()
            deleted = float(row["deletion_time"])
        except (KeyError, ValueError) as exc:
            raise WorkloadError(f"openb pods line {line}: {exc}") from None
        if not scheduled:
            skipped_pending += 1
            continue
        if gpus == 0:
            skipped_cpu += 1
            continue
        if gpus == 1 and int(row.get("gpu_milli") or 1000) < 1000:
            fractional += 1
        signature = "|".join(row.get(k, "") for k in ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "qos"))
        user = f"u{hashlib.sha256(signature.encode()).hexdigest()[:6]}"
        tenant = f"tenant-{bucket(user, tenants)}"
        qos = (row.get("qos") or "none").lower()
        jobs.append(
            WorkloadJob(
                id=len(jobs) + 1,
                submit_time=created,
                duration=max(0.0, deleted - float(scheduled)),
                time_limit=None,
                nodes=1,
                accelerators_per_node=gpus,
                tenant=tenant,
                group=f"{tenant}-{qos}",
                user=user,
            )
        )
    notes = [
        f"openb: {len(jobs)} GPU pods replayed; left out {skipped_pending} never-scheduled and {skipped_cpu} CPU-only",
        f"openb: {fractional} fractional-GPU pods take one whole accelerator each",
        f"tenants: sha256(user) mod {tenants}; user = the pod's resource signature; no time limits in the trace: "
        "the smallest round limit (1 h, 2 h, 4 h, 8 h, 12 h, 1-3 days, 7, 14, 30 days) that covers the run",
    ]
    return jobs, notes


def read_openb_nodes(text: str, *, switch_size: int = SWITCH_SIZE) -> list[NodeView]:
    """openb GPU nodes, one partition `main`; the trace has no topology, so each GPU model's nodes fill leaf switches
    of `switch_size` in name order."""
    rows = list(csv.DictReader(io.StringIO(text)))
    by_model: dict[str, int] = {}
    nodes = []
    for row in rows:
        model = row.get("model") or "gpu"
        position = by_model[model] = by_model.get(model, -1) + 1
        nodes.append(pool_node(row["sn"], f"{model}-{position // switch_size}", int(row["gpu"])))
    return nodes


# --- sacct --json -------------------------------------------------------------------------------------------------


def read_sacct_json(text: str, *, tenants: int = DEFAULT_TENANTS) -> list[WorkloadJob]:
    """Ended jobs of `sacct --json` (Slurm 21.08 and later: number-or-{set,number} fields). Accounts are groups;
    sacct has no tenant, so each account's tenant is sha256(account) mod `tenants`. Jobs that never started are
    left out. Accelerators are the allocated gres/gpu (or gres/accelerator) per node."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"sacct json: {exc}") from None
    raw_jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(raw_jobs, list):
        raise WorkloadError("sacct json: expected an object with a 'jobs' list (sacct --json)")
    rows = []
    for entry in raw_jobs:
        job = _sacct_job(entry)
        if job is not None:
            rows.append(job)
    if not rows:
        return []
    origin = min(row[0] for row in rows)
    jobs = []
    for submit, duration, limit, nodes, per_node, account, user, partition in sorted(rows, key=lambda r: r[0]):
        job = WorkloadJob(
            len(jobs) + 1, submit - origin, duration, limit, nodes, per_node, "", account, user, partition
        )
        jobs.append(fill_owners(job, tenants))
    return jobs


def _value(field) -> float | None:
    if isinstance(field, dict):
        if field.get("infinite") or not field.get("set", True):
            return None
        field = field.get("number")
    return float(field) if isinstance(field, int | float) else None


def _sacct_job(entry: dict) -> tuple | None:
    times = entry.get("time") or {}
    submit, start, end = (_value(times.get(k)) for k in ("submission", "start", "end"))
    if not submit or not start or not end or end < start:
        return None
    limit = _value(times.get("limit"))
    nodes = int(_value(entry.get("allocation_nodes")) or 1)
    accelerators = 0
    tres = entry.get("tres") or {}
    for item in tres.get("allocated") or tres.get("requested") or []:
        name = str(item.get("name") or "")
        if item.get("type") == "gres" and name.split(":")[0] in ("gpu", "accelerator"):
            accelerators += int(item.get("count") or 0)
    partition = str(entry.get("partition") or DEFAULT_PARTITION).split(",")[0]
    account = str(entry.get("account") or (entry.get("association") or {}).get("account") or "")
    user = str(entry.get("user") or (entry.get("association") or {}).get("user") or "")
    return (submit, end - start, limit * 60 if limit else None, max(nodes, 1), accelerators // max(nodes, 1),
            account, user, partition)  # fmt: skip


# --- pools and quotas -----------------------------------------------------------------------------------------------


def pool_node(name: str, switch: str, accelerators: int, partitions: Iterable[str] = (DEFAULT_PARTITION,)) -> NodeView:
    return NodeView(
        name=name,
        switch=switch,
        partitions=frozenset(partitions),
        accelerators=accelerators,
        cpus=0,
        memory_mb=0,
        free_accelerators=list(range(accelerators)),
    )


def uniform_pool(count: int, accelerators: int = 8, switch_size: int = SWITCH_SIZE) -> list[NodeView]:
    return [pool_node(f"node{i:05d}", f"leaf{i // switch_size:04d}", accelerators) for i in range(count)]


def pool_from_description(data: dict) -> list[NodeView]:
    """Nodes of a pool description file (cluster/pools/*.yaml: leaves, node_defaults, nodes, partitions)."""
    if not isinstance(data, dict) or "leaves" not in data or "partitions" not in data:
        raise WorkloadError("a pool description needs 'leaves' and 'partitions'")
    defaults = data.get("node_defaults") or {}
    member_of: dict[str, set[str]] = {}
    for part, spec in data["partitions"].items():
        for name in spec.get("nodes", []):
            member_of.setdefault(name, set()).add(part)
    nodes = []
    for leaf, spec in data["leaves"].items():
        for name in spec.get("nodes", []):
            node_spec = {**defaults, **((data.get("nodes") or {}).get(name) or {})}
            nodes.append(pool_node(name, leaf, int(node_spec.get("accelerators", 8)), member_of.get(name, ())))
    return nodes


def read_quotas(text: str) -> dict[str, AssocLimits]:
    """Proposed limits, one association a line, in sacctmgr's words:
    ``tenant tenant-3 GrpTRES=accelerator=64 GrpJobs=20`` or ``group tenant-3-ls GrpTRES=accelerator=16``."""
    limits: dict[str, AssocLimits] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) < 3 or words[0] not in ("tenant", "group"):
            raise WorkloadError(f"quotas line {number}: expected 'tenant|group NAME GrpTRES=... [GrpJobs=N]'")
        kind, name = words[0], words[1]
        limit = AssocLimits(f"{kind} {name}")
        for setting in words[2:]:
            key, _, value = setting.partition("=")
            try:
                if key.lower() == "grptres":
                    limit.grp_tres = {k: v for k, v in parse_tres(value).items() if v >= 0}
                elif key.lower() == "grpjobs":
                    limit.grp_jobs = int(value) if int(value) >= 0 else None
                else:
                    raise WorkloadError(f"quotas line {number}: {key} is not supported (GrpTRES, GrpJobs)")
            except (TRESError, ValueError) as exc:
                if isinstance(exc, WorkloadError):
                    raise
                raise WorkloadError(f"quotas line {number}: {exc}") from None
        limits[f"{kind}:{name}"] = limit
    return limits


def read_text(path: str | Path) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise WorkloadError(f"cannot read {path}: {exc.strerror or exc}") from None


def scale_arrivals(jobs: list[WorkloadJob], load: float) -> list[WorkloadJob]:
    """Submit times divided by `load`: the same jobs arriving `load` times as fast (a busier pool)."""
    if load == 1.0:
        return jobs
    return [replace(job, submit_time=job.submit_time / load) for job in jobs]


def shrink_pool(nodes: list[NodeView], fraction: float) -> list[NodeView]:
    """Every k-th node (k = round(1/fraction)), per GPU model in name order: a smaller pool of the same mix."""
    if fraction >= 1.0:
        return nodes
    if fraction <= 0:
        raise WorkloadError("pool fraction must be above 0")
    step = max(1, round(1 / fraction))
    return [node for i, node in enumerate(nodes) if i % step == 0]
