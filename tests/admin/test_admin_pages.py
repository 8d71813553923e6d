"""The pool admin's Django admin pages, driven through the test client as a staff user."""

import pytest
from django.contrib import admin
from django.db import connection
from django.test.client import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from jobs.models import Job, JobEvent
from tenants.models import AuditLog, Group, GroupMember, Membership
from tests.factories import GroupFactory, UserFactory, make_member


def make_job(group, user, partition, *, nodes=1, accelerators_per_node=8, state="RUNNING"):
    return Job.objects.create(
        tenant=group.tenant,
        group=group,
        user=user,
        partition=partition,
        name="train",
        nodes=nodes,
        accelerators_per_node=accelerators_per_node,
        cpus_per_node=16,
        memory_per_node=64 * 1024,
        time_limit=60,
        state=state,
    )


def url(model, view, *args):
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def form_data(response) -> dict:
    """The POST a browser would send for the admin form in `response`, unchanged (inlines included)."""
    data = {}

    def add(form):
        for name in form.fields:
            value = form[name].value()
            if value is None or value is False:
                continue
            if value is True:
                value = "on"
            data[form.add_prefix(name)] = [str(v) for v in value] if isinstance(value, list | tuple) else value

    add(response.context["adminform"].form)
    for inline in response.context["inline_admin_formsets"]:
        add(inline.formset.management_form)
        for form in inline.formset.forms:
            add(form)
    return data


@pytest.fixture
def staff_client(client, world):
    client.force_login(world.staff)
    return client


@pytest.fixture
def running_job(world):
    return make_job(world.ai_team, world.alice, world.partition)


def test_every_changelist_add_and_change_page_renders(staff_client, world, running_job):
    JobEvent.objects.create(job=running_job, at=running_job.submitted_at, from_state="PENDING", to_state="RUNNING")
    request = RequestFactory().get("/admin/")
    request.user = world.staff
    for model, model_admin in admin.site._registry.items():
        assert staff_client.get(url(model, "changelist")).status_code == 200, model
        add_status = staff_client.get(url(model, "add")).status_code
        assert add_status == (200 if model_admin.has_add_permission(request) else 403), model
        obj = model._default_manager.first()
        if obj is not None:
            assert staff_client.get(url(model, "change", obj.pk)).status_code == 200, model


def test_site_header_names_aipool(staff_client):
    assert "aipool administration" in staff_client.get(reverse("admin:index")).content.decode()


def test_group_changelist_shows_running_accelerators_against_grptres(staff_client, world, running_job):
    page = staff_client.get(url(Group, "changelist")).content.decode()
    assert "accelerators 8 / 16" in page


def test_group_usage_includes_jobs_of_child_groups(staff_client, world, running_job):
    child = GroupFactory(name="ai-vision", tenant=world.acme, parent=world.ai_team, partitions=[world.partition])
    make_member(world.alice, child)
    make_job(child, world.alice, world.partition, accelerators_per_node=7)
    page = staff_client.get(url(Group, "changelist")).content.decode()
    assert "accelerators 15 / 16" in page  # ai-team's limit binds its child's jobs; 15/16 is over 90%
    assert "accelerators 7 / ∞" in page


def test_usage_ignores_pending_jobs_and_other_tenants(staff_client, world):
    make_job(world.ai_team, world.alice, world.partition, state="PENDING")
    make_job(world.rivals, world.mallory, world.partition)
    page = staff_client.get(url(Group, "changelist")).content.decode()
    assert "accelerators 0 / 16" in page


def test_tenant_changelist_shows_counts_and_usage(staff_client, world, running_job):
    page = staff_client.get(url(type(world.acme), "changelist")).content.decode()
    assert "accelerators 8 / ∞" in page
    assert "running 1 / ∞" in page


def _changelist_queries(client, model) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url(model, "changelist")).status_code == 200
    return len(queries)


def _add_groups_with_jobs(world, count):
    for i in range(count):
        group = GroupFactory(name=f"team{i}", tenant=world.acme, parent=world.ai_team, partitions=[world.partition])
        make_member(world.bob, group)
        make_job(group, world.bob, world.partition)


def test_group_changelist_query_count_does_not_grow_with_groups(staff_client, world):
    _add_groups_with_jobs(world, 2)
    few = _changelist_queries(staff_client, Group)
    _add_groups_with_jobs(world, 12)
    assert _changelist_queries(staff_client, Group) == few


def test_tenant_changelist_query_count_does_not_grow_with_tenants(staff_client, world):
    few = _changelist_queries(staff_client, type(world.acme))
    for i in range(8):
        tenant = type(world.acme).objects.create(name=f"extra{i}")
        GroupFactory(name=f"extra{i}-team", tenant=tenant)
    assert _changelist_queries(staff_client, type(world.acme)) == few


def test_group_change_form_shows_limits_formatted(staff_client, world):
    response = staff_client.get(url(Group, "change", world.ai_team.pk))
    assert response.context["adminform"].form["grp_tres"].value() == "gres/accelerator=16"
    assert "Limits (Slurm association)" in response.content.decode()
    assert "history in audit log" in response.content.decode()


def test_posting_grptres_saves_through_limits_service_with_audit(staff_client, world):
    change_url = url(Group, "change", world.ai_team.pk)
    data = form_data(staff_client.get(change_url))
    data["grp_tres"] = "gres/accelerator=800"
    response = staff_client.post(change_url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    world.ai_team.refresh_from_db()
    assert world.ai_team.grp_tres == {"gres/accelerator": 800}
    entry = AuditLog.objects.get(action="group.limits")
    assert entry.actor == world.staff
    assert entry.changes == {"GrpTRES": [{"gres/accelerator": 16}, {"gres/accelerator": 800}]}


def test_removing_a_tres_from_the_text_clears_that_limit(staff_client, world):
    world.ai_team.grp_tres = {"gres/accelerator": 16, "cpu": 128}
    world.ai_team.save()
    change_url = url(Group, "change", world.ai_team.pk)
    data = form_data(staff_client.get(change_url))
    data.update(grp_tres="accelerator=32", max_wall="3-00:00:00", grp_jobs="10")
    assert staff_client.post(change_url, data).status_code == 302
    world.ai_team.refresh_from_db()
    assert world.ai_team.grp_tres == {"gres/accelerator": 32}
    assert (world.ai_team.max_wall, world.ai_team.grp_jobs) == (3 * 1440, 10)


def test_unknown_tres_rerenders_with_field_error_and_changes_nothing(staff_client, world):
    change_url = url(Group, "change", world.ai_team.pk)
    data = form_data(staff_client.get(change_url))
    data["grp_tres"] = "gpu=8"
    response = staff_client.post(change_url, data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["grp_tres"]
    assert "unknown TRES 'gpu': known are cpu, mem, node, gres/accelerator" in errors[0]
    world.ai_team.refresh_from_db()
    assert world.ai_team.grp_tres == {"gres/accelerator": 16}
    assert not AuditLog.objects.exists()


def test_bad_maxwall_is_a_field_error(staff_client, world):
    change_url = url(Group, "change", world.ai_team.pk)
    data = form_data(staff_client.get(change_url))
    data["max_wall"] = "3 days"
    response = staff_client.post(change_url, data)
    assert "bad time limit" in response.context["adminform"].form.errors["max_wall"][0]


def test_default_partition_outside_allowed_partitions_is_a_field_error(staff_client, world):
    other = type(world.partition).objects.create(name="debug")
    change_url = url(Group, "change", world.ai_team.pk)
    data = form_data(staff_client.get(change_url))
    data["default_partition"] = str(other.pk)
    response = staff_client.post(change_url, data)
    assert response.status_code == 200
    assert "not among the allowed partitions" in response.context["adminform"].form.errors["default_partition"][0]


def test_adding_a_group_goes_through_group_create(staff_client, world):
    data = form_data(staff_client.get(url(Group, "add")))
    data.update(
        tenant=str(world.acme.pk),
        name="ai-nlp",
        parent=str(world.ai_team.pk),
        allowed_partitions=[str(world.partition.pk)],
        shares="2",
        grp_tres="accelerator=8",
    )
    response = staff_client.post(url(Group, "add"), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    group = Group.objects.get(name="ai-nlp")
    assert (group.path, group.grp_tres, group.default_partition) == (
        "/ai-team/ai-nlp/",
        {"gres/accelerator": 8},
        world.partition,
    )
    assert set(AuditLog.objects.filter(target_id=str(group.pk)).values_list("action", flat=True)) == {
        "group.create",
        "group.limits",
    }


def test_parent_of_another_tenant_is_a_field_error(staff_client, world):
    data = form_data(staff_client.get(url(Group, "add")))
    data.update(tenant=str(world.acme.pk), name="ai-nlp", parent=str(world.rivals.pk), shares="1")
    response = staff_client.post(url(Group, "add"), data)
    assert response.status_code == 200
    assert "belongs to tenant globex" in response.context["adminform"].form.errors["parent"][0]
    assert not Group.objects.filter(name="ai-nlp").exists()


def test_group_member_inline_adds_through_service_and_checks_tenant(staff_client, world):
    carol = UserFactory(username="carol")
    change_url = url(Group, "change", world.ai_team.pk)
    data = form_data(staff_client.get(change_url))
    total = int(data["members-TOTAL_FORMS"])
    data.update({"members-TOTAL_FORMS": str(total + 1), f"members-{total}-user": str(carol.pk)})
    response = staff_client.post(change_url, data)
    assert response.status_code == 200  # carol is not a member of acme yet
    assert not GroupMember.objects.filter(user=carol).exists()

    Membership.objects.create(user=carol, tenant=world.acme)
    assert staff_client.post(change_url, data).status_code == 302
    assert GroupMember.objects.filter(user=carol, group=world.ai_team).exists()
    assert AuditLog.objects.filter(action="group.member.add", actor=world.staff).exists()


def test_membership_admin_sets_and_removes_through_services(staff_client, world):
    carol = UserFactory(username="carol")
    response = staff_client.post(url(Membership, "add"), {"user": carol.pk, "tenant": world.acme.pk, "role": "viewer"})
    assert response.status_code == 302
    membership = Membership.objects.get(user=carol)
    assert AuditLog.objects.filter(action="membership.set", target_id=str(membership.pk)).exists()
    response = staff_client.post(url(Membership, "delete", membership.pk), {"post": "yes"})
    assert response.status_code == 302
    assert not Membership.objects.filter(user=carol).exists()
    assert AuditLog.objects.filter(action="membership.remove").exists()


def test_audit_log_shows_changes_readably_and_is_read_only(staff_client, world):
    change_url = url(Group, "change", world.ai_team.pk)
    data = form_data(staff_client.get(change_url))
    data["grp_tres"] = "gres/accelerator=800"
    staff_client.post(change_url, data)
    page = staff_client.get(url(AuditLog, "changelist")).content.decode()
    assert "GrpTRES: gres/accelerator=16 → gres/accelerator=800" in page
    entry = AuditLog.objects.get()
    assert staff_client.get(url(AuditLog, "add")).status_code == 403
    assert staff_client.post(url(AuditLog, "delete", entry.pk), {"post": "yes"}).status_code == 403
    assert AuditLog.objects.filter(pk=entry.pk).exists()


def test_job_admin_has_no_add(staff_client, running_job):
    assert staff_client.get(url(Job, "add")).status_code == 403
    assert "1×8" in staff_client.get(url(Job, "changelist")).content.decode()


def test_non_staff_user_is_sent_to_admin_login(client, world):
    client.force_login(world.alice)
    response = client.get(url(Group, "changelist"))
    assert response.status_code == 302
    assert response.url.startswith(reverse("admin:login"))


def test_service_refusal_becomes_a_message_and_rolls_back(staff_client, world, monkeypatch):
    from django.core.exceptions import ValidationError

    from tenants import services

    def refuse(**kwargs):
        raise ValidationError("group is locked by a concurrent change")

    monkeypatch.setattr(services, "limits_set", refuse)
    change_url = url(Group, "change", world.ai_team.pk)
    data = form_data(staff_client.get(change_url))
    data.update(grp_tres="gres/accelerator=800", shares="5")
    response = staff_client.post(change_url, data, follow=True)
    assert [str(m) for m in response.context["messages"]] == ["group is locked by a concurrent change"]
    world.ai_team.refresh_from_db()
    assert (world.ai_team.shares, world.ai_team.grp_tres) == (1, {"gres/accelerator": 16})
    assert not AuditLog.objects.exists()


def test_deleting_a_group_goes_through_group_delete(staff_client, world):
    child = GroupFactory(name="ai-vision", tenant=world.acme, parent=world.ai_team)
    assert staff_client.post(url(Group, "delete", child.pk), {"post": "yes"}).status_code == 302
    assert not Group.objects.filter(pk=child.pk).exists()
    assert AuditLog.objects.filter(action="group.delete", actor=world.staff, target_id=str(child.pk)).exists()


def test_staff_maps_a_user_to_a_posix_account_and_it_is_audited(client, world):
    from cluster.models import PosixAccount
    from tenants.models import AuditLog

    client.force_login(world.staff)
    response = client.post(
        "/admin/cluster/posixaccount/add/", {"user": world.alice.pk, "username": "alice_hpc", "uid": "5001"}
    )
    assert response.status_code == 302, response.content[:2000]
    assert PosixAccount.objects.get(user=world.alice).username == "alice_hpc"
    assert AuditLog.objects.filter(action="posix_account.set", actor=world.staff).exists()
