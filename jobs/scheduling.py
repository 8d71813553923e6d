"""The ORM side of scheduling: load the state the pure core needs, run it, apply its decisions in one transaction.

Every read is one query for the whole pool (nodes, running jobs, pending jobs, tenants, groups, fair-share usage,
runs ended since the last usage update), never one per job, so a pass costs the same few queries with 10 or 100,000
jobs queued; writes are one UPDATE per reason code plus the transitions of the jobs it starts.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import FloatField, Func
from django.db.models.functions import Coalesce
from django.utils import timezone

from cluster.models import Node, NodeState, Partition
from jobs.models import FairShareUsage, Job, SchedulerLock
from jobs.services import PASS_REQUEST_ROW, transition
from portal.env import env_int, env_str
from scheduler.core import paused_gc, schedule
from scheduler.model import AssocLimits, AssocUsage, Decisions, JobRequest, NodeView, RunningJob
from scheduler.policy import Policy, Weights
from scheduler.priority import Association, Prioritizer, PriorityContext, UsageInterval, decay_usage, fairshare_factors
from tenants.models import Group, Tenant
from vocab.slurmtime import TimeFormatError, parse_minutes
from vocab.states import JobState
from vocab.tres import ACCEL, CPU, MEM, NODE

log = logging.getLogger(__name__)

REASON_BATCH = 500  # ids per UPDATE: well under SQLite's bound-parameter limit
BOOTSTRAP_HALF_LIVES = 10  # with no stored usage yet, bill runs that ended this far back (older ones weigh < 0.1%)


class Epoch(Func):
    """A datetime column as seconds since the epoch, computed by the database: a pass reads two per queued job, and
    building datetime objects for 100,000 rows costs more than the pass itself."""

    output_field = FloatField()
    # Both databases hand back a float already: without this, Django calls float() on every value through a converter
    # per row (a tenth of loading a 10,000-job queue).
    convert_value = staticmethod(Func._convert_value_noop)

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="((julianday(%(expressions)s) - 2440587.5) * 86400.0)")

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="EXTRACT(EPOCH FROM %(expressions)s)::float8")


# The columns a JobRequest is built from, in request_from_row's order.
JOB_FIELDS = (
    "id",
    "partition__name",
    "nodes",
    "accelerators_per_node",
    "cpus_per_node",
    "memory_per_node",
    "time_limit",
    "group_id",
    "tenant_id",
    "user__username",
    "submitted",
    "eligible",
    "topology_aware",
    "max_switches",
)
TIMES = {"submitted": Epoch("submitted_at"), "eligible": Epoch(Coalesce("eligible_at", "submitted_at"))}


def job_rows(queryset, *extra: str):
    """`JOB_FIELDS` (then `extra`) of each job, as tuples."""
    return queryset.annotate(**TIMES).values_list(*JOB_FIELDS, *extra)


def tenant_key(tenant_id: int) -> str:
    return f"tenant:{tenant_id}"


def group_key(group_id: int) -> str:
    return f"group:{group_id}"


# --- policy from the environment (read at call time) -----------------------------------------------------------------


def _minutes(name: str, default: str) -> int:
    raw = env_str(name, default) or default
    try:
        return parse_minutes(raw)
    except TimeFormatError as exc:
        raise ValueError(f"{name}: {exc}") from exc


def policy_from_env() -> Policy:
    """Slurm's priority/multifactor and topology knobs; durations in Slurm time formats, in time-limit minutes."""
    minute = float(settings.AIPOOL_SECONDS_PER_MINUTE)
    return Policy(
        weights=Weights(
            age=env_int("AIPOOL_PRIORITY_WEIGHT_AGE", 1000),
            fairshare=env_int("AIPOOL_PRIORITY_WEIGHT_FAIRSHARE", 10000),
            job_size=env_int("AIPOOL_PRIORITY_WEIGHT_JOB_SIZE", 1000),
            partition=env_int("AIPOOL_PRIORITY_WEIGHT_PARTITION", 1000),
        ),
        seconds_per_minute=minute,
        max_age=_minutes("AIPOOL_PRIORITY_MAX_AGE", "7-0") * minute,
        half_life=_minutes("AIPOOL_PRIORITY_DECAY_HALF_LIFE", "7-0") * minute,
        switch_wait=_minutes("AIPOOL_MAX_SWITCH_WAIT", "5") * minute,
        plan_window=_minutes("AIPOOL_PLAN_WINDOW", "7-0") * minute,
    )


def usage_save_period() -> float:
    """PriorityCalcPeriod: how often decayed usage is written back (it is always current when read)."""
    return _minutes("AIPOOL_PRIORITY_CALC_PERIOD", "5") * float(settings.AIPOOL_SECONDS_PER_MINUTE)


def pass_min_interval() -> float:
    """Slurm's sched_min_interval, in seconds (AIPOOL_SCHED_MIN_INTERVAL_MS): the least time from the end of one pass
    to the start of the next one a submit asks for."""
    return max(0, env_int("AIPOOL_SCHED_MIN_INTERVAL_MS", 250)) / 1000


def wait_for_min_interval() -> float:
    """Sleep until `pass_min_interval` has passed since the last pass ended; returns the seconds slept.

    A pass costs time in proportion to the pending jobs (50 ms of CPU with 3,000 queued). Submitted faster than
    passes take, jobs would keep the worker running pass after pass, each for a handful of new jobs, taking a core
    from the web workers. While this waits, the pass is still requested (the flag is cleared when it starts), so
    every submit meanwhile is scheduled by it: a burst costs at most a few passes a second, whatever its rate.
    """
    interval = pass_min_interval()
    if interval <= 0:
        return 0.0
    with transaction.atomic():
        # Through the pass lock: a pass still running (the other worker process took the previous request) is
        # waited for, and the interval counts from its end; the flag stays set, so this pass schedules what arrives.
        last = SchedulerLock.objects.select_for_update().filter(pk=1).values_list("last_pass_at", flat=True).first()
    if last is None:
        return 0.0
    wait = min(interval, interval - (timezone.now() - last).total_seconds())  # min: a clock stepped back
    if wait <= 0:
        return 0.0
    time.sleep(wait)
    return wait


# --- loading ---------------------------------------------------------------------------------------------------------


@dataclass
class PoolState:
    """Everything a pass or an explanation reads, loaded with a fixed number of queries."""

    now: datetime
    policy: Policy
    nodes: list[NodeView]
    running: list[RunningJob]
    limits: dict[str, AssocLimits]
    chains: dict[int, tuple[str, ...]]
    tree: list[Association]
    usage: dict[str, AssocUsage]
    fairshare_usage: dict[str, float]
    priority: PriorityContext
    partitions: dict[str, Partition]

    @property
    def ts(self) -> float:
        return self.now.timestamp()


def load_state(now: datetime | None = None, lock: SchedulerLock | None = None) -> PoolState:
    now = now or timezone.now()
    policy = policy_from_env()
    limits, chains, tree = _load_associations()
    running = _load_running(chains, now.timestamp(), policy)
    nodes = _node_views(running)
    usage = _usage_of(running)
    _add_consumed_minutes(usage, chains, limits)
    lock = lock or SchedulerLock.objects.filter(pk=1).first()
    fairshare_usage = _current_fairshare_usage(now, lock, running, chains, policy)
    partitions = {p.name: p for p in Partition.objects.all()}
    size: dict[str, list[int]] = {}
    for node in nodes:
        if node.up:
            for name in node.partitions:
                counts = size.setdefault(name, [0, 0])
                counts[0] += 1
                counts[1] += node.accelerators
    context = PriorityContext(
        fairshare=fairshare_factors(tree, fairshare_usage),
        partition_tier={name: p.priority_tier for name, p in partitions.items()},
        partition_size={name: (c[0], c[1]) for name, c in size.items()},
    )
    return PoolState(now, policy, nodes, running, limits, chains, tree, usage, fairshare_usage, context, partitions)


def _load_associations() -> tuple[dict[str, AssocLimits], dict[int, tuple[str, ...]], list[Association]]:
    limits: dict[str, AssocLimits] = {}
    tree: list[Association] = []
    for tenant in Tenant.objects.all():
        limits[tenant_key(tenant.pk)] = _assoc_limits(tenant)
        tree.append(Association(tenant_key(tenant.pk), None, tenant.shares))
    groups = list(Group.objects.all())
    by_name = {g.name: g for g in groups}
    chains: dict[int, tuple[str, ...]] = {}
    for group in groups:
        limits[group_key(group.pk)] = _assoc_limits(group)
        names = [n for n in group.path.strip("/").split("/") if n]
        chains[group.pk] = (tenant_key(group.tenant_id), *(group_key(by_name[n].pk) for n in names if n in by_name))
        parent = group_key(group.parent_id) if group.parent_id else tenant_key(group.tenant_id)
        tree.append(Association(group_key(group.pk), parent, group.shares))
    return limits, chains, tree


def load_limits() -> tuple[dict[str, AssocLimits], dict[int, tuple[str, ...]]]:
    """Limits of every association, and for each group the chain of association keys from its tenant down."""
    limits, chains, _ = _load_associations()
    return limits, chains


def _assoc_limits(assoc) -> AssocLimits:
    return AssocLimits(
        name=f"{'tenant' if isinstance(assoc, Tenant) else 'group'} {assoc.name}",
        grp_tres=dict(assoc.grp_tres or {}),
        grp_jobs=assoc.grp_jobs,
        max_tres_per_user=dict(assoc.max_tres_per_user or {}),
        grp_tres_mins=dict(assoc.grp_tres_mins or {}),
    )


def request_from_row(row: tuple, chains: dict[int, tuple[str, ...]]) -> JobRequest:
    """A JobRequest from a `job_rows` tuple."""
    pk, partition, nodes, apn, cpn, mpn, limit, group_id, tenant_id, user, submitted, eligible, topo, most = row[:14]
    chain = chains.get(group_id) or (tenant_key(tenant_id),)
    return JobRequest(pk, partition, nodes, apn, cpn, mpn, limit, chain, user, submitted, topo, most, 0, eligible)


def request_for(job: Job, chains: dict[int, tuple[str, ...]]) -> JobRequest:
    return JobRequest(
        id=job.pk,
        partition=job.partition.name,
        nodes=job.nodes,
        accelerators_per_node=job.accelerators_per_node,
        cpus_per_node=job.cpus_per_node,
        memory_per_node=job.memory_per_node,
        time_limit=job.time_limit,
        associations=chains.get(job.group_id, (tenant_key(job.tenant_id),)),
        user=job.user.username,
        submitted_at=job.submitted_at.timestamp(),
        eligible_at=(job.eligible_at or job.submitted_at).timestamp(),
        topology_aware=job.topology_aware,
        max_switches=job.max_switches,
    )


def _load_running(chains: dict[int, tuple[str, ...]], now: float, policy: Policy) -> list[RunningJob]:
    running = []
    running_jobs = Job.objects.running().annotate(started=Epoch(Coalesce("started_at", "submitted_at")))
    for row in job_rows(running_jobs, "started", "allocation"):
        request = request_from_row(row, chains)
        started, allocation = row[14], row[15]
        # A job past its limit is being killed: it frees its nodes any moment now.
        ends_at = max(now, started + policy.duration(request.time_limit))
        allocation = {node: tuple(ix) for node, ix in (allocation or {}).items()}
        running.append(RunningJob(request, allocation, ends_at, started))
    return running


def _node_views(running: list[RunningJob]) -> list[NodeView]:
    member_of: dict[int, set[str]] = {}
    for node_id, partition in Partition.nodes.through.objects.values_list("node_id", "partition__name"):
        member_of.setdefault(node_id, set()).add(partition)
    views = {
        name: NodeView(
            name=name,
            switch=switch,
            partitions=frozenset(member_of.get(pk, ())),
            accelerators=accelerators,
            cpus=cpus,
            memory_mb=memory,
            up=state == NodeState.UP,
            free_accelerators=list(range(accelerators)),
            free_cpus=cpus,
            free_memory_mb=memory,
        )
        for pk, name, switch, accelerators, cpus, memory, state in Node.objects.values_list(
            "pk", "name", "switch__name", "accelerators", "cpus", "memory_mb", "state"
        )
    }
    for run in running:
        for node_name, indices in run.allocation.items():
            node = views.get(node_name)
            if node is None:
                continue
            held = set(indices)
            node.free_accelerators = [i for i in node.free_accelerators if i not in held]
            node.free_cpus -= run.job.cpus_per_node
            node.free_memory_mb -= run.job.memory_per_node
    return list(views.values())


def load_nodes() -> list[NodeView]:
    """Every node with what running jobs leave free on it."""
    limits, chains = load_limits()
    return _node_views(_load_running(chains, timezone.now().timestamp(), policy_from_env()))


def _usage_of(running: list[RunningJob]) -> dict[str, AssocUsage]:
    usage: dict[str, AssocUsage] = {}
    for run in running:
        for key in run.job.associations:
            usage.setdefault(key, AssocUsage()).add(run.job)
    return usage


def load_usage(chains: dict[int, tuple[str, ...]], limits: dict[str, AssocLimits]) -> dict[str, AssocUsage]:
    usage = _usage_of(_load_running(chains, timezone.now().timestamp(), policy_from_env()))
    _add_consumed_minutes(usage, chains, limits)
    return usage


def _add_consumed_minutes(
    usage: dict[str, AssocUsage], chains: dict[int, tuple[str, ...]], limits: dict[str, AssocLimits]
) -> None:
    """TRES-minutes of ended runs (by real elapsed time, in time-limit minutes), for GrpTRESMins budgets.

    Only groups with a budget somewhere up their chain are read: most pools have none, and then this costs nothing.
    """
    budgeted_keys = {key for key, limit in limits.items() if limit.grp_tres_mins}
    budgeted = [gid for gid, chain in chains.items() if budgeted_keys.intersection(chain)]
    if not budgeted:
        return
    minute = float(settings.AIPOOL_SECONDS_PER_MINUTE)
    ended = (
        Job.objects.filter(group_id__in=budgeted)
        .exclude(state__in=[JobState.PENDING, JobState.RUNNING])
        .exclude(started_at=None)
        .exclude(ended_at=None)
        .values_list(
            "group_id", "started_at", "ended_at", "nodes", "accelerators_per_node", "cpus_per_node", "memory_per_node"
        )
    )
    for group_id, started, ended_at, nodes, apn, cpn, mpn in ended.iterator():
        minutes = max(0.0, (ended_at - started).total_seconds() / minute)
        spent = {
            CPU: nodes * cpn * minutes,
            MEM: nodes * mpn * minutes,
            NODE: nodes * minutes,
            ACCEL: nodes * apn * minutes,
        }
        for key in chains.get(group_id, ()):
            totals = usage.setdefault(key, AssocUsage()).tres_mins
            for name, value in spent.items():
                totals[name] = totals.get(name, 0) + value


def _current_fairshare_usage(
    now: datetime, lock: SchedulerLock | None, running: list[RunningJob], chains, policy: Policy
) -> dict[str, float]:
    """Stored decayed usage brought up to `now`: decayed further, plus what ran since it was stored."""
    since = lock.usage_decayed_at if lock is not None else None
    stored = dict(FairShareUsage.objects.values_list("association", "usage")) if since else {}
    if since is None:
        since = now - timedelta(seconds=policy.half_life * BOOTSTRAP_HALF_LIVES)
    intervals = [
        UsageInterval(
            run.job.associations,
            policy.billing_rate(run.job.tres[ACCEL], run.job.tres[CPU]),
            run.started_at if run.started_at is not None else now.timestamp(),
            now.timestamp(),
        )
        for run in running
    ]
    ended = (
        Job.objects.filter(ended_at__gt=since)
        .exclude(started_at=None)
        .values_list(
            "group_id", "tenant_id", "nodes", "accelerators_per_node", "cpus_per_node", "started_at", "ended_at"
        )
    )
    for group_id, tenant_id, nodes, apn, cpn, started, ended_at in ended.iterator():
        intervals.append(
            UsageInterval(
                chains.get(group_id, (tenant_key(tenant_id),)),
                policy.billing_rate(nodes * apn, nodes * cpn),
                started.timestamp(),
                ended_at.timestamp(),
            )
        )
    return decay_usage(stored, since.timestamp(), now.timestamp(), intervals, policy.half_life)


def _calc_due(lock: SchedulerLock, state: PoolState) -> bool:
    """PriorityCalcPeriod has passed since decayed usage (and priorities) were last written."""
    return lock.usage_decayed_at is None or (state.now - lock.usage_decayed_at).total_seconds() >= usage_save_period()


def _save_fairshare_usage(lock: SchedulerLock, state: PoolState) -> None:
    if not _calc_due(lock, state):
        return
    rows = [FairShareUsage(association=key, usage=value) for key, value in state.fairshare_usage.items()]
    FairShareUsage.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["association"], update_fields=["usage"], batch_size=REASON_BATCH
    )
    lock.usage_decayed_at = state.now


def load_queue(state: PoolState, stored: dict[int, int] | None = None) -> tuple[list[JobRequest], dict[int, str]]:
    """Pending jobs as requests with their priority now, and each one's recorded reason. `stored`, when given, is
    filled with each job's priority as the last pass saved it."""
    queue, reasons = [], {}
    prioritizer = Prioritizer(state.priority, state.ts, state.policy)
    # In submission order: the core's queue sort then only has to order by priority.
    with paused_gc():
        for row in job_rows(Job.objects.pending().order_by("submitted_at", "id"), "reason", "priority"):
            request = request_from_row(row, state.chains)
            request.priority = prioritizer.priority(request)
            queue.append(request)
            reasons[request.id] = row[14]
            if stored is not None:
                stored[request.id] = row[15]
    return queue, reasons


def _save_priorities(queue: list[JobRequest], stored: dict[int, int], *, recalc: bool) -> int:
    """Store priorities in the pass's transaction, one bulk UPDATE per batch: those of jobs never stored yet, and when
    `recalc` (every PriorityCalcPeriod, as Slurm recalculates) every one that changed. Fair share moves the priority
    of every pending job a little each second a job runs: rewriting 10,000 rows on every pass cost more than the pass.
    """
    changed = [
        (job.priority, job.id)
        for job in queue
        if stored.get(job.id) != job.priority and (recalc or not stored.get(job.id))
    ]
    if changed:
        # One prepared statement run per row (psycopg pipelines it, sqlite3 loops in C): bulk_update's CASE WHEN
        # expressions cost 0.3 ms of Python per row, 3 s for a 10,000-job queue.
        table, column, key = Job._meta.db_table, Job._meta.get_field("priority").column, Job._meta.pk.column
        quote = connection.ops.quote_name
        with connection.cursor() as cursor:
            cursor.executemany(f"UPDATE {quote(table)} SET {quote(column)} = %s WHERE {quote(key)} = %s", changed)
    return len(changed)


# --- the pass --------------------------------------------------------------------------------------------------------


def run_pass() -> list[int]:
    """One scheduling pass; returns the ids of the jobs it started. Passes never overlap (row lock)."""
    # Cleared before reading state, so a submit that lands during this pass queues the next one.
    SchedulerLock.objects.filter(pk=PASS_REQUEST_ROW).update(pass_requested=False)
    with transaction.atomic():
        SchedulerLock.objects.get_or_create(pk=1)
        lock = SchedulerLock.objects.select_for_update().get(pk=1)
        state = load_state(lock=lock)
        stored: dict[int, int] = {}
        queue, reasons = load_queue(state, stored)
        started: list[int] = []
        _save_priorities(queue, stored, recalc=_calc_due(lock, state))
        if queue:
            decisions = schedule(
                state.nodes,
                queue,
                state.limits,
                state.usage,
                state.ts,
                running=state.running,
                policy=state.policy,
            )
            started = _apply(decisions, reasons, state.now)
        _save_fairshare_usage(lock, state)
        lock.last_pass_at = timezone.now()
        lock.save(update_fields=["last_pass_at", "usage_decayed_at"])
    return started


def _apply(decisions: Decisions, reasons: dict[int, str], now: datetime) -> list[int]:
    started = []
    jobs = Job.objects.in_bulk([s.job_id for s in decisions.starts])
    for start in decisions.starts:
        job = jobs[start.job_id]
        nodelist = list(start.allocation)
        moved = transition(
            job,
            JobState.RUNNING,
            cause=f"allocated {','.join(nodelist)}",
            at=now,
            started_at=now,
            allocation={n: list(ix) for n, ix in start.allocation.items()},
            nodelist=nodelist,
            switches=list(start.switches),
        )
        if moved:
            started.append(job.pk)
    changed: dict[str, list[int]] = {}
    for block in decisions.blocked:
        if reasons.get(block.job_id) != block.reason:
            changed.setdefault(block.reason, []).append(block.job_id)
    for reason, ids in changed.items():
        for at in range(0, len(ids), REASON_BATCH):
            Job.objects.filter(pk__in=ids[at : at + REASON_BATCH], state=JobState.PENDING).update(reason=reason)
    return started


def when(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, tz=UTC)
