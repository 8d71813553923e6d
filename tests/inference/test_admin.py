"""The pool admin's inference pages: read-only views that render, and writes through the services."""

import pytest
from django.urls import reverse

from inference.models import InferenceService, ScalingEvent, ServiceKey
from tenants.models import AuditLog
from tests.inference.helpers import make_service

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client, world):
    client.force_login(world.staff)
    return client


def test_changelists_and_change_pages_render(staff, world):
    make_service(world)
    for model in (InferenceService, ServiceKey, ScalingEvent):
        name = f"admin:inference_{model._meta.model_name}"
        assert staff.get(reverse(f"{name}_changelist")).status_code == 200, model
        assert staff.get(reverse(f"{name}_change", args=[model.objects.first().pk])).status_code == 200, model
        assert staff.get(reverse(f"{name}_add")).status_code == 403, model


def test_the_key_hash_is_never_shown(staff, world):
    rows = make_service(world)
    page = staff.get(reverse("admin:inference_servicekey_change", args=[rows["key"].pk])).content.decode()
    assert rows["key"].key_hash not in page and rows["key"].prefix in page


def test_revoke_action_and_delete_go_through_the_services(staff, world):
    rows = make_service(world)
    staff.post(
        reverse("admin:inference_servicekey_changelist"),
        {"action": "revoke", "_selected_action": [rows["key"].pk]},
    )
    assert ServiceKey.objects.get(pk=rows["key"].pk).revoked_at is not None
    staff.post(reverse("admin:inference_inferenceservice_delete", args=[rows["service"].pk]), {"post": "yes"})
    assert not InferenceService.objects.exists()
    assert AuditLog.objects.filter(action="isvc.delete", actor=world.staff).exists()
