"""``manage.py sacctmgr``: sacctmgr's grammar over the tenant services, one transaction, one-line errors."""

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from tenants.models import AuditLog, Group, GroupMember, Membership, Role, Tenant
from tests.factories import GroupFactory, PartitionFactory

User = get_user_model()
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def sacctmgr(*args: str, **options) -> str:
    out = io.StringIO()
    call_command("sacctmgr", *args, stdout=out, **options)
    return out.getvalue()


def sacctmgr_error(*args: str) -> str:
    with pytest.raises(CommandError) as info:
        sacctmgr(*args)
    message = str(info.value)
    assert "\n" not in message
    return message


def row_counts() -> dict[str, int]:
    models = (AuditLog, Tenant, Group, GroupMember, Membership, User)
    return {model.__name__: model.objects.count() for model in models}


# --- create -------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_create_tenant_is_audited():
    out = sacctmgr("create", "tenant", "initech", "description=Initech labs")

    tenant = Tenant.objects.get(name="initech")
    assert tenant.description == "Initech labs"
    assert "Adding Tenant(s)" in out and "initech" in out
    log = AuditLog.objects.get(action="tenant.create")
    assert log.actor is None and log.tenant == tenant


def test_create_group_with_partition_and_limits(world):
    debug = PartitionFactory(name="debug")

    out = sacctmgr(
        "create",
        "group",
        "ai-vision",
        "tenant=acme",
        "partition=main,debug",
        "defaultpartition=debug",
        "parent=ai-team",
        "fairshare=3",
        "GrpTRES=accelerator=8",
        "MaxWall=2-00:00:00",
    )

    group = Group.objects.get(name="ai-vision")
    assert group.tenant == world.acme
    assert group.parent == world.ai_team and group.path == "/ai-team/ai-vision/"
    assert set(group.allowed_partitions.all()) == {world.partition, debug}
    assert group.default_partition == debug
    assert group.shares == 3
    assert group.grp_tres == {"gres/accelerator": 8}
    assert group.max_wall == 2 * 1440
    assert "Adding Account(s)" in out and "gres/accelerator=8" in out
    assert set(AuditLog.objects.filter(target_id=str(group.pk)).values_list("action", flat=True)) == {
        "group.create",
        "group.limits",
    }


def test_create_group_without_partition_gets_the_default_partition(world):
    sacctmgr("create", "group", "ops", "tenant=globex")

    group = Group.objects.get(name="ops")
    assert list(group.allowed_partitions.all()) == [world.partition]
    assert group.default_partition == world.partition


def test_create_group_under_a_parent_of_another_tenant_is_rejected(world):
    before = row_counts()

    message = sacctmgr_error("create", "group", "spy", "tenant=acme", "parent=rivals")

    assert message == "parent group 'rivals' belongs to tenant globex, not acme"
    assert row_counts() == before


def test_create_user_with_membership_and_groups(world):
    vision = GroupFactory(name="ai-vision", tenant=world.acme, partitions=[world.partition])

    out = sacctmgr(
        "create",
        "user",
        "carol",
        "tenant=acme",
        "group=ai-team,ai-vision",
        "role=viewer",
        "password=pw-carol-123",
    )

    carol = User.objects.get(username="carol")
    assert carol.check_password("pw-carol-123")
    assert Membership.objects.get(user=carol).role == Role.VIEWER
    assert set(Group.objects.filter(members__user=carol)) == {world.ai_team, vision}
    assert "Adding User(s)" in out and "A = ai-vision" in out


def test_create_user_with_one_unknown_group_creates_nothing(world):
    before = row_counts()

    message = sacctmgr_error("create", "user", "x", "tenant=acme", "group=ai-team,nope")

    assert message == "unknown group 'nope'"
    assert not User.objects.filter(username="x").exists()
    assert row_counts() == before


def test_create_user_in_a_group_of_another_tenant_is_rejected(world):
    before = row_counts()

    message = sacctmgr_error("create", "user", "x", "tenant=acme", "group=rivals")

    assert message == "group 'rivals' belongs to tenant globex, not acme"
    assert row_counts() == before


def test_a_failure_after_the_first_write_rolls_everything_back(world, monkeypatch):
    def refuse(**kwargs):
        raise ValidationError("limits refused")

    monkeypatch.setattr("tenants.services.limits_set", refuse)
    before = row_counts()

    message = sacctmgr_error("create", "group", "half", "tenant=acme", "GrpJobs=5")

    assert message == "limits refused"
    assert row_counts() == before


# --- modify -------------------------------------------------------------------------------------------------


def test_modify_grptres_shows_in_assoc_and_audits_before_and_after(world):
    out = sacctmgr("modify", "group", "ai-team", "set", "GrpTRES=gres/accelerator=800")

    assert "gres/accelerator=16 -> gres/accelerator=800" in out
    assert "gres/accelerator=800" in sacctmgr("show", "assoc")
    log = AuditLog.objects.get(action="group.limits", target_id=str(world.ai_team.pk))
    assert log.changes == {"GrpTRES": [{"gres/accelerator": 16}, {"gres/accelerator": 800}]}
    assert log.tenant == world.acme and log.actor is None


def test_modify_grptres_merges_with_the_stored_value(world):
    sacctmgr("modify", "group", "ai-team", "set", "GrpTRES=cpu=64")

    world.ai_team.refresh_from_db()
    assert world.ai_team.grp_tres == {"gres/accelerator": 16, "cpu": 64}


def test_modify_grptres_minus_one_clears_that_tres(world):
    sacctmgr("modify", "group", "ai-team", "set", "GrpTRES=accelerator=-1")

    world.ai_team.refresh_from_db()
    assert world.ai_team.grp_tres == {}


def test_modify_scalar_limits_and_clear_them(world):
    sacctmgr("modify", "group", "ai-team", "set", "GrpJobs=10", "GrpSubmitJobs=50", "MaxWall=72:00:00")
    world.ai_team.refresh_from_db()
    assert (world.ai_team.grp_jobs, world.ai_team.grp_submit_jobs, world.ai_team.max_wall) == (10, 50, 4320)

    sacctmgr("modify", "group", "ai-team", "set", "GrpJobs=-1")

    world.ai_team.refresh_from_db()
    assert world.ai_team.grp_jobs is None and world.ai_team.max_wall == 4320


def test_modify_with_where_and_immediate_flag(world):
    sacctmgr("-i", "modify", "group", "where", "name=ai-team", "set", "MaxTRESPerJob=accelerator=8", "-i")

    world.ai_team.refresh_from_db()
    assert world.ai_team.max_tres_per_job == {"gres/accelerator": 8}


def test_modify_same_value_writes_nothing(world):
    before = row_counts()

    out = sacctmgr("modify", "group", "ai-team", "set", "GrpTRES=accelerator=16")

    assert out.strip() == "Nothing modified"
    assert row_counts() == before


def test_modify_group_settings(world):
    debug = PartitionFactory(name="debug")

    out = sacctmgr("modify", "group", "ai-team", "set", "partition=debug", "fairshare=5", "description=Vision work")

    world.ai_team.refresh_from_db()
    assert list(world.ai_team.allowed_partitions.all()) == [debug]
    assert world.ai_team.default_partition == debug
    assert world.ai_team.shares == 5 and world.ai_team.description == "Vision work"
    assert "Fairshare       : 1 -> 5" in out
    assert AuditLog.objects.filter(action="group.modify", target_id=str(world.ai_team.pk)).exists()


def test_modify_tenant_limits(world):
    sacctmgr("modify", "tenant", "acme", "set", "GrpTRES=accelerator=32,mem=512G", "GrpTRESMins=accelerator=6000")

    world.acme.refresh_from_db()
    assert world.acme.grp_tres == {"gres/accelerator": 32, "mem": 512 * 1024}
    assert world.acme.grp_tres_mins == {"gres/accelerator": 6000}
    assert "mem=512G,gres/accelerator=32" in sacctmgr("-P", "show", "assoc", "tenant=acme")
    assert AuditLog.objects.filter(action="tenant.limits", tenant=world.acme).exists()


def test_modify_user_role_in_their_only_tenant(world):
    out = sacctmgr("modify", "user", "alice", "set", "role=admin")

    assert Membership.objects.get(user=world.alice, tenant=world.acme).role == Role.ADMIN
    assert "Role (acme)     : member -> admin" in out


def test_modify_user_adds_groups(world):
    vision = GroupFactory(name="ai-vision", tenant=world.acme, partitions=[world.partition])

    sacctmgr("modify", "user", "alice", "set", "group=ai-vision")

    assert set(Group.objects.filter(members__user=world.alice)) == {world.ai_team, vision}
    assert AuditLog.objects.filter(action="group.member.add", tenant=world.acme).exists()


def test_modify_user_into_another_tenants_group_needs_that_tenant(world):
    before = row_counts()

    message = sacctmgr_error("modify", "user", "alice", "set", "group=rivals")

    assert "not in tenant globex" in message
    assert row_counts() == before

    sacctmgr("modify", "user", "alice", "set", "tenant=globex", "group=rivals")
    assert Membership.objects.get(user=world.alice, tenant=world.globex).role == Role.MEMBER
    assert GroupMember.objects.filter(user=world.alice, group=world.rivals).exists()


def test_one_bad_setting_among_good_ones_changes_nothing(world):
    before = row_counts()

    sacctmgr_error("modify", "group", "ai-team", "set", "GrpJobs=5", "fairshare=4", "GrpTRES=bogus=1")

    world.ai_team.refresh_from_db()
    assert world.ai_team.grp_jobs is None and world.ai_team.shares == 1
    assert row_counts() == before


# --- errors -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["modify", "group", "ai-team", "set", "GrpTRES=accelerator"], "bad TRES item 'accelerator'"),
        (["modify", "group", "ai-team", "set", "GrpTRES=foo=1"], "GrpTRES: unknown TRES 'foo'"),
        (["modify", "group", "ai-team", "set", "GrpTRES=accelerator=-5"], "cannot be negative"),
        (["modify", "group", "ai-team", "set", "GrpTRES=mem=5X"], "bad memory size"),
        (["modify", "group", "ai-team", "set", "GrpFoo=1"], "unknown option 'GrpFoo' for 'modify group'"),
        (["modify", "group", "ai-team", "set", "MaxWall=abc"], "MaxWall: bad time limit 'abc'"),
        (["modify", "group", "ai-team", "set", "GrpJobs=many"], "GrpJobs=many: expected a whole number"),
        (["modify", "group", "ai-team", "set", "fairshare=0"], "fairshare=0: expected a whole number"),
        (["modify", "group", "ai-team", "set", "GrpJobs=1", "grpjobs=2"], "GrpJobs given twice"),
        (["modify", "group", "ai-team"], "nothing to set"),
        (["modify", "group", "ai-team", "set", "name=x"], "renaming is not supported"),
        (["modify", "group", "nope", "set", "GrpTRES=accelerator=1"], "unknown group 'nope'"),
        (["modify", "tenant", "nope", "set", "GrpJobs=1"], "unknown tenant 'nope'"),
        (
            ["modify", "tenant", "acme", "set", "parent=ai-team"],
            "unknown option 'parent' for 'modify tenant'",
        ),
        (["modify", "user", "nobody", "set", "role=admin"], "unknown user 'nobody'"),
        (["modify", "user", "alice", "set", "role=king"], "unknown role 'king'"),
        (["create", "group", "g", "tenant=nope"], "unknown tenant 'nope'"),
        (["create", "group", "g", "tenant=acme", "partition=nope"], "unknown partition 'nope'"),
        (["create", "group", "g"], "needs tenant="),
        (
            ["create", "group", "g", "tenant=acme", "colour=blue"],
            "unknown option 'colour' for 'create group'",
        ),
        (["create", "group", "g", "h", "tenant=acme"], "one NAME at a time"),
        (["create", "group", "g", "tenant=acme", "set", "GrpJobs=1"], "'set' only goes with modify"),
        (["create", "group", "ai-team", "tenant=acme"], "group 'ai-team' already exists"),
        (["create", "tenant", "acme"], "tenant 'acme' already exists"),
        (["create", "tenant", "Not A Slug"], "slug"),
        (["create", "tenant"], "needs a NAME"),
        (["create", "user", "x", "tenant=acme", "role=king"], "unknown role 'king'"),
        (["delete", "tenant", "acme"], "still has groups"),
        (["delete", "group", "nope"], "unknown group 'nope'"),
        (["frobnicate", "group", "x"], "unknown command 'frobnicate'"),
        (["show", "widgets"], "unknown entity 'widgets'"),
        (["show", "assoc", "tenant=nope"], "unknown tenant 'nope'"),
        (["show"], "usage: sacctmgr"),
    ],
)
def test_errors_are_one_line_and_write_nothing(world, args, message):
    before = row_counts()

    assert message in sacctmgr_error(*args)

    assert row_counts() == before


def test_error_from_the_command_line_is_one_line_without_traceback(tmp_path):
    env = {**os.environ, "AIPOOL_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "portal.settings"}
    env.pop("DATABASE_URL", None)
    manage = [sys.executable, str(REPO / "manage.py")]
    migrated = subprocess.run([*manage, "migrate", "-v0"], cwd=REPO, env=env, capture_output=True, text=True)
    assert migrated.returncode == 0, migrated.stderr

    result = subprocess.run(
        [*manage, "sacctmgr", "modify", "group", "nope", "set", "GrpTRES=accelerator=1"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )

    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == ["CommandError: unknown group 'nope'"]
    assert "Traceback" not in result.stderr


# --- show ---------------------------------------------------------------------------------------------------


def test_show_assoc_is_a_sacctmgr_table(world):
    lines = sacctmgr("show", "assoc").splitlines()

    assert lines[0].split() == [
        "Tenant",
        "Group",
        "Parent",
        "User",
        "Share",
        "GrpJobs",
        "GrpSubmit",
        "GrpTRES",
        "MaxTRES",
        "MaxTRESPU",
        "MaxWall",
        "GrpTRESMins",
    ]
    assert lines[0].startswith("    Tenant")  # right-aligned in ten columns
    assert set(lines[1]) == {"-", " "}
    assert [line.split() for line in lines[2:4]] == [
        ["acme"],
        ["acme", "ai-team", "1", "gres/accelerator=16"],
    ]
    assert len(lines) == 2 + 2 + 4 + 2 + 1  # header, acme + ai-team + its 4 users, globex + rivals + mallory


def test_show_assoc_parsable_without_header(world):
    world.ai_team.max_wall = 4320
    world.ai_team.save()

    out = sacctmgr("-P", "-n", "show", "assoc", "tenant=acme")

    assert out.splitlines() == [
        "acme|||||||||||",
        "acme|ai-team|||1|||gres/accelerator=16|||3-00:00:00|",
        "acme|ai-team||ada||||||||",
        "acme|ai-team||alice||||||||",
        "acme|ai-team||bob||||||||",
        "acme|ai-team||vic||||||||",
    ]


def test_show_assoc_parsable_with_header_via_options(world):
    lines = sacctmgr("show", "assoc", "group=rivals", parsable2=True).splitlines()

    assert lines[0].startswith("Tenant|Group|Parent|User|")
    assert lines[1:] == ["globex|rivals|||1|||||||", "globex|rivals||mallory||||||||"]


def test_show_assoc_user_filter_shows_only_that_users_rows(world):
    assert sacctmgr("-P", "-n", "show", "assoc", "user=alice").splitlines() == ["acme|ai-team||alice||||||||"]


def test_show_tenant_group_and_user(world):
    assert "acme||ai-team|4" in sacctmgr("-P", "-n", "show", "tenant", "acme")
    assert sacctmgr("-P", "-n", "show", "group", "tenant=globex").splitlines() == ["rivals|globex||main|main|1|"]
    users = sacctmgr("-P", "-n", "show", "user").splitlines()
    assert "ada|acme|admin|ai-team|None" in users
    assert "root||||Administrator" in users


def test_verbs_and_entities_are_case_insensitive_with_slurm_aliases(world):
    sacctmgr("ADD", "Account", "ops", "Tenant=globex")
    sacctmgr("Update", "ACCOUNT", "ops", "SET", "FairShare=7")
    rows = sacctmgr("list", "associations", "account=ops", "-P", "-n").splitlines()

    assert rows == ["globex|ops|||7|||||||"]


# --- delete -------------------------------------------------------------------------------------------------


def test_delete_group_user_and_tenant(world):
    sacctmgr("delete", "user", "mallory")
    sacctmgr("remove", "account", "rivals")
    out = sacctmgr("delete", "tenant", "globex")

    assert "globex" in out
    assert not Tenant.objects.filter(name="globex").exists()
    assert not User.objects.filter(username="mallory").exists()
    assert {"membership.remove", "group.delete", "tenant.delete"} <= set(
        AuditLog.objects.values_list("action", flat=True)
    )


def test_tenant_fairshare_is_set_shown_audited_and_checked(world):
    out = sacctmgr("create", "tenant", "initech", "fairshare=3")
    assert "Fairshare" in out and Tenant.objects.get(name="initech").shares == 3
    out = sacctmgr("modify", "tenant", "acme", "set", "fairshare=4")
    assert "Fairshare" in out and "1 -> 4" in out
    world.acme.refresh_from_db()
    assert world.acme.shares == 4
    assert AuditLog.objects.filter(action="tenant.update", changes__shares=[1, 4]).exists()
    assert "fairshare" in sacctmgr_error("modify", "tenant", "acme", "set", "fairshare=0").lower()
    world.acme.refresh_from_db()
    assert world.acme.shares == 4
