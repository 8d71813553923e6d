"""``manage.py sacctmgr``: tenants, groups (Slurm accounts), users and limits, in sacctmgr's words.

    sacctmgr create tenant acme
    sacctmgr create group ai-team tenant=acme partition=main GrpTRES=accelerator=64
    sacctmgr modify group ai-team set GrpTRES=gres/accelerator=800 MaxWall=72:00:00
    sacctmgr -P -n show assoc tenant=acme

Every argument is parsed and every name resolved before the first write; the writes then go through
``tenants.services`` (which audits them) inside one transaction, so a failing command leaves nothing behind.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.db.models import Count

from cluster.models import Partition
from cluster.pool import PoolFileError
from tenants import services
from tenants.limits import FIELD_LABELS, SACCTMGR_NAMES, LimitError, parse_limit_value
from tenants.models import AssociationLimits, Group, GroupMember, Membership, Role, Tenant
from vocab.slurmtime import TimeFormatError
from vocab.tres import TRESError

User = get_user_model()

USAGE = "usage: sacctmgr create|modify|delete|show tenant|group|user|assoc [NAME] [where ...] [set KEY=VALUE ...]"
VERBS = {
    "add": "create",
    "create": "create",
    "modify": "modify",
    "update": "modify",
    "delete": "delete",
    "remove": "delete",
    "show": "show",
    "list": "show",
}
ENTITIES = {
    "tenant": "tenant",
    "tenants": "tenant",
    "group": "group",
    "groups": "group",
    "account": "group",
    "accounts": "group",
    "user": "user",
    "users": "user",
    "assoc": "assoc",
    "assocs": "assoc",
    "association": "assoc",
    "associations": "assoc",
}
# Option keys as typed (any case) → the name the planners use.
KEYS = {
    "name": "name",
    "names": "name",
    "description": "description",
    "descr": "description",
    "tenant": "tenant",
    "tenants": "tenant",
    "group": "group",
    "groups": "group",
    "account": "group",
    "accounts": "group",
    "user": "user",
    "users": "user",
    "parent": "parent",
    "partition": "partition",
    "partitions": "partition",
    "defaultpartition": "defaultpartition",
    "defpartition": "defaultpartition",
    "fairshare": "fairshare",
    "share": "fairshare",
    "shares": "fairshare",
    "role": "role",
    "password": "password",
    "email": "email",
}
LIMITS = "<limits>"  # in ALLOWED: the command also takes every sacctmgr limit (GrpTRES=..., MaxWall=...)
GROUP_SETTINGS = ("fairshare", "partition", "defaultpartition", "description")
ALLOWED: dict[tuple[str, str], tuple[str, ...]] = {
    ("create", "tenant"): ("name", "description", "fairshare", LIMITS),
    ("create", "group"): ("name", "tenant", "parent", *GROUP_SETTINGS, LIMITS),
    ("create", "user"): ("name", "tenant", "group", "role", "password", "email"),
    ("modify", "tenant"): ("name", "description", "fairshare", LIMITS),
    ("modify", "group"): ("name", *GROUP_SETTINGS, LIMITS),
    ("modify", "user"): ("name", "tenant", "group", "role"),
    ("delete", "tenant"): ("name",),
    ("delete", "group"): ("name",),
    ("delete", "user"): ("name",),
    ("show", "assoc"): ("tenant", "group", "user"),
    ("show", "tenant"): ("name",),
    ("show", "group"): ("name", "tenant"),
    ("show", "user"): ("name", "tenant", "group"),
}
# What a person may type wrong: each becomes one line on stderr, never a traceback.
USER_ERRORS = (ValidationError, TRESError, LimitError, TimeFormatError, PoolFileError)

Plan = Callable[[], list[str]]


# --- parsing ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Output:
    parsable: bool = False
    trailing_pipe: bool = False
    header: bool = True


@dataclass
class Request:
    verb: str
    entity: str
    name: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    limits: dict[str, object] = field(default_factory=dict)
    output: Output = field(default_factory=Output)

    @property
    def command(self) -> str:
        return f"{self.verb} {self.entity}"

    def require_name(self) -> str:
        if not self.name:
            raise CommandError(f"'{self.command}' needs a NAME")
        return self.name

    def require(self, key: str) -> str:
        value = self.options.get(key)
        if not value:
            raise CommandError(f"'{self.command} {self.name or 'NAME'}' needs {key}=...")
        return value


def parse_request(tokens: Sequence[str], output: Output = Output()) -> Request:
    if len(tokens) < 2:
        raise CommandError(USAGE)
    verb, entity = VERBS.get(tokens[0].lower()), ENTITIES.get(tokens[1].lower())
    if verb is None:
        raise CommandError(f"unknown command {tokens[0]!r}: use create (add), modify (update), delete (remove) or show")
    if entity is None:
        raise CommandError(f"unknown entity {tokens[1]!r}: use tenant, group (account), user or assoc")
    if (verb, entity) not in ALLOWED:
        raise CommandError(f"'{verb} {entity}' is not supported")
    request = Request(verb, entity, output=output)
    names, where, assignments, saw_set = _split(tokens[2:])
    if verb == "modify":
        names += _where_names(request, where)
        if not assignments:
            raise CommandError(f"nothing to set: use 'modify {entity} NAME set KEY=VALUE ...'")
    elif saw_set:
        raise CommandError(f"'set' only goes with modify, not with {verb}")
    for key, value in assignments if verb == "modify" else where:
        names += _add_option(request, key, value)
    if len(names) > 1:
        raise CommandError(f"one NAME at a time, got {', '.join(names)}")
    if names and "name" not in ALLOWED[(verb, entity)]:
        raise CommandError(f"'{verb} {entity}' takes no NAME, got {names[0]!r} (filter with KEY=VALUE)")
    request.name = names[0] if names else None
    return request


def _split(tokens: Sequence[str]) -> tuple[list[str], list[tuple[str, str]], list[tuple[str, str]], bool]:
    """Bare names, KEY=VALUE before 'set' (filters, or options of create/show), KEY=VALUE after 'set'."""
    names: list[str] = []
    where: list[tuple[str, str]] = []
    assignments: list[tuple[str, str]] = []
    in_set = saw_set = False
    for token in tokens:
        if token.lower() in ("where", "set"):
            in_set = token.lower() == "set"
            saw_set = saw_set or in_set
            continue
        key, sep, value = token.partition("=")
        if not sep:
            if in_set:
                raise CommandError(f"expected KEY=VALUE after 'set', got {token!r}")
            names.append(token)
        else:
            (assignments if in_set else where).append((key.strip(), value.strip()))
    return names, where, assignments, saw_set


def _where_names(request: Request, where: list[tuple[str, str]]) -> list[str]:
    names = []
    for key, value in where:
        if KEYS.get(key.lower()) != "name" and KEYS.get(key.lower()) != request.entity:
            raise CommandError(
                f"{key}= before 'set' selects what to modify: only name= goes there, settings go after 'set'"
            )
        names.append(value)
    return names


def _add_option(request: Request, key: str, value: str) -> list[str]:
    """Record one KEY=VALUE in the request; returns it as a name when the key is name=."""
    allowed = ALLOWED[(request.verb, request.entity)]
    canonical = KEYS.get(key.lower())
    if canonical is None and LIMITS in allowed and key.lower() in SACCTMGR_NAMES:
        limit = SACCTMGR_NAMES[key.lower()]
        if limit in request.limits:
            raise CommandError(f"{FIELD_LABELS[limit]} given twice")
        request.limits[limit] = parse_limit_value(limit, value)
        return []
    if canonical not in allowed:
        raise CommandError(f"unknown option {key!r} for '{request.command}': {_known_options(allowed)}")
    if canonical == "name":
        if request.verb == "modify":
            raise CommandError("renaming is not supported: name= goes before 'set', to select what to modify")
        return [value]
    if canonical in request.options:
        raise CommandError(f"{canonical}= given twice")
    request.options[canonical] = value
    return []


def _known_options(allowed: Sequence[str]) -> str:
    keys = [f"{key}=" for key in allowed if key not in ("name", LIMITS)]
    if LIMITS in allowed:
        keys.append(f"a limit ({', '.join(sorted(set(FIELD_LABELS.values())))})")
    if not keys:
        return "it takes only a NAME"
    return f"use {keys[0]}" if len(keys) == 1 else f"use {', '.join(keys[:-1])} or {keys[-1]}"


# --- resolving names (reads only) ---------------------------------------------------------------------------


def _csv(key: str, raw: str) -> list[str]:
    names = [name.strip() for name in raw.split(",") if name.strip()]
    if not names:
        raise CommandError(f"{key}= needs at least one name")
    return names


def get_tenant(name: str) -> Tenant:
    tenant = Tenant.objects.filter(name=name).first()
    if tenant is None:
        raise CommandError(f"unknown tenant {name!r}")
    return tenant


def get_group(name: str, tenant: Tenant | None = None, what: str = "group") -> Group:
    group = Group.objects.select_related("tenant", "parent", "default_partition").filter(name=name).first()
    if group is None:
        raise CommandError(f"unknown {what} {name!r}")
    if tenant is not None and group.tenant_id != tenant.pk:
        raise CommandError(f"{what} {name!r} belongs to tenant {group.tenant.name}, not {tenant.name}")
    return group


def get_groups(raw: str, tenant: Tenant | None = None) -> list[Group]:
    return [get_group(name, tenant) for name in _csv("group", raw)]


def get_partition(name: str) -> Partition:
    partition = Partition.objects.filter(name=name).first()
    if partition is None:
        known = ", ".join(Partition.objects.values_list("name", flat=True)) or "none loaded"
        raise CommandError(f"unknown partition {name!r} (partitions: {known})")
    return partition


def get_partitions(raw: str) -> list[Partition]:
    return [get_partition(name) for name in _csv("partition", raw)]


def get_user(name: str):
    user = User.objects.filter(username=name).first()
    if user is None:
        raise CommandError(f"unknown user {name!r}")
    return user


def check_role(raw: str) -> str:
    role = raw.lower()
    if role not in Role.values:
        raise CommandError(f"unknown role {raw!r}: use one of {', '.join(Role.values)}")
    return role


def positive_int(key: str, raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        raise CommandError(f"{key}={raw}: expected a whole number of at least 1")
    return int(raw)


# --- describing what changed --------------------------------------------------------------------------------


def describe_limits(target: AssociationLimits) -> dict[str, str]:
    return {FIELD_LABELS[name]: shown for name, shown in target.limits_display().items()}


def describe_tenant(tenant: Tenant) -> dict[str, str]:
    return {"Description": tenant.description, "Fairshare": str(tenant.shares), **describe_limits(tenant)}


def describe_group(group: Group) -> dict[str, str]:
    return {
        "Tenant": group.tenant.name,
        "Parent": group.parent.name if group.parent else "",
        "Partitions": ",".join(sorted(p.name for p in group.allowed_partitions.all())),
        "DefaultPartition": group.default_partition.name if group.default_partition else "",
        "Fairshare": str(group.shares),
        "Description": group.description,
        **describe_limits(group),
    }


def describe_user(user) -> dict[str, str]:
    roles = {f"Role ({m.tenant.name})": m.role for m in Membership.objects.filter(user=user).select_related("tenant")}
    groups = GroupMember.objects.filter(user=user).values_list("group__name", flat=True)
    return {**roles, "Groups": ",".join(sorted(groups))}


def settings_lines(settings: dict[str, str]) -> list[str]:
    lines = [f"  {label:<16}= {value}" for label, value in settings.items() if value]
    return [" Settings", *lines] if lines else []


def modified_lines(kind: str, who: str, before: dict[str, str], after: dict[str, str]) -> list[str]:
    changes = [
        f"  {label:<16}: {before.get(label) or '(none)'} -> {after.get(label) or '(none)'}"
        for label in dict.fromkeys([*before, *after])
        if before.get(label, "") != after.get(label, "")
    ]
    if not changes:
        return [" Nothing modified"]
    return [f" Modified {kind} associations...", f"  {who}", *changes]


# --- create -------------------------------------------------------------------------------------------------


def plan_create_tenant(request: Request) -> Plan:
    name = request.require_name()
    description = request.options.get("description", "")
    shares = positive_int("fairshare", request.options.get("fairshare", "1"))

    def apply() -> list[str]:
        tenant = services.tenant_create(actor=None, name=name, description=description, shares=shares)
        if request.limits:
            tenant = services.limits_set(actor=None, target=tenant, changes=request.limits)
        return [" Adding Tenant(s)", f"  {name}", *settings_lines(describe_tenant(tenant))]

    return apply


def plan_create_group(request: Request) -> Plan:
    name = request.require_name()
    options = request.options
    tenant = get_tenant(request.require("tenant"))
    parent = get_group(options["parent"], tenant, what="parent group") if "parent" in options else None
    if "partition" in options:
        partitions = get_partitions(options["partition"])
    elif parent is not None:
        partitions = list(parent.allowed_partitions.all())
    else:
        # Without a partition a group could run nowhere; the pool's default partition is the useful start.
        partitions = list(Partition.objects.filter(is_default=True))
    default = get_partition(options["defaultpartition"]) if "defaultpartition" in options else None
    shares = positive_int("fairshare", options.get("fairshare", "1"))

    def apply() -> list[str]:
        group = services.group_create(
            actor=None,
            tenant=tenant,
            name=name,
            parent=parent,
            partitions=partitions,
            default_partition=default,
            shares=shares,
            description=options.get("description", ""),
        )
        if request.limits:
            group = services.limits_set(actor=None, target=group, changes=request.limits)
        return [" Adding Account(s)", f"  {name}", *settings_lines(describe_group(group))]

    return apply


def plan_create_user(request: Request) -> Plan:
    name = request.require_name()
    tenant = get_tenant(request.require("tenant"))
    groups = get_groups(request.options["group"], tenant) if "group" in request.options else []
    role = check_role(request.options.get("role", Role.MEMBER))

    def apply() -> list[str]:
        services.user_create(
            actor=None,
            username=name,
            tenant=tenant,
            groups=groups,
            role=role,
            password=request.options.get("password"),
            email=request.options.get("email", ""),
        )
        associations = [f"  T = {tenant.name:<10} A = {g.name:<10} U = {name}" for g in groups]
        return [
            " Adding User(s)",
            f"  {name}",
            " Associations =",
            *(associations or [f"  T = {tenant.name:<10} U = {name}"]),
            *settings_lines({"Role": role}),
        ]

    return apply


# --- modify -------------------------------------------------------------------------------------------------


def plan_modify_tenant(request: Request) -> Plan:
    tenant = get_tenant(request.require_name())
    settings: dict[str, object] = {}
    if "fairshare" in request.options:
        settings["shares"] = positive_int("fairshare", request.options["fairshare"])
    if "description" in request.options:
        settings["description"] = request.options["description"]

    def apply() -> list[str]:
        before = describe_tenant(tenant)
        changed = services.tenant_update(actor=None, tenant=tenant, **settings) if settings else tenant
        if request.limits:
            changed = services.limits_set(actor=None, target=changed, changes=request.limits)
        after = describe_tenant(changed)
        return modified_lines("tenant", f"T = {tenant.name}", before, after)

    return apply


def plan_modify_group(request: Request) -> Plan:
    group = get_group(request.require_name())
    options = request.options
    settings: dict[str, object] = {}
    if "partition" in options:
        settings["partitions"] = get_partitions(options["partition"])
    if "defaultpartition" in options:
        settings["default_partition"] = get_partition(options["defaultpartition"])
    elif "partitions" in settings and group.default_partition not in settings["partitions"]:
        # The old default is no longer allowed: move it rather than make the admin type it too.
        partitions = settings["partitions"]
        settings["default_partition"] = next((p for p in partitions if p.is_default), partitions[0])
    if "fairshare" in options:
        settings["shares"] = positive_int("fairshare", options["fairshare"])
    if "description" in options:
        settings["description"] = options["description"]

    def apply() -> list[str]:
        before = describe_group(group)
        if settings:
            services.group_update(actor=None, group=group, **settings)
        if request.limits:
            services.limits_set(actor=None, target=group, changes=request.limits)
        after = describe_group(Group.objects.select_related("tenant", "parent", "default_partition").get(pk=group.pk))
        return modified_lines("account", f"T = {group.tenant.name:<10} A = {group.name}", before, after)

    return apply


def plan_modify_user(request: Request) -> Plan:
    user = get_user(request.require_name())
    memberships = {m.tenant_id: m for m in Membership.objects.filter(user=user).select_related("tenant")}
    tenant = get_tenant(request.options["tenant"]) if "tenant" in request.options else None
    role = check_role(request.options["role"]) if "role" in request.options else None
    if role is not None and tenant is None:
        if len(memberships) != 1:
            raise CommandError(f"user {user.username!r} is in {len(memberships)} tenants: say which with tenant=T")
        tenant = next(iter(memberships.values())).tenant
    if tenant is not None and role is None:
        role = memberships[tenant.pk].role if tenant.pk in memberships else Role.MEMBER
    groups = get_groups(request.options["group"]) if "group" in request.options else []
    member_of = set(memberships) | ({tenant.pk} if tenant else set())
    for group in groups:
        if group.tenant_id not in member_of:
            raise CommandError(
                f"user {user.username!r} is not in tenant {group.tenant.name}, "
                f"which owns group {group.name!r}: add tenant={group.tenant.name}"
            )

    def apply() -> list[str]:
        before = describe_user(user)
        if tenant is not None:
            services.membership_set(actor=None, user=user, tenant=tenant, role=role)
        for group in groups:
            services.group_member_add(actor=None, user=user, group=group)
        return modified_lines("user", f"U = {user.username}", before, describe_user(user))

    return apply


# --- delete -------------------------------------------------------------------------------------------------


def plan_delete_tenant(request: Request) -> Plan:
    tenant = get_tenant(request.require_name())

    def apply() -> list[str]:
        services.tenant_delete(actor=None, tenant=tenant)
        return [" Deleting tenant(s)...", f"  {tenant.name}"]

    return apply


def plan_delete_group(request: Request) -> Plan:
    group = get_group(request.require_name())

    def apply() -> list[str]:
        services.group_delete(actor=None, group=group)
        return [" Deleting account(s)...", f"  {group.name}"]

    return apply


def plan_delete_user(request: Request) -> Plan:
    user = get_user(request.require_name())

    def apply() -> list[str]:
        services.user_delete(actor=None, user=user)
        kept = User.objects.filter(pk=user.pk).exists()
        return [
            " Deleting user(s)...",
            f"  {user.username}" + (" (has jobs: disabled, kept for accounting)" if kept else ""),
        ]

    return apply


# --- show ---------------------------------------------------------------------------------------------------

Columns = Sequence[tuple[str, int]]
ASSOC_COLUMNS: Columns = (
    ("Tenant", 10),
    ("Group", 10),
    ("Parent", 10),
    ("User", 10),
    ("Share", 6),
    ("GrpJobs", 8),
    ("GrpSubmit", 9),
    ("GrpTRES", 13),
    ("MaxTRES", 10),
    ("MaxTRESPU", 9),
    ("MaxWall", 8),
    ("GrpTRESMins", 12),
)
LIMIT_COLUMNS = (
    "grp_jobs",
    "grp_submit_jobs",
    "grp_tres",
    "max_tres_per_job",
    "max_tres_per_user",
    "max_wall",
    "grp_tres_mins",
)
TENANT_COLUMNS: Columns = (("Tenant", 10), ("Descr", 20), ("Groups", 10), ("Users", 6))
GROUP_COLUMNS: Columns = (
    ("Group", 10),
    ("Tenant", 10),
    ("Parent", 10),
    ("Partitions", 10),
    ("DefPart", 10),
    ("Share", 6),
    ("Descr", 20),
)
USER_COLUMNS: Columns = (("User", 10), ("Tenant", 10), ("Role", 8), ("Groups", 20), ("Admin", 13))


def render_table(columns: Columns, rows: Sequence[Sequence[str]], output: Output) -> list[str]:
    """sacctmgr's right-aligned table; columns widen to fit, as whole TRES strings beat Slurm's truncation."""
    titles = [title for title, _ in columns]
    if output.parsable:
        end = "|" if output.trailing_pipe else ""
        return ["|".join(cells) + end for cells in ([titles] if output.header else []) + [list(r) for r in rows]]
    widths = [max(width, len(title), *(len(row[i]) for row in rows)) for i, (title, width) in enumerate(columns)]

    def line(cells: Sequence[str]) -> str:
        return " ".join(cell.rjust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()

    body = [line(row) for row in rows]
    return [line(titles), " ".join("-" * width for width in widths), *body] if output.header else body


@dataclass(frozen=True)
class Assoc:
    tenant: int
    group: int | None
    user: int | None


def limit_cells(target: AssociationLimits) -> list[str]:
    shown = target.limits_display()
    return [shown[name] for name in LIMIT_COLUMNS]


def association_tree() -> Iterator[tuple[Assoc, list[str]]]:
    """Tenant, then its groups depth first (path order), each followed by its users, as Slurm's tree."""
    groups = defaultdict(list)
    for group in Group.objects.select_related("parent").order_by("path"):
        groups[group.tenant_id].append(group)
    members = defaultdict(list)
    for member in GroupMember.objects.select_related("user").order_by("user__username"):
        members[member.group_id].append(member.user)
    no_limits = [""] * len(LIMIT_COLUMNS)
    for tenant in Tenant.objects.order_by("name"):
        yield Assoc(tenant.pk, None, None), [tenant.name, "", "", "", "", *limit_cells(tenant)]
        for group in groups[tenant.pk]:
            parent = group.parent.name if group.parent else ""
            yield (
                Assoc(tenant.pk, group.pk, None),
                [tenant.name, group.name, parent, "", str(group.shares), *limit_cells(group)],
            )
            for user in members[group.pk]:
                yield (
                    Assoc(tenant.pk, group.pk, user.pk),
                    [tenant.name, group.name, "", user.username, "", *no_limits],
                )


def plan_show_assoc(request: Request) -> Plan:
    options = request.options
    tenants = {get_tenant(n).pk for n in _csv("tenant", options["tenant"])} if "tenant" in options else None
    groups = {get_group(n).pk for n in _csv("group", options["group"])} if "group" in options else None
    users = {get_user(n).pk for n in _csv("user", options["user"])} if "user" in options else None

    def keep(assoc: Assoc) -> bool:
        # Like sacctmgr: a group= filter drops tenant rows, a user= filter keeps only user rows.
        return (
            (tenants is None or assoc.tenant in tenants)
            and (groups is None or assoc.group in groups)
            and (users is None or assoc.user in users)
        )

    def apply() -> list[str]:
        rows = [cells for assoc, cells in association_tree() if keep(assoc)]
        return render_table(ASSOC_COLUMNS, rows, request.output)

    return apply


def plan_show_tenant(request: Request) -> Plan:
    tenants = Tenant.objects.annotate(users=Count("memberships")).prefetch_related("groups").order_by("name")
    if request.name:
        tenants = tenants.filter(pk=get_tenant(request.name).pk)

    def apply() -> list[str]:
        rows = [
            [
                tenant.name,
                tenant.description,
                ",".join(sorted(group.name for group in tenant.groups.all())),
                str(tenant.users),
            ]
            for tenant in tenants
        ]
        return render_table(TENANT_COLUMNS, rows, request.output)

    return apply


def plan_show_group(request: Request) -> Plan:
    groups = Group.objects.select_related("tenant", "parent", "default_partition").prefetch_related(
        "allowed_partitions"
    )
    if request.name:
        groups = groups.filter(pk=get_group(request.name).pk)
    if "tenant" in request.options:
        groups = groups.filter(tenant=get_tenant(request.options["tenant"]))

    def apply() -> list[str]:
        rows = [
            [
                group.name,
                group.tenant.name,
                group.parent.name if group.parent else "",
                ",".join(sorted(p.name for p in group.allowed_partitions.all())),
                group.default_partition.name if group.default_partition else "",
                str(group.shares),
                group.description,
            ]
            for group in groups.order_by("tenant__name", "path")
        ]
        return render_table(GROUP_COLUMNS, rows, request.output)

    return apply


def plan_show_user(request: Request) -> Plan:
    users = User.objects.order_by("username")
    if request.name:
        users = users.filter(pk=get_user(request.name).pk)
    tenant = get_tenant(request.options["tenant"]) if "tenant" in request.options else None
    group = get_group(request.options["group"]) if "group" in request.options else None

    def apply() -> list[str]:
        groups_of: dict[tuple[int, int], list[str]] = defaultdict(list)
        for user_id, tenant_id, name in GroupMember.objects.values_list("user_id", "group__tenant_id", "group__name"):
            groups_of[(user_id, tenant_id)].append(name)
        memberships = defaultdict(list)
        for membership in Membership.objects.select_related("tenant").order_by("tenant__name"):
            memberships[membership.user_id].append(membership)
        rows = []
        for user in users:
            admin = "Administrator" if user.is_staff or user.is_superuser else "None"
            if not memberships[user.pk] and tenant is None and group is None:
                rows.append([user.username, "", "", "", admin])
            for m in memberships[user.pk]:
                names = sorted(groups_of[(user.pk, m.tenant_id)])
                if (tenant is None or m.tenant_id == tenant.pk) and (group is None or group.name in names):
                    rows.append([user.username, m.tenant.name, m.role, ",".join(names), admin])
        return render_table(USER_COLUMNS, rows, request.output)

    return apply


PLANNERS: dict[tuple[str, str], Callable[[Request], Plan]] = {
    ("create", "tenant"): plan_create_tenant,
    ("create", "group"): plan_create_group,
    ("create", "user"): plan_create_user,
    ("modify", "tenant"): plan_modify_tenant,
    ("modify", "group"): plan_modify_group,
    ("modify", "user"): plan_modify_user,
    ("delete", "tenant"): plan_delete_tenant,
    ("delete", "group"): plan_delete_group,
    ("delete", "user"): plan_delete_user,
    ("show", "assoc"): plan_show_assoc,
    ("show", "tenant"): plan_show_tenant,
    ("show", "group"): plan_show_group,
    ("show", "user"): plan_show_user,
}


def error_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError) and hasattr(exc, "error_dict"):
        parts = [
            msg if key == NON_FIELD_ERRORS else f"{key}: {msg}"
            for key, msgs in exc.message_dict.items()
            for msg in msgs
        ]
    elif isinstance(exc, ValidationError):
        parts = exc.messages
    else:
        parts = [str(exc)]
    return " ".join("; ".join(parts).split())


def run(tokens: Sequence[str], output: Output = Output()) -> list[str]:
    """Parse, resolve, then write in one transaction; the lines to print once it has committed."""
    try:
        request = parse_request(tokens, output)
        apply = PLANNERS[(request.verb, request.entity)](request)
        with transaction.atomic():
            return apply()
    except USER_ERRORS as exc:
        raise CommandError(error_line(exc)) from exc


class Command(BaseCommand):
    help = "Manage tenants, groups (Slurm accounts), users and their limits the way sacctmgr does. " + USAGE

    def create_parser(self, prog_name: str, subcommand: str, **kwargs) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        # sacctmgr users put -i, -P, -n anywhere on the line; plain parse_args would stop at the first word.
        parser.parse_args = parser.parse_intermixed_args
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "args", nargs="*", metavar="WORD", help="VERB ENTITY [NAME] [where ...] [set KEY=VALUE ...]"
        )
        parser.add_argument("-i", "--immediate", action="store_true", help="accepted for habit; nothing ever prompts")
        parser.add_argument("-P", "--parsable2", action="store_true", help="show: '|'-separated, no padding")
        parser.add_argument("-p", "--parsable", action="store_true", help="show: like -P with a trailing '|'")
        parser.add_argument("-n", "--noheader", action="store_true", help="show: no header lines")

    def handle(self, *args: str, **options) -> None:
        output = Output(
            parsable=options["parsable2"] or options["parsable"],
            trailing_pipe=options["parsable"] and not options["parsable2"],
            header=not options["noheader"],
        )
        for line in run(args, output):
            self.stdout.write(line)
