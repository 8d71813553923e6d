"""Idle-accelerator decisions, pure: a job's utilisation series and its open episode in, one decision out. No ORM.

A job is idle when every slot of a trailing stretch of its utilisation series is below the threshold and that stretch
lasts at least the policy's minutes. The first time it is flagged (warned); under a cancel policy it is cancelled
once the grace period after the warning has passed and it is still idle. Busy again ends the episode, so the next idle
stretch is a new episode with a new warning.
"""

from __future__ import annotations

from dataclasses import dataclass

NOTHING, FLAG, CANCEL, END = "nothing", "flag", "cancel", "end"


@dataclass(frozen=True)
class Policy:
    threshold: float  # 0..1
    minutes: float
    cancel: bool = False
    grace_minutes: float = 15.0


@dataclass(frozen=True)
class IdleStretch:
    since: float
    until: float
    mean: float
    after_busy: bool = False  # a busy point precedes it in the series; else it may reach back further than shown

    @property
    def minutes(self) -> float:
        return (self.until - self.since) / 60.0


@dataclass(frozen=True)
class OpenEpisode:
    flagged_at: float
    cancel_at: float | None


@dataclass(frozen=True)
class Decision:
    action: str
    stretch: IdleStretch | None = None
    cancel_at: float | None = None


def trailing_stretch(series: list[tuple[float, float]], threshold: float) -> IdleStretch | None:
    """The trailing run of (time, utilisation) points below `threshold`, or None if the last point is busy.

    A stretch of one point has no length yet: it begins at its first point and ends at its last.
    """
    idle: list[tuple[float, float]] = []
    after_busy = False
    for at, value in reversed(series):
        if value >= threshold:
            after_busy = True
            break
        idle.append((at, value))
    if not idle:
        return None
    mean = sum(v for _, v in idle) / len(idle)
    return IdleStretch(since=idle[-1][0], until=idle[0][0], mean=mean, after_busy=after_busy)


def decide(series: list[tuple[float, float]], episode: OpenEpisode | None, policy: Policy, now: float) -> Decision:
    stretch = trailing_stretch(series, policy.threshold)
    if stretch is None:
        return Decision(END) if episode is not None else Decision(NOTHING)
    if episode is None:
        if stretch.minutes < policy.minutes:
            return Decision(NOTHING, stretch)
        cancel_at = now + policy.grace_minutes * 60 if policy.cancel else None
        return Decision(FLAG, stretch, cancel_at)
    if stretch.after_busy and stretch.since > episode.flagged_at:
        # It was busy in between (a pass that would have seen it was missed): that episode is over.
        return Decision(END, stretch)
    if episode.cancel_at is not None and now >= episode.cancel_at:
        return Decision(CANCEL, stretch)
    return Decision(NOTHING, stretch)
