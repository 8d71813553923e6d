"""Every tenant-owned model is scoped, and scoping never leaks: found by walking the app registry, not a list."""

import pytest
from django.apps import apps
from django.db import models

from api.services import token_create
from tenants.models import Group, Tenant
from tenants.scoping import TenantScopedQuerySet
from tests.gateway.helpers import populate as populate_gateway
from tests.inference.helpers import make_service
from tests.jobs.helpers import submit, tick
from tests.monitoring.helpers import populate as populate_monitoring
from tests.notifications.helpers import populate as populate_notifications
from tests.registry.helpers import populate as populate_registry

pytestmark = pytest.mark.django_db

# Reached through a tenant-owned model but owned by a person, not a tenant: scoped by user instead.
USER_OWNED = {"api.apitoken"}


def _owned_by_tenant(model, seen=()) -> bool:
    if model in (Tenant, Group):
        return True
    for field in model._meta.get_fields():
        if (
            isinstance(field, models.ForeignKey)
            and field.related_model not in seen
            and field.related_model is not model
        ):
            if field.related_model in (Tenant, Group) or _owned_by_tenant(field.related_model, (*seen, model)):
                return True
    return False


def tenant_owned_models():
    return [
        m
        for m in apps.get_models()
        if m._meta.app_label not in ("admin", "auth", "contenttypes", "sessions") and _owned_by_tenant(m)
    ]


def test_every_tenant_owned_model_has_a_scoped_default_manager():
    unscoped = [
        m._meta.label_lower
        for m in tenant_owned_models()
        if not isinstance(m._default_manager.all(), TenantScopedQuerySet) and m._meta.label_lower not in USER_OWNED
    ]
    assert unscoped == []


def _tenant_of(row) -> int | None:
    queryset = type(row)._default_manager.all()
    path = queryset.tenant_field
    value = row
    for part in path.split("__"):
        value = getattr(value, "pk" if part == "pk" else part)
        if value is None:
            return None
    return value if isinstance(value, int) else value.pk


def test_no_model_shows_another_tenants_rows(world):
    job = submit(world.alice, world.ai_team)
    tick()
    submit(world.mallory, world.rivals)
    token_create(user=world.alice, name="ci", scopes=["read"], expires_days=None)
    populate_registry(world)
    populate_monitoring(world)
    make_service(world)
    populate_gateway(world)
    populate_notifications(world)
    assert job.events.exists()
    for model in tenant_owned_models():
        queryset = model._default_manager.all()
        if not isinstance(queryset, TenantScopedQuerySet):
            continue
        assert queryset.exists() or model._meta.label_lower in ("tenants.auditlog",), f"no {model} rows to check"
        for row in queryset.visible_to(world.mallory):
            assert _tenant_of(row) in (world.globex.pk, None), f"{model._meta.label} row {row.pk} leaks to mallory"
        # and the owner side sees its own rows: the check above is not vacuous
        if model._meta.label_lower in ("jobs.job", "tenants.group", "tenants.membership"):
            assert queryset.visible_to(world.alice).filter(**{queryset.tenant_field: world.acme.pk}).exists()


def test_portal_pages_of_another_tenant_do_not_leak(client, world):
    submit(world.alice, world.ai_team, name="secret-acme-job")
    client.force_login(world.mallory)
    page = client.get("/").content.decode()
    assert "secret-acme-job" not in page and "ai-team" not in page
