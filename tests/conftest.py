"""Shared fixtures. Models are imported inside fixtures so pure tests also run with ``-p no:django``."""

import pytest


@pytest.fixture
def pool(db):
    """The embedded default shape: 4 nodes x 8 accelerators on 2 leaf switches, one default partition 'main'."""
    from tests.factories import NodeFactory, PartitionFactory, SwitchFactory

    leaf0, leaf1 = SwitchFactory(name="leaf0"), SwitchFactory(name="leaf1")
    nodes = [NodeFactory(name=f"node{i}", switch=leaf0 if i <= 2 else leaf1) for i in range(1, 5)]
    main = PartitionFactory(name="main", is_default=True)
    main.nodes.set(nodes)
    return main


@pytest.fixture
def world(pool):
    """Two tenants, each with a group, a member, an admin and a viewer; acme's group has GrpTRES accelerator=16."""
    from tenants.models import Role
    from tests.factories import GroupFactory, TenantFactory, UserFactory, make_member

    class World:
        pass

    w = World()
    w.partition = pool
    w.acme = TenantFactory(name="acme")
    w.globex = TenantFactory(name="globex")
    w.ai_team = GroupFactory(name="ai-team", tenant=w.acme, partitions=[pool], grp_tres={"gres/accelerator": 16})
    w.rivals = GroupFactory(name="rivals", tenant=w.globex, partitions=[pool])
    w.alice = make_member(UserFactory(username="alice"), w.ai_team)
    w.bob = make_member(UserFactory(username="bob"), w.ai_team)
    w.ada = make_member(UserFactory(username="ada"), w.ai_team, role=Role.ADMIN)
    w.vic = make_member(UserFactory(username="vic"), w.ai_team, role=Role.VIEWER)
    w.mallory = make_member(UserFactory(username="mallory"), w.rivals)
    w.staff = UserFactory(username="root", is_staff=True, is_superuser=True)
    return w


@pytest.fixture
def api():
    """``api(user, scopes=..., expires_days=...)``: an APIClient sending a fresh personal access token of `user` (read
    and write unless told); no user: anonymous."""
    from rest_framework.test import APIClient

    from api.services import token_create

    def make(user=None, scopes=("read", "write"), expires_days=None) -> APIClient:
        client = APIClient()
        if user is not None:
            _, secret = token_create(user=user, name="test", scopes=scopes, expires_days=expires_days)
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client

    return make


@pytest.fixture
def fresh_throttle_counters(request, monkeypatch):
    """Throttle counters live in the cache, which outlives a test's database rollback: keep them in this process's
    cache (not the shared Redis one) and start each test from zero. API-heavy folders make it autouse."""
    if not request.config.pluginmanager.hasplugin("django"):
        yield
        return
    from django.core.cache import cache

    monkeypatch.setenv("AIPOOL_THROTTLE_CACHE", "local")
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def default_partition(db):
    from cluster.models import Partition

    return Partition.objects.get(is_default=True)


@pytest.fixture(autouse=True)
def _isolated_runtime(request, tmp_path):
    """Each test gets its own data dir (job working dirs, logs) and runs Celery tasks inline: no broker needed."""
    if not request.config.pluginmanager.hasplugin("django"):
        yield  # pure tests run with -p no:django
        return
    from portal.celery import app

    settings = request.getfixturevalue("settings")

    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    settings.AIPOOL_KILL_GRACE_SECONDS = 1
    # Real password hashing costs ~0.3 s per user; tests create many users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous
    _stop_leftover_jobs(settings.DATA_DIR / "cluster")


def _stop_leftover_jobs(root):
    """Tests that leave jobs running (a queue kept busy on purpose) must not leave processes behind."""
    from cluster.backends.local import LocalBackend

    backend = LocalBackend(root=root, kill_grace_seconds=0.5)
    for run_dir in root.glob("jobs/*/run-*"):
        backend.cancel(f"{run_dir.parent.name}.{run_dir.name.removeprefix('run-')}")


def pytest_collection_modifyitems(items):
    # Page tests live beside each app's other tests; the marker lets CI's second database pass leave them out
    # (they run against their own stack, whatever DATABASE_URL says).
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
