"""The replica reconcile against the real job machinery, with the replicas' HTTP readiness faked: which jobs it
submits, how replicas move through their states, rolling updates, failures, drains and refusals."""

from datetime import timedelta

import pytest
from django.utils import timezone

from inference import reconcile
from inference.models import InferenceService, Replica, ReplicaState
from inference.reconcile import reconcile_service, url_file
from inference.services import service_scale
from jobs.models import Job
from registry.models import JobInput
from tests.inference.helpers import SEED_YAML, apply_yaml, make_model, seed_yaml

pytestmark = pytest.mark.django_db


class FakeReplicas:
    """Replica servers that are up (healthy) or not, by URL; a replica 'publishes' its URL when its job runs."""

    def __init__(self):
        self.down: set[str] = set()

    def healthy(self, url: str) -> bool:
        return url not in self.down

    def run(self, replica: Replica) -> str:
        Job.objects.filter(pk=replica.job_id).update(state="RUNNING", started_at=timezone.now())
        url = f"http://127.0.0.1:{20000 + replica.pk}"
        path = url_file(replica.pk)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(url + "\n")
        return url


@pytest.fixture
def fake(monkeypatch):
    replicas = FakeReplicas()
    monkeypatch.setattr(reconcile, "_healthy", replicas.healthy)
    monkeypatch.setenv("AIPOOL_INFERENCE_DRAIN_SECONDS", "0")
    return replicas


@pytest.fixture
def service(world):
    make_model(world.alice, world.ai_team)
    return apply_yaml(world.alice, SEED_YAML)[0]


def live(service):
    return list(service.replicas.exclude(state__in=["TERMINATED", "FAILED"]).order_by("id"))


def bring_up(service, fake):
    """Run every replica job and reconcile until they are ready (two passes: STARTING, then READY)."""
    for replica in live(service):
        fake.run(replica)
    reconcile_service(service.pk)
    reconcile_service(service.pk)


def test_the_first_pass_submits_one_job_per_desired_replica(world, service, fake):
    summary = reconcile_service(service.pk)
    assert summary == {"started": 2, "drained": 0, "failed": 0}
    replicas = live(service)
    assert [r.state for r in replicas] == ["PENDING", "PENDING"]
    job = replicas[0].job
    assert (job.user, job.group, job.nodes, job.accelerators_per_node, job.memory_per_node) == (
        world.alice, world.ai_team, 1, 1, 32768,
    )  # fmt: skip
    assert job.time_limit == 7 * 1440  # the partition's MaxTime
    assert "-m ai_platform.serving" in job.command and str(url_file(replicas[0].pk)) in job.command
    assert JobInput.objects.get(job=job).version == service.model_version
    assert reconcile_service(service.pk) == {"started": 0, "drained": 0, "failed": 0}  # idempotent


def test_replicas_become_ready_when_their_server_answers(service, fake):
    reconcile_service(service.pk)
    first = live(service)[0]
    fake.run(first)
    fake.down.add(f"http://127.0.0.1:{20000 + first.pk}")
    reconcile_service(service.pk)
    reconcile_service(service.pk)
    assert {r.state for r in live(service)} == {"STARTING", "PENDING"}
    fake.down.clear()
    reconcile_service(service.pk)
    first.refresh_from_db()
    assert (first.state, first.url) == ("READY", f"http://127.0.0.1:{20000 + first.pk}")
    assert first.ready_at is not None


def test_two_ready_replicas_make_the_service_ready(service, fake):
    reconcile_service(service.pk)
    bring_up(service, fake)
    service.refresh_from_db()
    assert service.state == "READY"
    assert service.condition("Ready")["message"] == "2/2 replicas of generation 1 ready"


def test_a_replica_whose_job_ends_is_replaced(service, fake):
    reconcile_service(service.pk)
    bring_up(service, fake)
    dead = live(service)[0]
    Job.objects.filter(pk=dead.job_id).update(state="FAILED", ended_at=timezone.now())
    summary = reconcile_service(service.pk)
    assert summary["failed"] == 1 and summary["started"] == 1
    dead.refresh_from_db()
    assert dead.state == "FAILED" and f"job {dead.job_id} ended FAILED" in dead.message
    service.refresh_from_db()
    assert service.condition("ReplicaFailure")["status"] == "True"
    assert len(live(service)) == 2


def test_a_ready_replica_that_stops_answering_is_failed_and_its_job_cancelled(service, fake):
    reconcile_service(service.pk)
    bring_up(service, fake)
    victim = live(service)[1]
    fake.down.add(victim.url)
    reconcile_service(service.pk)
    victim.refresh_from_db()
    assert victim.state == "FAILED" and "stopped answering" in victim.message
    assert Job.objects.get(pk=victim.job_id).state == "CANCELLED"


def test_rolling_update_drains_the_old_generation_only_after_the_new_one_is_ready(world, service, fake):
    from tests.registry.helpers import publish

    reconcile_service(service.pk)
    bring_up(service, fake)
    old = live(service)
    publish(world.alice, service.model_version.collection, {"model.npz": b"v2"}, aliases=["production"])
    apply_yaml(world.alice, SEED_YAML)
    reconcile_service(service.pk)
    service.refresh_from_db()
    assert service.state == "UPDATING"
    new = [r for r in live(service) if r.generation == 2]
    assert len(new) == 2 and all(r.state == "PENDING" for r in new)
    assert all(Replica.objects.get(pk=r.pk).state == "READY" for r in old)  # still serving
    fake.run(new[0])
    reconcile_service(service.pk)
    reconcile_service(service.pk)
    states = {r.pk: Replica.objects.get(pk=r.pk).state for r in old}
    assert sorted(states.values()) in (["READY", "TERMINATED"], ["DRAINING", "READY"])  # one old left for one new
    fake.run(new[1])
    reconcile_service(service.pk)
    reconcile_service(service.pk)
    reconcile_service(service.pk)
    assert {Replica.objects.get(pk=r.pk).state for r in old} == {"TERMINATED"}
    assert all(Job.objects.get(pk=r.job_id).state == "CANCELLED" for r in old)
    service.refresh_from_db()
    assert service.state == "READY" and [r.generation for r in live(service)] == [2, 2]


def test_drained_replicas_wait_for_the_drain_period(service, fake, monkeypatch):
    reconcile_service(service.pk)
    bring_up(service, fake)
    monkeypatch.setenv("AIPOOL_INFERENCE_DRAIN_SECONDS", "60")
    InferenceService.objects.filter(pk=service.pk).update(min_replicas=1)
    service_scale(service_id=service.pk, desired=1, wanted=1, reason="quiet", inputs={}, blocked_by_quota=False)
    reconcile_service(service.pk)
    draining = Replica.objects.get(state=ReplicaState.DRAINING)
    assert Job.objects.get(pk=draining.job_id).state == "RUNNING"  # in-flight requests may still finish
    Replica.objects.filter(pk=draining.pk).update(drain_started_at=timezone.now() - timedelta(seconds=61))
    reconcile_service(service.pk)
    draining.refresh_from_db()
    assert draining.state == "TERMINATED" and Job.objects.get(pk=draining.job_id).state == "CANCELLED"


def test_a_refused_replica_job_is_a_condition_not_a_crash(world, service, fake):
    world.ai_team.grp_submit_jobs = 1
    world.ai_team.save()
    summary = reconcile_service(service.pk)
    assert summary["started"] == 1
    service.refresh_from_db()
    condition = service.condition("ReplicaFailure")
    assert condition["status"] == "True"
    assert "cannot submit a replica job" in condition["message"] and "GrpSubmitJobs" in condition["message"]
    assert service.replicas.count() == 1  # the refused one left no row behind


def test_replicas_near_their_time_limit_are_renewed(world, fake):
    make_model(world.alice, world.ai_team)
    world.ai_team.max_wall = 100
    world.ai_team.save()
    service = apply_yaml(world.alice, seed_yaml(**{"minReplicas: 2": "minReplicas: 1"}))[0]
    reconcile_service(service.pk)
    bring_up(service, fake)
    (old,) = live(service)
    assert old.job.time_limit == 100  # MaxWall binds before the partition's 7 days
    Job.objects.filter(pk=old.job_id).update(started_at=timezone.now() - timedelta(minutes=95))
    assert reconcile_service(service.pk)["started"] == 1
    old.refresh_from_db()
    assert old.state == "READY"  # serves until its successor is ready
    (successor,) = [r for r in live(service) if r.pk != old.pk]
    fake.run(successor)
    reconcile_service(service.pk)
    reconcile_service(service.pk)
    old.refresh_from_db()
    assert old.state in ("DRAINING", "TERMINATED")


def test_replicas_that_crash_before_ready_are_retried_with_backoff(service, fake):
    reconcile_service(service.pk)
    for replica in live(service):
        Job.objects.filter(pk=replica.job_id).update(state="FAILED", ended_at=timezone.now())
    summary = reconcile_service(service.pk)
    assert (summary["failed"], summary["started"]) == (2, 0)  # two crashes: wait before the next attempt
    service.refresh_from_db()
    condition = service.condition("ReplicaFailure")
    assert "2 replicas failed before they were ready" in condition["message"]
    assert "next attempt in 5 s" in condition["message"] and "aipool logs" in condition["message"]
    Replica.objects.filter(state="FAILED").update(updated_at=timezone.now() - timedelta(seconds=6))
    assert reconcile_service(service.pk)["started"] == 2


def test_a_service_following_an_alias_rolls_out_where_the_alias_moves(world, service, fake):
    from tests.registry.helpers import publish

    reconcile_service(service.pk)
    newer = publish(world.alice, service.model_version.collection, {"model.npz": b"v2"}, aliases=["production"])
    reconcile_service(service.pk)
    service.refresh_from_db()
    assert (service.model_version, service.generation) == (newer, 2)
    assert {r.job.registry_inputs.get().version for r in live(service) if r.generation == 2} == {newer}


def test_a_service_pinned_to_a_version_does_not_move(world, fake):
    from tests.registry.helpers import publish

    collection, first = make_model(world.alice, world.ai_team)
    service = apply_yaml(world.alice, seed_yaml(**{"classifier:production": "classifier:1"}))[0]
    publish(world.alice, collection, {"model.npz": b"v2"}, aliases=["production"])
    reconcile_service(service.pk)
    service.refresh_from_db()
    assert (service.model_version, service.generation) == (first, 1)


def test_a_deleted_model_version_stops_new_replicas_with_a_reason(world, fake):
    from registry.services import version_delete

    collection, version = make_model(world.alice, world.ai_team)
    service = apply_yaml(world.alice, seed_yaml(**{"classifier:production": "classifier:1"}))[0]
    version_delete(actor=world.alice, version=version)  # no replica job reads it yet: the repository may delete it
    assert reconcile_service(service.pk)["started"] == 0
    service.refresh_from_db()
    assert service.model_version is None
    assert "was deleted: apply it again" in service.condition("ReplicaFailure")["message"]
