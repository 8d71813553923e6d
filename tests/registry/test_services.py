"""Repository writes: who may write, version numbers and aliases, the storage quota."""

import threading

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection

from registry import quota, services
from registry.models import Alias, StorageQuota, Visibility
from tenants.models import AuditLog
from tests.registry.helpers import make_collection, publish, put_file, sha

pytestmark = pytest.mark.django_db


def test_a_collection_lives_in_its_groups_tenant_namespace(world):
    model = make_collection(world.alice, world.ai_team, "llm")
    assert (model.full_name, model.tenant, model.group) == ("acme/llm", world.acme, world.ai_team)
    assert AuditLog.objects.filter(action="collection.create", tenant=world.acme).exists()


def test_a_member_cannot_create_in_another_tenants_group(world):
    with pytest.raises(PermissionDenied):
        make_collection(world.mallory, world.ai_team, "intruder")


def test_a_viewer_cannot_create(world):
    with pytest.raises(PermissionDenied):
        make_collection(world.vic, world.ai_team, "nope")


def test_only_staff_create_catalog_entries_and_they_are_public(world):
    with pytest.raises(ValidationError):
        services.collection_create(actor=world.alice, kind="model", name="x", namespace="meta-llama")
    with pytest.raises(ValidationError):
        services.collection_create(actor=world.staff, kind="model", name="x", namespace="org", visibility="group")
    entry = services.collection_create(actor=world.staff, kind="model", name="x", namespace="org", visibility="public")
    assert entry.tenant is None


def test_the_same_name_twice_is_a_field_error(world):
    make_collection(world.alice, world.ai_team, "llm")
    with pytest.raises(ValidationError) as error:
        make_collection(world.bob, world.ai_team, "llm")
    assert "already exists" in error.value.message_dict["name"][0]


def test_versions_are_numbered_in_order_and_latest_follows_publishing(world):
    model = make_collection(world.alice, world.ai_team, "llm")
    first = publish(world.alice, model, {"a": b"1"})
    draft = services.version_create(actor=world.alice, collection=model)
    assert (first.number, draft.number) == (1, 2)
    assert Alias.objects.get(collection=model, name="latest").version == first
    services.version_publish(actor=world.alice, version=draft)
    assert Alias.objects.get(collection=model, name="latest").version.number == 2


def test_a_published_version_is_frozen(world):
    version = publish(world.alice, make_collection(world.alice, world.ai_team, "llm"), {"a": b"1"})
    with pytest.raises(services.Conflict):
        put_file(world.alice, version, "b", b"2")
    with pytest.raises(services.Conflict):
        services.version_publish(actor=world.alice, version=version)


def test_latest_cannot_be_set_by_hand(world):
    model = make_collection(world.alice, world.ai_team, "llm")
    version = publish(world.alice, model, {"a": b"1"})
    with pytest.raises(ValidationError):
        services.alias_set(actor=world.alice, collection=model, name="latest", version=version)


def test_deleting_the_newest_version_moves_latest_back(world):
    model = make_collection(world.alice, world.ai_team, "llm")
    publish(world.alice, model, {"a": b"1"})
    second = publish(world.alice, model, {"a": b"2"})
    services.version_delete(actor=world.alice, version=second)
    assert Alias.objects.get(collection=model, name="latest").version.number == 1


def test_stored_bytes_count_every_replica(world):
    model = make_collection(world.alice, world.ai_team, "llm", replicas=3)
    publish(world.alice, model, {"a": b"x" * 1000})
    assert StorageQuota.objects.get(group=world.ai_team).used_bytes == 3000


def test_an_upload_over_the_storage_quota_is_refused_with_the_numbers(world):
    services.storage_quota_set(actor=world.staff, group=world.ai_team, limit_bytes=2500)
    model = make_collection(world.alice, world.ai_team, "llm", replicas=2)
    draft = services.version_create(actor=world.alice, collection=model)
    put_file(world.alice, draft, "a", b"x" * 1000)
    with pytest.raises(ValidationError) as error:
        put_file(world.alice, draft, "b", b"y" * 1000)
    assert "over the storage quota of group ai-team" in error.value.message_dict["size"][0]
    assert StorageQuota.objects.get(group=world.ai_team).reserved_bytes == 0


def test_raising_the_replica_count_over_the_quota_is_refused(world):
    services.storage_quota_set(actor=world.staff, group=world.ai_team, limit_bytes=1500)
    model = make_collection(world.alice, world.ai_team, "llm")
    publish(world.alice, model, {"a": b"x" * 1000})
    with pytest.raises(ValidationError):
        services.collection_update(actor=world.alice, collection=model, replicas=2)


def test_deleting_a_collection_gives_its_bytes_back(world):
    model = make_collection(world.alice, world.ai_team, "llm", replicas=2)
    publish(world.alice, model, {"a": b"x" * 1000})
    services.collection_delete(actor=world.alice, collection=model)
    assert StorageQuota.objects.get(group=world.ai_team).used_bytes == 0


def test_only_staff_set_storage_quotas(world):
    with pytest.raises(PermissionDenied):
        services.storage_quota_set(actor=world.ada, group=world.ai_team, limit_bytes=1)


def test_recount_repairs_drifted_counters(world):
    model = make_collection(world.alice, world.ai_team, "llm", replicas=2)
    publish(world.alice, model, {"a": b"x" * 100})
    StorageQuota.objects.filter(group=world.ai_team).update(used_bytes=7, reserved_bytes=99)
    fixed = services.storage_recount(actor=world.staff, group=world.ai_team)
    assert (fixed.used_bytes, fixed.reserved_bytes) == (200, 0)


def test_a_version_read_by_a_running_job_cannot_be_deleted(world):
    from tests.jobs.helpers import submit

    model = make_collection(world.alice, world.ai_team, "llm")
    version = publish(world.alice, model, {"a": b"1"})
    submit(world.alice, world.ai_team, inputs=["model:acme/llm@1"])
    with pytest.raises(services.Conflict):
        services.version_delete(actor=world.alice, version=version)


def test_copy_makes_a_new_published_version_with_the_same_bytes_and_lineage(world):
    source = publish(world.alice, make_collection(world.alice, world.ai_team, "src"), {"a.bin": b"data"})
    target = make_collection(world.alice, world.ai_team, "secure", visibility=Visibility.GROUP, replicas=3)
    copy = services.version_copy(actor=world.alice, source=source, target=target)
    assert copy.state == "published" and list(copy.parents.all()) == [source]
    file = copy.files.get()
    assert file.sha256 == sha(b"data") and file.replica_set.count() == 3


@pytest.mark.django_db(transaction=True)
def test_concurrent_reservations_never_pass_the_limit(world):
    if connection.vendor != "postgresql":
        pytest.skip("needs a database that serves concurrent connections (PostgreSQL)")
    services.storage_quota_set(actor=world.staff, group=world.ai_team, limit_bytes=10_000)
    refused = []
    barrier = threading.Barrier(8)

    def reserve():
        barrier.wait()
        try:
            quota.reserve(world.ai_team, 3000)
        except ValidationError:
            refused.append(1)
        finally:
            connection.close()

    threads = [threading.Thread(target=reserve) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (8 - len(refused), StorageQuota.objects.get(group=world.ai_team).reserved_bytes) == (3, 9000)
