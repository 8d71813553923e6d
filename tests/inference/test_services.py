"""Services of the inference domain: apply (create, update, rolling generation), validation against the pool and the
repository, keys, scaling decisions and their conditions, replica failures, and the reads the gateway relies on."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from inference import selectors
from inference.keys import hash_key
from inference.models import InferenceService, Replica, ReplicaState, ScalingEvent, ServiceKey
from inference.services import key_create, key_revoke, replica_failed, service_delete, service_scale
from tenants.models import AuditLog
from tests.inference.helpers import SEED_YAML, apply_yaml, make_model, make_service, seed_yaml
from tests.jobs.helpers import submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def model(world):
    return make_model(world.alice, world.ai_team)


def field_errors(user, text, group=None) -> dict:
    with pytest.raises(ValidationError) as caught:
        apply_yaml(user, text, group)
    return caught.value.message_dict


def test_apply_creates_the_seed_service_in_the_users_group(world, model):
    service, created = apply_yaml(world.alice, SEED_YAML)
    assert created
    assert (service.tenant, service.group, service.model_version) == (world.acme, world.ai_team, model[1])
    assert (service.desired_replicas, service.generation, service.memory_mb) == (2, 1, 32768)
    assert service.spec["spec"]["resources"]["cpus"] == 8  # one accelerator's share of a 64-CPU, 8-accelerator node
    assert AuditLog.objects.filter(action="isvc.create", target_id=str(service.pk)).exists()


def test_unknown_accelerator_type_names_the_known_ones(world, model):
    errors = field_errors(world.alice, seed_yaml(**{"nvidia-h100-80gb": "tpu-v5"}))
    assert errors == {
        "spec.resources.accelerator": ["unknown accelerator type 'tpu-v5' (this pool has: nvidia-h100-80gb)"]
    }


def test_unknown_model_and_another_tenants_model_read_the_same(world, model):
    make_model(world.mallory, world.rivals, name="secret")
    unknown = field_errors(world.alice, seed_yaml(**{"acme/classifier": "acme/nothing"}))
    foreign = field_errors(world.alice, seed_yaml(**{"acme/classifier": "globex/secret"}))
    assert unknown == {"spec.model": ["unknown model acme/nothing"]}
    assert foreign == {"spec.model": ["unknown model globex/secret"]}
    missing_alias = field_errors(world.alice, seed_yaml(**{"classifier:production": "classifier:staging"}))
    assert missing_alias == {"spec.model": ["model acme/classifier has no published version staging"]}


def test_a_replica_larger_than_a_node_is_refused(world, model):
    too_big = field_errors(world.alice, seed_yaml(**{"memory: 32Gi": "memory: 1Ti"}))
    assert too_big == {"spec.resources.memory": ["1T requested, nodes in partition 'main' have 512G"]}
    too_many = field_errors(world.alice, seed_yaml(**{"memory: 32Gi": "memory: 32Gi\n    accelerators: 9"}))
    assert too_many == {"spec.resources.accelerators": ["9 requested, nodes in partition 'main' have 8"]}


def test_a_replica_over_the_groups_grptres_is_refused(world, model):
    world.ai_team.grp_tres = {"gres/accelerator": 2}
    world.ai_team.save()
    errors = field_errors(world.alice, seed_yaml(**{"memory: 32Gi": "memory: 32Gi\n    accelerators: 4"}))
    assert errors == {
        "spec.resources.accelerators": ["4 accelerators requested in total, group ai-team GrpTRES is 2 (over by 2)"]
    }


def test_the_group_must_be_one_of_the_users(world, model):
    errors = field_errors(world.alice, seed_yaml(**{"  name: image-classifier\n": "  name: x\n  group: rivals\n"}))
    assert errors == {"metadata.group": ["unknown group 'rivals' (or you are not a member)"]}


def test_viewers_cannot_apply(world, model):
    with pytest.raises(PermissionDenied):
        apply_yaml(world.vic, SEED_YAML)


def test_reapplying_the_same_document_changes_nothing(world, model):
    service, _ = apply_yaml(world.alice, SEED_YAML)
    again, created = apply_yaml(world.alice, SEED_YAML)
    assert not created and again.pk == service.pk and again.generation == 1
    assert AuditLog.objects.filter(action="isvc.update").count() == 0


def test_scaling_settings_change_without_a_new_generation(world, model):
    service, _ = apply_yaml(world.alice, SEED_YAML)
    updated, _ = apply_yaml(
        world.alice, seed_yaml(**{"minReplicas: 2": "minReplicas: 3", "target: 1000": "target: 500"})
    )
    assert (updated.generation, updated.min_replicas, updated.scale_target, updated.desired_replicas) == (1, 3, 500, 3)


def test_a_new_model_version_bumps_the_generation(world, model):
    from tests.registry.helpers import publish

    service, _ = apply_yaml(world.alice, SEED_YAML)
    newer = publish(world.alice, model[0], {"model.npz": b"x"}, aliases=["production"])
    updated, created = apply_yaml(world.bob, SEED_YAML)
    assert not created
    assert (updated.generation, updated.model_version, updated.run_as) == (2, newer, world.bob)
    log = AuditLog.objects.get(action="isvc.update")
    assert log.changes["generation"] == [1, 2]


def test_another_tenant_may_use_the_same_name(world, model):
    make_model(world.mallory, world.rivals)
    mine, _ = apply_yaml(world.alice, SEED_YAML)
    theirs, created = apply_yaml(world.mallory, seed_yaml(**{"acme/": "globex/"}))
    assert created and theirs.pk != mine.pk and theirs.tenant == world.globex


def test_keys_are_stored_hashed_and_revocable(world, model):
    service, _ = apply_yaml(world.alice, SEED_YAML)
    key, raw = key_create(user=world.alice, service=service, name="frontend")
    assert raw.startswith("isk_") and len(raw) > 30
    assert key.key_hash == hash_key(raw) and raw not in str(ServiceKey.objects.values_list())
    assert key.prefix == raw[:10]
    key_revoke(user=world.alice, key=key)
    key_revoke(user=world.alice, key=key)  # twice is harmless
    assert ServiceKey.objects.get(pk=key.pk).revoked_at is not None
    assert AuditLog.objects.filter(action="isvc.key_revoke").count() == 1


def test_gateway_routes_carry_active_keys_and_ready_replicas_only(world, model, django_assert_max_num_queries):
    rows = make_service(world)
    revoked, _ = key_create(user=world.alice, service=rows["service"], name="old")
    key_revoke(user=world.alice, key=revoked)
    Replica.objects.create(service=rows["service"], generation=1, state=ReplicaState.STARTING, url="http://x:1")
    with django_assert_max_num_queries(3):
        routes = selectors.gateway_routes()
    route = routes[("acme", "image-classifier")]
    assert route.key_hashes == {hash_key(rows["raw_key"]): rows["key"].pk}
    assert route.replicas == ((rows["replica"].pk, "http://127.0.0.1:9"),)
    assert route.rate_limit_rps == 100


def test_scale_records_an_event_only_when_something_changes(world, model):
    service, _ = apply_yaml(world.alice, SEED_YAML)
    for _ in range(3):
        service_scale(
            service_id=service.pk, desired=5, wanted=5, reason="qps", inputs={"qps": 4800}, blocked_by_quota=False
        )
    event = ScalingEvent.objects.get()
    assert (event.from_replicas, event.to_replicas, event.inputs) == (2, 5, {"qps": 4800})
    service_scale(service_id=service.pk, desired=50, wanted=50, reason="qps", inputs={}, blocked_by_quota=False)
    assert InferenceService.objects.get(pk=service.pk).desired_replicas == 20  # clamped to max


def test_a_quota_block_is_a_condition_and_an_event_until_it_clears(world, model):
    service, _ = apply_yaml(world.alice, SEED_YAML)
    message = "group ai-team uses 16/16 accelerators"
    service_scale(service_id=service.pk, desired=16, wanted=20, reason="quota", inputs={}, blocked_by_quota=True,
                  blocked_message=message)  # fmt: skip
    service.refresh_from_db()
    condition = service.condition("ScaleUpBlocked")
    assert condition["status"] == "True" and condition["message"] == f"scale-up blocked: {message}"
    blocked = ScalingEvent.objects.get()
    assert blocked.blocked_by_quota and (blocked.to_replicas, blocked.wanted) == (16, 20)
    service_scale(service_id=service.pk, desired=16, wanted=20, reason="quota", inputs={}, blocked_by_quota=True,
                  blocked_message=message)  # fmt: skip
    assert ScalingEvent.objects.count() == 1
    service_scale(service_id=service.pk, desired=16, wanted=16, reason="ok", inputs={}, blocked_by_quota=False)
    service.refresh_from_db()
    assert service.condition("ScaleUpBlocked")["status"] == "False"
    assert ScalingEvent.objects.count() == 2


def test_scale_of_a_deleted_service_is_a_no_op(world):
    service_scale(service_id=999, desired=3, wanted=3, reason="", inputs={}, blocked_by_quota=False)
    assert not ScalingEvent.objects.exists()


def test_autoscale_inputs_name_the_binding_limit(world, model):
    service, _ = apply_yaml(world.alice, SEED_YAML)
    submit(world.bob, world.ai_team, accelerators_per_node=8)
    submit(world.bob, world.ai_team, accelerators_per_node=5)
    (target,) = [t for t in selectors.autoscale_inputs() if t.service_id == service.pk]
    assert (target.min_replicas, target.max_replicas, target.desired_replicas, target.ready_replicas) == (2, 20, 2, 0)
    assert target.quota_headroom_replicas == 3
    assert target.quota_message == "group ai-team uses 13/16 accelerators"


def test_autoscale_inputs_without_limits_have_no_headroom_cap(world):
    make_model(world.mallory, world.rivals)
    apply_yaml(world.mallory, seed_yaml(**{"acme/": "globex/"}))
    (target,) = selectors.autoscale_inputs()
    assert (target.quota_headroom_replicas, target.quota_message) == (None, "")


def test_a_replica_the_gateway_could_not_reach_is_failed_once(world, model):
    rows = make_service(world)
    replica = rows["replica"]
    replica_failed(replica_id=replica.pk, reason="connection refused")
    replica_failed(replica_id=replica.pk, reason="connection refused")
    replica.refresh_from_db()
    assert (replica.state, replica.message) == (ReplicaState.FAILED, "connection refused")
    assert AuditLog.objects.filter(action="isvc.replica_failed").count() == 1
    assert selectors.gateway_routes()[("acme", "image-classifier")].replicas == ()


def test_delete_cancels_the_replica_jobs(world, model):
    rows = make_service(world)
    job = submit(world.alice, world.ai_team)
    Replica.objects.filter(pk=rows["replica"].pk).update(job=job)
    service_delete(user=world.alice, service=rows["service"])
    job.refresh_from_db()
    assert job.state == "CANCELLED"
    assert not InferenceService.objects.exists() and not ServiceKey.objects.exists()
    assert AuditLog.objects.filter(action="isvc.delete").exists()
