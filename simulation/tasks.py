"""Celery task of the simulation app: thin; the run claims itself, so a redelivery does nothing."""

from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=True, ignore_result=True)
def run_simulation(run_id: int) -> None:
    from simulation.services import simulation_execute

    simulation_execute(run_id=run_id)
