"""Importers: canonical CSV, openb, sacct --json, quotas; deterministic owners; round time limits."""

import json

import pytest

from scheduler.workload import (
    CANONICAL_HEADER,
    WorkloadError,
    bucket,
    default_time_limit,
    pool_from_description,
    read_canonical,
    read_openb_nodes,
    read_openb_pods,
    read_quotas,
    read_sacct_json,
    scale_arrivals,
    shrink_pool,
    write_canonical,
)
from tests.simulation.helpers import DATA

HEADER = ",".join(CANONICAL_HEADER)


def test_canonical_csv_reads_every_field():
    text = f"{HEADER}\n10,300,600,2,4,acme,ai-team,alice\n"
    (job,) = read_canonical(text)
    assert (job.submit_time, job.duration, job.time_limit, job.nodes, job.accelerators_per_node) == (10, 300, 600, 2, 4)
    assert (job.tenant, job.group, job.user) == ("acme", "ai-team", "alice")


def test_canonical_csv_round_trips():
    text = f"{HEADER}\n0,60,,1,8,acme,ai-team,alice\n5.5,120,3600,2,8,globex,rivals,mallory\n"
    assert write_canonical(read_canonical(text)) == text


def test_missing_owners_are_assigned_by_hash_of_group_or_user():
    text = f"{HEADER}\n0,60,,1,8,,research,\n0,60,,1,8,,research,bob\n0,60,,1,8,,,carol\n"
    first, second, third = read_canonical(text, tenants=5)
    assert first.tenant == second.tenant == f"tenant-{bucket('research', 5)}"
    assert first.user == "user-1" and second.user == "bob"
    assert third.tenant == f"tenant-{bucket('carol', 5)}" and third.group == f"{third.tenant}-default"


def test_hash_assignment_is_stable_across_runs():
    # sha256, not hash(): the same name lands in the same tenant on every machine and every Python process
    assert bucket("openb-pod-0001", 8) == bucket("openb-pod-0001", 8)
    assert [bucket(f"user{i}", 4) for i in range(8)] == [0, 2, 2, 3, 0, 3, 3, 1]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("x,60,,1,8,a,b,c", "submit_time='x' is not a number"),
        ("0,60,,0,8,a,b,c", "nodes must be at least 1"),
        ("0,-5,,1,8,a,b,c", "duration='-5' must be a finite number >= 0"),
        ("0,60,,1,1.5,a,b,c", "accelerators_per_node='1.5' is not a whole number"),
        ("0,,,1,8,a,b,c", "duration is empty"),
    ],
)
def test_canonical_csv_errors_name_the_line_and_field(row, message):
    with pytest.raises(WorkloadError) as caught:
        read_canonical(f"{HEADER}\n{row}\n")
    assert str(caught.value) == f"line 2: {message}"


def test_canonical_csv_without_its_header_is_refused():
    with pytest.raises(WorkloadError, match="header lacks duration"):
        read_canonical("submit_time,nodes\n0,1\n")


def test_default_time_limit_is_the_smallest_round_limit_that_covers_the_run():
    assert default_time_limit(50 * 60) == 3600
    assert default_time_limit(3600) == 3600
    assert default_time_limit(5 * 3600) == 8 * 3600
    assert default_time_limit(40 * 86400) == 60 * 86400


def test_openb_pods_map_to_whole_accelerator_one_node_jobs():
    jobs, notes = read_openb_pods((DATA / "openb_pod_list_default.csv").read_text())
    assert all(j.nodes == 1 and j.accelerators_per_node >= 1 for j in jobs)
    assert len(jobs) < 300  # pending and CPU-only pods are left out ...
    assert any("left out" in note and "CPU-only" in note for note in notes)  # ... and the notes say so
    first = jobs[0]
    assert first.submit_time == 0 and first.duration == 12537496 and first.user.startswith("u")
    assert first.group == f"{first.tenant}-ls"


def test_openb_pods_with_the_same_request_share_a_user():
    text = (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
        "a,6000,12288,1,460,,LS,Running,0,100,0\n"
        "b,6000,12288,1,460,,LS,Running,10,200,12\n"
        "c,12000,12288,1,1000,,LS,Running,20,300,20\n"
        "d,12000,12288,1,1000,,LS,Pending,30,40,\n"
    )
    jobs, _ = read_openb_pods(text)
    assert [j.duration for j in jobs] == [100, 188, 280]  # deletion - scheduled
    assert jobs[0].user == jobs[1].user != jobs[2].user


def test_openb_nodes_keep_their_accelerators_and_fill_switches_per_model():
    nodes = read_openb_nodes((DATA / "openb_node_list_gpu_node.csv").read_text(), switch_size=4)
    assert len(nodes) == 40
    assert {n.accelerators for n in nodes} == {1, 2, 4, 8}
    assert all(n.free_accelerators == list(range(n.accelerators)) for n in nodes)
    assert max(sum(1 for n in nodes if n.switch == s) for s in {n.switch for n in nodes}) == 4


SACCT = {
    "jobs": [
        {
            "job_id": 1,
            "user": "alice",
            "account": "ai-team",
            "partition": "gpu",
            "allocation_nodes": 2,
            "time": {"submission": 1000, "start": 1100, "end": 1700, "limit": {"set": True, "number": 30}},
            "tres": {"allocated": [{"type": "gres", "name": "gpu", "count": 16}, {"type": "cpu", "count": 64}]},
        },
        {
            "job_id": 2,
            "user": "bob",
            "account": "ai-team",
            "allocation_nodes": 1,
            "time": {"submission": 1500, "start": 0, "end": 0, "limit": 60},
        },
        {
            "job_id": 3,
            "association": {"account": "vision", "user": "carol"},
            "allocation_nodes": 1,
            "time": {"submission": 1600, "start": 1600, "end": 1660, "limit": {"set": False, "infinite": True}},
            "tres": {"allocated": [{"type": "gres", "name": "gpu:a100", "count": 4}]},
        },
    ]
}


def test_sacct_json_gives_ended_jobs_relative_to_the_first_submission():
    first, second = read_sacct_json(json.dumps(SACCT))
    assert (first.submit_time, first.duration, first.time_limit) == (0, 600, 1800)
    assert (first.nodes, first.accelerators_per_node, first.partition) == (2, 8, "gpu")
    assert (first.group, first.user, first.tenant) == ("ai-team", "alice", f"tenant-{bucket('ai-team', 8)}")
    assert (second.submit_time, second.time_limit, second.accelerators_per_node) == (600, None, 4)


@pytest.mark.parametrize("text", ["not json", "[]", '{"jobs": 3}'])
def test_sacct_json_that_is_not_sacct_output_is_refused(text):
    with pytest.raises(WorkloadError, match="sacct json"):
        read_sacct_json(text)


def test_quotas_file_in_sacctmgr_words():
    limits = read_quotas("# proposal\ntenant acme GrpTRES=accelerator=16 GrpJobs=4\ngroup ai-team GrpTRES=node=2\n")
    assert limits["tenant:acme"].grp_tres == {"gres/accelerator": 16} and limits["tenant:acme"].grp_jobs == 4
    assert limits["group:ai-team"].grp_tres == {"node": 2}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("tenant acme", "expected 'tenant|group NAME"),
        ("user bob GrpTRES=accelerator=1", "expected 'tenant|group NAME"),
        ("tenant acme GrpTRES=gpu=4", "unknown TRES 'gpu'"),
        ("tenant acme MaxWall=10", "MaxWall is not supported"),
        ("tenant acme GrpJobs=many", "quotas line 1"),
    ],
)
def test_bad_quota_lines_are_refused_with_the_line(line, message):
    with pytest.raises(WorkloadError, match=message):
        read_quotas(line)


def test_pool_description_file_gives_its_nodes_and_partitions():
    data = {
        "leaves": {"leaf0": {"nodes": ["n1", "n2"]}, "leaf1": {"nodes": ["n3"]}},
        "node_defaults": {"accelerators": 8},
        "nodes": {"n3": {"accelerators": 4}},
        "partitions": {"main": {"nodes": ["n1", "n2", "n3"]}, "big": {"nodes": ["n1"]}},
    }
    nodes = {n.name: n for n in pool_from_description(data)}
    assert nodes["n1"].partitions == {"main", "big"} and nodes["n3"].accelerators == 4 and nodes["n3"].switch == "leaf1"


def test_scaling_and_shrinking_are_deterministic():
    jobs = read_canonical(f"{HEADER}\n100,60,,1,8,a,b,c\n")
    assert scale_arrivals(jobs, 4)[0].submit_time == 25
    nodes = read_openb_nodes((DATA / "openb_node_list_gpu_node.csv").read_text())
    assert [n.name for n in shrink_pool(nodes, 0.25)] == [n.name for n in nodes[::4]]
    with pytest.raises(WorkloadError):
        shrink_pool(nodes, 0)
