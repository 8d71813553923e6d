"""The API's edge: explicit fields in, explicit fields out (style.md §7). Writes go to services, never to .save()."""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import QueryDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from api import examples
from api.models import SCOPES, ApiToken
from api.permissions import require_change
from cluster.models import Node, NodeState, Partition
from jobs.models import Job, JobEvent
from jobs.selectors import NodeAllocation, Usage
from jobs.spec import parse_job_spec
from tenants.limits import FIELD_LABELS, LimitError, parse_limit
from tenants.models import Group, Membership, Role, Tenant
from tenants.scoping import VIEW
from vocab.slurmtime import format_minutes
from vocab.tres import format_memory

User = get_user_model()


# --- shared shapes ---------------------------------------------------------------------------------------------


@extend_schema_serializer(examples=examples.ERRORS)
class ErrorSerializer(serializers.Serializer):
    """Every error the API returns has this shape."""

    code = serializers.CharField(
        help_text="Machine-readable: validation_error, not_authenticated, permission_denied, insufficient_scope, "
        "not_found, method_not_allowed, conflict, idempotency_conflict, throttled, backend_unavailable, server_error"
    )
    detail = serializers.CharField(help_text="A message for people")
    errors = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Messages per request field (empty when the error is not about a field)",
    )


class TRESField(serializers.DictField):
    """A TRES dict such as ``{"cpu": 128, "mem": 524288, "node": 2, "gres/accelerator": 16}`` (memory in MiB)."""

    child = serializers.IntegerField()


class LimitsSerializer(serializers.Serializer):
    grp_tres = TRESField(help_text="GrpTRES")
    grp_tres_mins = TRESField(help_text="GrpTRESMins")
    grp_jobs = serializers.IntegerField(allow_null=True, help_text="GrpJobs")
    grp_submit_jobs = serializers.IntegerField(allow_null=True, help_text="GrpSubmitJobs")
    max_tres_per_job = TRESField(help_text="MaxTRESPerJob")
    max_tres_per_user = TRESField(help_text="MaxTRESPerUser")
    max_wall = serializers.IntegerField(allow_null=True, help_text="MaxWall in minutes")


class LimitsDisplaySerializer(serializers.Serializer):
    """The same limits as sacctmgr prints them; empty string when unset."""

    GrpTRES = serializers.CharField()
    GrpTRESMins = serializers.CharField()
    GrpJobs = serializers.CharField()
    GrpSubmitJobs = serializers.CharField()
    MaxTRESPerJob = serializers.CharField()
    MaxTRESPerUser = serializers.CharField()
    MaxWall = serializers.CharField()


def limits_of(assoc) -> dict:
    return assoc.limits_snapshot()


def limits_display_of(assoc) -> dict:
    return {FIELD_LABELS[name]: text for name, text in assoc.limits_display().items()}


class UsageSerializer(serializers.Serializer):
    running_tres = TRESField()
    pending_tres = TRESField()
    running_jobs = serializers.IntegerField()
    pending_jobs = serializers.IntegerField()


class QuotaUsageSerializer(UsageSerializer):
    tres_minutes = TRESField(help_text="TRES-minutes consumed by ended runs (what GrpTRESMins counts)")


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        "example": {"GrpTRES": "gres/accelerator=800", "GrpJobs": 10, "MaxWall": "72:00:00"},
    }
)
class LimitChangesField(serializers.DictField):
    """``{"GrpTRES": "gres/accelerator=800", "MaxWall": "72:00:00", "GrpJobs": -1}``: sacctmgr names and values."""

    child = serializers.CharField(allow_blank=True)

    def to_internal_value(self, data):
        if not isinstance(data, Mapping):
            raise serializers.ValidationError('expected an object such as {"GrpTRES": "gres/accelerator=800"}')
        changes, problems = {}, []
        for name, raw in data.items():
            label = FIELD_LABELS.get(name, name)  # snake_case field names are accepted too
            if isinstance(raw, bool) or not isinstance(raw, (str, int)):
                problems.append(f"{label}: expected a string such as 'gres/accelerator=800' or a number")
                continue
            try:
                field, value = parse_limit(label, str(raw))
            except LimitError as exc:
                problems.append(str(exc))
                continue
            changes[field] = value
        if problems:
            raise serializers.ValidationError(problems)
        return changes


def has_nul(value) -> bool:
    """Text PostgreSQL cannot store or even compare: such a name matches nothing, such a field is invalid."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(has_nul(item) for item in value)
    return False


class NameField(serializers.SlugRelatedField):
    """A row named by its name (partitions, users): unknown names, NUL characters included, read as unknown."""

    def to_internal_value(self, data):
        if has_nul(data):
            self.fail("does_not_exist", slug_name=self.slug_field, value=data)
        return super().to_internal_value(data)


@extend_schema_field(OpenApiTypes.STR)
class ScopedSlugField(serializers.SlugRelatedField):
    """A name that must refer to a row the requesting user may see: another tenant's row reads as unknown."""

    default_error_messages = {
        "does_not_exist": "unknown {model} '{value}'",
        "invalid": "expected a name",
    }

    def __init__(self, model, **kwargs):
        self.model = model
        kwargs.setdefault("slug_field", "name")
        super().__init__(**kwargs)

    def get_queryset(self):
        request = self.context.get("request")
        return self.model.objects.visible_to(getattr(request, "user", None), VIEW)

    def to_internal_value(self, data):
        if has_nul(data):
            self.fail("does_not_exist", model=self.model._meta.verbose_name, value=data)
        try:
            return self.get_queryset().get(**{self.slug_field: data})
        except self.model.DoesNotExist:
            self.fail("does_not_exist", model=self.model._meta.verbose_name, value=data)
        except (TypeError, ValueError):
            self.fail("invalid")


# --- me ----------------------------------------------------------------------------------------------------------


class MeTenantSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=Role.choices)


class MeGroupSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    tenant = serializers.CharField()


@extend_schema_serializer(examples=examples.ME)
class MeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    email = serializers.CharField(help_text="Empty when the account has none")
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    is_staff = serializers.BooleanField()
    tenants = MeTenantSerializer(many=True)
    groups = MeGroupSerializer(many=True)


class QuotaGroupSerializer(serializers.Serializer):
    group = serializers.CharField(source="group.name")
    tenant = serializers.CharField(source="group.tenant.name")
    path = serializers.CharField(source="group.path")
    limits = serializers.SerializerMethodField()
    limits_display = serializers.SerializerMethodField()
    usage = QuotaUsageSerializer(help_text="The group and every group below it")
    user_usage = QuotaUsageSerializer(help_text="Your own jobs in the group")

    @extend_schema_field(LimitsSerializer)
    def get_limits(self, quota) -> dict:
        return limits_of(quota.group)

    @extend_schema_field(LimitsDisplaySerializer)
    def get_limits_display(self, quota) -> dict:
        return limits_display_of(quota.group)


@extend_schema_serializer(examples=examples.QUOTA)
class QuotaSerializer(serializers.Serializer):
    user = serializers.CharField()
    groups = QuotaGroupSerializer(many=True)


# --- tenants, groups, memberships --------------------------------------------------------------------------------


@extend_schema_serializer(examples=examples.TENANT)
class TenantSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField(
        help_text="Your role in the tenant (null for pool staff who are not members)"
    )
    limits = serializers.SerializerMethodField()
    limits_display = serializers.SerializerMethodField()

    class Meta:
        model = Tenant
        fields = ["id", "name", "description", "role", "shares", "limits", "limits_display", "created_at"]
        extra_kwargs = {"shares": {"help_text": "Fairshare against the other tenants (sacctmgr Fairshare)"}}

    @extend_schema_field(serializers.ChoiceField(choices=Role.choices, allow_null=True))
    def get_role(self, tenant) -> str | None:
        return self.context.get("roles", {}).get(tenant.pk)

    @extend_schema_field(LimitsSerializer)
    def get_limits(self, tenant) -> dict:
        return limits_of(tenant)

    @extend_schema_field(LimitsDisplaySerializer)
    def get_limits_display(self, tenant) -> dict:
        return limits_display_of(tenant)


@extend_schema_serializer(examples=examples.TENANT_CREATE)
class TenantCreateSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=64)
    description = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    shares = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, required=False, default=1, help_text="Fairshare (default 1)"
    )
    limits = LimitChangesField(required=False)


@extend_schema_serializer(examples=examples.TENANT_UPDATE)
class TenantUpdateSerializer(serializers.Serializer):
    limits = LimitChangesField(required=False)
    shares = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, required=False, help_text="Fairshare against the other tenants"
    )


@extend_schema_serializer(examples=examples.GROUP)
class GroupSerializer(serializers.ModelSerializer):
    tenant = serializers.CharField(source="tenant.name")
    parent = serializers.CharField(source="parent.name", allow_null=True, default=None)
    partitions = serializers.SerializerMethodField()
    default_partition = serializers.CharField(source="default_partition.name", allow_null=True, default=None)
    limits = serializers.SerializerMethodField()
    limits_display = serializers.SerializerMethodField()
    usage = serializers.SerializerMethodField()

    class Meta:
        model = Group
        fields = [
            "id",
            "name",
            "tenant",
            "parent",
            "path",
            "description",
            "partitions",
            "default_partition",
            "shares",
            "limits",
            "limits_display",
            "usage",
            "created_at",
        ]

    def get_partitions(self, group) -> list[str]:
        return [p.name for p in group.allowed_partitions.all()]

    @extend_schema_field(LimitsSerializer)
    def get_limits(self, group) -> dict:
        return limits_of(group)

    @extend_schema_field(LimitsDisplaySerializer)
    def get_limits_display(self, group) -> dict:
        return limits_display_of(group)

    @extend_schema_field(UsageSerializer(help_text="Running and pending jobs of the group and every group below it"))
    def get_usage(self, group) -> dict:
        usage = self.context.get("usage", {}).get(group.pk) or Usage()
        return UsageSerializer(usage).data


@extend_schema_serializer(examples=examples.GROUP_UPDATE)
class GroupWriteSerializer(serializers.Serializer):
    description = serializers.CharField(max_length=200, required=False, allow_blank=True)
    shares = serializers.IntegerField(min_value=1, required=False, help_text="Fairshare")
    partitions = NameField(slug_field="name", queryset=Partition.objects.all(), many=True, required=False)
    default_partition = NameField(slug_field="name", queryset=Partition.objects.all(), required=False, allow_null=True)
    limits = LimitChangesField(
        required=False, help_text='sacctmgr names and values, e.g. {"GrpTRES": "gres/accelerator=800"}; -1 clears'
    )


@extend_schema_serializer(examples=examples.GROUP_CREATE)
class GroupCreateSerializer(GroupWriteSerializer):
    tenant = ScopedSlugField(Tenant)
    name = serializers.SlugField(max_length=64)
    parent = ScopedSlugField(Group, required=False, allow_null=True)

    def validate_tenant(self, tenant):
        require_change(self.context["request"], tenant, f"only admins of tenant {tenant.name} may create its groups")
        return tenant


@extend_schema_serializer(examples=examples.MEMBERSHIP)
class MembershipSerializer(serializers.ModelSerializer):
    tenant = serializers.CharField(source="tenant.name")
    user = serializers.CharField(source="user.username")
    groups = serializers.SerializerMethodField(help_text="The user's groups in this tenant")

    class Meta:
        model = Membership
        fields = ["id", "tenant", "user", "role", "groups"]

    def get_groups(self, membership) -> list[str]:
        # Reads the prefetched group memberships of the user; filtering here keeps it to one query per page.
        return sorted(
            gm.group.name
            for gm in membership.user.group_memberships.all()
            if gm.group.tenant_id == membership.tenant_id
        )


@extend_schema_serializer(examples=examples.MEMBERSHIP_UPDATE)
class MembershipWriteSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices, required=False)
    groups = ScopedSlugField(Group, many=True, required=False, help_text="Group names of the tenant (replaces the set)")

    def validate(self, attrs):
        tenant = attrs.get("tenant") or self.context["tenant"]
        foreign = sorted(g.name for g in attrs.get("groups", []) if g.tenant_id != tenant.pk)
        if foreign:
            raise serializers.ValidationError({"groups": [f"not groups of tenant {tenant.name}: {', '.join(foreign)}"]})
        return attrs


@extend_schema_serializer(examples=examples.MEMBERSHIP_CREATE)
class MembershipCreateSerializer(MembershipWriteSerializer):
    tenant = ScopedSlugField(Tenant)
    user = NameField(slug_field="username", queryset=User.objects.filter(is_active=True))
    role = serializers.ChoiceField(choices=Role.choices, default=Role.MEMBER)

    def validate_tenant(self, tenant):
        require_change(
            self.context["request"], tenant, f"only admins of tenant {tenant.name} may manage its memberships"
        )
        return tenant


# --- inventory ---------------------------------------------------------------------------------------------------


def node_state(node: Node, held: NodeAllocation | None) -> str:
    """sinfo's word for a node: the admin's DOWN/DRAIN wins, otherwise computed from what running jobs hold."""
    if node.state != NodeState.UP:
        return node.state
    if held is None or held.jobs == 0:
        return "IDLE"
    full = (node.accelerators and held.accelerators >= node.accelerators) or held.cpus >= node.cpus
    return "ALLOCATED" if full else "MIXED"


@extend_schema_serializer(examples=examples.PARTITION)
class PartitionSerializer(serializers.ModelSerializer):
    default = serializers.BooleanField(source="is_default")
    max_time = serializers.SerializerMethodField(help_text="Slurm format, UNLIMITED when unset")
    max_time_minutes = serializers.IntegerField(source="max_time", allow_null=True)
    nodes = serializers.SerializerMethodField(help_text="Number of nodes")
    accelerators_total = serializers.SerializerMethodField()
    accelerators_free = serializers.SerializerMethodField(help_text="Free on nodes that are up (not DOWN or DRAIN)")

    class Meta:
        model = Partition
        fields = [
            "id",
            "name",
            "default",
            "max_time",
            "max_time_minutes",
            "priority_tier",
            "nodes",
            "accelerators_total",
            "accelerators_free",
        ]

    def get_max_time(self, partition) -> str:
        return format_minutes(partition.max_time)

    def get_nodes(self, partition) -> int:
        return len(partition.nodes.all())

    def get_accelerators_total(self, partition) -> int:
        return sum(n.accelerators for n in partition.nodes.all())

    def get_accelerators_free(self, partition) -> int:
        held = self.context.get("allocations", {})
        return sum(
            max(0, n.accelerators - getattr(held.get(n.name), "accelerators", 0))
            for n in partition.nodes.all()
            if n.state == NodeState.UP
        )


@extend_schema_serializer(examples=examples.NODE)
class NodeSerializer(serializers.ModelSerializer):
    partitions = serializers.SerializerMethodField()
    state = serializers.SerializerMethodField(help_text="IDLE, MIXED, ALLOCATED, DRAIN or DOWN")
    accelerators_total = serializers.IntegerField(source="accelerators")
    accelerators_allocated = serializers.SerializerMethodField()
    cpus_allocated = serializers.SerializerMethodField()
    switch = serializers.CharField(source="switch.name")

    class Meta:
        model = Node
        fields = [
            "id",
            "name",
            "partitions",
            "state",
            "accelerators_total",
            "accelerators_allocated",
            "cpus",
            "cpus_allocated",
            "memory_mb",
            "switch",
        ]

    def _held(self, node) -> NodeAllocation | None:
        return self.context.get("allocations", {}).get(node.name)

    def get_partitions(self, node) -> list[str]:
        return [p.name for p in node.partitions.all()]

    @extend_schema_field(serializers.ChoiceField(choices=["IDLE", "MIXED", "ALLOCATED", "DRAIN", "DOWN"]))
    def get_state(self, node) -> str:
        return node_state(node, self._held(node))

    def get_accelerators_allocated(self, node) -> int:
        return getattr(self._held(node), "accelerators", 0)

    def get_cpus_allocated(self, node) -> int:
        return getattr(self._held(node), "cpus", 0)


# --- jobs --------------------------------------------------------------------------------------------------------


class JobEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = JobEvent
        fields = ["at", "from_state", "to_state", "reason", "cause"]


@extend_schema_serializer(examples=examples.JOB)
class JobSerializer(serializers.ModelSerializer):
    tenant = serializers.CharField(source="tenant.name")
    group = serializers.CharField(source="group.name")
    user = serializers.CharField(source="user.username")
    partition = serializers.CharField(source="partition.name")
    time_limit = serializers.SerializerMethodField(help_text="Slurm format, e.g. 3-00:00:00")
    time_limit_minutes = serializers.IntegerField(source="time_limit")
    memory_per_node = serializers.SerializerMethodField(help_text="e.g. 256G")
    memory_per_node_mb = serializers.IntegerField(source="memory_per_node")
    runtime = serializers.CharField(source="runtime.name", allow_null=True, default=None)
    nodelist = serializers.ListField(child=serializers.CharField())
    switches = serializers.ListField(child=serializers.CharField())
    priority = serializers.IntegerField(
        read_only=True, help_text="Multifactor priority at the last scheduling pass (sprio; GET jobs/{id}/priority/)"
    )

    class Meta:
        model = Job
        fields = [
            "id",
            "name",
            "tenant",
            "group",
            "user",
            "partition",
            "nodes",
            "accelerators_per_node",
            "cpus_per_node",
            "memory_per_node",
            "memory_per_node_mb",
            "time_limit",
            "time_limit_minutes",
            "topology_aware",
            "max_switches",
            "runtime",
            "state",
            "reason",
            "priority",
            "exit_code",
            "submitted_at",
            "started_at",
            "ended_at",
            "nodelist",
            "switches",
            "backend",
            "backend_job_id",
        ]

    def get_time_limit(self, job) -> str:
        return format_minutes(job.time_limit)

    def get_memory_per_node(self, job) -> str:
        return format_memory(job.memory_per_node)


@extend_schema_serializer(examples=examples.JOB_DETAIL)
class JobDetailSerializer(JobSerializer):
    environment = serializers.SerializerMethodField(
        help_text="Shown to the job's owner and tenant admins only; null for others"
    )
    events = JobEventSerializer(many=True, help_text="State history, oldest first")

    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "command", "script", "environment", "events"]

    @extend_schema_field(serializers.DictField(child=serializers.CharField(), allow_null=True))
    def get_environment(self, job) -> dict | None:
        # Environments carry credentials more often than they should; group members see the job, not its secrets.
        return job.environment if self.context.get("may_change") else None


class JobCreateSerializer(serializers.Serializer):
    """The job request of api-contract.md. Parsed by ``jobs.spec.parse_job_spec`` — the same parser as every entry
    point — so the rules and messages live in one place; the fields below document it."""

    group = serializers.CharField(help_text="Group (Slurm account) to charge")
    name = serializers.CharField(required=False, help_text="Default: job")
    partition = serializers.CharField(required=False, allow_null=True, help_text="Default: the group's")
    nodes = serializers.IntegerField(min_value=1, default=1)
    accelerators_per_node = serializers.IntegerField(min_value=0, default=0)
    cpus_per_node = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    memory_per_node = serializers.CharField(required=False, allow_null=True, help_text='e.g. "64G"')
    time_limit = serializers.CharField(help_text='Slurm -t format: "30", "72:00:00", "2-00:00:00"')
    topology_aware = serializers.BooleanField(default=False, help_text="Slurm --switches semantics")
    max_switches = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    command = serializers.CharField(required=False, allow_blank=True, help_text="Exactly one of command or script")
    script = serializers.CharField(required=False, allow_blank=True)
    environment = serializers.DictField(child=serializers.CharField(), required=False)
    runtime = serializers.CharField(required=False, allow_null=True, help_text='e.g. "ai-suite/2.1"')
    inputs = serializers.ListField(
        child=serializers.JSONField(), required=False, help_text='Versions to read, e.g. ["model:acme/llama@3"]'
    )
    outputs = serializers.ListField(
        child=serializers.JSONField(), required=False, help_text='Published on completion, e.g. [{"model": "acme/ft"}]'
    )

    def to_internal_value(self, data):
        if isinstance(data, QueryDict):
            data = data.dict()
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"non_field_errors": ["expected a JSON object"]})
        errors: dict[str, list[str]] = {}
        # A misspelt field would otherwise be silently ignored, e.g. "accelerators" leaving a job with none.
        # The declared names, not self.fields: binding 17 field objects per submit only to read their names costs more
        # than the rest of the parsing.
        known = self._declared_fields
        for key, value in data.items():
            if key not in known:
                errors[str(key)] = [f"unknown field; known fields are {', '.join(known)}"]
            elif has_nul(value):
                errors[key] = ["cannot contain NUL (0x00) characters"]
        if errors:
            raise serializers.ValidationError(errors)
        spec = None
        try:
            spec = parse_job_spec(dict(data))
        except DjangoValidationError as exc:
            for key, messages in exc.message_dict.items():
                errors.setdefault(key, []).extend(messages)
        group = None
        name = data.get("group")
        if not name or not isinstance(name, str):
            errors["group"] = ["this field is required: the name of a group (Slurm account) you belong to"]
        else:
            user = self.context["request"].user
            group = (
                Group.objects.visible_to(user).select_related("tenant", "default_partition").filter(name=name).first()
            )
            if group is None:
                errors["group"] = [f"unknown group '{name}'"]
        if errors:
            raise serializers.ValidationError(errors)
        return {"group": group, "spec": spec}


class LogQuerySerializer(serializers.Serializer):
    stream = serializers.ChoiceField(choices=["stdout", "stderr"], default="stdout")
    offset = serializers.IntegerField(min_value=0, default=0, help_text="Byte offset to read from")
    limit = serializers.IntegerField(min_value=1, max_value=1 << 20, default=1 << 20, help_text="Bytes at most")


@extend_schema_serializer(examples=examples.LOG_CHUNK)
class LogChunkSerializer(serializers.Serializer):
    text = serializers.CharField()
    offset = serializers.IntegerField(help_text="Pass as ?offset= next time to continue (tail -f by polling)")
    size = serializers.IntegerField(help_text="Current size of the log in bytes")
    state = serializers.CharField(help_text="The job's state: stop polling once it is no longer PENDING or RUNNING")


class CauseSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Slurm reason code")
    message = serializers.CharField()
    limit = serializers.JSONField(allow_null=True)
    in_use = serializers.JSONField(allow_null=True)
    requested = serializers.JSONField(allow_null=True)


class SuggestionSerializer(serializers.Serializer):
    message = serializers.CharField()
    change = serializers.DictField(help_text="Fields of the job request to change")
    estimated_start = serializers.DateTimeField(allow_null=True)


@extend_schema_serializer(examples=examples.EXPLAIN)
class ExplainSerializer(serializers.Serializer):
    state = serializers.CharField()
    reason = serializers.CharField()
    causes = CauseSerializer(many=True)
    estimated_start = serializers.DateTimeField(allow_null=True)
    suggestions = SuggestionSerializer(many=True)


# --- tokens ------------------------------------------------------------------------------------------------------


@extend_schema_serializer(examples=examples.TOKEN)
class TokenSerializer(serializers.ModelSerializer):
    prefix = serializers.SerializerMethodField(help_text="The token's first characters, to recognise it")
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=SCOPES))
    active = serializers.BooleanField(source="is_active", help_text="Neither revoked nor expired")

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "scopes", "active", "created_at", "expires_at", "last_used_at", "revoked_at"]

    def get_prefix(self, token) -> str:
        return f"aip_{token.prefix}"


@extend_schema_serializer(examples=examples.TOKEN_CREATE)
class TokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=SCOPES), default=["read", "write"])
    expires_days = serializers.IntegerField(min_value=1, max_value=3650, required=False, allow_null=True)


@extend_schema_serializer(examples=examples.TOKEN_CREATED)
class TokenCreatedSerializer(TokenSerializer):
    token = serializers.CharField(help_text="The secret: shown this once, store it now")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]


# --- priorities (sprio) ----------------------------------------------------------------------------------------------


class PriorityFactorSerializer(serializers.Serializer):
    factor = serializers.FloatField(help_text="0..1")
    weight = serializers.IntegerField(help_text="PriorityWeight* of this factor")
    value = serializers.FloatField(help_text="factor x weight: the points it adds")


class PriorityFactorsSerializer(serializers.Serializer):
    age = PriorityFactorSerializer()
    fairshare = PriorityFactorSerializer()
    job_size = PriorityFactorSerializer()
    partition = PriorityFactorSerializer()


class FairShareUsageSerializer(serializers.Serializer):
    association = serializers.CharField()
    usage = serializers.FloatField(help_text="decayed usage, accelerator-seconds")
    tenant_usage = serializers.FloatField()
    half_life_seconds = serializers.FloatField()


@extend_schema_serializer(examples=examples.PRIORITY)
class JobPrioritySerializer(serializers.Serializer):
    """``sprio -l``: a job's multifactor priority now, factor by factor."""

    job_id = serializers.IntegerField()
    priority = serializers.IntegerField(help_text="the sum of the factors' values")
    factors = PriorityFactorsSerializer(help_text="age, fairshare, job_size, partition")
    fairshare = FairShareUsageSerializer()
