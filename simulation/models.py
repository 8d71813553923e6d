"""A what-if replay an admin started in the browser: its inputs, its state, and the report it produced.

Not tenant-owned: replays read the whole pool's history and only staff may start or see them.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class RunKind(models.TextChoices):
    COMPARE = "compare", "policies side by side"
    WHATIF = "whatif", "quota change on past history"


class RunState(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class SimulationRun(models.Model):
    kind = models.CharField(max_length=16, choices=RunKind.choices)
    state = models.CharField(max_length=16, choices=RunState.choices, default=RunState.QUEUED)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    params = models.JSONField(default=dict, help_text="inputs: source, policies, load, window, quota changes")
    result = models.JSONField(default=dict, blank=True, help_text="reports per policy (scheduler.metrics.Report)")
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"simulation {self.pk} ({self.get_kind_display()}, {self.state})"

    @property
    def finished(self) -> bool:
        return self.state in (RunState.DONE, RunState.FAILED)
