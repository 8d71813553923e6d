"""DistributedTrainer on one process: the seed's example, argument checks, AMP, metrics, datasets, SIGTERM."""

import json
import os
import signal
import sys
import threading

import pytest

from tests.sdk.support import REPO, mlp, regression_data, require

torch = require("torch")
require("zstandard")

from ai_platform import Dataset, DistributedTrainer  # noqa: E402
from ai_platform.comm import GradientCompressor  # noqa: E402
from ai_platform.env import DistEnv  # noqa: E402
from ai_platform.errors import DeviceError, StrategyError  # noqa: E402


@pytest.fixture
def data(tmp_path):
    return regression_data(tmp_path / "dataset")


def trainer_for(data, **kwargs):
    kwargs = {"env": DistEnv(), "lr": 1e-2, "log_every": 0, **kwargs}
    return DistributedTrainer(mlp(), Dataset(data), **kwargs)


def test_seed_example_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.setenv("USER", "alice")
    sys.path.insert(0, str(REPO / "examples"))
    try:
        import seed_api
    finally:
        sys.path.remove(str(REPO / "examples"))
    namespace = seed_api.run(str(tmp_path))
    trainer, dataset = namespace["trainer"], namespace["dataset"]
    assert trainer.step == 100  # 100 epochs of one 2,048-sample batch
    assert (tmp_path / "shared" / "checkpoints" / "step-000000100" / "manifest.json").exists()
    config = trainer.checkpoint_config
    assert (config.interval, config.mode, config.compression, config.max_to_keep) == (1000, "async", "zstd", 5)
    assert config.backup_dir == tmp_path / "backup" / "alice"
    assert (dataset.num_shards, dataset.shard_index, dataset.mmap, len(dataset)) == (64, 0, True, 32)
    assert namespace["compressor"].warmup_steps == 1000


def test_training_lowers_the_loss(data):
    with trainer_for(data) as trainer:
        result = trainer.train(epochs=3, batch_size=32)
    assert result.steps == 3 * (512 // 32)
    assert result.final_loss < result.losses[0] / 4


def test_unknown_strategy_is_a_clear_error(data):
    with pytest.raises(StrategyError, match="strategy='zero3' is not one of ddp, fsdp, hybrid_parallel"):
        trainer_for(data, strategy="zero3")


def test_fp16_on_cpu_names_bf16_instead(data):
    with pytest.raises(DeviceError, match="precision='fp16' needs a CUDA GPU.*use precision='bf16'"):
        trainer_for(data, precision="fp16")


def test_compressor_with_fsdp_is_a_clear_error(data):
    with pytest.raises(StrategyError, match="Use strategy='ddp' with the compressor"):
        trainer_for(data, strategy="fsdp", compressor=GradientCompressor())


def test_prebuilt_optimizer_with_fsdp_asks_for_a_factory(data):
    model = mlp()
    with pytest.raises(StrategyError, match="pass a factory"):
        DistributedTrainer(model, Dataset(data), "fsdp", env=DistEnv(), optimizer=torch.optim.SGD(model.parameters()))


def test_batch_that_does_not_split_into_micro_batches_is_rejected(data):
    with (
        trainer_for(data, micro_batch_size=8) as trainer,
        pytest.raises(ValueError, match="not a multiple of micro_batch_size=8"),
    ):
        trainer.train(batch_size=30)


def test_bf16_autocast_trains_on_cpu(data):
    with trainer_for(data, precision="bf16") as trainer:
        result = trainer.train(epochs=3, batch_size=32)
    assert result.final_loss < result.losses[0] / 4


def test_metrics_are_written_as_json_lines_per_rank(data, tmp_path, monkeypatch):
    monkeypatch.setenv("AIPOOL_METRICS_DIR", str(tmp_path / "metrics"))
    with trainer_for(data) as trainer:
        trainer.train(epochs=1, batch_size=64)
    lines = [json.loads(line) for line in (tmp_path / "metrics" / "rank-0.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == list(range(1, 9))
    assert {"loss", "lr", "samples_per_s", "step_time_s", "comm_time_s", "compute_time_s", "comm_bytes",
            "memory_bytes"} <= set(lines[0])  # fmt: skip
    assert lines[0]["comm_bytes"] == sum(p.numel() * 4 for p in mlp().parameters())


def test_any_map_style_dataset_can_be_used(data):
    inputs, targets = torch.randn(256, 16), torch.randn(256, 1)

    class Pairs(torch.utils.data.Dataset):
        def __len__(self):
            return 256

        def __getitem__(self, index):
            return inputs[index], targets[index]

    for dataset in (Pairs(), torch.utils.data.TensorDataset(inputs, targets)):
        with DistributedTrainer(mlp(), dataset, env=DistEnv(), log_every=0) as trainer:
            assert trainer.train(epochs=1, batch_size=32).steps == 8


def test_sigterm_saves_a_checkpoint_and_returns(data, tmp_path):
    trainer = trainer_for(data, checkpoint_dir=tmp_path / "ckpt")
    trainer.configure_checkpoint(interval=10_000)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        with trainer:
            result = trainer.train(epochs=10_000, batch_size=32)
    finally:
        timer.cancel()
    assert result.stopped_early and 0 < result.steps < 10_000 * 16
    assert (tmp_path / "ckpt" / f"step-{result.steps:09d}" / "manifest.json").exists()
