"""Jobs, their state history and the software runtimes a job can load."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q, Sum

from tenants.models import Role
from tenants.scoping import CHANGE, TenantScopedQuerySet, memberships_of
from vocab.states import ACTIVE_STATES, JobState, Reason
from vocab.tres import ACCEL, CPU, MEM, NODE


class JobQuerySet(TenantScopedQuerySet):
    def _restrict(self, user, action):
        # Tenant admins: every job of their tenant. Members and viewers: jobs of their groups.
        # Change (cancel, requeue): the owner while still in the group, or a tenant admin; never a viewer.
        # Ids are inlined (tenants.scoping): a condition that cannot match is left out, not sent as a subquery.
        memberships = memberships_of(user)
        allowed = Q(pk__in=[])
        if admin_of := memberships.tenant_ids((Role.ADMIN,)):
            allowed |= Q(tenant__in=admin_of)
        if action == CHANGE:
            tenants, mine = memberships.tenant_ids((Role.MEMBER,)), Q(user=user)
        else:
            tenants, mine = memberships.tenant_ids((Role.MEMBER, Role.VIEWER)), Q()
        # A job's tenant is its group's: the groups of those tenants say it all. Adding "AND tenant IN (…)" made
        # PostgreSQL multiply two correlated selectivities and underestimate the rows a hundredfold.
        if groups := memberships.groups_in(tenants):
            allowed |= Q(group__in=groups) & mine
        return self.filter(allowed)

    def active(self):
        return self.filter(state__in=[s.value for s in ACTIVE_STATES])

    def running(self):
        return self.filter(state=JobState.RUNNING)

    def pending(self):
        return self.filter(state=JobState.PENDING)

    def under_group_path(self, path: str):
        """Jobs charged to the group with this path or any group below it (limits bind the whole subtree)."""
        return self.filter(group__path__startswith=path)

    def tres_totals(self) -> dict[str, int]:
        totals = self.aggregate(
            cpu=Sum(F("nodes") * F("cpus_per_node")),
            mem=Sum(F("nodes") * F("memory_per_node")),
            node=Sum("nodes"),
            accel=Sum(F("nodes") * F("accelerators_per_node")),
        )
        return {
            CPU: totals["cpu"] or 0,
            MEM: totals["mem"] or 0,
            NODE: totals["node"] or 0,
            ACCEL: totals["accel"] or 0,
        }


class Runtime(models.Model):
    """A named software environment (``module load ai-suite/2.1``): environment variables and a prologue."""

    name = models.CharField(max_length=64, unique=True, help_text="e.g. ai-suite/2.1")
    description = models.CharField(max_length=200, blank=True)
    environment = models.JSONField(default=dict, blank=True)
    prologue = models.TextField(blank=True, help_text="Shell lines run before the job's command")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Job(models.Model):
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.PROTECT, related_name="jobs")
    group = models.ForeignKey("tenants.Group", on_delete=models.PROTECT, related_name="jobs")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="jobs")
    partition = models.ForeignKey("cluster.Partition", on_delete=models.PROTECT, related_name="jobs")
    name = models.CharField(max_length=128)

    nodes = models.PositiveIntegerField()
    accelerators_per_node = models.PositiveIntegerField()
    cpus_per_node = models.PositiveIntegerField()
    memory_per_node = models.PositiveBigIntegerField(help_text="MiB")
    time_limit = models.PositiveIntegerField(help_text="minutes")
    topology_aware = models.BooleanField(default=False)
    max_switches = models.PositiveIntegerField(null=True, blank=True)
    command = models.TextField(blank=True)
    script = models.TextField(blank=True)
    environment = models.JSONField(default=dict, blank=True)
    runtime = models.ForeignKey(Runtime, null=True, blank=True, on_delete=models.PROTECT, related_name="jobs")

    state = models.CharField(max_length=16, choices=[(s.value, s.value) for s in JobState], default=JobState.PENDING)
    reason = models.CharField(max_length=64, default=Reason.NONE)
    # Multifactor priority as the last scheduling pass computed it (priority is live; this copy makes it sortable).
    priority = models.BigIntegerField(default=0)
    exit_code = models.IntegerField(null=True, blank=True)
    submitted_at = models.DateTimeField(auto_now_add=True)
    eligible_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # {"node1": [0, 1, 2, 3], ...}: which accelerator indices of which node the job holds while RUNNING.
    allocation = models.JSONField(default=dict, blank=True)
    nodelist = models.JSONField(default=list, blank=True)
    switches = models.JSONField(default=list, blank=True)
    backend = models.CharField(max_length=16, blank=True)
    backend_job_id = models.CharField(max_length=64, blank=True)
    # Bumped on requeue so a stale launch of the previous run can be told apart from the current one.
    run_count = models.PositiveIntegerField(default=0)
    idempotency_key = models.CharField(max_length=128, null=True, blank=True)
    request_hash = models.CharField(max_length=64, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["state", "partition"]),
            models.Index(fields=["tenant", "-id"]),
            # Lists of a member's groups, newest first, optionally by state: read in index order, LIMIT 51, even for
            # a group whose jobs are all old (a scan down the primary key would pass a million newer rows first).
            models.Index(fields=["group", "-id"]),
            models.Index(fields=["group", "state", "-id"]),
            # ?state=PENDING&ordering=-priority: the queue in the order the scheduler considers it.
            models.Index(fields=["state", "-priority", "-id"]),
            models.Index(fields=["user", "-id"]),
            # Fair share bills runs that ended since the last usage update: a range scan, not a table scan.
            models.Index(fields=["ended_at"]),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="one_job_per_idempotency_key",
            ),
            models.CheckConstraint(condition=Q(nodes__gte=1), name="job_nodes_at_least_one"),
            models.CheckConstraint(condition=Q(time_limit__gte=1), name="job_time_limit_at_least_one"),
        ]

    def __str__(self) -> str:
        return f"{self.pk} {self.name}"

    @property
    def is_active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def tres(self) -> dict[str, int]:
        return {
            CPU: self.nodes * self.cpus_per_node,
            MEM: self.nodes * self.memory_per_node,
            NODE: self.nodes,
            ACCEL: self.nodes * self.accelerators_per_node,
        }


class JobEventQuerySet(TenantScopedQuerySet):
    tenant_field = "job__tenant"


class JobEvent(models.Model):
    """One transition of a job: the state history, with time and cause."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(db_index=True)
    from_state = models.CharField(max_length=16, blank=True)
    to_state = models.CharField(max_length=16)
    reason = models.CharField(max_length=64, blank=True)
    cause = models.CharField(max_length=200, blank=True)

    objects = JobEventQuerySet.as_manager()

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.from_state or '-'} → {self.to_state} ({self.cause})"


class SchedulerLock(models.Model):
    """A single row locked for the length of a scheduling pass, so two passes never interleave."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    last_pass_at = models.DateTimeField(null=True, blank=True)
    # Set when a pass is queued, cleared when one starts: a burst of 1,000 submits queues one pass, not 1,000.
    pass_requested = models.BooleanField(default=False)
    # FairShareUsage rows hold decayed usage as of this instant; runs after it are billed on top when read.
    usage_decayed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"scheduler lock (last pass {self.last_pass_at})"


class FairShareUsage(models.Model):
    """Decayed usage of one association (``tenant:ID`` or ``group:ID``), in accelerator-equivalent seconds.

    Slurm's usage_raw: every second a job runs is billed to its group, the groups above it and its tenant, and halves
    every PriorityDecayHalfLife. Stored as of ``SchedulerLock.usage_decayed_at`` and brought up to date on read.
    """

    association = models.CharField(max_length=32, unique=True)
    usage = models.FloatField(default=0.0)

    def __str__(self) -> str:
        return f"{self.association}: {self.usage:.0f}"
