"""Every association limit, at every level of the tree, with Slurm's reason code and the numbers behind it."""

import pytest

from scheduler.admission import violations
from scheduler.core import schedule
from scheduler.model import AssocLimits, AssocUsage
from tests.scheduler.helpers import GIB, job, pool

CHAIN = ("tenant:t", "group:parent", "group:child")
LEVELS = {"tenant:t": "tenant t", "group:parent": "group parent", "group:child": "group child"}


def blocked(limit_key: str, limit: AssocLimits, queue, usage=None):
    decisions = schedule(pool(switches=4, per_switch=4), queue, {limit_key: limit}, usage or {}, 0)
    return decisions, {b.job_id: b for b in decisions.blocked}


@pytest.mark.parametrize("level", list(LEVELS))
@pytest.mark.parametrize(
    ("tres", "cap", "code"),
    [
        ("gres/accelerator", 12, "AssocGrpGRES"),
        ("cpu", 12, "AssocGrpCpuLimit"),
        ("mem", 12 * GIB, "AssocGrpMemLimit"),
        ("node", 1, "AssocGrpNodeLimit"),
    ],
)
def test_grp_tres_at_every_level(level, tres, cap, code):
    limit = AssocLimits(name=LEVELS[level], grp_tres={tres: cap})
    decisions, blocks = blocked(level, limit, [job(1, assoc=CHAIN), job(2, assoc=CHAIN)])
    assert [s.job_id for s in decisions.starts] == [1]
    assert blocks[2].reason == code
    assert blocks[2].detail.startswith(f"{LEVELS[level]} has ")


@pytest.mark.parametrize("level", list(LEVELS))
def test_grp_jobs_at_every_level(level):
    limit = AssocLimits(name=LEVELS[level], grp_jobs=2)
    decisions, blocks = blocked(level, limit, [job(i, apn=1, assoc=CHAIN) for i in range(1, 4)])
    assert [s.job_id for s in decisions.starts] == [1, 2]
    assert blocks[3].reason == "AssocGrpJobsLimit"


@pytest.mark.parametrize("level", list(LEVELS))
def test_max_tres_per_user_at_every_level(level):
    limit = AssocLimits(name=LEVELS[level], max_tres_per_user={"gres/accelerator": 8})
    queue = [job(1, user="x", assoc=CHAIN), job(2, user="x", assoc=CHAIN), job(3, user="y", assoc=CHAIN)]
    decisions, blocks = blocked(level, limit, queue)
    assert [s.job_id for s in decisions.starts] == [1, 3]
    assert blocks[2].reason == "QOSMaxGRESPerUser"


@pytest.mark.parametrize("level", list(LEVELS))
def test_grp_tres_mins_at_every_level(level):
    limit = AssocLimits(name=LEVELS[level], grp_tres_mins={"gres/accelerator": 1000})
    usage = {level: AssocUsage(tres_mins={"gres/accelerator": 600})}
    decisions, blocks = blocked(level, limit, [job(1, assoc=CHAIN), job(2, apn=4, time_limit=100, assoc=CHAIN)], usage)
    assert [s.job_id for s in decisions.starts] == [2]  # 400 fit in 1000 - 600; 480 would not
    assert blocks[1].reason == "AssocGrpGRESMinutes"


def test_a_limit_of_another_branch_does_not_apply():
    limit = AssocLimits(name="group other", grp_jobs=0)
    decisions, _ = blocked("group:other", limit, [job(1, assoc=CHAIN)])
    assert [s.job_id for s in decisions.starts] == [1]


def test_every_limit_that_blocks_is_listed_root_first_with_numbers():
    limits = {
        "tenant:t": AssocLimits(name="tenant t", grp_tres={"gres/accelerator": 20}),
        "group:child": AssocLimits(name="group child", grp_tres={"gres/accelerator": 16}, grp_jobs=1),
    }
    usage = {"tenant:t": AssocUsage(tres={"gres/accelerator": 8}, jobs=1), "group:child": AssocUsage(jobs=1)}
    usage["group:child"].tres = {"gres/accelerator": 8}
    causes = list(violations(job(1, nodes=2, assoc=CHAIN), limits, usage))
    assert [c.code for c in causes] == ["AssocGrpGRES", "AssocGrpGRES", "AssocGrpJobsLimit"]
    first = causes[0]
    assert first.message == "tenant t has 8 of 20 accelerators in use (GrpTRES); this job needs 16"
    assert (first.limit, first.in_use, first.requested) == (
        {"gres/accelerator": 20},
        {"gres/accelerator": 8},
        {"gres/accelerator": 16},
    )
