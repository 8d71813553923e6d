"""Slurm's multifactor priority: age, fair share, job size and partition, each a factor in 0..1 times its weight.

Fair share is Slurm's classic algorithm: usage decays with a half-life; each association's share of the pool is its
shares over its siblings' times its parent's share; its effective usage blends its own normalised usage with its
parent's, so a tenant that used a lot pulls all its groups down; the factor is 2^(-effective usage / share).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.model import JobRequest
from scheduler.policy import Policy, Weights
from vocab.tres import ACCEL

LN2 = math.log(2)


@dataclass(frozen=True)
class Association:
    key: str
    parent: str | None
    shares: int = 1


@dataclass(frozen=True)
class UsageInterval:
    """A stretch of running time to bill: `rate` billing units per second from `start` to `end`."""

    associations: tuple[str, ...]
    rate: float
    start: float
    end: float


def decay(value: float, elapsed: float, half_life: float) -> float:
    if elapsed <= 0:
        return value
    return value * 2.0 ** (-elapsed / half_life)


def decayed_charge(rate: float, start: float, end: float, now: float, half_life: float) -> float:
    """Usage billed at `rate` over [start, end], each second decayed from when it was used until `now` (exact)."""
    if end <= start:
        return 0.0
    scale = half_life / LN2
    return rate * scale * (2.0 ** (-(now - end) / half_life) - 2.0 ** (-(now - start) / half_life))


def decay_usage(
    previous: Mapping[str, float], since: float, now: float, intervals: Iterable[UsageInterval], half_life: float
) -> dict[str, float]:
    """Usage as of `now`: what was stored at `since`, decayed, plus the intervals' usage after `since`."""
    usage = {key: decay(value, now - since, half_life) for key, value in previous.items()}
    for interval in intervals:
        charge = decayed_charge(interval.rate, max(interval.start, since), min(interval.end, now), now, half_life)
        if charge <= 0:
            continue
        for key in interval.associations:
            usage[key] = usage.get(key, 0.0) + charge
    return usage


def normalized_shares(tree: Sequence[Association]) -> dict[str, tuple[float, float]]:
    """Each association's (share of the whole pool, share among its siblings)."""
    siblings: dict[str | None, int] = {}
    for assoc in tree:
        siblings[assoc.parent] = siblings.get(assoc.parent, 0) + max(assoc.shares, 0)
    by_key = {a.key: a for a in tree}
    result: dict[str, tuple[float, float]] = {}

    def share(key: str) -> tuple[float, float]:
        if key in result:
            return result[key]
        assoc = by_key[key]
        level = siblings[assoc.parent]
        local = assoc.shares / level if level else 0.0
        parent = share(assoc.parent)[0] if assoc.parent in by_key else 1.0
        result[key] = (parent * local, local)
        return result[key]

    for assoc in tree:
        share(assoc.key)
    return result


def fairshare_factors(tree: Sequence[Association], usage: Mapping[str, float]) -> dict[str, float]:
    """2^(-effective usage / normalised shares) for every association (1.0 everywhere before anything ran)."""
    shares = normalized_shares(tree)
    roots = [a for a in tree if a.parent not in shares]
    total = sum(usage.get(a.key, 0.0) for a in roots)
    by_key = {a.key: a for a in tree}
    effective: dict[str, float] = {}

    def usage_efctv(key: str) -> float:
        if key in effective:
            return effective[key]
        own = usage.get(key, 0.0) / total if total > 0 else 0.0
        parent = by_key[key].parent
        if parent in by_key:
            value = own + (usage_efctv(parent) - own) * shares[key][1]
        else:
            value = own
        effective[key] = value
        return value

    factors = {}
    for assoc in tree:
        norm = shares[assoc.key][0]
        factors[assoc.key] = 2.0 ** (-usage_efctv(assoc.key) / norm) if norm > 0 else 0.0
    return factors


@dataclass
class PriorityContext:
    """What priority needs beyond the job: fair-share factors and the partitions' tiers and sizes."""

    fairshare: Mapping[str, float] = field(default_factory=dict)
    partition_tier: Mapping[str, int] = field(default_factory=dict)
    partition_size: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # (nodes, accelerators) in service

    @property
    def max_tier(self) -> int:
        return max(self.partition_tier.values(), default=1) or 1


@dataclass(frozen=True)
class Factors:
    age: float
    fairshare: float
    job_size: float
    partition: float

    def weighted(self, weights: Weights) -> dict[str, float]:
        return {
            "age": self.age * weights.age,
            "fairshare": self.fairshare * weights.fairshare,
            "job_size": self.job_size * weights.job_size,
            "partition": self.partition * weights.partition,
        }


class Prioritizer:
    """Priorities for a whole queue at one instant; per-partition constants are computed once."""

    def __init__(self, ctx: PriorityContext, now: float, policy: Policy):
        self.ctx, self.now, self.policy = ctx, now, policy
        self._max_tier = ctx.max_tier
        weights = policy.weights
        # Per partition: (points per node, points per accelerator, partition points), so a job costs a few multiplies.
        self._partition: dict[str, tuple[float, float, float]] = {}
        for name in set(ctx.partition_size) | set(ctx.partition_tier):
            nodes, accelerators = ctx.partition_size.get(name, (0, 0))
            self._partition[name] = (
                weights.job_size / nodes if nodes else 0.0,
                weights.job_size / accelerators if accelerators else 0.0,
                weights.partition * ctx.partition_tier.get(name, 1) / self._max_tier,
            )
        self._age_rate = weights.age / policy.max_age if policy.max_age > 0 else 0.0

    def factors(self, job: JobRequest) -> Factors:
        ctx, policy = self.ctx, self.policy
        waited = self.now - job.eligible_at
        age = min(1.0, waited / policy.max_age) if waited > 0 and policy.max_age > 0 else 0.0
        nodes, accelerators = ctx.partition_size.get(job.partition, (0, 0))
        size = max(job.nodes / nodes if nodes else 0.0, job.tres[ACCEL] / accelerators if accelerators else 0.0)
        return Factors(
            age=age,
            fairshare=ctx.fairshare.get(job.associations[-1], 1.0) if job.associations else 1.0,
            job_size=min(1.0, size),
            partition=ctx.partition_tier.get(job.partition, 1) / self._max_tier,
        )

    def priority(self, job: JobRequest) -> int:
        """The same sum as `factors` weighted, without building them (a pass prices every queued job)."""
        weights = self.policy.weights
        per_node, per_accelerator, tier = self._partition.get(job.partition) or (
            0.0,
            0.0,
            weights.partition / self._max_tier,
        )
        waited = self.now - job.eligible_at
        age = min(weights.age, waited * self._age_rate) if waited > 0 else 0.0
        size = min(weights.job_size, max(job.nodes * per_node, job.nodes * job.accelerators_per_node * per_accelerator))
        share = self.ctx.fairshare.get(job.associations[-1], 1.0) if job.associations else 1.0
        return round(age + share * weights.fairshare + size + tier)

    def assign(self, queue: Iterable[JobRequest]) -> None:
        """Set each job's priority in place (JobRequest is the core's own working copy)."""
        for job in queue:
            job.priority = self.priority(job)
