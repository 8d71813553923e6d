"""`aipool push`, `pull` and `cp` against the real API, in-process (httpx's WSGI transport; no server, no network)."""

import hashlib

import httpx
import pytest
from click.testing import CliRunner
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from aipool_cli.main import cli
from api.services import token_create
from portal.wsgi import application
from registry.models import Collection, Replica, Version

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _keep_the_test_transaction():
    # Django's WSGI handler closes the connection after each request, which would end the test's transaction.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def aipool(world):
    def run(*args, user=None):
        _, secret = token_create(user=user or world.alice, name="cli", scopes=["read", "write"])
        obj = {"transport": httpx.WSGITransport(app=application), "sleep": lambda s: None}
        env = {"AIPOOL_URL": "http://testserver", "AIPOOL_TOKEN": secret, "AIPOOL_DEBUG": None}
        return CliRunner().invoke(cli, list(args), obj=obj, env=env, catch_exceptions=False)

    return run


@pytest.fixture
def checkpoint(tmp_path):
    root = tmp_path / "checkpoint"
    (root / "weights").mkdir(parents=True)
    (root / "config.json").write_bytes(b'{"layers": 2}')
    (root / "weights" / "shard-0.bin").write_bytes(bytes(range(256)) * 5000)
    return root


def test_push_creates_a_version_and_pull_brings_back_the_same_bytes(aipool, checkpoint, tmp_path):
    pushed = aipool("push", "model:acme/llama-ft", str(checkpoint), "--create", "--alias", "production", "-q")
    assert pushed.exit_code == 0, pushed.output
    assert pushed.output.strip() == "model:acme/llama-ft@1"
    pulled = aipool("pull", "model:acme/llama-ft@production", str(tmp_path / "out"), "-q")
    assert pulled.exit_code == 0, pulled.output
    for name in ("config.json", "weights/shard-0.bin"):
        assert (tmp_path / "out" / name).read_bytes() == (checkpoint / name).read_bytes()


def test_a_big_file_goes_up_in_resumable_parts(aipool, tmp_path):
    data = hashlib.sha256(b"x").digest() * 100_000  # 3.2 MB, parts of 1 MiB
    (tmp_path / "big.bin").write_bytes(data)
    result = aipool("push", "dataset:acme/big", str(tmp_path / "big.bin"), "--create", "--part-size", "1", "-q")
    assert result.exit_code == 0, result.output
    file = Version.objects.get(collection__name="big").files.get()
    assert file.size == len(data) and file.sha256 == hashlib.sha256(data).hexdigest()


def test_cp_with_replica_3_stores_three_copies(aipool, checkpoint):
    result = aipool("cp", "--replica=3", str(checkpoint), "dataset:acme/secure", "-q")
    assert result.exit_code == 0, result.output
    assert Collection.objects.get(name="secure").replicas == 3
    assert set(Replica.objects.filter(state="ok").values_list("location", flat=True)) == {"r1", "r2", "r3"}
    assert Replica.objects.count() == 6  # two files, three copies each


def test_cp_between_repository_entries_copies_on_the_server(aipool, checkpoint):
    aipool("push", "model:acme/src", str(checkpoint), "--create", "-q")
    result = aipool("cp", "model:acme/src@1", "model:acme/archive", "--replica", "2", "-q")
    assert result.exit_code == 0, result.output
    copy = Version.objects.get(collection__name="archive")
    assert copy.parents.get().collection.name == "src" and copy.files.count() == 2


def test_pulling_again_skips_identical_files(aipool, checkpoint, tmp_path):
    aipool("push", "model:acme/m", str(checkpoint), "--create", "-q")
    aipool("pull", "model:acme/m", str(tmp_path / "out"), "-q")
    again = aipool("pull", "model:acme/m", str(tmp_path / "out"), "--json")
    assert '"fetched": 0' in again.output


def test_another_tenants_model_reads_as_unknown(aipool, world, checkpoint, tmp_path):
    aipool("push", "model:acme/private", str(checkpoint), "--create", "-q")
    result = aipool("pull", "model:acme/private", str(tmp_path / "x"), user=world.mallory)
    assert result.exit_code == 1 and "aipool: unknown model acme/private" in result.output


def test_a_bad_reference_is_a_one_line_usage_error(aipool, checkpoint):
    result = aipool("push", "model:no-slash", str(checkpoint))
    assert result.exit_code == 2 and "expected model:NAMESPACE/NAME" in result.output
