"""The autoscaler's decision, in the manner of Knative's KPA: observed metric in, desired replica count out.

Pure: no Django, no clock, no randomness. The Celery beat task (gateway.tasks.autoscale) feeds it the traffic the
gateway recorded; the replay (inference.replay) feeds it a request trace on a virtual clock. Both get the same answer
for the same input.

One decision:

1. Two averages of the metric (requests per second, or requests in flight): over the stable window (60 s) and over
   the panic window (6 s). Each asks for ceil(average / target) replicas.
2. Scale-down is bounded: never below ready / max_scale_down_rate in one decision (Knative's default halves at most).
3. Panic: when the panic window asks for at least panic_threshold x the ready replicas, the autoscaler panics and
   follows the panic window, never scaling down, until the condition has been absent for a whole stable window.
4. The count is kept within [min, max].
5. Quota: never more than current + quota_headroom (what the group's GrpTRES admits now). When that cap bites, the
   decision says so (blocked_by_quota and a message naming the limit).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

QPS = "qps"
CONCURRENCY = "concurrency"
METRICS = (QPS, CONCURRENCY)


@dataclass(frozen=True)
class Policy:
    """Knative's defaults, which the issue asks for: stable 60 s, panic 6 s entered at 2x."""

    stable_window_s: float = 60.0
    panic_window_s: float = 6.0
    panic_threshold: float = 2.0
    max_scale_down_rate: float = 2.0  # ready / 2 is the floor of one decision
    max_scale_up_rate: float = 1000.0  # ready x 1000 is the ceiling of one decision (Knative's default)
    # Knative's scale-down-delay: a scale-down takes effect only once every decision of the last `delay` seconds
    # agrees with it, so recurring bursts find their replicas still warm. 0: off (Knative's default).
    scale_down_delay_s: float = 0.0

    def __post_init__(self):
        if not 0 < self.panic_window_s <= self.stable_window_s:
            raise ValueError("the panic window must be positive and no longer than the stable window")
        if self.panic_threshold <= 1 or self.max_scale_down_rate < 1 or self.max_scale_up_rate < 1:
            raise ValueError("panic_threshold must exceed 1; scale rates must be at least 1")
        if self.scale_down_delay_s < 0:
            raise ValueError("scale_down_delay_s cannot be negative")


@dataclass(frozen=True)
class ScalerState:
    """What one decision hands to the next: when panic began (None: not panicking) and the most it asked for."""

    panic_since: float | None = None
    panic_last_over: float | None = None  # the last time the panic condition held
    panic_max: int = 0
    recent: tuple[tuple[float, int], ...] = ()  # (time, count) of the decisions within the scale-down delay


@dataclass(frozen=True)
class Inputs:
    now: float
    min_replicas: int
    max_replicas: int
    target: float  # metric per replica
    current: int  # replicas asked for now (desired_replicas)
    ready: int  # replicas that answer now
    stable_value: float  # metric averaged over the stable window
    panic_value: float  # metric averaged over the panic window
    quota_headroom: int  # how many more replicas the quota admits now
    quota_message: str = ""  # the binding limit, e.g. "group ai-team uses 796/800 accelerators"
    metric: str = QPS

    def __post_init__(self):
        if self.target <= 0:
            raise ValueError("target must be positive")
        if not 0 <= self.min_replicas <= self.max_replicas:
            raise ValueError("need 0 <= min_replicas <= max_replicas")
        if self.current < 0 or self.ready < 0 or self.stable_value < 0 or self.panic_value < 0:
            raise ValueError("counts and metric values cannot be negative")


@dataclass(frozen=True)
class Decision:
    desired: int
    wanted: int  # what the metric asked for, before the rate bounds, [min, max] and the quota
    reason: str
    blocked_by_quota: bool
    blocked_message: str
    panic: bool
    state: ScalerState
    inputs: Inputs
    notes: tuple[str, ...] = field(default=())

    def inputs_json(self) -> dict:
        """The inputs as stored on the ScalingEvent: enough to replay this decision by hand."""
        data = asdict(self.inputs)
        data.update(panic=self.panic, wanted=self.wanted, panic_since=self.state.panic_since)
        return data


def desired_for(value: float, target: float) -> int:
    # A hair of tolerance: 3000 qps / 1000 is 3 replicas, not 4 because of float noise in an average.
    return max(0, math.ceil(value / target - 1e-9))


def decide(inputs: Inputs, state: ScalerState, policy: Policy | None = None) -> Decision:
    policy = policy or Policy()
    ready = max(1, inputs.ready)  # as Knative: zero ready replicas are counted as one for the rates
    stable_wanted = desired_for(inputs.stable_value, inputs.target)
    panic_wanted = desired_for(inputs.panic_value, inputs.target)
    floor = math.floor(ready / policy.max_scale_down_rate)
    ceiling = math.ceil(ready * policy.max_scale_up_rate)
    stable = min(max(stable_wanted, floor), ceiling)
    burst = min(max(panic_wanted, floor), ceiling)

    state = _next_panic_state(inputs.now, burst / ready >= policy.panic_threshold, state, policy)
    notes: list[str] = []
    if state.panic_since is not None:
        wanted = max(panic_wanted, stable_wanted)
        # Provision for the larger of the two windows, and never scale down while panicking.
        desired = max(burst, stable, state.panic_max, inputs.current)
        state = replace(state, panic_max=desired)
        notes.append(
            f"panic: {inputs.panic_value:g} {inputs.metric} over {policy.panic_window_s:g} s asks for {panic_wanted}"
            f" (>= {policy.panic_threshold:g}x {ready} ready while panicking)"
        )
    else:
        wanted = stable_wanted
        desired = stable
        notes.append(
            f"stable: {inputs.stable_value:g} {inputs.metric} over {policy.stable_window_s:g} s"
            f" / target {inputs.target:g} asks for {stable_wanted}"
        )
        if stable != stable_wanted:
            notes.append(f"scale-down bounded to {stable} (at most 1/{policy.max_scale_down_rate:g} per decision)")

    # Before [min, max]: a max lowered since those decisions still binds.
    if policy.scale_down_delay_s > 0:
        recent = tuple((t, n) for t, n in state.recent if inputs.now - t < policy.scale_down_delay_s)
        recent += ((inputs.now, desired),)
        state = replace(state, recent=recent)
        held = max(n for _, n in recent)
        if held > desired:
            notes.append(f"held at {held} for the {policy.scale_down_delay_s:g} s scale-down delay")
            desired = held
    desired, bound_note = _within_bounds(desired, inputs.min_replicas, inputs.max_replicas)
    if bound_note:
        notes.append(bound_note)
    desired, blocked_message = _within_quota(desired, inputs)
    if blocked_message:
        notes.append(blocked_message)
    return Decision(
        desired=desired,
        wanted=wanted,
        reason="; ".join(notes),
        blocked_by_quota=bool(blocked_message),
        blocked_message=blocked_message,
        panic=state.panic_since is not None,
        state=state,
        inputs=inputs,
        notes=tuple(notes),
    )


def _next_panic_state(now: float, over: bool, state: ScalerState, policy: Policy) -> ScalerState:
    if over:
        since = state.panic_since if state.panic_since is not None else now
        return replace(state, panic_since=since, panic_last_over=now)
    if state.panic_since is None:
        return replace(state, panic_last_over=None, panic_max=0)
    last_over = state.panic_last_over if state.panic_last_over is not None else state.panic_since
    if now - last_over >= policy.stable_window_s:
        # Calm for a whole stable window: back to the stable average.
        return replace(state, panic_since=None, panic_last_over=None, panic_max=0)
    return state


def _within_bounds(desired: int, low: int, high: int) -> tuple[int, str]:
    if desired < low:
        return low, f"raised to min {low}"
    if desired > high:
        return high, f"capped at max {high}"
    return desired, ""


def _within_quota(desired: int, inputs: Inputs) -> tuple[int, str]:
    # Running replicas are never taken away because a limit was lowered (Slurm does not kill running jobs either):
    # the quota only stops growth beyond what is asked for now.
    cap = inputs.current + max(0, inputs.quota_headroom)
    if desired <= cap:
        return desired, ""
    limit = inputs.quota_message or "the group's quota admits no more replicas"
    return cap, f"scale-up blocked: {limit} (wanted {desired}, quota allows {cap})"
