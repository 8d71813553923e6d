"""Small pools and workloads for replay tests, built in code."""

from pathlib import Path

from scheduler.model import JobRequest
from scheduler.workload import uniform_pool

DATA = Path(__file__).parent / "data"


def job(job_id, *, at=0.0, nodes=1, apn=8, minutes=60, tenant="t1", group=None, user="u1", partition="main"):
    return JobRequest(
        id=job_id,
        partition=partition,
        nodes=nodes,
        accelerators_per_node=apn,
        cpus_per_node=0,
        memory_per_node=0,
        time_limit=minutes,
        associations=(f"tenant:{tenant}", f"group:{group or tenant + '-g'}"),
        user=user,
        submitted_at=at,
    )


def pool(count=2, switch_size=32):
    return uniform_pool(count, switch_size=switch_size)
