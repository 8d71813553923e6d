"""Tenants (organisations), groups (Slurm accounts), memberships, limits and the audit log."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from tenants.scoping import TenantScopedQuerySet
from vocab.slurmtime import format_minutes
from vocab.tres import format_tres


class Role(models.TextChoices):
    ADMIN = "admin", "tenant admin"
    MEMBER = "member", "member"
    VIEWER = "viewer", "viewer (read-only)"


class AssociationLimits(models.Model):
    """Slurm association limits. Empty TRES dict / NULL = no limit. Memory in MiB, times in minutes."""

    grp_tres = models.JSONField("GrpTRES", default=dict, blank=True)
    grp_tres_mins = models.JSONField("GrpTRESMins", default=dict, blank=True)
    grp_jobs = models.PositiveIntegerField("GrpJobs", null=True, blank=True)
    grp_submit_jobs = models.PositiveIntegerField("GrpSubmitJobs", null=True, blank=True)
    max_tres_per_job = models.JSONField("MaxTRESPerJob", default=dict, blank=True)
    max_tres_per_user = models.JSONField("MaxTRESPerUser", default=dict, blank=True)
    max_wall = models.PositiveIntegerField("MaxWall", null=True, blank=True, help_text="minutes")

    LIMIT_FIELDS = (
        "grp_tres",
        "grp_tres_mins",
        "grp_jobs",
        "grp_submit_jobs",
        "max_tres_per_job",
        "max_tres_per_user",
        "max_wall",
    )
    TRES_FIELDS = ("grp_tres", "grp_tres_mins", "max_tres_per_job", "max_tres_per_user")

    class Meta:
        abstract = True

    def limits_display(self) -> dict[str, str]:
        """Each limit as sacctmgr prints it (empty string when unset)."""
        shown = {}
        for field in self.LIMIT_FIELDS:
            value = getattr(self, field)
            if field in self.TRES_FIELDS:
                shown[field] = format_tres(value)
            elif field == "max_wall":
                shown[field] = format_minutes(value) if value is not None else ""
            else:
                shown[field] = "" if value is None else str(value)
        return shown

    def limits_snapshot(self) -> dict:
        return {field: getattr(self, field) for field in self.LIMIT_FIELDS}


class TenantQuerySet(TenantScopedQuerySet):
    tenant_field = "pk"


class Tenant(AssociationLimits):
    name = models.SlugField(max_length=64, unique=True)
    description = models.CharField(max_length=200, blank=True)
    # Fair share between tenants (the top level of the tree), as Group.shares is between sibling groups.
    shares = models.PositiveIntegerField("Fairshare", default=1, validators=[MinValueValidator(1)])
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class GroupQuerySet(TenantScopedQuerySet):
    def with_ancestors_chain(self):
        return self.select_related("tenant", "parent", "default_partition")


class Group(AssociationLimits):
    """A Slurm account: jobs are charged to it; limits of its parents and its tenant bind it too."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="groups")
    name = models.SlugField(max_length=64, unique=True, help_text="Unique in the pool, like a Slurm account")
    description = models.CharField(max_length=200, blank=True)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    # Materialised "/root/child/" so limits and usage up and down the tree are one indexed prefix query.
    path = models.CharField(max_length=512, editable=False, db_index=True)
    allowed_partitions = models.ManyToManyField("cluster.Partition", blank=True, related_name="groups")
    default_partition = models.ForeignKey(
        "cluster.Partition", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    shares = models.PositiveIntegerField("Fairshare", default=1, validators=[MinValueValidator(1)])
    created_at = models.DateTimeField(auto_now_add=True)

    objects = GroupQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def ancestor_names(self) -> list[str]:
        return [name for name in self.path.strip("/").split("/") if name][:-1]


class MembershipQuerySet(TenantScopedQuerySet):
    pass


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)

    objects = MembershipQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="one_membership_per_tenant")]
        ordering = ["tenant__name", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant} ({self.role})"


class GroupMemberQuerySet(TenantScopedQuerySet):
    tenant_field = "group__tenant"


class GroupMember(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="group_memberships")
    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="members")

    objects = GroupMemberQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "group"], name="one_membership_per_group")]
        ordering = ["group__name", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} in {self.group}"


class AuditLogQuerySet(TenantScopedQuerySet):
    def _restrict(self, user, action):
        from tenants.scoping import member_tenant_ids

        # Only tenant admins read their tenant's audit trail; nobody but staff changes it.
        if action != "view":
            return self.none()
        return self.filter(tenant__in=member_tenant_ids(user, roles=(Role.ADMIN,)))


class AuditLog(models.Model):
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=64)
    target_id = models.CharField(max_length=64)
    target_repr = models.CharField(max_length=200)
    changes = models.JSONField(default=dict, blank=True, help_text='{"field": [before, after]}')

    objects = AuditLogQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor or 'system'} {self.action} {self.target_repr}"
