"""Property: on random workloads simulated forward, backfill never delays the reserved job and nothing is exceeded.

Each workload runs on a virtual clock (scheduler.replay): passes whenever a job ends, jobs end at random times within
their limits. Whenever the highest-priority pending job gets a reservation, it must start no later than that
reservation (nothing of higher priority is left to overtake it). After every pass, no accelerator is held twice, no
node gives more cpus or memory than it has, and no association limit is exceeded.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.model import AssocLimits
from scheduler.policy import Policy
from scheduler.replay import Replay
from tests.scheduler.helpers import job, pool

GROUPS = [("tenant:a", "group:a1"), ("tenant:a", "group:a2"), ("tenant:b", "group:b1")]
USERS = ["u1", "u2"]
POLICY = Policy(seconds_per_minute=60, switch_wait=120)

jobs_strategy = st.lists(
    st.tuples(
        st.integers(1, 3),  # nodes
        st.sampled_from([1, 2, 4, 8]),  # accelerators per node
        st.integers(1, 20),  # time limit, minutes
        st.floats(0.1, 1.0),  # share of the time limit it really runs
        st.integers(0, 2),  # group
        st.integers(0, 1),  # user
        st.integers(0, 5),  # priority
        st.sampled_from([False, False, True]),  # topology aware
    ),
    min_size=1,
    max_size=30,
)
limits_strategy = st.fixed_dictionaries(
    {
        "tenant_accel": st.sampled_from([None, 24, 40]),
        "group_accel": st.sampled_from([None, 8, 16]),
        "group_jobs": st.sampled_from([None, 2, 4]),
        "user_accel": st.sampled_from([None, 12]),
        "budget": st.sampled_from([None, 2000, 6000]),
    }
)


def make_limits(spec) -> dict[str, AssocLimits]:
    limits = {"tenant:a": AssocLimits("tenant a"), "group:a1": AssocLimits("group a1"), "group:b1": AssocLimits("b1")}
    if spec["tenant_accel"]:
        limits["tenant:a"].grp_tres["gres/accelerator"] = spec["tenant_accel"]
    if spec["group_accel"]:
        limits["group:a1"].grp_tres["gres/accelerator"] = spec["group_accel"]
    limits["group:a1"].grp_jobs = spec["group_jobs"]
    if spec["user_accel"]:
        limits["tenant:a"].max_tres_per_user["gres/accelerator"] = spec["user_accel"]
    if spec["budget"]:
        limits["group:b1"].grp_tres_mins["gres/accelerator"] = spec["budget"]
    return limits


def check_invariants(replay: Replay, limits: dict[str, AssocLimits]) -> None:
    held = set()
    for run, _ in replay.running.values():
        for node, indices in run.allocation.items():
            for index in indices:
                assert (node, index) not in held, f"accelerator {node}:{index} held twice"
                held.add((node, index))
    assert all(n.free_cpus >= 0 and n.free_memory_mb >= 0 for n in replay.nodes)
    usage = replay.usage()
    for key, limit in limits.items():
        used = usage.get(key)
        if used is None:
            continue
        for name, cap in limit.grp_tres.items():
            assert used.tres.get(name, 0) <= cap, f"{key} {name} over GrpTRES"
        if limit.grp_jobs is not None:
            assert used.jobs <= limit.grp_jobs
        for user_tres in used.tres_by_user.values():
            for name, cap in limit.max_tres_per_user.items():
                assert user_tres.get(name, 0) <= cap
        for name, budget in limit.grp_tres_mins.items():
            assert used.tres_mins.get(name, 0) <= budget + 1e-6


@settings(max_examples=150, deadline=None)
@given(specs=jobs_strategy, limit_spec=limits_strategy, switches=st.integers(1, 3), per_switch=st.integers(1, 3))
def test_backfill_never_delays_the_reservation_and_never_exceeds_a_limit(specs, limit_spec, switches, per_switch):
    limits = make_limits(limit_spec)
    replay = Replay(pool(switches=switches, per_switch=per_switch), limits, POLICY)
    queue, runtimes = [], {}
    for i, (nodes, apn, minutes, share, group, user, priority, topology) in enumerate(specs, start=1):
        queue.append(
            job(
                i,
                nodes,
                apn,
                GROUPS[group],
                USERS[user],
                minutes,
                priority=priority,
                topology_aware=topology,
                submitted_at=0.0,
                eligible_at=0.0,
            )  # fmt: skip
        )
        runtimes[i] = share * minutes * 60
    replay.submit(queue, runtimes)
    assert_reservations_hold(replay, limits)


shared_quota_jobs = st.lists(
    st.tuples(
        st.integers(1, 2),  # nodes
        st.sampled_from([4, 8]),  # accelerators per node
        st.integers(1, 20),  # time limit, minutes
        st.floats(0.3, 1.0),  # share of the time limit it really runs
        st.booleans(),  # in the other tenant's group (no limits)
        st.integers(0, 5),  # priority
    ),
    min_size=4,
    max_size=16,
)


@settings(max_examples=200, deadline=None)
@given(specs=shared_quota_jobs, cap=st.sampled_from([12, 16, 24]), per_switch=st.integers(2, 3))
def test_backfill_never_takes_the_quota_the_reserved_job_needs(specs, cap, per_switch):
    """Most jobs share one group's GrpTRES: backfill must leave the reserved job room in it at every pass."""
    limits = {"group:a1": AssocLimits("group a1", grp_tres={"gres/accelerator": cap})}
    queue, runtimes = [], {}
    for i, (nodes, apn, minutes, share, other, priority) in enumerate(specs, start=1):
        group = GROUPS[2] if other else GROUPS[0]
        queue.append(job(i, nodes, apn, group, "u1", minutes, priority=priority, submitted_at=0.0, eligible_at=0.0))
        runtimes[i] = share * minutes * 60
    replay = Replay(pool(switches=1, per_switch=per_switch), limits, POLICY)
    replay.submit(queue, runtimes)
    assert_reservations_hold(replay, limits)


def assert_reservations_hold(replay: Replay, limits) -> None:
    promises: dict[int, float] = {}
    for _ in range(500):
        decisions = replay.step()
        check_invariants(replay, limits)
        head = replay.passes[-1].pending[0] if replay.passes[-1].pending else None
        for reservation in decisions.reservations:
            if head is not None and reservation.job_id == head.id:
                promised = promises.setdefault(head.id, reservation.start)
                assert reservation.start <= promised + 1e-6, "a later pass pushed the reservation back"
        if not replay.advance():
            break
    for job_id, promised in promises.items():
        assert job_id in replay.started, f"job {job_id} was reserved for {promised} but never started"
        assert replay.started[job_id] <= promised + 1e-6, f"job {job_id} started after its reservation"
