"""Fixtures for tests against the real Slurm that cluster/slurm/slurm-up starts.

Skipped when no Slurm answers ``scontrol ping``, failed instead when AIPOOL_REQUIRE_SLURM=1 (CI). Slurm's accounting
database outlives each test's database, so every test gets its own job-name prefix, account Organization, tenant and
group names, and leaves nothing behind: its jobs are cancelled and its accounts removed at teardown.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("AIPOOL_SLURM_DIR", "/var/tmp/aipool-slurm"))
# POSIX accounts slurm-up creates for test jobs.
POSIX_USERS = ("aipool-u1", "aipool-u2", "aipool-u3")


def slurm_conf_path() -> str:
    return os.environ.get("SLURM_CONF") or str(STATE / "etc" / "slurm.conf")


def slurm(*argv: str, check: bool = True) -> str:
    """Run a Slurm command the way an operator would (for assertions and for changes behind the portal's back)."""
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, env={**os.environ, "SLURM_CONF": slurm_conf_path()}
    )
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed: {done.stderr.strip()}")
    return done.stdout


@pytest.fixture(scope="session")
def slurm_conf() -> str:
    conf = slurm_conf_path()
    reason = ""
    if not Path(conf).exists():
        reason = f"no Slurm configuration at {conf} (start one with: bash cluster/slurm/slurm-up)"
    else:
        try:
            answer = subprocess.run(
                ["scontrol", "ping"],
                capture_output=True,
                text=True,
                timeout=30,
                env={**os.environ, "SLURM_CONF": conf},
            ).stdout
        except (OSError, subprocess.TimeoutExpired) as exc:
            answer = str(exc)
        if "UP" not in answer:
            reason = f"Slurm is not up ({answer.strip() or 'scontrol ping: no answer'}): bash cluster/slurm/slurm-up"
    if reason:
        if os.environ.get("AIPOOL_REQUIRE_SLURM") == "1":
            pytest.fail(f"AIPOOL_REQUIRE_SLURM=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    for user in POSIX_USERS:
        try:
            import pwd

            pwd.getpwnam(user)
        except KeyError:
            pytest.fail(f"POSIX account {user} is missing: run bash cluster/slurm/slurm-up", pytrace=False)
    return conf


@pytest.fixture
def slurm_cluster(slurm_conf):
    """The cluster to this test alone: test sessions running side by side (several checkouts, several engineers)
    take turns test by test, so none sees another's jobs in its pool or its timing."""
    with open(_shared_tmp() / "tests.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield slurm_conf
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture
def slurm_settings(settings, slurm_cluster):
    """AIPOOL_BACKEND=slurm with names of this test's own, and its traces removed from Slurm afterwards."""
    slurm_conf = slurm_cluster
    tag = uuid.uuid4().hex[:8]
    logs = Path(tempfile.mkdtemp(prefix=f"logs-{tag}-", dir=_shared_tmp()))
    logs.chmod(0o755)  # the jobs' owners write their output below it
    settings.AIPOOL_BACKEND = "slurm"
    settings.AIPOOL_SLURM_CONF = slurm_conf
    settings.AIPOOL_SLURM_LOG_DIR = str(logs)
    settings.AIPOOL_SLURM_JOB_PREFIX = f"t{tag}"
    settings.AIPOOL_SLURM_ORGANIZATION = f"aipool-test-{tag}"
    settings.AIPOOL_SLURM_TIMEOUT = 30
    settings.slurm_tag = tag
    yield settings
    _clean_up(settings)
    shutil.rmtree(logs, ignore_errors=True)


def _shared_tmp() -> Path:
    """Not pytest's tmp_path: /tmp/pytest-of-root is 0700, and the jobs run as other users."""
    path = Path(os.environ.get("AIPOOL_SLURM_TEST_TMP", "/var/tmp/aipool-slurm-tests"))
    path.mkdir(mode=0o755, parents=True, exist_ok=True)
    path.chmod(0o755)
    return path


def _clean_up(settings) -> None:
    from cluster.backends.registry import get_backend

    prefix = f"{settings.AIPOOL_SLURM_JOB_PREFIX}-"
    ours = [
        line.split("|")[0]
        for line in slurm("squeue", "--noheader", "--format=%i|%j", check=False).splitlines()
        if "|" in line and line.split("|", 1)[1].startswith(prefix)
    ]
    if ours:
        slurm("scancel", *ours, check=False)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _still_there(ours):
            time.sleep(0.5)
    try:
        get_backend("slurm").sync_limits([])  # removes every association of this test's Organization
    except Exception as exc:  # noqa: BLE001 - cleanup must not hide the test's own outcome
        print(f"slurm test cleanup: {exc}")
    # Removing an account's association on the cluster leaves its record: drop the records too.
    org = settings.AIPOOL_SLURM_ORGANIZATION
    accounts = [
        line.split("|")[0]
        for line in slurm("sacctmgr", "-n", "-P", "show", "account", "format=Account,Organization").splitlines()
        if line.endswith(f"|{org}")
    ]
    if accounts:
        slurm("sacctmgr", "-i", "delete", "account", "where", f"name={','.join(accounts)}", check=False)


def _still_there(ids: list[str]) -> bool:
    states = slurm("squeue", "--noheader", "--states=all", "--format=%i|%T", check=False)
    active = {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"}
    return any(
        line.split("|")[0] in ids and line.split("|")[1] in active for line in states.splitlines() if "|" in line
    )


@pytest.fixture
def slurm_world(db, slurm_settings):
    """The pool of cluster/slurm/pool.yaml; tenants acme and globex (with this test's suffix), group ai-team under
    acme with GrpTRES gres/accelerator=8, group rivals under globex; alice and bob in ai-team, mallory in rivals,
    each mapped to a POSIX account of slurm-up's; their associations synced into Slurm."""
    from cluster.models import Partition, PosixAccount
    from cluster.pool import load_pool, read_pool_file
    from jobs.slurm_sync import sync
    from tests.factories import GroupFactory, TenantFactory, UserFactory, make_member

    load_pool(read_pool_file(REPO / "cluster" / "slurm" / "pool.yaml"))
    main = Partition.objects.get(name="main")
    tag = slurm_settings.slurm_tag

    class World:
        pass

    w = World()
    w.tag = tag
    w.partition = main
    w.acme = TenantFactory(name=f"acme-{tag}")
    w.globex = TenantFactory(name=f"globex-{tag}")
    w.ai_team = GroupFactory(name=f"ai-team-{tag}", tenant=w.acme, partitions=[main], grp_tres={"gres/accelerator": 8})
    w.rivals = GroupFactory(name=f"rivals-{tag}", tenant=w.globex, partitions=[main])
    w.alice = make_member(UserFactory(username=f"alice-{tag}"), w.ai_team)
    w.bob = make_member(UserFactory(username=f"bob-{tag}"), w.ai_team)
    w.mallory = make_member(UserFactory(username=f"mallory-{tag}"), w.rivals)
    for user, posix in zip((w.alice, w.bob, w.mallory), POSIX_USERS, strict=True):
        PosixAccount.objects.create(user=user, username=posix)
    report = sync()
    assert not report.failed, [f"{c.command()}: {c.error}" for c in report.failed]
    return w


@pytest.fixture
def api_client():
    """``api_client(user)``: a DRF client with a fresh read/write token of `user`."""
    from rest_framework.test import APIClient

    from api.services import token_create

    def make(user):
        client = APIClient()
        _, secret = token_create(user=user, name="slurm-test", scopes=["read", "write"], expires_days=None)
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client

    return make
