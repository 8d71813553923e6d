"""The pure core: queue order, reasons as Slurm uses them, EASY backfill. No database."""

import random

from scheduler.core import Planner, schedule
from scheduler.model import AssocLimits, AssocUsage
from scheduler.policy import Policy
from tests.scheduler.helpers import job, occupy, pool, usage_of


def test_jobs_start_in_priority_order_not_submit_order():
    queue = [job(1, nodes=2, priority=10), job(2, nodes=2, priority=50), job(3, nodes=2, priority=30)]
    decisions = schedule(pool(), queue, {}, {}, 0)
    assert [s.job_id for s in decisions.starts] == [2, 3]
    assert [(b.job_id, b.reason) for b in decisions.blocked] == [(1, "Resources")]


def test_equal_priority_is_first_come_first_served():
    queue = [job(3, nodes=4, submitted_at=30), job(1, nodes=4, submitted_at=10), job(2, nodes=4, submitted_at=20)]
    decisions = schedule(pool(), queue, {}, {}, 0)
    assert [s.job_id for s in decisions.starts] == [1]
    assert [b.job_id for b in decisions.blocked] == [2, 3]


def test_first_blocked_job_waits_for_resources_and_the_rest_for_priority():
    decisions = schedule(pool(), [job(1, nodes=3), job(2, nodes=2), job(3, time_limit=120)], {}, {}, 0)
    assert [s.job_id for s in decisions.starts] == [1]
    assert [(b.job_id, b.reason) for b in decisions.blocked] == [(2, "Resources"), (3, "Priority")]


def test_top_blocked_job_gets_a_reservation_from_running_time_limits():
    nodes = pool()
    running = [occupy(nodes, job(90, nodes=2), {"n00", "n01"}, ends_at=600)]
    decisions = schedule(nodes, [job(1, nodes=4)], {}, usage_of(running), 0, running=running)
    (reservation,) = decisions.reservations
    assert reservation.job_id == 1 and reservation.start == 600
    assert set(reservation.nodes) == {"n00", "n01", "n10", "n11"}


def test_backfill_starts_a_short_job_that_ends_before_the_reservation():
    nodes = pool()
    running = [occupy(nodes, job(90, nodes=2), {"n00", "n01"}, ends_at=600)]
    queue = [job(1, nodes=4), job(2, time_limit=10), job(3, time_limit=11)]  # 10 min = 600 s
    decisions = schedule(nodes, queue, {}, usage_of(running), 0, running=running)
    assert [s.job_id for s in decisions.starts] == [2]
    assert (3, "Priority") in [(b.job_id, b.reason) for b in decisions.blocked]


def test_backfill_starts_a_long_job_beside_the_reservation():
    nodes = pool(switches=2, per_switch=2)
    running = [occupy(nodes, job(90), {"n00"}, ends_at=600)]
    queue = [job(1, nodes=2, topology_aware=True, eligible_at=0), job(2, time_limit=600)]
    decisions = schedule(nodes, queue, {}, usage_of(running), 0, running=running, policy=Policy(switch_wait=3600))
    # Job 1 needs one switch: leaf1 is free now, so it starts there; nothing is reserved.
    assert [s.job_id for s in decisions.starts] == [1, 2]
    assert decisions.starts[0].switches == ("leaf1",)


def test_long_job_never_takes_a_reserved_node():
    nodes = pool(switches=1, per_switch=4)
    running = [occupy(nodes, job(90), {"n00"}, ends_at=600), occupy(nodes, job(91, apn=4), {"n01"}, ends_at=600)]
    # Job 1 is reserved n02, n03 and n00; job 3 would fit only on a reserved node, job 2 also fits on n01.
    queue = [job(1, nodes=3), job(2, apn=4, time_limit=600), job(3, time_limit=600)]
    decisions = schedule(nodes, queue, {}, usage_of(running), 0, running=running)
    (reservation,) = decisions.reservations
    assert set(reservation.nodes) == {"n00", "n02", "n03"}
    assert [(s.job_id, list(s.allocation)) for s in decisions.starts] == [(2, ["n01"])]


def test_a_limit_blocked_job_holds_back_nobody():
    limits = {"group:g": AssocLimits(name="group g", grp_tres={"gres/accelerator": 8})}
    queue = [job(1), job(2, nodes=2), job(3, assoc=("tenant:b", "group:h"))]
    decisions = schedule(pool(), queue, limits, {}, 0)
    assert [s.job_id for s in decisions.starts] == [1, 3]
    assert decisions.blocked == [decisions.blocked[0]] and decisions.blocked[0].reason == "AssocGrpGRES"
    assert not decisions.reservations


def _headroom_case(cap):
    nodes = pool(switches=1, per_switch=4)
    other = ("tenant:b", "group:h")
    running = [
        occupy(nodes, job(90, assoc=other), {"n00"}, ends_at=600),
        occupy(nodes, job(91, apn=4, assoc=other), {"n01"}, ends_at=600),
    ]
    limits = {"group:g": AssocLimits(name="group g", grp_tres={"gres/accelerator": cap})}
    # Job 1 (24 accelerators of group g) waits for nodes; job 2 (4 more, long) fits on n01 beside the reservation.
    queue = [job(1, nodes=3, apn=8), job(2, apn=4, time_limit=600)]
    return schedule(nodes, queue, limits, usage_of(running), 0, running=running)


def test_backfill_leaves_the_reserved_job_its_limit_headroom():
    decisions = _headroom_case(cap=27)
    assert not decisions.starts
    assert [(b.job_id, b.reason) for b in decisions.blocked] == [(1, "Resources"), (2, "Priority")]


def test_backfill_beside_a_reservation_when_the_limit_has_room_for_both():
    decisions = _headroom_case(cap=28)
    assert [s.job_id for s in decisions.starts] == [2]
    assert list(decisions.starts[0].allocation) == ["n01"]


def test_tenant_limit_binds_every_group_below_it():
    limits = {"tenant:a": AssocLimits(name="tenant a", grp_jobs=1)}
    queue = [job(1, assoc=("tenant:a", "group:g")), job(2, assoc=("tenant:a", "group:h"))]
    decisions = schedule(pool(), queue, limits, {}, 0)
    assert [s.job_id for s in decisions.starts] == [1]
    assert decisions.blocked[0].reason == "AssocGrpJobsLimit"


def test_job_that_no_set_of_nodes_in_service_can_hold_waits_for_nodes_and_reserves_nothing():
    nodes = pool()
    for node in nodes[:2]:
        node.up = False
    decisions = schedule(nodes, [job(1, nodes=3), job(2, nodes=2)], {}, {}, 0)
    assert [(b.job_id, b.reason) for b in decisions.blocked] == [(1, "ReqNodeNotAvail")]
    assert [s.job_id for s in decisions.starts] == [2]


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
    assert first.starts == second.starts and first.blocked == second.blocked


def test_a_pass_does_not_change_the_usage_it_is_given():
    usage = {"group:g": AssocUsage()}
    schedule(pool(), [job(1)], {}, usage, 0)
    assert usage["group:g"].jobs == 0


def test_plan_ahead_gives_every_waiting_job_a_start_in_priority_order():
    nodes = pool(switches=1, per_switch=2)
    planner = Planner(nodes, {}, {}, 0, plan_ahead=True)
    planner.run([job(1, nodes=2, time_limit=10), job(2, nodes=2, time_limit=10), job(3, nodes=1, time_limit=5)])
    assert planner.planned == {1: 0, 2: 600, 3: 1200}
