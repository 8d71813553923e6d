"""Done-when: the replay and the live scheduling pass (jobs.scheduling on the test database) decide the same.

The same pending jobs, limits, pool and instant go to both: the live pass through the ORM, the replay through
simulation.selectors and scheduler.replay.Simulation under the multifactor policy. Every start (nodes and
accelerator indices) and every reason code must match.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import Job
from jobs.scheduling import policy_from_env, run_pass
from scheduler.policies import Multifactor
from scheduler.replay import Simulation
from simulation.selectors import pool_inputs
from tests.jobs.helpers import submit

pytestmark = pytest.mark.django_db


def _queue(world):
    """A queue with every kind of decision: starts, a limit hold, a reservation, a backfill and a Priority wait."""
    shapes = [
        (world.alice, world.ai_team, {"nodes": 2, "accelerators_per_node": 8, "topology_aware": True}),
        (world.mallory, world.rivals, {"accelerators_per_node": 4, "time_limit": "30"}),
        (world.bob, world.ai_team, {"nodes": 2, "accelerators_per_node": 8, "time_limit": "60"}),
        (world.mallory, world.rivals, {"nodes": 2, "accelerators_per_node": 8, "time_limit": "120"}),
        (world.mallory, world.rivals, {"accelerators_per_node": 4, "time_limit": "10"}),
        (world.alice, world.ai_team, {"accelerators_per_node": 8, "time_limit": "120"}),
        (world.mallory, world.rivals, {"accelerators_per_node": 8, "time_limit": "600"}),
        (world.bob, world.ai_team, {"accelerators_per_node": 1, "time_limit": "5"}),
    ]
    now = timezone.now().replace(microsecond=0)
    for age, (user, group, fields) in enumerate(reversed(shapes), start=1):
        job = submit(user, group, **fields)
        when = now - timedelta(minutes=7 * age)
        Job.objects.filter(pk=job.pk).update(submitted_at=when, eligible_at=when)
    return now


def test_replay_decides_exactly_as_the_live_pass(world, monkeypatch):
    now = _queue(world)
    monkeypatch.setattr(timezone, "now", lambda: now)
    inputs = pool_inputs(start=now - timedelta(days=1), end=now + timedelta(seconds=1))
    sim = Simulation(
        inputs.nodes,
        inputs.requests,
        inputs.runtimes,
        replay_policy=Multifactor(),
        limits=inputs.limits,
        policy=policy_from_env(),
        tree=inputs.tree,
        partition_tier=inputs.partition_tier,
    )
    replayed = sim.pass_at(now.timestamp())

    started = set(run_pass())

    jobs = {job.pk: job for job in Job.objects.all()}
    assert {s.job_id for s in replayed.starts} == started
    for start in replayed.starts:
        assert jobs[start.job_id].allocation == {node: list(ix) for node, ix in start.allocation.items()}
        assert jobs[start.job_id].switches == list(start.switches)
    assert {b.job_id: b.reason for b in replayed.blocked} == {
        pk: job.reason for pk, job in jobs.items() if job.state == "PENDING"
    }
    # The queue exercised every kind of decision, so the equality above is not a vacuous one.
    reasons = {job.reason for job in jobs.values() if job.state == "PENDING"}
    assert {"Resources", "AssocGrpGRES", "Priority"} <= reasons
    assert len(started) >= 2


def test_replay_of_history_reports_per_tenant_names(world, monkeypatch):
    now = _queue(world)
    monkeypatch.setattr(timezone, "now", lambda: now)
    from scheduler.compare import compare
    from simulation.inputs import history_scenario

    (report,) = compare(
        history_scenario({"start": (now - timedelta(days=1)).isoformat(), "end": now.isoformat()}), ["multifactor"]
    )
    assert set(report.tenant_wait) == {"acme", "globex"}
    assert report.jobs == 8 and report.never_started == 0 and report.quota_violations == 0


def test_a_second_pass_after_jobs_end_still_matches(world, monkeypatch):
    """Ends, freed nodes, the reservation coming due and fair-share usage accrued since the first pass."""
    from jobs.services import transition

    now = _queue(world)
    clock = {"now": now}
    monkeypatch.setattr(timezone, "now", lambda: clock["now"])
    inputs = pool_inputs(start=now - timedelta(days=1), end=now + timedelta(seconds=1))
    first = set(run_pass())
    later = now + timedelta(minutes=5)
    ending = min(first)
    runtimes = {**inputs.runtimes, ending: 300.0}
    sim = Simulation(
        inputs.nodes,
        inputs.requests,
        runtimes,
        replay_policy=Multifactor(),
        limits=inputs.limits,
        policy=policy_from_env(),
        tree=inputs.tree,
        partition_tier=inputs.partition_tier,
    )
    assert {s.job_id for s in sim.pass_at(now.timestamp()).starts} == first

    transition(Job.objects.get(pk=ending), "COMPLETED", cause="test", at=later, exit_code=0)
    clock["now"] = later
    second = set(run_pass())
    replayed = sim.pass_at(later.timestamp())

    jobs = {job.pk: job for job in Job.objects.all()}
    assert second and {s.job_id for s in replayed.starts} == second
    for start in replayed.starts:
        assert jobs[start.job_id].allocation == {node: list(ix) for node, ix in start.allocation.items()}
    assert {b.job_id: b.reason for b in replayed.blocked} == {
        pk: job.reason for pk, job in jobs.items() if job.state == "PENDING"
    }
