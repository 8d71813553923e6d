"""Explanations from the pure core: every cause with numbers, the estimated start, suggestions that start sooner."""

import copy
import random

import pytest

from scheduler.core import Planner
from scheduler.explain import explain
from scheduler.model import AssocLimits, AssocUsage
from scheduler.policy import Policy, Weights
from scheduler.priority import Prioritizer, PriorityContext
from scheduler.replay import Replay
from tests.scheduler.helpers import job, occupy, pool, usage_of

CAP = {"group:g": AssocLimits(name="group ai-team", grp_tres={"gres/accelerator": 16})}


def busy_pool(*spec):
    """A 4-node pool with running jobs given as (job, nodes, ends_at)."""
    nodes = pool()
    running = [occupy(nodes, request, names, ends_at) for request, names, ends_at in spec]
    return nodes, running


def test_quota_cause_with_numbers_estimate_and_a_smaller_request_that_starts_now():
    nodes, running = busy_pool((job(90, apn=8), {"n00"}, 600), (job(91, apn=4), {"n01"}, 900))
    queue = [job(1, apn=8)]
    result = explain(nodes, queue, CAP, usage_of(running), 0, 1, running=running)
    (cause,) = result.causes
    assert cause.code == "AssocGrpGRES"
    assert cause.message == "group ai-team has 12 of 16 accelerators in use (GrpTRES); this job needs 8"
    assert (cause.limit, cause.in_use, cause.requested) == (
        {"gres/accelerator": 16},
        {"gres/accelerator": 12},
        {"gres/accelerator": 8},
    )
    assert result.estimated_start == 600  # when job 90's 8 accelerators come back
    best = result.suggestions[0]
    assert best.change["accelerators_per_node"] == 4 and best.estimated_start == 0
    assert "4 accelerators per node instead of 8" in best.message and "now" in best.message


def test_every_blocking_limit_is_a_cause():
    limits = {
        "tenant:a": AssocLimits(name="tenant acme", grp_jobs=1),
        "group:g": AssocLimits(name="group ai-team", grp_tres={"gres/accelerator": 8}),
    }
    nodes, running = busy_pool((job(90, apn=8), {"n00"}, 600))
    result = explain(nodes, [job(1, apn=8)], limits, usage_of(running), 0, 1, running=running)
    assert [c.code for c in result.causes] == ["AssocGrpJobsLimit", "AssocGrpGRES"]
    assert result.estimated_start == 600


def test_top_job_short_of_nodes_gets_its_reservation_as_estimate_and_fewer_nodes_start_now():
    nodes, running = busy_pool((job(90, nodes=2, assoc=("tenant:b", "group:h")), {"n00", "n01"}, 1200))
    result = explain(nodes, [job(1, nodes=3)], {}, usage_of(running), 0, 1, running=running)
    (cause,) = result.causes
    assert cause.code == "Resources" and result.reason == "Resources"
    assert "partition main has 16 of 32 accelerators free" in cause.message
    assert "2 of its 4 nodes have 8 free accelerators" in cause.message
    assert result.estimated_start == 1200
    (suggestion,) = [s for s in result.suggestions if "nodes" in s.change]
    assert suggestion.change == {"nodes": 2} and suggestion.estimated_start == 0


def test_job_behind_a_reservation_is_told_about_it_and_that_a_shorter_limit_backfills():
    nodes, running = busy_pool((job(90, nodes=2, assoc=("tenant:b", "group:h")), {"n00", "n01"}, 1200))
    queue = [job(1, nodes=4, priority=100), job(2, time_limit=60)]
    result = explain(nodes, queue, {}, usage_of(running), 0, 2, running=running)
    assert result.reason == "Priority"
    assert [c.code for c in result.causes] == ["Priority"]
    assert "job 1 (higher priority)" in result.causes[0].message
    assert result.estimated_start == 1200 + 3600  # after job 1, which runs an hour from 1200
    (shorter,) = [s for s in result.suggestions if "time_limit" in s.change]
    assert shorter.change == {"time_limit": "00:20:00"} and shorter.estimated_start == 0
    assert "backfill" in shorter.message


def test_another_allowed_partition_is_suggested_with_its_own_estimate():
    nodes = pool(partitions=("main",)) + pool(switches=1, per_switch=2, partitions=("spare",), prefix="s")
    running = [occupy(nodes, job(90, nodes=4, assoc=("tenant:b", "group:h")), {"n00", "n01", "n10", "n11"}, 900)]
    result = explain(nodes, [job(1)], {}, usage_of(running), 0, 1, running=running, partitions=["spare"])
    assert result.estimated_start == 900
    (move,) = result.suggestions
    assert move.change == {"partition": "spare"} and move.estimated_start == 0


def test_over_budget_job_has_no_estimate_but_a_time_limit_that_fits_the_budget():
    limits = {"group:g": AssocLimits(name="group ai-team", grp_tres_mins={"gres/accelerator": 1000})}
    usage = {"group:g": AssocUsage(tres_mins={"gres/accelerator": 600})}
    result = explain(pool(), [job(1, apn=8, time_limit=60)], limits, usage, 0, 1)
    assert [c.code for c in result.causes] == ["AssocGrpGRESMinutes"]
    assert result.estimated_start is None
    (fits,) = [s for s in result.suggestions if "time_limit" in s.change]
    assert fits.change == {"time_limit": "00:50:00"} and fits.estimated_start == 0


def test_topology_wait_is_explained_with_its_deadline():
    nodes, running = busy_pool((job(90), {"n00"}, 5000), (job(91), {"n10"}, 5000))
    queue = [job(1, nodes=2, topology_aware=True, eligible_at=0)]
    result = explain(nodes, queue, {}, usage_of(running), 10, 1, running=running, policy=Policy(switch_wait=300))
    (cause,) = result.causes
    assert cause.code == "Resources" and "on at most 1 leaf switch" in cause.message
    assert "accepts more switches" in cause.message
    assert result.estimated_start == 300  # spreads when its switch wait runs out


def test_a_job_that_would_start_now_has_no_causes():
    result = explain(pool(), [job(1)], {}, {}, 0, 1)
    assert result.causes == [] and result.estimated_start == 0 and result.suggestions == []


def test_suggestions_are_reprioritised_at_their_own_place_in_the_queue():
    # With one node, job 1's job-size factor drops to job 2's; job 2 came first, takes the free node, and the
    # one-node variant would wait as long as job 1 does: no suggestion. At job 1's priority it would start now.
    policy = Policy(weights=Weights(age=0, fairshare=0, job_size=1000, partition=0))
    ctx = PriorityContext(partition_size={"main": (4, 32)})
    nodes, running = busy_pool((job(90, nodes=3, assoc=("tenant:b", "group:h")), {"n00", "n01", "n10"}, 600))
    queue = [job(1, nodes=2, submitted_at=1), job(2, nodes=1, submitted_at=0)]
    Prioritizer(ctx, 0, policy).assign(queue)
    assert [j.priority for j in queue] == [500, 250]
    result = explain(nodes, queue, {}, usage_of(running), 0, 1, running=running, ctx=ctx, policy=policy)
    assert result.estimated_start == 600
    assert all(s.change != {"nodes": 1} for s in result.suggestions)
    unranked = explain(nodes, queue, {}, usage_of(running), 0, 1, running=running, policy=policy)
    assert any(s.change == {"nodes": 1} and s.estimated_start == 0 for s in unranked.suggestions)


def test_estimate_of_the_reserved_job_is_when_it_really_starts_if_nothing_else_changes():
    nodes, running = busy_pool(
        (job(90, nodes=2, assoc=("tenant:b", "group:h"), time_limit=20), {"n00", "n01"}, 1200),
        (job(91, assoc=("tenant:b", "group:h"), time_limit=5), {"n10"}, 300),
    )
    queue = [
        job(1, nodes=4, priority=10, submitted_at=0),
        job(2, priority=5, time_limit=5, submitted_at=0),
        job(3, priority=1, time_limit=50, submitted_at=0),
    ]
    usage = usage_of(running)
    estimates = {j.id: explain(nodes, queue, {}, usage, 0, j.id, running=running).estimated_start for j in queue}
    replay = Replay(nodes, {}, Policy())
    replay.running = {r.job.id: (r, r.ends_at) for r in running}
    replay.submit(queue)
    replay.run()
    assert replay.started[1] == estimates[1] == 1200
    assert replay.started[2] == estimates[2] == 0  # backfills: ends at 300, before the reservation
    assert replay.started[3] == pytest.approx(estimates[3])


@pytest.mark.parametrize("seed", range(6))
def test_explanations_agree_with_one_full_plan_of_a_random_queue(seed):
    """explain() plans the jobs ahead without their reasons (a shortcut); the plan must be the one a full walk makes:
    same estimated start and reason for every job, with limits, reservations, a short window and topology in play."""
    rng = random.Random(seed)
    nodes = pool(switches=3, per_switch=4)
    running = [
        occupy(nodes, job(1000 + i, apn=rng.choice([2, 4, 8])), [nodes[i].name], rng.choice([600, 3600, 7200]))
        for i in range(0, 12, 2)
    ]
    limits = {
        "group:g1": AssocLimits(name="group g1", grp_tres={"gres/accelerator": 24}),
        "tenant:b": AssocLimits(name="tenant b", grp_jobs=5),
    }
    chains = [("tenant:a", "group:g1"), ("tenant:a", "group:g2"), ("tenant:b", "group:g3")]
    queue = [
        job(
            k,
            nodes=rng.choice([1, 1, 1, 2, 3, 5]),
            apn=rng.choice([1, 2, 4, 8]),
            assoc=rng.choice(chains),
            user=rng.choice(["u", "v"]),
            time_limit=rng.choice([30, 60, 240, 600]),
            priority=rng.randrange(5),
            topology_aware=rng.random() < 0.2,
        )
        for k in range(1, 121)
    ]
    policy = Policy(plan_window=rng.choice([4 * 3600.0, 24 * 3600.0]))
    usage = usage_of(running)
    planner = Planner(copy.deepcopy(nodes), limits, usage, 0, running=running, policy=policy, plan_ahead=True)
    outcomes = {j.id: planner.step(j) for j in sorted(queue, key=lambda j: j.order_key)}
    planned = [j for j in queue if outcomes[j.id].start not in (None, 0)]
    assert planned, "the random queue must put some jobs into the future plan"
    for target in rng.sample(queue, 25):
        result = explain(nodes, queue, limits, usage, 0, target.id, running=running, policy=policy)
        outcome = outcomes[target.id]
        assert result.estimated_start == outcome.start
        assert result.reason == ("None" if outcome.kind == "start" else outcome.reason)
