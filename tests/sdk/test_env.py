"""The distributed environment and the SDK's independence from the portal."""

import subprocess
import sys

import pytest

from ai_platform.env import DistEnv, from_environ
from ai_platform.errors import DeviceError, EnvironmentConfigError
from ai_platform.units import parse_size, total_memory
from tests.sdk.support import REPO, require

LOCAL_BACKEND_ENV = {
    "RANK": "1",
    "WORLD_SIZE": "2",
    "LOCAL_RANK": "0",
    "LOCAL_WORLD_SIZE": "1",
    "MASTER_ADDR": "127.0.0.1",
    "MASTER_PORT": "29500",
    "AIPOOL_ACCELERATORS": "4,5",
    "AIPOOL_JOB_ID": "17",
    "AIPOOL_RUN_DIR": "/var/aipool/jobs/17/run-1",
}


def test_environment_of_the_local_backend_is_read():
    env = from_environ(LOCAL_BACKEND_ENV)
    assert (env.rank, env.world_size, env.local_rank, env.local_world_size) == (1, 2, 0, 1)
    assert (env.master_addr, env.master_port, env.accelerators, env.job_id) == ("127.0.0.1", 29500, (4, 5), "17")
    assert (env.num_nodes, env.node_rank, env.is_main) == (2, 1, False)
    assert str(env.run_dir) == "/var/aipool/jobs/17/run-1"


def test_slurm_variables_are_the_fallback():
    env = from_environ({"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1", "SLURM_NTASKS_PER_NODE": "2",
                        "MASTER_PORT": "1234", "SLURM_JOB_ID": "99"})  # fmt: skip
    assert (env.rank, env.world_size, env.local_rank, env.num_nodes, env.job_id) == (3, 4, 1, 2, "99")


def test_no_variables_mean_one_process():
    assert from_environ({}) == DistEnv()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"RANK": "2"}, "RANK=2 is outside 0..1"),
        ({"WORLD_SIZE": "two"}, "WORLD_SIZE='two' is not a whole number"),
        ({"LOCAL_WORLD_SIZE": "3"}, "LOCAL_WORLD_SIZE=3 does not divide WORLD_SIZE=2"),
        ({"MASTER_PORT": ""}, "MASTER_PORT is not set"),
        ({"AIPOOL_ACCELERATORS": "0,x"}, "AIPOOL_ACCELERATORS='0,x'"),
    ],
)
def test_inconsistent_environment_is_a_clear_error(changes, message):
    with pytest.raises(EnvironmentConfigError, match=message):
        from_environ({**LOCAL_BACKEND_ENV, **changes})


def test_nccl_without_a_gpu_names_gloo_instead():
    torch = require("torch")
    from ai_platform.env import select_backend

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(DeviceError, match="use backend='gloo' on CPU"):
        select_backend(torch.device("cpu"), "nccl")
    assert select_backend(torch.device("cpu")) == "gloo"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2GB", 2 << 30), ("2G", 2 << 30), ("512MiB", 512 << 20), ("1.5K", 1536), (4096, 4096), ("100", 100)],
)
def test_sizes_are_read_in_binary_units(text, expected):
    assert parse_size(text) == expected


def test_cache_size_may_be_a_share_of_memory():
    assert parse_size("20%") == int(total_memory() * 0.2)
    with pytest.raises(ValueError, match="not accepted here"):
        parse_size("20%", allow_percent=False)
    with pytest.raises(ValueError, match="cannot read '2 parsecs'"):
        parse_size("2 parsecs")


def test_sdk_imports_nothing_of_the_portal():
    require("torch")
    code = (
        "import sys, ai_platform, ai_platform.trainer, ai_platform.comm, ai_platform.data, ai_platform.checkpoint, "
        "ai_platform.env, ai_platform.metrics, ai_platform.units\n"
        "from ai_platform import DistributedTrainer, Dataset, GradientCompressor\n"
        "portal = {'django', 'rest_framework', 'celery', 'portal', 'jobs', 'tenants', 'cluster', 'api', 'scheduler',"
        " 'vocab', 'registry', 'aipool_cli'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & portal))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], cwd="/", env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
