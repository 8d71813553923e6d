"""The scheduler's knobs, in Slurm's terms. The adapter fills them from the environment; the core only reads them."""

from __future__ import annotations

from dataclasses import dataclass, field

DAY = 86400.0


@dataclass(frozen=True)
class Weights:
    """PriorityWeight*: how many priority points each factor (0..1) is worth."""

    age: int = 1000
    fairshare: int = 10000
    job_size: int = 1000
    partition: int = 1000


@dataclass(frozen=True)
class Policy:
    weights: Weights = field(default_factory=Weights)
    # Length of one time-limit minute in seconds: demos and tests shorten it, and every duration below scales with it.
    seconds_per_minute: float = 60.0
    max_age: float = 7 * DAY  # PriorityMaxAge: the age factor is 1 from here on
    half_life: float = 7 * DAY  # PriorityDecayHalfLife of fair-share usage
    switch_wait: float = 300.0  # max_switch_wait: how long a topology-constrained job waits before spreading
    plan_window: float = 7 * DAY  # bf_window: explanations plan jobs into the future this far, no further
    # TRESBillingWeights: fair-share usage is billed per second in accelerator-equivalents.
    billing_accelerator: float = 1.0
    billing_cpu: float = 1 / 16

    def duration(self, time_limit_minutes: int) -> float:
        return time_limit_minutes * self.seconds_per_minute

    def billing_rate(self, accelerators: int, cpus: int) -> float:
        return accelerators * self.billing_accelerator + cpus * self.billing_cpu
