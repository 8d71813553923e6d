"""The Slurm backend's pure parts: output parsing, the batch script, the association diff. No Slurm needed."""

from __future__ import annotations

import subprocess

import pytest

from cluster.backends.base import LaunchSpec
from cluster.backends.slurm import _status_from_sacct, _status_from_squeue, batch_script, task_script
from cluster.backends.slurm_cli import decode_wait_status, expand_hostlist, parse_exit_code
from cluster.backends.slurm_limits import LIMITS, Association, diff, parse_show_assoc


@pytest.mark.parametrize(
    "text, names",
    [
        ("n1", ["n1"]),
        ("n[1-3,5]", ["n1", "n2", "n3", "n5"]),
        ("gpu[07-09],login", ["gpu07", "gpu08", "gpu09", "login"]),
        ("a[1-2],b[3]", ["a1", "a2", "b3"]),
        ("", []),
    ],
)
def test_hostlists_expand_like_scontrol_show_hostnames(text, names):
    assert expand_hostlist(text) == names


@pytest.mark.parametrize("status, code", [(0, 0), (768, 3), (9, 137), (15, 143), (None, None)])
def test_squeue_wait_status_decodes_to_a_shell_exit_code(status, code):
    assert decode_wait_status(status) == code


@pytest.mark.parametrize("text, code", [("0:0", 0), ("3:0", 3), ("0:9", 137), ("", None)])
def test_sacct_exit_code_column_decodes_to_a_shell_exit_code(text, code):
    assert parse_exit_code(text) == code


def test_pending_squeue_job_carries_the_start_estimate_not_a_start():
    status = _status_from_squeue(
        "7", {"job_state": "PENDING", "state_reason": "Resources", "start_time": 1800000000, "nodes": ""}
    )
    assert (status.state, status.reason, status.started_at, status.estimated_start) == (
        "PENDING",
        "Resources",
        None,
        1800000000.0,
    )


def test_ended_squeue_job_has_state_exit_code_and_nodes():
    status = _status_from_squeue(
        "7",
        {"job_state": "TIMEOUT", "exit_code": 15, "start_time": 100, "end_time": 160, "nodes": "n[2-3]"},
    )
    assert (status.state, status.exit_code, status.nodelist, status.ended_at) == ("TIMEOUT", 143, ("n2", "n3"), 160.0)


def test_sacct_row_of_a_job_cancelled_by_a_user_is_cancelled():
    status = _status_from_sacct(["9", "x", "CANCELLED by 0", "0:15", "n1", "100", "120", "None"])
    assert (status.state, status.exit_code, status.reason) == ("CANCELLED", 143, "")


def _spec(**fields) -> LaunchSpec:
    base = {
        "job_id": 12,
        "run": 0,
        "name": "train",
        "user": "alice",
        "nodes": (),
        "accelerators": {},
        "time_limit_seconds": 600,
        "command": "echo hi",
        "accelerators_per_node": 2,
    }
    return LaunchSpec(**{**base, **fields})


def test_batch_script_quotes_the_jobs_environment_for_the_shell(tmp_path):
    script = batch_script(_spec(environment={"A": "it's $HOME; `x`", "BAD NAME": "dropped"}), tmp_path)
    exports = [line for line in script.splitlines() if line.startswith("export A=")]
    out = subprocess.run(["bash", "-c", f'{exports[0]}; printf %s "$A"'], capture_output=True, text=True).stdout
    assert out == "it's $HOME; `x`"
    assert "BAD NAME" not in script


def test_task_script_runs_the_prologue_before_the_command():
    script = task_script(_spec(prologue="module load ai-suite/2.1"))
    assert script.index("module load ai-suite/2.1") < script.index("echo hi")
    assert "export AIPOOL_ACCELERATORS=0,1" in script


def _row(account, parent="", user="", **limits) -> str:
    """One line of ``sacctmgr -n -P show assoc format=<SHOW_FORMAT>``."""
    return "|".join([account, parent, user, "", *(limits.get(name, "") for name in LIMITS)])


def _shown(*rows: str) -> list[Association]:
    return parse_show_assoc("\n".join(rows) + "\n")


def _account(name, parent="root", **limits):
    return Association(account=name, parent=parent, limits=limits)


def test_diff_orders_parents_before_children_and_users_last():
    wanted = [
        Association(account="team", user="u1"),
        _account("team", "acme", GrpTRES={"gres/accelerator": 16}),
        _account("acme"),
    ]
    changes = diff(wanted, [], managed_accounts=[], cluster="pool", organization="aipool")
    assert [c.argv[3:5] for c in changes] == [("account", "acme"), ("account", "team"), ("user", "u1")]
    assert "GrpTRES=gres/accelerator=16" in changes[1].argv


def test_inherited_max_limits_are_not_drift():
    shown = _shown(
        _row("root"),
        _row("acme", "root", MaxWall="3-00:00:00"),
        _row("team", "acme", MaxTRES="cpu=8", MaxWall="3-00:00:00"),
        _row("team", user="u1", MaxTRES="cpu=8", MaxWall="3-00:00:00"),
    )
    wanted = [
        _account("acme", MaxWall=4320),
        _account("team", "acme", MaxTRES={"cpu": 8}),
        Association(account="team", user="u1"),
    ]
    assert diff(wanted, shown, managed_accounts=["acme", "team"], cluster="pool", organization="aipool") == []


def test_a_limit_cleared_in_aipool_is_cleared_tres_by_tres():
    shown = _shown(_row("acme", "root", GrpTRES="cpu=64,gres/accelerator=8"))
    wanted = [_account("acme", GrpTRES={"gres/accelerator": 8})]
    (change,) = diff(wanted, shown, managed_accounts=["acme"], cluster="pool", organization="aipool")
    assert change.argv[-1] == "GrpTRES=gres/accelerator=8,cpu=-1"
    assert change.detail == "GrpTRES: aipool=gres/accelerator=8 slurm=cpu=64,gres/accelerator=8"


def test_only_managed_associations_are_removed():
    shown = _shown(_row("ours", "root"), _row("theirs", "root"), _row("ours", user="u1"))
    changes = diff([], shown, managed_accounts=["ours"], cluster="pool", organization="aipool")
    assert [(c.direction, c.what) for c in changes] == [
        ("only in Slurm", "user u1 in account ours"),
        ("only in Slurm", "account ours (parent root)"),
    ]


def test_a_users_default_account_moves_before_they_leave_it():
    shown = _shown(_row("a", "root"), _row("b", "root"), _row("a", user="u1"), _row("b", user="u1"))
    wanted = [_account("a"), _account("b"), Association(account="b", user="u1")]
    changes = diff(
        wanted, shown, managed_accounts=["a", "b"], cluster="pool", organization="x", default_accounts={"u1": "a"}
    )
    assert [c.argv[2:] for c in changes] == [
        ("modify", "user", "where", "name=u1", "cluster=pool", "set", "DefaultAccount=b"),
        ("delete", "user", "where", "name=u1", "account=a", "cluster=pool"),
    ]
