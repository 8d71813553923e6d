"""Notification objects of acme's alice, for the scoping walkers (tests/api/test_scoping.py, test_scoping_models)."""

from notifications.models import Channel, Delivery, ThresholdState
from notifications.services import endpoint_create


def acme_objects(world) -> dict[str, int]:
    endpoint, _ = endpoint_create(user=world.alice, url="https://hooks.acme.example/aipool")
    delivery = Delivery.objects.create(
        user=world.alice,
        endpoint=endpoint,
        channel=Channel.WEBHOOK,
        destination=f"webhook:{endpoint.pk}",
        event="job.ended",
        dedupe_key="job:1:run:0:ended",
        subject="job 1 (t) COMPLETED",
        payload={"text": "", "data": {}},
    )
    return {"webhook": endpoint.pk, "delivery": delivery.pk}


def populate(world) -> None:
    """A row of every tenant-owned notifications model, for both tenants."""
    ThresholdState.objects.create(group=world.ai_team, limit="GrpTRES:gres/accelerator", level=80)
    ThresholdState.objects.create(group=world.rivals, limit="GrpTRES:gres/accelerator", level=0)
