"""Run-time prediction from history, as Helios and Tiresias do: a user's jobs look like that user's recent jobs.

Only what has ended is known: a replay calls `observe` when a job ends on the virtual clock, so a prediction at time
t never uses a job that ends after t.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

USER_WINDOW = 5  # a user's last runs: recent enough to follow a change of project
GROUP_WINDOW = 20
FLOOR = 60.0  # seconds: nothing is predicted shorter than a minute


@dataclass
class DurationPredictor:
    by_user: dict[str, deque] = field(default_factory=dict)
    by_group: dict[str, deque] = field(default_factory=dict)
    hits: int = 0  # predictions from the user's own history
    fallbacks: int = 0  # from the group's, or the time limit when neither has any

    def observe(self, user: str, group: str, runtime: float) -> None:
        self.by_user.setdefault(user, deque(maxlen=USER_WINDOW)).append(runtime)
        self.by_group.setdefault(group, deque(maxlen=GROUP_WINDOW)).append(runtime)

    def predict(self, user: str, group: str, limit: float) -> float:
        """Mean of the user's last runs, else of the group's, else the time limit; within [FLOOR, limit]."""
        history = self.by_user.get(user)
        if history:
            self.hits += 1
        else:
            self.fallbacks += 1
            history = self.by_group.get(group)
        if not history:
            return limit
        return min(limit, max(FLOOR, sum(history) / len(history)))
