"""aipool's limits as Slurm associations: changes in the portal reach sacctmgr, drift is reported and repaired."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from cluster.models import PosixAccount
from jobs.slurm_sync import sync
from tenants.limits import parse_limit
from tenants.services import group_member_add, limits_set
from tests.factories import UserFactory
from tests.slurm.conftest import slurm

pytestmark = pytest.mark.django_db

FORMAT = "format=Account,ParentName,User,GrpTRES,GrpJobs,MaxTRES,MaxWall"


def assoc(account: str, user: str = "") -> dict[str, str]:
    """One row of ``sacctmgr show assoc``, as a dict."""
    out = slurm("sacctmgr", "-n", "-P", "show", "assoc", "where", f"account={account}", FORMAT)
    names = FORMAT.removeprefix("format=").split(",")
    for line in out.splitlines():
        row = dict(zip(names, line.split("|"), strict=False))
        if row["Account"] == account and row["User"] == user:
            return row
    return {}


def test_tenants_groups_and_members_become_accounts_and_user_associations(slurm_world):
    tag = slurm_world.tag
    assert assoc(f"acme-{tag}")["ParentName"] == "root"
    assert assoc(f"ai-team-{tag}")["ParentName"] == f"acme-{tag}"
    assert assoc(f"ai-team-{tag}")["GrpTRES"] == "gres/accelerator=8"
    assert assoc(f"ai-team-{tag}", "aipool-u1") and assoc(f"ai-team-{tag}", "aipool-u2")
    assert assoc(f"rivals-{tag}", "aipool-u3") and not assoc(f"rivals-{tag}", "aipool-u1")


def test_quota_change_in_the_portal_reaches_sacctmgr_after_commit(slurm_world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        limits_set(
            actor=None,
            target=slurm_world.ai_team,
            changes=dict([parse_limit("GrpTRES", "accelerator=24"), parse_limit("MaxWall", "72:00:00")]),
        )

    row = assoc(f"ai-team-{slurm_world.tag}")
    assert (row["GrpTRES"], row["MaxWall"]) == ("gres/accelerator=24", "3-00:00:00")


def test_new_group_member_gets_a_user_association(slurm_world, django_capture_on_commit_callbacks):
    carol = UserFactory(username=f"carol-{slurm_world.tag}")
    PosixAccount.objects.create(user=carol, username="aipool-u3")
    from tenants.services import membership_set

    membership_set(actor=None, user=carol, tenant=slurm_world.acme, role="member")
    with django_capture_on_commit_callbacks(execute=True):
        group_member_add(actor=None, user=carol, group=slurm_world.ai_team)

    assert assoc(f"ai-team-{slurm_world.tag}", "aipool-u3")


def test_max_tres_per_user_becomes_grptres_on_each_members_association(slurm_world):
    limits_set(actor=None, target=slurm_world.acme, changes=dict([parse_limit("MaxTRESPerUser", "accelerator=4")]))
    sync()

    assert assoc(f"ai-team-{slurm_world.tag}", "aipool-u1")["GrpTRES"] == "gres/accelerator=4"
    assert assoc(f"ai-team-{slurm_world.tag}")["GrpTRES"] == "gres/accelerator=8"


def test_association_changed_behind_the_portals_back_is_reported_and_repaired(slurm_world, capsys):
    account = f"ai-team-{slurm_world.tag}"
    slurm("sacctmgr", "-i", "modify", "account", "where", f"name={account}", "set", "GrpTRES=gres/accelerator=99")

    with pytest.raises(SystemExit) as checked:
        call_command("slurm_sync", "--check")
    assert checked.value.code == 1
    report = capsys.readouterr().out
    assert (
        f"differs           account {account}: GrpTRES: aipool=gres/accelerator=8 slurm=gres/accelerator=99" in report
    )
    assert assoc(account)["GrpTRES"] == "gres/accelerator=99"  # --check changes nothing

    call_command("slurm_sync")

    assert assoc(account)["GrpTRES"] == "gres/accelerator=8"
    call_command("slurm_sync", "--check")
    assert "No drift" in capsys.readouterr().out


def test_association_only_in_slurm_is_reported_and_removed(slurm_world, slurm_settings):
    extra = f"extra-{slurm_world.tag}"
    org = slurm_settings.AIPOOL_SLURM_ORGANIZATION
    slurm("sacctmgr", "-i", "add", "account", extra, f"parent=acme-{slurm_world.tag}", f"organization={org}")
    slurm("sacctmgr", "-i", "add", "user", "aipool-u1", f"account={extra}")

    drift = sync(dry_run=True).changes

    assert [(c.direction, c.what) for c in drift] == [
        ("only in Slurm", f"user aipool-u1 in account {extra}"),
        ("only in Slurm", f"account {extra} (parent acme-{slurm_world.tag})"),
    ]
    sync()
    assert not assoc(extra) and not sync(dry_run=True).changes


def test_association_missing_in_slurm_is_recreated(slurm_world):
    account = f"ai-team-{slurm_world.tag}"
    slurm("sacctmgr", "-i", "delete", "user", "where", "name=aipool-u2", f"account={account}")

    drift = sync(dry_run=True).changes
    assert [(c.direction, c.what) for c in drift] == [("missing in Slurm", f"user aipool-u2 in account {account}")]

    sync()
    assert assoc(account, "aipool-u2")


def test_accounts_of_another_organization_are_left_alone(slurm_world):
    foreign = f"foreign-{slurm_world.tag}"
    slurm("sacctmgr", "-i", "add", "account", foreign, "organization=someone-else")
    try:
        assert not [c for c in sync(dry_run=True).changes if foreign in c.what]
    finally:
        slurm("sacctmgr", "-i", "delete", "account", "where", f"name={foreign}")


def test_slurm_sync_when_slurmdbd_is_unreachable_is_a_one_line_error(slurm_world, slurm_settings, tmp_path):
    from pathlib import Path

    from django.core.management.base import CommandError

    real = slurm_settings.AIPOOL_SLURM_CONF
    conf = tmp_path / "slurm.conf"
    conf.write_text(Path(real).read_text().replace("AccountingStoragePort=", "AccountingStoragePort=1#"))
    slurm_settings.AIPOOL_SLURM_CONF = str(conf)
    try:
        with pytest.raises(CommandError, match="^Slurm is unreachable: .*Connection refused"):
            call_command("slurm_sync", "--dry-run")
    finally:
        slurm_settings.AIPOOL_SLURM_CONF = real


def test_member_leaving_the_group_of_their_default_account_keeps_their_other_groups(slurm_world):
    from tenants.services import group_create, group_member_remove

    ml = group_create(actor=None, tenant=slurm_world.acme, name=f"ml-{slurm_world.tag}", partitions=[])
    group_member_add(actor=None, user=slurm_world.alice, group=ml)
    sync()
    default = slurm("sacctmgr", "-n", "-P", "show", "user", "aipool-u1", "format=DefaultAccount").strip()
    assert default == f"ai-team-{slurm_world.tag}"

    group_member_remove(actor=None, user=slurm_world.alice, group=slurm_world.ai_team)
    report = sync()

    assert not report.failed, [c.error for c in report.failed]
    assert not assoc(f"ai-team-{slurm_world.tag}", "aipool-u1") and assoc(ml.name, "aipool-u1")
    assert slurm("sacctmgr", "-n", "-P", "show", "user", "aipool-u1", "format=DefaultAccount").strip() == ml.name
