"""The pure core: no database, thousands of jobs in milliseconds."""

import random

from scheduler.core import schedule
from scheduler.model import AssocLimits, AssocUsage, JobRequest, NodeView
from scheduler.placement import min_switches_needed


def pool(switches=2, per_switch=2, accelerators=8):
    return [
        NodeView(
            name=f"n{s}{i}",
            switch=f"leaf{s}",
            partitions=frozenset({"main"}),
            accelerators=accelerators,
            cpus=64,
            memory_mb=512 * 1024,
            free_accelerators=list(range(accelerators)),
            free_cpus=64,
            free_memory_mb=512 * 1024,
        )
        for s in range(switches)
        for i in range(per_switch)
    ]


def job(job_id, nodes=1, apn=8, assoc=("tenant:a", "group:g"), user="u", **kw):
    return JobRequest(
        id=job_id,
        partition="main",
        nodes=nodes,
        accelerators_per_node=apn,
        cpus_per_node=8,
        memory_per_node=1024,
        time_limit=60,
        associations=assoc,
        user=user,
        submitted_at=job_id,
        **kw,
    )


def test_jobs_start_in_submit_order_until_resources_run_out():
    decisions = schedule(pool(), [job(1, nodes=3), job(2, nodes=2), job(3)], {}, {}, 0)
    assert [s.job_id for s in decisions.starts] == [1]
    assert [(b.job_id, b.reason) for b in decisions.blocked] == [(2, "Resources"), (3, "Priority")]


def test_gang_allocation_is_all_nodes_or_none():
    nodes = pool()
    nodes[0].free_accelerators = [0]
    decisions = schedule(nodes, [job(1, nodes=4)], {}, {}, 0)
    assert not decisions.starts


def test_two_node_job_stays_on_one_leaf_switch():
    decisions = schedule(pool(switches=2, per_switch=2), [job(1, apn=4), job(2, nodes=2, apn=8)], {}, {}, 0)
    placed = {s.job_id: s for s in decisions.starts}
    assert len(placed[2].switches) == 1
    assert placed[1].switches != placed[2].switches


def test_topology_aware_job_waits_rather_than_spread():
    nodes = pool(switches=2, per_switch=2)
    nodes[0].free_accelerators = []  # leaf0 has one free node, leaf1 two
    decisions = schedule(nodes, [job(1, nodes=3, topology_aware=True)], {}, {}, 0)
    assert decisions.blocked[0].reason == "Resources"
    assert min_switches_needed(job(1, nodes=3), nodes) == 2


def test_group_grptres_blocks_with_assoc_grp_gres_and_does_not_block_others():
    limits = {"group:g": AssocLimits(name="group g", grp_tres={"gres/accelerator": 8})}
    queue = [job(1), job(2), job(3, assoc=("tenant:b", "group:h"))]
    decisions = schedule(pool(), queue, limits, {}, 0)
    assert [s.job_id for s in decisions.starts] == [1, 3]
    assert decisions.blocked[0].reason == "AssocGrpGRES"
    assert "group g has 8 of 8 accelerators in use (GrpTRES); this job needs 8" == decisions.blocked[0].detail


def test_tenant_limit_binds_every_group_below_it():
    limits = {"tenant:a": AssocLimits(name="tenant a", grp_jobs=1)}
    queue = [job(1, assoc=("tenant:a", "group:g")), job(2, assoc=("tenant:a", "group:h"))]
    decisions = schedule(pool(), queue, limits, {}, 0)
    assert [s.job_id for s in decisions.starts] == [1]
    assert decisions.blocked[0].reason == "AssocGrpJobsLimit"


def test_max_tres_per_user():
    limits = {"group:g": AssocLimits(name="group g", max_tres_per_user={"gres/accelerator": 8})}
    decisions = schedule(pool(), [job(1, user="x"), job(2, user="x"), job(3, user="y")], limits, {}, 0)
    assert [s.job_id for s in decisions.starts] == [1, 3]
    assert decisions.blocked[0].reason == "QOSMaxGRESPerUser"


def test_grp_tres_mins_budget():
    limits = {"group:g": AssocLimits(name="group g", grp_tres_mins={"gres/accelerator": 1000})}
    usage = {"group:g": AssocUsage(tres_mins={"gres/accelerator": 600})}
    decisions = schedule(pool(), [job(1)], limits, usage, 0)  # 8 accelerators x 60 min = 480 > 400 left
    assert decisions.blocked[0].reason == "AssocGrpGRESMinutes"


def test_random_workloads_never_exceed_a_limit_or_a_node():
    rng = random.Random(7)
    for _ in range(50):
        nodes = pool(switches=3, per_switch=4)
        cap = rng.choice([8, 16, 32])
        limits = {"group:g": AssocLimits(name="group g", grp_tres={"gres/accelerator": cap})}
        queue = [job(i, nodes=rng.randint(1, 3), apn=rng.choice([1, 2, 4, 8])) for i in range(40)]
        decisions = schedule(nodes, queue, limits, {}, 0)
        by_id = {j.id: j for j in queue}
        assert sum(by_id[s.job_id].tres["gres/accelerator"] for s in decisions.starts) <= cap
        held: dict[tuple[str, int], int] = {}
        for start in decisions.starts:
            assert len(start.allocation) == by_id[start.job_id].nodes
            for node, indices in start.allocation.items():
                for index in indices:
                    held[(node, index)] = held.get((node, index), 0) + 1
        assert all(count == 1 for count in held.values())
        assert all(n.free_cpus >= 0 and n.free_memory_mb >= 0 for n in nodes)


def test_same_input_gives_same_decisions():
    queue = [job(i, nodes=1 + i % 2, apn=1 + i % 8) for i in range(200)]
    first = schedule(pool(4, 4), queue, {}, {}, 0)
    second = schedule(pool(4, 4), list(reversed(queue)), {}, {}, 0)
    assert first.starts == second.starts
