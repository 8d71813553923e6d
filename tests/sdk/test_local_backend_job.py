"""The example runs as a 2-node job through the portal's job machinery on the local backend."""

import json
import sys

import pytest

from tests.sdk.support import REPO, require

require("torch")
require("zstandard")

from cluster.backends.registry import get_backend  # noqa: E402
from tests.jobs.helpers import drive_until, ended, submit  # noqa: E402

pytestmark = pytest.mark.django_db


def test_example_trains_on_both_ranks_of_a_two_node_job(world, tmp_path):
    command = (
        f"{sys.executable} {REPO}/examples/train_synthetic.py --strategy hybrid_parallel --epochs 2 --batch_size 128 "
        f"--samples 2048 --checkpoint_dir {tmp_path}/ckpt --interval 8 --log_every 4"
    )
    job = submit(world.alice, world.ai_team, nodes=2, accelerators_per_node=1, command=command,
                 environment={"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"})  # fmt: skip
    drive_until(ended(job), timeout=120)
    backend = get_backend()
    log = backend.read_log(job.backend_job_id).text
    assert (job.state, job.exit_code) == ("COMPLETED", 0), log + backend.read_log(job.backend_job_id, "stderr").text
    for rank in (0, 1):
        assert f"[rank {rank}/2] epoch 1 step 32/32 loss" in log
        assert f"[rank {rank}/2] done: step 32" in log
        metrics = backend.rundir(job.backend_job_id) / "metrics" / f"rank-{rank}.jsonl"
        records = [json.loads(line) for line in metrics.read_text().splitlines()]
        assert [r["step"] for r in records] == list(range(1, 33))
        assert records[-1]["loss"] < records[0]["loss"] and records[-1]["world_size"] == 2
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir())[-1] == "step-000000032"
