"""One run of the autoscaler over every service that scales: traffic in, inference.services.service_scale out.

The decision itself is inference.autoscaler.decide (pure); this module only reads its inputs and applies it.
"""

from __future__ import annotations

import logging

from gateway import conf, selectors, services
from inference.autoscaler import Inputs, Policy, decide
from inference.selectors import AutoscaleTarget, autoscale_inputs
from inference.services import service_scale

log = logging.getLogger(__name__)

BLOCKED_PREFIX = "scale-up blocked: "


def run_autoscaler(*, now: float, policy: Policy | None = None) -> dict[int, int]:
    """Decide for every service that scales; returns service id → desired replicas for those decided now."""
    policy = policy or conf.autoscale_policy()
    services.purge_traffic(keep_seconds=conf.traffic_keep_seconds(), now=now)
    targets = autoscale_inputs()
    if not targets:
        return {}
    ids = [t.service_id for t in targets]
    stable = selectors.observed_many(ids, policy.stable_window_s, now)
    panic = selectors.observed_many(ids, policy.panic_window_s, now)
    # Half a period: a second run in the same beat tick is a duplicate; the next tick's run is not.
    min_gap = conf.autoscale_seconds() / 2
    decided = {}
    for target in targets:
        try:
            desired = _decide_one(target, stable[target.service_id], panic[target.service_id], now, policy, min_gap)
        except Exception:  # one service's trouble must not stop the others from scaling
            log.exception("autoscaling service %s failed", target.service_id)
            continue
        if desired is not None:
            decided[target.service_id] = desired
    return decided


def _decide_one(target: AutoscaleTarget, stable, panic, now: float, policy: Policy, min_gap: float) -> int | None:
    state = services.claim_decision(service_id=target.service_id, now=now, min_gap_s=min_gap)
    if state is None:
        return None
    decision = decide(_inputs(target, stable, panic, now), state, policy)
    service_scale(
        service_id=target.service_id,
        desired=decision.desired,
        wanted=decision.wanted,
        reason=decision.reason,
        inputs=decision.inputs_json(),
        blocked_by_quota=decision.blocked_by_quota,
        blocked_message=decision.blocked_message.removeprefix(BLOCKED_PREFIX),
    )
    services.save_scaler_state(service_id=target.service_id, state=decision.state)
    return decision.desired


def _inputs(target: AutoscaleTarget, stable: selectors.Observed, panic: selectors.Observed, now: float) -> Inputs:
    headroom = target.quota_headroom_replicas
    return Inputs(
        now=now,
        min_replicas=target.min_replicas,
        max_replicas=target.max_replicas,
        target=float(target.scale_target),
        current=target.desired_replicas,
        ready=target.ready_replicas,
        stable_value=stable.metric(target.scale_metric),
        panic_value=panic.metric(target.scale_metric),
        # No limit binds: the quota admits anything up to max.
        quota_headroom=target.max_replicas if headroom is None else headroom,
        quota_message=target.quota_message,
        metric=target.scale_metric,
    )
