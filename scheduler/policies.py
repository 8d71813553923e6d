"""The policies a replay compares, each a thin layer over the same `Planner` the live pass runs.

- ``fifo``: first come first served, no backfill: the first job that does not fit holds its partition (Slurm's
  sched/builtin).
- ``easy``: first come first served with EASY backfill on time limits (Slurm's default sched/backfill).
- ``multifactor``: the live default: multifactor priority (age, fair share, size, partition) with EASY backfill,
  exactly as jobs.scheduling computes it.
- ``learned``: each job's run time predicted from its user's (else its group's) ended jobs; the prediction plans
  backfill and gives shorter jobs priority; age outweighs it after `AGING` so no job starves; fair share still counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from scheduler.admission import first_violation
from scheduler.core import START, WAIT, Outcome, Planner
from scheduler.model import JobRequest
from scheduler.policy import Policy
from scheduler.predict import DurationPredictor
from scheduler.priority import Prioritizer, PriorityContext
from vocab.states import Reason

SPF_WEIGHT = 10_000  # shortest predicted first: a one-minute job gets all of it, a 30-day job none
AGE_WEIGHT = 20_000  # ... and after AGING/2 of waiting any job outranks the shortest fresh one
FAIRSHARE_WEIGHT = 2_000
AGING = 86_400.0
LONGEST = 30 * 86_400.0


class NoBackfillPlanner(Planner):
    """Once a partition's first job does not fit, nothing behind it starts. Without backfill nobody reads where
    that job would start, so it is not planned (planning the future is most of a backfill pass's cost)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.held: set[str] = set()

    def evaluate(self, job: JobRequest) -> Outcome:
        if job.partition in self.held:
            return Outcome(WAIT, Reason.PRIORITY, None)
        cause = first_violation(job, self.limits, self.usage)
        if cause is not None:
            return Outcome(WAIT, cause.code, None, (), cause)
        chosen = self.place_now(job, open_only=False)
        if chosen is None:
            return Outcome(WAIT, Reason.RESOURCES, None)
        return Outcome(START, Reason.NONE, self.now, tuple(chosen))

    def commit(self, job: JobRequest, outcome: Outcome) -> None:
        if outcome.reason == Reason.RESOURCES:
            self.held.add(job.partition)
        super().commit(job, outcome)


class ReplayPolicy:
    name = ""
    title = ""
    planner_class: type[Planner] = Planner
    uses_fairshare = False

    def prioritize(self, queue: Sequence[JobRequest], now: float, ctx: PriorityContext, policy: Policy) -> None:
        for job in queue:
            job.priority = 0

    def planned_minutes(self, job: JobRequest, now: float) -> int:
        """The time limit the core plans this job with (backfill and reservations): its own, unless predicted."""
        return job.time_limit

    def observe(self, job: JobRequest, runtime: float) -> None:
        """A job ended after `runtime` seconds (policies that learn remember it)."""


class Fifo(ReplayPolicy):
    name, title = "fifo", "FIFO (no backfill)"
    planner_class = NoBackfillPlanner


class EasyBackfill(ReplayPolicy):
    name, title = "easy", "FIFO + EASY backfill (Slurm default)"


class Multifactor(ReplayPolicy):
    name, title = "multifactor", "multifactor + fair share + backfill (live default)"
    uses_fairshare = True

    def prioritize(self, queue, now, ctx, policy) -> None:
        Prioritizer(ctx, now, policy).assign(queue)


class LearnedDuration(ReplayPolicy):
    name, title = "learned", "learned duration: predicted SPF + backfill + aging"
    uses_fairshare = True

    def __init__(self) -> None:
        self.predictor = DurationPredictor()
        self._predicted: dict[int, float] = {}

    def predicted(self, job: JobRequest, limit: float) -> float:
        value = self._predicted.get(job.id)
        if value is None:
            # Fixed at the first pass that sees it, from what had ended by then: later ends never reorder a waiting job
            value = self._predicted[job.id] = self.predictor.predict(job.user, job.associations[-1], limit)
        return value

    def prioritize(self, queue, now, ctx, policy) -> None:
        scale = math.log1p(LONGEST)
        for job in queue:
            predicted = self.predicted(job, policy.duration(job.time_limit))
            shortness = max(0.0, 1.0 - math.log1p(predicted) / scale)
            waited = max(0.0, now - job.eligible_at)
            share = ctx.fairshare.get(job.associations[-1], 1.0) if job.associations else 1.0
            job.priority = round(
                SPF_WEIGHT * shortness + AGE_WEIGHT * min(1.0, waited / AGING) + FAIRSHARE_WEIGHT * share
            )

    def planned_minutes(self, job: JobRequest, now: float) -> int:
        predicted = self._predicted.get(job.id)
        if predicted is None:
            return job.time_limit
        return max(1, min(job.time_limit, math.ceil(predicted / 60.0)))

    def observe(self, job: JobRequest, runtime: float) -> None:
        self.predictor.observe(job.user, job.associations[-1], runtime)
        self._predicted.pop(job.id, None)


POLICIES: Mapping[str, type[ReplayPolicy]] = {
    cls.name: cls for cls in (Fifo, EasyBackfill, Multifactor, LearnedDuration)
}
BASELINE = "easy"


def policy_names(spec: str) -> list[str]:
    """'all' or a comma-separated list of names → names, in the table's order."""
    if spec.strip() == "all":
        return list(POLICIES)
    names = [name.strip() for name in spec.split(",") if name.strip()]
    unknown = [name for name in names if name not in POLICIES]
    if unknown or not names:
        raise ValueError(f"unknown policy {', '.join(unknown) or spec!r}; known: {', '.join(POLICIES)} or all")
    return names
