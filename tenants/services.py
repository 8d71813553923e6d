"""Write operations on tenants, groups, memberships and limits. Each is atomic and writes the audit log."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import ProtectedError

from tenants.limits import FIELD_LABELS, TRES_FIELDS
from tenants.models import AuditLog, Group, GroupMember, Membership, Role, Tenant
from tenants.signals import limits_changed
from vocab.tres import merge_tres

User = get_user_model()


def audit(*, actor, action: str, target, tenant: Tenant | None, changes: dict | None = None) -> AuditLog:
    return AuditLog.objects.create(
        actor=actor if getattr(actor, "pk", None) else None,
        tenant=tenant,
        action=action,
        target_type=target._meta.model_name,
        target_id=str(target.pk),
        target_repr=str(target)[:200],
        changes=changes or {},
    )


def lock_association_chain(group: Group) -> tuple[Tenant, list[Group]]:
    """Row-lock the tenant, then the group's ancestors root first, then the group: one fixed order, no deadlocks."""
    tenant = Tenant.objects.select_for_update().get(pk=group.tenant_id)
    names = [n for n in group.path.strip("/").split("/") if n]
    by_name = {g.name: g for g in Group.objects.select_for_update().filter(name__in=names).order_by("path")}
    return tenant, [by_name[name] for name in names if name in by_name]


# --- tenants ---------------------------------------------------------------------------------------------------


@transaction.atomic
def tenant_create(*, actor, name: str, description: str = "", shares: int = 1) -> Tenant:
    if Tenant.objects.filter(name=name).exists():
        raise ValidationError({"name": f"tenant {name!r} already exists"})
    _check_shares(shares)
    tenant = Tenant(name=name, description=description, shares=shares)
    tenant.full_clean()
    tenant.save()
    changes = {"name": [None, name], **({"shares": [None, shares]} if shares != 1 else {})}
    audit(actor=actor, action="tenant.create", target=tenant, tenant=tenant, changes=changes)
    transaction.on_commit(lambda: limits_changed.send(sender=Tenant, action="tenant.create"))
    return tenant


@transaction.atomic
def tenant_update(*, actor, tenant: Tenant, description: str | None = None, shares: int | None = None) -> Tenant:
    """Change a tenant's description or its fair share (``sacctmgr modify tenant acme set Fairshare=2``)."""
    tenant = Tenant.objects.select_for_update().get(pk=tenant.pk)
    changes: dict[str, list] = {}
    if shares is not None and shares != tenant.shares:
        _check_shares(shares)
        changes["shares"] = [tenant.shares, shares]
        tenant.shares = shares
    if description is not None and description != tenant.description:
        changes["description"] = [tenant.description, description]
        tenant.description = description
    if changes:
        tenant.full_clean()
        tenant.save(update_fields=list(changes))
        audit(actor=actor, action="tenant.update", target=tenant, tenant=tenant, changes=changes)
        transaction.on_commit(lambda: limits_changed.send(sender=Tenant, action="tenant.update"))
    return tenant


def _check_shares(shares) -> None:
    if isinstance(shares, bool) or not isinstance(shares, int) or shares < 1:
        raise ValidationError({"shares": "Fairshare must be a whole number of at least 1"})


@transaction.atomic
def tenant_delete(*, actor, tenant: Tenant) -> None:
    groups = list(tenant.groups.values_list("name", flat=True))
    if groups:
        raise ValidationError(f"tenant {tenant.name} still has groups ({', '.join(groups)}): delete them first")
    audit(actor=actor, action="tenant.delete", target=tenant, tenant=None, changes={"name": [tenant.name, None]})
    transaction.on_commit(lambda: limits_changed.send(sender=Tenant, action="tenant.delete"))
    tenant.delete()


# --- groups ----------------------------------------------------------------------------------------------------


def _path_for(name: str, parent: Group | None) -> str:
    return f"{parent.path if parent else '/'}{name}/"


def _check_partitions(partitions, default_partition) -> None:
    if default_partition is not None and partitions and default_partition not in partitions:
        raise ValidationError(
            {"default_partition": f"default partition {default_partition.name} is not among the allowed partitions"}
        )


@transaction.atomic
def group_create(
    *,
    actor,
    tenant: Tenant,
    name: str,
    parent: Group | None = None,
    partitions: Iterable = (),
    default_partition=None,
    shares: int = 1,
    description: str = "",
) -> Group:
    partitions = list(partitions)
    if Group.objects.filter(name=name).exists():
        raise ValidationError({"name": f"group {name!r} already exists"})
    if parent is not None and parent.tenant_id != tenant.pk:
        raise ValidationError(
            {"parent": f"parent group {parent.name} belongs to tenant {parent.tenant.name}, not {tenant.name}"}
        )
    if default_partition is None and partitions:
        default_partition = next((p for p in partitions if p.is_default), partitions[0])
    _check_partitions(partitions, default_partition)
    group = Group(
        tenant=tenant,
        name=name,
        parent=parent,
        path=_path_for(name, parent),
        default_partition=default_partition,
        shares=shares,
        description=description,
    )
    group.full_clean()
    group.save()
    group.allowed_partitions.set(partitions)
    audit(
        actor=actor,
        action="group.create",
        target=group,
        tenant=tenant,
        changes={
            "name": [None, name],
            "parent": [None, parent.name if parent else None],
            "partitions": [None, sorted(p.name for p in partitions)],
        },
    )
    transaction.on_commit(lambda: limits_changed.send(sender=Group, action="group.create"))
    return group


@transaction.atomic
def group_update(
    *,
    actor,
    group: Group,
    partitions: Iterable | None = None,
    default_partition=...,
    shares: int | None = None,
    description: str | None = None,
) -> Group:
    group = Group.objects.select_for_update().get(pk=group.pk)
    changes: dict[str, list] = {}
    current_parts = list(group.allowed_partitions.all())
    new_parts = list(partitions) if partitions is not None else current_parts
    new_default = group.default_partition if default_partition is ... else default_partition
    _check_partitions(new_parts, new_default)
    if partitions is not None and {p.pk for p in new_parts} != {p.pk for p in current_parts}:
        changes["partitions"] = [sorted(p.name for p in current_parts), sorted(p.name for p in new_parts)]
        group.allowed_partitions.set(new_parts)
    if new_default != group.default_partition:
        changes["default_partition"] = [
            getattr(group.default_partition, "name", None),
            getattr(new_default, "name", None),
        ]
        group.default_partition = new_default
    if shares is not None and shares != group.shares:
        _check_shares(shares)
        changes["shares"] = [group.shares, shares]
        group.shares = shares
    if description is not None and description != group.description:
        changes["description"] = [group.description, description]
        group.description = description
    if changes:
        group.save()
        audit(actor=actor, action="group.modify", target=group, tenant=group.tenant, changes=changes)
    return group


@transaction.atomic
def group_delete(*, actor, group: Group) -> None:
    children = list(group.children.values_list("name", flat=True))
    if children:
        raise ValidationError(f"group {group.name} has child groups ({', '.join(children)}): delete them first")
    audit(actor=actor, action="group.delete", target=group, tenant=group.tenant, changes={"name": [group.name, None]})
    transaction.on_commit(lambda: limits_changed.send(sender=Group, action="group.delete"))
    try:
        group.delete()
    except ProtectedError as exc:
        # Jobs reference their group with PROTECT: accounting history outlives quota changes.
        raise ValidationError(
            f"group {group.name} has jobs; it is kept for accounting (clear its limits instead)"
        ) from exc


# --- limits ----------------------------------------------------------------------------------------------------


@transaction.atomic
def limits_set(*, actor, target: Tenant | Group, changes: dict[str, object]) -> Tenant | Group:
    """Apply parsed limit changes (``tenants.limits.parse_limit``) to a tenant or group, under a row lock."""
    unknown = set(changes) - set(FIELD_LABELS)
    if unknown:
        raise ValidationError(f"unknown limit fields: {', '.join(sorted(unknown))}")
    target = type(target).objects.select_for_update().get(pk=target.pk)
    before = target.limits_snapshot()
    for field, value in changes.items():
        if field in TRES_FIELDS:
            setattr(target, field, merge_tres(getattr(target, field), value or {}))
        else:
            setattr(target, field, value)
    target.full_clean()
    target.save()
    after = target.limits_snapshot()
    diff = {FIELD_LABELS[f]: [before[f], after[f]] for f in FIELD_LABELS if before[f] != after[f]}
    if diff:
        tenant = target if isinstance(target, Tenant) else target.tenant
        kind = "tenant" if isinstance(target, Tenant) else "group"
        audit(actor=actor, action=f"{kind}.limits", target=target, tenant=tenant, changes=diff)
        transaction.on_commit(lambda: limits_changed.send(sender=type(target), action=f"{kind}.limits"))
    return target


# --- users and memberships -------------------------------------------------------------------------------------


@transaction.atomic
def user_create(
    *,
    actor,
    username: str,
    tenant: Tenant,
    groups: Iterable[Group] = (),
    role: str = Role.MEMBER,
    password: str | None = None,
    email: str = "",
):
    if User.objects.filter(username=username).exists():
        raise ValidationError({"username": f"user {username!r} already exists"})
    user = User(username=username, email=email)
    user.full_clean(exclude=["password"])
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.save()
    membership_set(actor=actor, user=user, tenant=tenant, role=role)
    for group in groups:
        group_member_add(actor=actor, user=user, group=group)
    return user


@transaction.atomic
def membership_set(*, actor, user, tenant: Tenant, role: str) -> Membership:
    if role not in Role.values:
        raise ValidationError({"role": f"unknown role {role!r}: use one of {', '.join(Role.values)}"})
    membership = Membership.objects.select_for_update().filter(user=user, tenant=tenant).first()
    before = membership.role if membership else None
    if membership is None:
        membership = Membership.objects.create(user=user, tenant=tenant, role=role)
    elif membership.role != role:
        membership.role = role
        membership.save(update_fields=["role"])
    if before != role:
        audit(actor=actor, action="membership.set", target=membership, tenant=tenant, changes={"role": [before, role]})
    return membership


@transaction.atomic
def membership_remove(*, actor, user, tenant: Tenant) -> None:
    GroupMember.objects.filter(user=user, group__tenant=tenant).delete()
    membership = Membership.objects.filter(user=user, tenant=tenant).first()
    if membership is None:
        raise ValidationError(f"user {user.username} is not a member of tenant {tenant.name}")
    audit(
        actor=actor,
        action="membership.remove",
        target=membership,
        tenant=tenant,
        changes={"role": [membership.role, None]},
    )
    transaction.on_commit(lambda: limits_changed.send(sender=Membership, action="membership.remove"))
    membership.delete()


@transaction.atomic
def group_member_add(*, actor, user, group: Group) -> GroupMember:
    if not Membership.objects.filter(user=user, tenant_id=group.tenant_id).exists():
        raise ValidationError(
            {
                "group": f"user {user.username} is not a member of tenant {group.tenant.name}, "
                f"which owns group {group.name}"
            }
        )
    member, created = GroupMember.objects.get_or_create(user=user, group=group)
    if created:
        audit(
            actor=actor,
            action="group.member.add",
            target=member,
            tenant=group.tenant,
            changes={"user": [None, user.username]},
        )
        transaction.on_commit(lambda: limits_changed.send(sender=GroupMember, action="group.member.add"))
    return member


@transaction.atomic
def group_member_remove(*, actor, user, group: Group) -> None:
    member = GroupMember.objects.filter(user=user, group=group).first()
    if member is None:
        raise ValidationError(f"user {user.username} is not in group {group.name}")
    audit(
        actor=actor,
        action="group.member.remove",
        target=member,
        tenant=group.tenant,
        changes={"user": [user.username, None]},
    )
    transaction.on_commit(lambda: limits_changed.send(sender=GroupMember, action="group.member.remove"))
    member.delete()


@transaction.atomic
def user_delete(*, actor, user) -> None:
    for membership in Membership.objects.filter(user=user).select_related("tenant"):
        membership_remove(actor=actor, user=user, tenant=membership.tenant)
    try:
        with transaction.atomic():
            user.delete()
    except ProtectedError:
        # Jobs keep their owner for accounting; the account is disabled instead of deleted.
        user.is_active = False
        user.save(update_fields=["is_active"])
