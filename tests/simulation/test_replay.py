"""The what-if replay: policies behave as named, no peeking at the future, limits hold, metrics add up."""

import random

import pytest

from scheduler.metrics import JobRecord, jain, percentile, slowdown
from scheduler.model import AssocLimits, AssocUsage
from scheduler.policies import AGING, EasyBackfill, Fifo, LearnedDuration, Multifactor, policy_names
from scheduler.policy import Policy
from scheduler.predict import DurationPredictor
from scheduler.priority import PriorityContext
from scheduler.replay import Replay, Simulation, simulate, violates
from scheduler.workload import uniform_pool
from tests.simulation.helpers import job, pool

MIN = 60.0


def run(policy, requests, runtimes, nodes=None, **kwargs):
    sim = Simulation(nodes or pool(2), requests, runtimes, replay_policy=policy, **kwargs)
    sim.run()
    return sim


def blocked_head_workload():
    # j1 holds one node for an hour; j2 needs both nodes; j3 is small and short: backfill material
    requests = [job(1, at=0), job(2, at=1, nodes=2), job(3, at=2, apn=1, minutes=10)]
    return requests, {1: 3600.0, 2: 600.0, 3: 300.0}


def test_fifo_holds_everything_behind_the_first_job_that_does_not_fit():
    sim = run(Fifo(), *blocked_head_workload())
    assert sim.records[3].started == 3600.0 + 600.0  # after j2, which waited for j1
    assert sim.records[2].started == 3600.0


def test_easy_backfill_starts_a_short_job_that_does_not_delay_the_reservation():
    sim = run(EasyBackfill(), *blocked_head_workload())
    assert sim.records[3].started == 2.0
    assert sim.records[2].started == 3600.0  # the reserved job is not delayed


def test_easy_does_not_backfill_a_job_that_would_delay_the_reservation():
    requests, runtimes = blocked_head_workload()
    requests[2] = job(3, at=2, apn=1, minutes=120)  # its limit runs past j2's reserved start
    sim = run(EasyBackfill(), requests, runtimes)
    assert sim.records[3].started == 3600.0 + 600.0


def test_simulation_decides_as_the_existing_replay_loop_does():
    """The incremental loop (skipped passes, kept usage) starts every job when the plain Replay does."""
    rng = random.Random(7)
    requests, runtimes = [], {}
    for i in range(1, 121):
        nodes = rng.choice([1, 1, 1, 2, 4])
        requests.append(
            job(i, at=rng.uniform(0, 20000), nodes=nodes, apn=rng.choice([1, 2, 8]), minutes=rng.choice([30, 120]))
        )
        runtimes[i] = rng.uniform(60, 7200)
    sim = run(EasyBackfill(), [r.changed() for r in requests], runtimes, nodes=uniform_pool(8, switch_size=4))
    replay = Replay(uniform_pool(8, switch_size=4))
    replay.submit([r.changed() for r in requests], runtimes)
    replay.run()
    assert {i: r.started for i, r in sim.records.items()} == replay.started
    assert sim.passes < len(replay.passes)  # and it skipped passes that could start nothing


def test_skipping_passes_that_can_start_nothing_changes_no_decision(monkeypatch):
    rng = random.Random(3)
    requests = [job(i, at=rng.uniform(0, 5000), apn=rng.choice([1, 4, 8])) for i in range(1, 60)]
    runtimes = {r.id: rng.uniform(60, 3000) for r in requests}
    skipping = run(Multifactor(), [r.changed() for r in requests], runtimes)
    monkeypatch.setattr(Simulation, "_could_start", lambda self: True)
    every = run(Multifactor(), [r.changed() for r in requests], runtimes)
    assert skipping.records == every.records
    assert skipping.passes < every.passes


def test_quota_is_never_exceeded_and_the_count_of_violations_is_zero():
    limits = {"tenant:t1": AssocLimits("tenant t1", grp_tres={"gres/accelerator": 8})}
    requests = [job(i, at=0) for i in range(1, 4)] + [job(4, at=0, tenant="t2")]
    runtimes = {i: 600.0 for i in range(1, 5)}
    sim = run(EasyBackfill(), requests, runtimes, nodes=pool(4), limits=limits)
    starts = sorted(sim.records[i].started for i in (1, 2, 3))
    assert starts == [0.0, 600.0, 1200.0]  # one at a time, though the pool has room for all
    assert sim.records[4].started == 0.0  # the other tenant is not held
    assert sim.violations == 0


def test_the_violation_check_sees_a_tenant_over_its_limit():
    usage = AssocUsage()
    usage.add(job(1, apn=8))
    usage.add(job(2, apn=8))
    assert violates(usage, AssocLimits("t", grp_tres={"gres/accelerator": 8}))
    assert not violates(usage, AssocLimits("t", grp_tres={"gres/accelerator": 16}))
    assert violates(usage, AssocLimits("t", grp_jobs=1))


def test_predictor_uses_only_what_ended_user_then_group_then_limit():
    predictor = DurationPredictor()
    assert predictor.predict("alice", "g", 3600) == 3600
    predictor.observe("bob", "g", 600)
    assert predictor.predict("alice", "g", 3600) == 600  # the group's history
    predictor.observe("alice", "g", 100)
    predictor.observe("alice", "g", 300)
    assert predictor.predict("alice", "g", 3600) == 200
    assert predictor.predict("alice", "g", 150) == 150  # never past the limit


def test_learned_policy_does_not_see_a_run_before_it_ends():
    # Alice's first job runs 2 h; her second is submitted while the first still runs: no history yet.
    requests = [job(1, at=0, user="alice", minutes=240), job(2, at=60, user="alice", minutes=240)]
    policy = LearnedDuration()
    run(policy, requests, {1: 7200.0, 2: 60.0}, nodes=pool(2))
    assert policy.predictor.fallbacks == 2 and policy.predictor.hits == 0  # neither saw job 1's run time


def _priorities(policy, queue, now):
    ctx = PriorityContext(fairshare={}, partition_tier={"main": 1}, partition_size={"main": (2, 16)})
    policy.prioritize(queue, now, ctx, Policy())
    return {j.id: j.priority for j in queue}


def test_learned_policy_puts_the_shortest_predicted_job_first():
    policy = LearnedDuration()
    for _ in range(3):
        policy.observe(job(0, user="quick"), 120)
        policy.observe(job(0, user="slow"), 20 * 3600)
    queue = [job(1, at=0, user="slow", minutes=1440), job(2, at=10, user="quick", minutes=1440)]
    priorities = _priorities(policy, queue, now=20)
    assert priorities[2] > priorities[1]
    assert policy.planned_minutes(queue[1], 20) == 2  # backfill plans it with its prediction, not its day


def test_aging_lets_a_long_job_overtake_fresh_short_ones():
    policy = LearnedDuration()
    for _ in range(3):
        policy.observe(job(0, user="quick"), 60)
        policy.observe(job(0, user="slow"), 25 * 86400)
    old_long = job(1, at=0, user="slow", minutes=30 * 1440)
    fresh_short = job(2, at=AGING, user="quick", minutes=10)
    priorities = _priorities(policy, [old_long, fresh_short], now=AGING)
    assert priorities[1] > priorities[2]


def test_learned_plans_an_overrunning_job_again_instead_of_freeing_it():
    requests = [job(1, at=0, user="a", minutes=600), job(2, at=7200, user="a", minutes=600)]
    for r in requests:
        r.associations = ("tenant:t1", "group:g")
    policy = LearnedDuration()
    policy.observe(job(0, user="a", group="g"), 600)  # predicts 10 minutes, both run 2 hours
    sim = run(policy, requests, {1: 7200.0, 2: 7200.0}, nodes=pool(1))
    assert sim.records[2].started == 7200.0 and sim.violations == 0


def test_fragmentation_counts_free_accelerators_no_waiting_job_can_use():
    # j1, j2 take 5 of 8 on each node: 6 free, all in pieces of 3, while an 8-accelerator job waits 100 s.
    requests = [job(1, at=0, apn=5), job(2, at=0, apn=5), job(3, at=0, apn=8)]
    sim = run(EasyBackfill(), requests, {1: 100.0, 2: 100.0, 3: 50.0})
    assert sim.records[3].started == 100.0
    assert sim.fragmentation == pytest.approx(1.0)
    assert sim.busy_while_waiting == pytest.approx(10 / 16)


def test_report_has_per_tenant_waits_and_fairness():
    requests = [job(1, at=0, tenant="a"), job(2, at=0, tenant="a"), job(3, at=0, tenant="b")]
    report = simulate(pool(1), requests, {1: 100.0, 2: 100.0, 3: 100.0}, "easy")
    assert report.jobs == 3 and report.never_started == 0
    waits = sorted(report.tenant_wait.values())
    assert waits in ([0.0, 150.0], [50.0, 200.0], [100.0, 100.0])  # one tenant waited for the other
    assert 0.5 <= report.jain_fairness < 1.0
    assert report.makespan == 300.0 and report.utilisation == pytest.approx(1.0)


def test_a_job_that_can_never_fit_is_reported_not_started():
    report = simulate(pool(1), [job(1, nodes=3)], {1: 10.0}, "easy")
    assert report.never_started == 1


def test_metrics_arithmetic():
    assert jain([2.0, 2.0, 2.0]) == 1.0
    assert jain([1.0, 0.0]) == 0.5
    assert percentile(list(range(1, 101)), 99) == 99
    record = JobRecord(1, "t", 0.0, 30.0, 40.0, 8, 1)
    assert (record.wait, record.jct, record.runtime, slowdown(record)) == (30.0, 40.0, 10.0, 40.0 / 60.0)


def test_policy_names():
    assert policy_names("all") == ["fifo", "easy", "multifactor", "learned"]
    assert policy_names("easy, learned") == ["easy", "learned"]
    with pytest.raises(ValueError, match="unknown policy 'sjf'"):
        policy_names("easy,sjf")
