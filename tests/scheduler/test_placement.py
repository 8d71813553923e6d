"""Gang placement on leaf switches: all nodes or none, fewest switches, best fit, topology-aware waits."""

from scheduler.core import schedule
from scheduler.placement import Pool, choose_switches, min_switches_needed
from scheduler.policy import Policy
from tests.scheduler.helpers import job, occupy, pool, usage_of

WAIT = Policy(switch_wait=300)


def test_gang_allocation_is_all_nodes_or_none():
    nodes = pool()
    nodes[0].free_accelerators = [0]
    decisions = schedule(nodes, [job(1, nodes=4)], {}, {}, 0)
    assert not decisions.starts
    assert len(nodes[1].free_accelerators) == 8  # nothing was taken for a job that did not start


def test_every_node_of_a_job_gets_its_accelerators_and_cpus():
    nodes = pool()
    (start,) = schedule(nodes, [job(1, nodes=3, apn=4)], {}, {}, 0).starts
    assert len(start.allocation) == 3 and all(len(ix) == 4 for ix in start.allocation.values())
    taken = {n.name: n for n in nodes if n.name in start.allocation}
    assert all(n.free_cpus == 60 and len(n.free_accelerators) == 4 for n in taken.values())


def test_two_node_job_stays_on_one_leaf_switch():
    decisions = schedule(pool(switches=2, per_switch=2), [job(1, apn=4), job(2, nodes=2, apn=8)], {}, {}, 0)
    placed = {s.job_id: s for s in decisions.starts}
    assert len(placed[2].switches) == 1
    assert placed[1].switches != placed[2].switches


def test_job_goes_to_the_tightest_switch_that_holds_it():
    nodes = pool(switches=3, per_switch=4)
    running = [occupy(nodes, job(90, nodes=2), {"n00", "n01"}, ends_at=600)]
    (start,) = schedule(nodes, [job(1, nodes=2)], {}, usage_of(running), 0, running=running).starts
    assert start.switches == ("leaf0",)  # leaf0 has exactly 2 free nodes; leaf1 and leaf2 stay whole


def test_one_node_job_takes_the_fullest_node():
    nodes = pool(switches=2, per_switch=2)
    running = [occupy(nodes, job(90, apn=6), {"n11"}, ends_at=600)]
    (start,) = schedule(nodes, [job(1, apn=2)], {}, usage_of(running), 0, running=running).starts
    assert list(start.allocation) == ["n11"]


def test_spread_job_uses_the_fewest_switches():
    nodes = pool(switches=3, per_switch=4)
    running = [occupy(nodes, job(90, nodes=3), {"n00", "n01", "n02"}, ends_at=600)]
    (start,) = schedule(nodes, [job(1, nodes=5)], {}, usage_of(running), 0, running=running).starts
    # leaf1 (4 free) and, for the last node, leaf0's one free node: leaf2 stays whole.
    assert start.switches == ("leaf0", "leaf1")


def test_choose_switches_takes_the_biggest_then_the_tightest_for_the_rest():
    assert choose_switches({"a": 4, "b": 2, "c": 3}, 6) == [("a", 4), ("b", 2)]
    assert choose_switches({"a": 4, "b": 4}, 3) == [("a", 3)]
    assert choose_switches({"a": 1, "b": 1}, 3) is None


def test_topology_aware_job_waits_rather_than_spread():
    nodes = pool(switches=2, per_switch=2)
    nodes[0].free_accelerators = []  # leaf0 has one free node, leaf1 two
    decisions = schedule(nodes, [job(1, nodes=2, topology_aware=True, eligible_at=0)], {}, {}, 10, policy=WAIT)
    starts = {s.job_id: s for s in decisions.starts}
    assert starts[1].switches == ("leaf1",)
    nodes = pool(switches=2, per_switch=2)
    nodes[0].free_accelerators = []
    nodes[2].free_accelerators = []  # one free node per switch
    decisions = schedule(nodes, [job(1, nodes=2, topology_aware=True, eligible_at=0)], {}, {}, 10, policy=WAIT)
    assert decisions.blocked[0].reason == "Resources" and not decisions.starts


def test_topology_aware_job_spreads_once_its_switch_wait_runs_out():
    nodes = pool(switches=2, per_switch=2)
    nodes[0].free_accelerators = []
    nodes[2].free_accelerators = []
    decisions = schedule(nodes, [job(1, nodes=2, topology_aware=True, eligible_at=0)], {}, {}, 300, policy=WAIT)
    assert decisions.starts[0].switches == ("leaf0", "leaf1")


def test_topology_aware_means_the_fewest_switches_that_could_ever_hold_it():
    nodes = pool(switches=2, per_switch=2)
    nodes[0].free_accelerators = []  # three free nodes on two switches: two is the least any 3-node job can have
    decisions = schedule(nodes, [job(1, nodes=3, topology_aware=True, eligible_at=0)], {}, {}, 10, policy=WAIT)
    assert len(decisions.starts[0].switches) == 2
    assert min_switches_needed(job(1, nodes=3), pool(switches=2, per_switch=2)) == 2


def test_max_switches_waits_then_accepts_more():
    def run(now):
        nodes = pool(switches=3, per_switch=2)
        for node in nodes[::2]:
            node.free_accelerators = []  # one free node per switch
        return schedule(nodes, [job(1, nodes=3, max_switches=2, eligible_at=0)], {}, {}, now, policy=WAIT)

    assert run(now=299).blocked[0].reason == "Resources"
    assert len(run(now=300).starts[0].switches) == 3


def test_reservation_of_a_waiting_topology_job_keeps_to_its_switches():
    nodes = pool(switches=2, per_switch=2)
    running = [occupy(nodes, job(90), {"n00"}, ends_at=100), occupy(nodes, job(91), {"n10"}, ends_at=50)]
    queue = [job(1, nodes=2, topology_aware=True, eligible_at=0)]
    decisions = schedule(nodes, queue, {}, usage_of(running), 0, running=running, policy=Policy(switch_wait=1000))
    (reservation,) = decisions.reservations
    assert reservation.start == 50 and reservation.switches == ("leaf1",)


def test_pool_counts_reject_what_cannot_fit_without_scanning():
    nodes = pool(switches=2, per_switch=2)
    index = Pool(nodes)
    assert index.find(job(1, nodes=5)) is None
    assert index.find(job(1, apn=9)) is None
    assert len(index.find(job(1, nodes=4))) == 4


def test_cpus_short_on_a_switch_are_counted_exactly():
    nodes = pool(switches=2, per_switch=2)
    for node in nodes[:2]:
        node.free_cpus = 0  # accelerators free, cpus not
    chosen = Pool(nodes).find(job(1, nodes=2, apn=1))
    assert sorted(nodes[i].name for i in chosen) == ["n10", "n11"]
