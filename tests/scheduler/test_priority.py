"""Multifactor priority: age, fair share with decayed usage, job size, partition tier."""

import math

import pytest

from scheduler.core import schedule
from scheduler.policy import DAY, Policy, Weights
from scheduler.priority import (
    Association,
    Prioritizer,
    PriorityContext,
    UsageInterval,
    decay,
    decay_usage,
    decayed_charge,
    fairshare_factors,
    normalized_shares,
)
from tests.scheduler.helpers import job, pool

TREE = [
    Association("tenant:a", None, 1),
    Association("tenant:b", None, 1),
    Association("group:a1", "tenant:a", 3),
    Association("group:a2", "tenant:a", 1),
    Association("group:b1", "tenant:b", 1),
]
ONLY_FAIRSHARE = Policy(weights=Weights(age=0, fairshare=10000, job_size=0, partition=0))


def test_shares_split_down_the_tree():
    shares = normalized_shares(TREE)
    assert shares["tenant:a"][0] == 0.5
    assert shares["group:a1"][0] == pytest.approx(0.375) and shares["group:a2"][0] == pytest.approx(0.125)
    assert shares["group:b1"][0] == 0.5


def test_no_usage_gives_every_association_a_fair_share_factor_of_one():
    assert set(fairshare_factors(TREE, {}).values()) == {1.0}


def test_a_group_that_used_more_than_its_share_gets_a_lower_factor():
    usage = {"tenant:a": 100.0, "group:a1": 50.0, "group:a2": 50.0, "tenant:b": 0.0}
    factors = fairshare_factors(TREE, usage)
    assert factors["group:a2"] < factors["group:a1"] < 1.0  # same usage, a2 has a third of a1's shares
    assert factors["group:b1"] == 1.0


def test_a_tenants_usage_pulls_down_all_of_its_groups():
    usage = {"tenant:a": 100.0, "group:a1": 100.0, "tenant:b": 100.0, "group:b1": 100.0}
    assert fairshare_factors(TREE, usage)["group:a2"] < 1.0  # a2 ran nothing, but its tenant did


def test_usage_halves_every_half_life():
    assert decay(80.0, 7 * DAY, 7 * DAY) == pytest.approx(40.0)
    assert decay(80.0, 14 * DAY, 7 * DAY) == pytest.approx(20.0)


def test_running_time_is_billed_decayed_from_when_it_ran():
    half_life = 100.0
    recent = decayed_charge(1.0, 900, 1000, now=1000, half_life=half_life)
    old = decayed_charge(1.0, 0, 100, now=1000, half_life=half_life)
    assert recent == pytest.approx(100 / math.log(2) * (1 - 0.5), rel=1e-9)
    assert old == pytest.approx(recent * 2**-9)


def test_stored_usage_plus_new_runs_equals_billing_everything_at_once():
    half_life = 500.0
    runs = [
        UsageInterval(("tenant:a", "group:a1"), 8.0, 0, 300),
        UsageInterval(("tenant:a", "group:a2"), 2.0, 200, 900),
    ]
    at_once = decay_usage({}, 0, 1000, runs, half_life)
    stored = decay_usage({}, 0, 400, runs, half_life)
    later = decay_usage(stored, 400, 1000, runs, half_life)
    assert later == pytest.approx(at_once)
    assert later["tenant:a"] == pytest.approx(later["group:a1"] + later["group:a2"])


def test_fair_share_orders_the_queue():
    ctx = PriorityContext(fairshare={"group:heavy": 0.2, "group:light": 0.9})
    heavy = job(1, assoc=("tenant:a", "group:heavy"))
    light = job(2, assoc=("tenant:b", "group:light"))
    Prioritizer(ctx, 0, ONLY_FAIRSHARE).assign([heavy, light])
    assert light.priority == 9000 and heavy.priority == 2000
    decisions = schedule(pool(switches=1, per_switch=1), [heavy, light], {}, {}, 0)
    assert [s.job_id for s in decisions.starts] == [2]


def test_age_grows_until_max_age():
    policy = Policy(weights=Weights(age=1000, fairshare=0, job_size=0, partition=0), max_age=1000)
    prioritizer = Prioritizer(PriorityContext(), now=1500, policy=policy)
    assert prioritizer.priority(job(1, eligible_at=1000)) == 500
    assert prioritizer.priority(job(2, eligible_at=0)) == 1000
    assert prioritizer.priority(job(3, eligible_at=-5000)) == 1000


def test_bigger_jobs_get_a_bigger_job_size_factor():
    ctx = PriorityContext(partition_size={"main": (4, 32)})
    prioritizer = Prioritizer(ctx, 0, Policy(weights=Weights(age=0, fairshare=0, job_size=1000, partition=0)))
    assert prioritizer.priority(job(1, nodes=4)) == 1000
    assert prioritizer.priority(job(2, nodes=1, apn=8)) == 250
    assert prioritizer.priority(job(3, nodes=1, apn=2)) == 250  # one node of four, whatever its accelerators


def test_partition_tier_counts_against_the_highest_tier():
    ctx = PriorityContext(partition_tier={"main": 1, "urgent": 4})
    prioritizer = Prioritizer(ctx, 0, Policy(weights=Weights(age=0, fairshare=0, job_size=0, partition=1000)))
    assert prioritizer.priority(job(1, partition="urgent")) == 1000
    assert prioritizer.priority(job(2, partition="main")) == 250


def test_factors_are_visible_per_job():
    ctx = PriorityContext(fairshare={"group:g": 0.5}, partition_size={"main": (4, 32)})
    prioritizer = Prioritizer(ctx, now=DAY, policy=Policy())
    factors = prioritizer.factors(job(1, nodes=2, eligible_at=0))
    assert factors.age == pytest.approx(1 / 7) and factors.fairshare == 0.5 and factors.job_size == 0.5
    weighted = factors.weighted(Policy().weights)
    assert prioritizer.priority(job(1, nodes=2, eligible_at=0)) == round(sum(weighted.values()))
