"""The autoscaler's decision (inference.autoscaler.decide): pure, so these run without a database."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference.autoscaler import Inputs, Policy, ScalerState, decide


def inputs(**fields) -> Inputs:
    base = dict(
        now=1000.0,
        min_replicas=2,
        max_replicas=20,
        target=1000,
        current=2,
        ready=2,
        stable_value=0.0,
        panic_value=0.0,
        quota_headroom=100,
        quota_message="",
    )
    return Inputs(**(base | fields))


def steady(value: float, **fields) -> Inputs:
    """The same load over both windows: no panic unless it is 2x what is ready."""
    return inputs(stable_value=value, panic_value=value, **fields)


def test_desired_is_the_stable_average_over_the_target_rounded_up():
    decision = decide(steady(4200.0, current=4, ready=4), ScalerState())
    assert decision.desired == 5
    assert decision.wanted == 5
    assert not decision.panic
    assert "stable: 4200 qps over 60 s / target 1000 asks for 5" in decision.reason


def test_an_exact_multiple_of_the_target_is_not_rounded_up_by_float_noise():
    assert decide(steady(0.1 * 3 * 10000, current=3, ready=3), ScalerState()).desired == 3


def test_no_traffic_scales_to_min():
    decision = decide(steady(0.0, current=2, ready=2), ScalerState())
    assert decision.desired == 2
    assert "raised to min 2" in decision.reason


def test_load_above_max_is_capped_at_max():
    decision = decide(steady(30_000.0, current=20, ready=20), ScalerState())
    assert decision.desired == 20
    assert decision.wanted == 30
    assert "capped at max 20" in decision.reason


def test_scale_down_is_at_most_half_of_ready_per_decision():
    decision = decide(steady(0.0, current=16, ready=16, min_replicas=1), ScalerState())
    assert decision.desired == 8
    assert decision.wanted == 0
    assert "scale-down bounded to 8" in decision.reason


def test_a_gentler_scale_down_rate_keeps_more():
    decision = decide(
        steady(0.0, current=16, ready=16, min_replicas=1), ScalerState(), Policy(max_scale_down_rate=1.25)
    )
    assert decision.desired == 12


def test_panic_when_the_panic_window_asks_for_twice_what_is_ready():
    decision = decide(inputs(stable_value=1500.0, panic_value=4000.0), ScalerState())
    assert decision.panic
    assert decision.desired == 4
    assert decision.state.panic_since == 1000.0
    assert "panic: 4000 qps over 6 s asks for 4" in decision.reason


def test_no_panic_below_twice_ready():
    decision = decide(inputs(stable_value=1500.0, panic_value=3000.0), ScalerState())  # 3 < 2 x 2
    assert not decision.panic
    assert decision.desired == 2  # the stable average asks for 2


def test_no_scale_down_while_panicking():
    first = decide(inputs(stable_value=1000.0, panic_value=8000.0), ScalerState())
    assert first.desired == 8
    calmer = decide(inputs(now=1010.0, current=8, ready=8, stable_value=1000.0, panic_value=500.0), first.state)
    assert calmer.panic
    assert calmer.desired == 8


def test_panic_ends_after_a_calm_stable_window_and_scale_down_resumes():
    first = decide(inputs(stable_value=1000.0, panic_value=8000.0), ScalerState())
    still = decide(inputs(now=1059.0, current=8, ready=8, stable_value=900.0, panic_value=900.0), first.state)
    assert still.panic and still.desired == 8
    calm = decide(inputs(now=1060.0, current=8, ready=8, stable_value=900.0, panic_value=900.0), still.state)
    assert not calm.panic
    assert calm.desired == 4  # halved at most, though one replica would do
    assert calm.state == ScalerState()


def test_panic_is_extended_while_the_condition_holds():
    state = decide(inputs(stable_value=1000.0, panic_value=8000.0), ScalerState()).state
    state = decide(inputs(now=1050.0, current=8, ready=4, stable_value=2000.0, panic_value=9000.0), state).state
    later = decide(inputs(now=1100.0, current=9, ready=9, stable_value=900.0, panic_value=900.0), state)
    assert later.panic  # 50 s after the last time it was over, not 100 s after it began


def test_a_scale_down_delay_holds_the_highest_count_of_the_delay():
    policy = Policy(scale_down_delay_s=30)
    busy = decide(steady(6000.0, current=6, ready=6), ScalerState(), policy)
    assert busy.desired == 6
    quiet = decide(steady(1000.0, now=1020.0, current=6, ready=6), busy.state, policy)
    assert quiet.desired == 6
    assert "held at 6 for the 30 s scale-down delay" in quiet.reason
    later = decide(steady(1000.0, now=1030.0, current=6, ready=6), quiet.state, policy)
    assert later.desired == 3  # the busy decision is 30 s old: the halving bound applies again


def test_a_scale_down_delay_never_holds_back_a_scale_up():
    policy = Policy(scale_down_delay_s=300)
    state = decide(steady(2000.0), ScalerState(), policy).state
    assert decide(steady(3000.0, now=1002.0), state, policy).desired == 3


def test_quota_caps_the_scale_up_and_says_which_limit():
    message = "group ai-team uses 796/800 accelerators"
    decision = decide(steady(9000.0, current=4, ready=4, quota_headroom=1, quota_message=message), ScalerState())
    assert decision.desired == 5
    assert decision.blocked_by_quota
    assert decision.blocked_message.startswith("scale-up blocked: group ai-team uses 796/800 accelerators")
    assert "wanted 9, quota allows 5" in decision.blocked_message


def test_quota_does_not_block_a_scale_up_that_fits():
    decision = decide(steady(5000.0, current=4, ready=4, quota_headroom=1), ScalerState())
    assert decision.desired == 5
    assert not decision.blocked_by_quota
    assert decision.blocked_message == ""


def test_quota_never_takes_away_replicas_that_run():
    decision = decide(steady(9000.0, current=6, ready=6, quota_headroom=0), ScalerState())
    assert decision.desired == 6
    assert decision.blocked_by_quota


def test_quota_can_hold_a_service_below_its_min_and_says_so():
    decision = decide(
        steady(0.0, current=0, ready=0, quota_headroom=1, quota_message="tenant acme uses 15/16"), ScalerState()
    )
    assert decision.desired == 1
    assert decision.blocked_by_quota and "tenant acme uses 15/16" in decision.blocked_message


def test_inputs_json_carries_what_the_decision_was_made_from():
    decision = decide(steady(4200.0, current=4, ready=3), ScalerState())
    data = decision.inputs_json()
    assert data["stable_value"] == 4200.0 and data["ready"] == 3 and data["target"] == 1000
    assert data["wanted"] == 5 and data["panic"] is False


@pytest.mark.parametrize(
    "fields",
    [dict(target=0), dict(min_replicas=3, max_replicas=2), dict(stable_value=-1.0), dict(current=-1)],
)
def test_nonsense_inputs_are_refused(fields):
    with pytest.raises(ValueError):
        inputs(**fields)


def test_a_panic_window_longer_than_the_stable_window_is_refused():
    with pytest.raises(ValueError):
        Policy(stable_window_s=6, panic_window_s=60)


counts = st.integers(min_value=0, max_value=60)
metric = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)


@st.composite
def random_inputs(draw) -> Inputs:
    low = draw(st.integers(min_value=0, max_value=10))
    high = draw(st.integers(min_value=max(low, 1), max_value=50))
    return Inputs(
        now=draw(st.floats(min_value=0, max_value=1e6)),
        min_replicas=low,
        max_replicas=high,
        target=draw(st.floats(min_value=0.5, max_value=5000)),
        current=draw(counts),
        ready=draw(counts),
        stable_value=draw(metric),
        panic_value=draw(metric),
        quota_headroom=draw(st.integers(min_value=0, max_value=60)),
        quota_message="group g uses 8/8 accelerators",
    )


@st.composite
def random_state(draw) -> ScalerState:
    if draw(st.booleans()):
        return ScalerState()
    since = draw(st.floats(min_value=0, max_value=1e6))
    recent = tuple(draw(st.lists(st.tuples(st.floats(min_value=0, max_value=1e6), counts), max_size=5)))
    return ScalerState(panic_since=since, panic_last_over=since, panic_max=draw(counts), recent=recent)


@settings(max_examples=400, deadline=None)
@given(random_inputs(), random_state())
def test_never_above_max_and_never_grows_past_the_quota(given_inputs, state):
    decision = decide(given_inputs, state)
    assert 0 <= decision.desired <= given_inputs.max_replicas
    if decision.desired > given_inputs.current:
        assert decision.desired <= given_inputs.current + given_inputs.quota_headroom


@settings(max_examples=400, deadline=None)
@given(random_inputs(), random_state())
def test_within_min_and_max_unless_the_quota_says_why(given_inputs, state):
    decision = decide(given_inputs, state)
    if decision.desired < given_inputs.min_replicas:
        assert decision.blocked_by_quota and decision.blocked_message.startswith("scale-up blocked:")


@settings(max_examples=400, deadline=None)
@given(random_inputs())
def test_outside_panic_one_decision_never_drops_below_half_of_ready(given_inputs):
    decision = decide(given_inputs, ScalerState())
    floor = min(max(1, given_inputs.ready) // 2, given_inputs.max_replicas)
    if not decision.blocked_by_quota:
        assert decision.desired >= floor


@settings(max_examples=300, deadline=None)
@given(random_inputs(), random_state(), st.floats(min_value=0, max_value=600))
def test_a_scale_down_delay_keeps_every_bound(given_inputs, state, delay):
    decision = decide(given_inputs, state, Policy(scale_down_delay_s=delay))
    assert 0 <= decision.desired <= given_inputs.max_replicas
    if decision.desired > given_inputs.current:
        assert decision.desired <= given_inputs.current + given_inputs.quota_headroom


@settings(max_examples=200, deadline=None)
@given(random_inputs(), random_state())
def test_the_same_input_gives_the_same_decision(given_inputs, state):
    assert decide(given_inputs, state) == decide(given_inputs, state)
