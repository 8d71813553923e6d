"""Measured accelerator utilisation per job, from the monitoring app when it has samples.

The monitoring app owns the samples; accounting only asks it one question through
``monitoring.selectors.mean_accelerator_utilisation(job_ids) -> {job_id: 0..1}``. Until that function exists (or for
jobs it has no samples of) a job is "not measured": its allocated hours count, its used hours are unknown.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Collection

log = logging.getLogger(__name__)


def mean_utilisation(job_ids: Collection[int]) -> dict[int, float]:
    if not job_ids:
        return {}
    try:
        selectors = importlib.import_module("monitoring.selectors")
        source = selectors.mean_accelerator_utilisation
    except (ImportError, AttributeError):
        return {}
    measured = source(list(job_ids)) or {}
    return {int(job_id): min(1.0, max(0.0, float(value))) for job_id, value in measured.items() if value is not None}
