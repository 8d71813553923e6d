"""Signals other domains subscribe to (notifications): sent after commit, never inside a transaction."""

from django.dispatch import Signal

# Sent when a running job's accelerators stayed below the idle threshold for the configured minutes.
# kwargs: job (jobs.Job), minutes (int), utilisation (float, 0..1), action ("warned" | "cancelled")
accelerators_idle = Signal()
