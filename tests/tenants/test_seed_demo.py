"""``manage.py seed_demo`` and ``manage.py load_pool``: the README's demo world, idempotent."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from cluster.models import Node, Partition, Switch
from tenants import services
from tenants.models import AuditLog, Group, GroupMember, Membership, Role, Tenant

User = get_user_model()
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def run(name: str, *args: str) -> str:
    out = io.StringIO()
    call_command(name, *args, stdout=out)
    return out.getvalue()


def row_counts() -> dict[str, int]:
    models = (AuditLog, Tenant, Group, GroupMember, Membership, User, Node, Partition, Switch)
    return {model.__name__: model.objects.count() for model in models}


def test_seed_demo_builds_the_demo_world():
    run("seed_demo")

    research, vision, ml = (Group.objects.get(name=n) for n in ("acme-research", "acme-vision", "globex-ml"))
    assert research.tenant.name == "acme" and ml.tenant.name == "globex"
    assert vision.parent == research and vision.tenant == research.tenant
    assert research.grp_tres == {"gres/accelerator": 24}
    assert (research.grp_jobs, research.max_wall) == (20, 3 * 1440)
    assert vision.grp_tres == {"gres/accelerator": 16} and ml.grp_tres == {"gres/accelerator": 16}
    assert research.default_partition == Partition.objects.get(name="main")
    assert Node.objects.count() == 4


def test_seed_demo_users_roles_and_groups():
    run("seed_demo")

    alice, ada, bob, admin = (User.objects.get(username=n) for n in ("alice", "ada", "bob", "admin"))
    assert set(Group.objects.filter(members__user=alice).values_list("name", flat=True)) == {
        "acme-research",
        "acme-vision",
    }
    assert Membership.objects.get(user=ada).role == Role.ADMIN
    assert Membership.objects.get(user=alice).role == Role.MEMBER
    assert Membership.objects.get(user=bob).tenant.name == "globex"
    assert admin.is_staff and admin.is_superuser and not Membership.objects.filter(user=admin).exists()
    assert all(user.check_password("aipool-demo") for user in (alice, ada, bob, admin))


def test_seed_demo_is_audited_as_the_system():
    run("seed_demo")

    actions = set(AuditLog.objects.values_list("action", flat=True))
    assert {"tenant.create", "group.create", "group.limits", "membership.set", "user.create"} <= actions
    assert not AuditLog.objects.filter(actor__isnull=False).exists()


def test_seed_demo_twice_changes_nothing():
    first = run("seed_demo")
    before = row_counts()

    second = run("seed_demo")

    assert row_counts() == before
    assert "Created 4 demo account(s)." in first and "aipool-demo" in first
    assert "Demo data already present." in second and "aipool-demo" not in second


def test_seed_demo_keeps_limits_an_admin_changed():
    run("seed_demo")
    research = Group.objects.get(name="acme-research")
    services.limits_set(actor=None, target=research, changes={"grp_jobs": 5, "grp_tres": {"gres/accelerator": 40}})

    run("seed_demo")

    research.refresh_from_db()
    assert research.grp_jobs == 5 and research.grp_tres == {"gres/accelerator": 40}


def test_seed_demo_password_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("AIPOOL_DEMO_PASSWORD", "another-demo-pw")

    out = run("seed_demo")

    assert User.objects.get(username="bob").check_password("another-demo-pw")
    assert "another-demo-pw" in out


def test_show_passwords_reveals_only_unchanged_demo_passwords():
    run("seed_demo")
    bob = User.objects.get(username="bob")
    bob.set_password("bobs-own-password")
    bob.save()

    out = run("seed_demo", "--show-passwords")

    rows = {line.split()[0]: line.split()[-1] for line in out.splitlines() if line.split()}
    assert rows["alice"] == "aipool-demo"
    assert rows["bob"] == "(changed)"


def test_load_pool_is_idempotent_and_summarises():
    out = run("load_pool")
    before = row_counts()

    assert run("load_pool") == out
    assert row_counts() == before
    assert "4 nodes, 32 accelerators, 3 switches, 1 partition" in out


def test_load_pool_bad_file_is_a_command_error(tmp_path):
    bad = tmp_path / "pool.yaml"
    bad.write_text("spines: [s]\n")

    with pytest.raises(CommandError, match="needs 'leaves' and 'partitions'"):
        run("load_pool", str(bad))
