"""Write operations of the API app (style.md §2): tokens, and the compositions of tenant services the API offers."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from api.models import SCOPES, ApiToken
from tenants import services as tenant_services
from tenants.models import Group, GroupMember, Membership, Tenant


class Conflict(Exception):
    """The request collides with the current state of a resource (HTTP 409)."""


TOKEN_PREFIX = "aip_"
PREFIX_LENGTH = 8
MAX_EXPIRES_DAYS = 3650
# last_used_at is informational: one write a minute per token is plenty, one per request is load.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def clean_scopes(scopes: Iterable[str] | str) -> list[str]:
    if isinstance(scopes, str):
        scopes = scopes.split(",")
    cleaned = sorted({s.strip().lower() for s in scopes if s and s.strip()})
    unknown = [s for s in cleaned if s not in SCOPES]
    if unknown:
        raise ValidationError({"scopes": [f"unknown scope {unknown[0]!r}: use {' and/or '.join(SCOPES)}"]})
    if not cleaned:
        raise ValidationError({"scopes": ["give at least one scope: read, write"]})
    return cleaned


@transaction.atomic
def token_create(
    *, user, name: str, scopes: Iterable[str] | str, expires_days: int | None = None
) -> tuple[ApiToken, str]:
    """Create a token; returns it with its secret, which is stored only as a hash and cannot be shown again."""
    name = (name or "").strip()
    errors: dict[str, list[str]] = {}
    if not name or len(name) > 100:
        errors["name"] = ["give a name of 1-100 characters (it tells your tokens apart)"]
    try:
        scopes = clean_scopes(scopes)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if expires_days is not None and not 1 <= expires_days <= MAX_EXPIRES_DAYS:
        errors["expires_days"] = [f"must be between 1 and {MAX_EXPIRES_DAYS} days"]
    if not user.is_active:
        errors["user"] = [f"user {user.username} is inactive"]
    if errors:
        raise ValidationError(errors)
    random_part = secrets.token_urlsafe(32)
    secret = f"{TOKEN_PREFIX}{random_part}"
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=random_part[:PREFIX_LENGTH],
        token_hash=hash_secret(secret),
        scopes=scopes,
        expires_at=timezone.now() + timedelta(days=expires_days) if expires_days else None,
    )
    tenant_services.audit(
        actor=user, action="token.create", target=token, tenant=None, changes={"scopes": [None, scopes]}
    )
    return token, secret


@transaction.atomic
def token_revoke(*, user, token: ApiToken) -> ApiToken:
    """Revoke a token; revoking one already revoked changes nothing and writes no second audit row."""
    token = ApiToken.objects.select_for_update().get(pk=token.pk)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        tenant_services.audit(
            actor=user, action="token.revoke", target=token, tenant=None, changes={"revoked": [False, True]}
        )
    return token


def token_authenticate(secret: str) -> ApiToken | None:
    """The token with this secret, revoked or expired ones included (the caller says which), or None.

    Looked up by the secret's hash, so lookup time says nothing about how much of a guessed secret is right.
    """
    if not secret.startswith(TOKEN_PREFIX):
        return None
    digest = hash_secret(secret)
    token = ApiToken.objects.select_related("user").filter(token_hash=digest).first()
    if token is None or not hmac.compare_digest(token.token_hash, digest):
        return None
    return token


def token_touch(token: ApiToken) -> None:
    """Record use at most once a minute per token, with a conditional UPDATE so concurrent requests write once."""
    now = timezone.now()
    if token.last_used_at is not None and now - token.last_used_at < LAST_USED_RESOLUTION:
        return
    stale = now - LAST_USED_RESOLUTION
    ApiToken.objects.filter(Q(last_used_at=None) | Q(last_used_at__lt=stale), pk=token.pk).update(last_used_at=now)
    token.last_used_at = now


# --- groups and memberships: what one API request does, in one transaction ---------------------------------


@transaction.atomic
def group_create(*, actor, tenant: Tenant, limits: dict | None = None, **fields) -> Group:
    group = tenant_services.group_create(actor=actor, tenant=tenant, **fields)
    if limits:
        group = tenant_services.limits_set(actor=actor, target=group, changes=limits)
    return group


@transaction.atomic
def group_update(*, actor, group: Group, limits: dict | None = None, **fields) -> Group:
    group = tenant_services.group_update(actor=actor, group=group, **fields)
    if limits:
        group = tenant_services.limits_set(actor=actor, target=group, changes=limits)
    return group


@transaction.atomic
def membership_create(*, actor, user, tenant: Tenant, role: str, groups: Iterable[Group] = ()) -> Membership:
    if Membership.objects.filter(user=user, tenant=tenant).exists():
        raise Conflict(
            f"user {user.username} is already a member of tenant {tenant.name}: change the membership instead"
        )
    membership = tenant_services.membership_set(actor=actor, user=user, tenant=tenant, role=role)
    for group in groups:
        tenant_services.group_member_add(actor=actor, user=user, group=group)
    return membership


@transaction.atomic
def membership_update(*, actor, membership: Membership, role: str | None = None, groups=None) -> Membership:
    if role is not None:
        membership = tenant_services.membership_set(
            actor=actor, user=membership.user, tenant=membership.tenant, role=role
        )
    if groups is not None:
        wanted = {g.pk: g for g in groups}
        current = {
            gm.group_id: gm.group
            for gm in GroupMember.objects.filter(user=membership.user, group__tenant=membership.tenant).select_related(
                "group"
            )
        }
        for pk in current.keys() - wanted.keys():
            tenant_services.group_member_remove(actor=actor, user=membership.user, group=current[pk])
        for pk in wanted.keys() - current.keys():
            tenant_services.group_member_add(actor=actor, user=membership.user, group=wanted[pk])
    return membership


@transaction.atomic
def tenant_create(*, actor, name: str, description: str = "", limits: dict | None = None) -> Tenant:
    tenant = tenant_services.tenant_create(actor=actor, name=name, description=description)
    if limits:
        tenant = tenant_services.limits_set(actor=actor, target=tenant, changes=limits)
    return tenant
