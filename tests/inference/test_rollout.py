"""The replica plan (pure): scale up and down, replace failures, roll generations without a gap, renew expiring jobs."""

from inference.rollout import Plan, ReplicaView, crash_backoff_s, plan, service_state


def views(*rows):
    return [ReplicaView(id=i, generation=g, state=s, seconds_left=left) for i, g, s, left in rows]


def test_an_empty_service_starts_its_desired_replicas():
    assert plan(desired=2, generation=1, replicas=[], replace_before_s=60) == Plan(start=2, drain=())


def test_extras_drain_cheapest_first():
    replicas = views((1, 1, "READY", None), (2, 1, "READY", None), (3, 1, "STARTING", None), (4, 1, "PENDING", None))
    assert plan(desired=2, generation=1, replicas=replicas, replace_before_s=60) == Plan(start=0, drain=(4, 3))
    # a further scale-down drains the newest ready one
    assert plan(desired=1, generation=1, replicas=replicas[:2], replace_before_s=60) == Plan(start=0, drain=(2,))


def test_old_generation_keeps_serving_until_new_replicas_are_ready():
    old = views((1, 1, "READY", None), (2, 1, "READY", None))
    starting = plan(desired=2, generation=2, replicas=old, replace_before_s=60)
    assert starting == Plan(start=2, drain=())
    half = old + views((3, 2, "READY", None), (4, 2, "STARTING", None))
    assert plan(desired=2, generation=2, replicas=half, replace_before_s=60) == Plan(start=0, drain=(1,))
    done = old + views((3, 2, "READY", None), (4, 2, "READY", None))
    assert plan(desired=2, generation=2, replicas=done, replace_before_s=60) == Plan(start=0, drain=(1, 2))


def test_old_generation_replicas_that_never_served_are_dropped_at_once():
    replicas = views((1, 1, "PENDING", None), (2, 1, "STARTING", None))
    assert plan(desired=2, generation=2, replicas=replicas, replace_before_s=60) == Plan(start=2, drain=(1, 2))


def test_a_replica_near_its_time_limit_is_replaced_before_it_expires():
    replicas = views((1, 1, "READY", 30.0), (2, 1, "READY", 5000.0))
    first = plan(desired=2, generation=1, replicas=replicas, replace_before_s=60)
    assert first == Plan(start=1, drain=())  # replica 1 keeps serving meanwhile
    with_new = replicas + views((3, 1, "READY", 6000.0))
    assert plan(desired=2, generation=1, replicas=with_new, replace_before_s=60) == Plan(start=0, drain=(1,))


def test_failed_and_draining_replicas_do_not_count():
    replicas = views((1, 1, "FAILED", None), (2, 1, "DRAINING", None), (3, 1, "READY", None))
    assert plan(desired=2, generation=1, replicas=replicas, replace_before_s=60) == Plan(start=1, drain=())


def test_scale_to_zero_drains_everything():
    replicas = views((1, 1, "READY", None), (2, 1, "PENDING", None))
    assert plan(desired=0, generation=1, replicas=replicas, replace_before_s=60) == Plan(start=0, drain=(2, 1))


def test_service_state_follows_its_replicas():
    def state(previous="PENDING", desired=2, min_replicas=2, ready_current=0, ready_total=0, retiring=0):
        return service_state(
            previous=previous, desired=desired, min_replicas=min_replicas, ready_current=ready_current,
            ready_total=ready_total, retiring=retiring,
        )  # fmt: skip

    assert state() == "PENDING"
    assert state(ready_current=2, ready_total=2) == "READY"
    assert state(previous="READY", desired=5, ready_current=3, ready_total=3) == "READY"  # scaling up
    assert state(previous="READY", ready_current=1, ready_total=1) == "DEGRADED"
    assert state(previous="READY", ready_current=0, ready_total=2, retiring=2) == "UPDATING"


def test_crash_backoff_doubles_up_to_five_minutes():
    assert [crash_backoff_s(n) for n in (0, 1, 2, 3, 4, 10)] == [0.0, 0.0, 5.0, 10.0, 20.0, 300.0]
