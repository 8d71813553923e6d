"""Writes of the simulation app: start a run (audited, enqueued after commit) and carry one out (idempotently)."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from scheduler.compare import LIVE_POLICY, compare, whatif
from scheduler.policies import policy_names
from scheduler.workload import WorkloadError
from simulation.inputs import proposed_limits, scenario
from simulation.models import RunKind, RunState, SimulationRun
from tenants.services import audit

log = logging.getLogger(__name__)


@transaction.atomic
def simulation_start(*, user, kind: str, params: dict) -> SimulationRun:
    """Queue a replay; the Celery task runs it after this transaction commits."""
    if kind not in RunKind.values:
        raise WorkloadError(f"kind {kind!r}: expected {', '.join(RunKind.values)}")
    run = SimulationRun.objects.create(kind=kind, params=params, created_by=user)
    audit(actor=user, action="simulation.start", target=run, tenant=None, changes={"params": _summary(params)})
    from simulation.tasks import run_simulation

    transaction.on_commit(lambda: run_simulation.delay(run.pk))
    return run


def _summary(params: dict) -> dict:
    """What the audit log keeps of the parameters (not an uploaded trace)."""
    return {key: value for key, value in params.items() if key != "data"}


def simulation_execute(*, run_id: int) -> SimulationRun | None:
    """Claim a queued run (a conditional UPDATE: a second delivery finds nothing to claim), replay, store the report."""
    claimed = SimulationRun.objects.filter(pk=run_id, state=RunState.QUEUED).update(
        state=RunState.RUNNING, started_at=timezone.now()
    )
    if not claimed:
        return None
    run = SimulationRun.objects.get(pk=run_id)
    try:
        result = compute(run.kind, run.params)
    except (WorkloadError, ValueError) as exc:
        _finish(run, RunState.FAILED, error=str(exc))
    except Exception as exc:  # a bug must still end the run, not leave it RUNNING for ever
        log.exception("simulation %s failed", run_id)
        _finish(run, RunState.FAILED, error=f"internal error: {type(exc).__name__}")
    else:
        _finish(run, RunState.DONE, result=result)
    return run


def compute(kind: str, params: dict) -> dict:
    if kind == RunKind.WHATIF:
        setting = scenario({**params, "quotas": ""})  # today's limits first; the proposal is the change
        outcome = whatif(setting, proposed_limits(params.get("quotas") or "", setting), LIVE_POLICY)
        return {"whatif": outcome.as_dict(), "notes": setting.notes}
    setting = scenario(params)
    names = policy_names(",".join(params.get("policies") or ["all"]))
    return {"policies": [report.as_dict() for report in compare(setting, names)], "notes": setting.notes}


def _finish(run: SimulationRun, state: str, *, result: dict | None = None, error: str = "") -> None:
    run.state, run.result, run.error, run.finished_at = state, result or {}, error, timezone.now()
    run.save(update_fields=["state", "result", "error", "finished_at"])
