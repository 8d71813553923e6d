"""Partitions and nodes (sinfo): capacity, and node states computed from what running jobs hold."""

import pytest

from cluster.models import Node, NodeState
from jobs.models import Job
from tests.factories import PartitionFactory
from tests.jobs.helpers import submit

pytestmark = pytest.mark.django_db


def _run_on(job, allocation):
    Job.objects.filter(pk=job.pk).update(state="RUNNING", allocation=allocation, nodelist=list(allocation))


def test_partitions_show_capacity_and_free_accelerators(world, api):
    _run_on(submit(world.alice, world.ai_team, accelerators_per_node=3), {"node1": [0, 1, 2]})
    Node.objects.filter(name="node4").update(state=NodeState.DOWN)
    PartitionFactory(name="debug", max_time=None)
    partitions = {p["name"]: p for p in api(world.mallory).get("/api/v1/partitions/").json()["results"]}
    main = partitions["main"]
    assert (main["default"], main["max_time"], main["max_time_minutes"]) == (True, "7-00:00:00", 7 * 24 * 60)
    assert (main["nodes"], main["accelerators_total"], main["accelerators_free"]) == (4, 32, 32 - 3 - 8)
    assert partitions["debug"]["max_time"] == "UNLIMITED" and partitions["debug"]["max_time_minutes"] is None


def test_node_states_follow_allocations_and_the_admins_word(world, api):
    _run_on(submit(world.alice, world.ai_team, accelerators_per_node=3), {"node1": [0, 1, 2]})
    _run_on(submit(world.alice, world.ai_team, accelerators_per_node=8), {"node2": list(range(8))})
    Node.objects.filter(name="node4").update(state=NodeState.DRAIN)
    nodes = {n["name"]: n for n in api(world.alice).get("/api/v1/nodes/").json()["results"]}
    assert {name: n["state"] for name, n in nodes.items()} == {
        "node1": "MIXED", "node2": "ALLOCATED", "node3": "IDLE", "node4": "DRAIN",
    }  # fmt: skip
    assert (nodes["node1"]["accelerators_total"], nodes["node1"]["accelerators_allocated"]) == (8, 3)
    assert nodes["node1"]["switch"] == "leaf0" and nodes["node1"]["partitions"] == ["main"]
