"""Three replicas: a deleted or corrupted copy is found by the scrub and rebuilt; downloads never serve it."""

import os

import pytest

from registry import storage
from registry.models import Replica, ReplicaState
from registry.services import collection_update, version_create
from registry.tasks import scrub
from tests.registry.helpers import make_collection, put_file

pytestmark = pytest.mark.django_db

DATA = b"important weights " * 50_000


@pytest.fixture
def file(world):
    model = make_collection(world.alice, world.ai_team, "critical", replicas=3)
    return put_file(world.alice, version_create(actor=world.alice, collection=model), "weights.bin", DATA)


def replica_path(file, location_name: str):
    return storage.by_name()[location_name].local_path(file.storage_name)


def corrupt(path):
    os.chmod(path, 0o644)
    with open(path, "r+b") as handle:
        handle.seek(1000)
        handle.write(b"\x00BITROT\x00")


def states(file) -> dict:
    return dict(Replica.objects.filter(file=file).values_list("location", "state"))


def test_every_file_is_stored_in_three_locations(file):
    assert states(file) == {"r1": "ok", "r2": "ok", "r3": "ok"}
    for name in ("r1", "r2", "r3"):
        assert replica_path(file, name).read_bytes() == DATA


def test_the_scrub_finds_a_deleted_replica_and_restores_it(file):
    replica_path(file, "r2").unlink()
    summary = scrub()
    assert summary["damaged"] == 1 and summary["repaired"] == 1
    assert replica_path(file, "r2").read_bytes() == DATA
    replica = Replica.objects.get(file=file, location="r2")
    assert replica.state == ReplicaState.OK and replica.repaired_at is not None


def test_the_scrub_finds_a_corrupted_replica_and_restores_it(file):
    corrupt(replica_path(file, "r1"))
    summary = scrub()
    assert summary["damaged"] == 1 and summary["repaired"] == 1
    assert replica_path(file, "r1").read_bytes() == DATA


def test_a_second_scrub_over_healthy_replicas_changes_nothing(file):
    scrub()
    assert scrub()["damaged"] == 0 and scrub()["repaired"] == 0


def test_a_download_during_damage_returns_the_right_bytes_and_queues_a_repair(
    world, file, api, monkeypatch, django_capture_on_commit_callbacks
):
    corrupt(replica_path(file, "r1"))
    replica_path(file, "r2").unlink()
    queued = []
    monkeypatch.setattr("registry.tasks.repair_file.delay", queued.append)
    with django_capture_on_commit_callbacks(execute=True):
        response = api(world.alice).get(f"/api/v1/files/{file.pk}/download/")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == DATA
    assert states(file) == {"r1": "corrupt", "r2": "missing", "r3": "ok"}
    assert queued == [file.pk]


def test_a_download_with_every_replica_damaged_is_a_503_not_corrupt_bytes(world, file, api):
    for name in ("r1", "r2", "r3"):
        corrupt(replica_path(file, name))
    response = api(world.alice).get(f"/api/v1/files/{file.pk}/download/")
    assert response.status_code == 503 and response.json()["code"] == "replicas_unavailable"


def test_raising_the_replica_count_adds_copies(world):
    model = make_collection(world.alice, world.ai_team, "grows", replicas=1)
    file = put_file(world.alice, version_create(actor=world.alice, collection=model), "a.bin", DATA)
    assert len(states(file)) == 1
    collection_update(actor=world.alice, collection=model, replicas=3)
    scrub()
    assert states(file) == {"r1": "ok", "r2": "ok", "r3": "ok"}


def test_lowering_the_replica_count_drops_copies_and_refunds_the_quota(world, file):
    collection_update(actor=world.alice, collection=file.version.collection, replicas=1)
    scrub()
    assert len(states(file)) == 1
    world.ai_team.storage_quota.refresh_from_db()
    assert world.ai_team.storage_quota.used_bytes == len(DATA)


def test_replica_locations_come_from_the_environment(settings, tmp_path, monkeypatch):
    monkeypatch.setenv("AIPOOL_REPLICA_LOCATIONS", f"fast={tmp_path / 'a'},{tmp_path / 'b'}")
    assert [(loc.name, loc.root) for loc in storage.locations()] == [("fast", tmp_path / "a"), ("r2", tmp_path / "b")]
