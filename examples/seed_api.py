"""The seed's SDK example, run exactly as written, on a tiny model and data set.

    python examples/seed_api.py --root /tmp/seed

The snippet below is the seed's text, character for character. Only the two absolute roots it names, /shared and
/backup, are moved under --root (when given), so that it runs on a machine without those mounts.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ai_platform.data import write_dataset

SEED_SNIPPET = """\
from ai_platform import DistributedTrainer
trainer = DistributedTrainer(model=your_model, dataset=your_dataset, strategy="hybrid_parallel",
                             checkpoint_dir="/shared/checkpoints")
trainer.train(epochs=100, batch_size=2048)
from ai_platform.comm import GradientCompressor
compressor = GradientCompressor(algorithm="topk", ratio=0.01, warmup_steps=1000)
dataset = Dataset("/shared/dataset", prefetch=True, cache_size="20%", prefetch_workers=8)
dataset.enable_mmap(buffer_size="2GB"); dataset.shard(num_shards=64, index=rank)
trainer.configure_checkpoint(interval=1000, mode="async", compression="zstd")
trainer.configure_checkpoint(primary_dir="/shared/checkpoints", backup_dir="/backup/$USER", max_to_keep=5)
"""


def tiny_data(directory: Path, samples: int = 2048) -> tuple[torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(0)
    inputs = rng.standard_normal((samples, 8)).astype(np.float32)
    targets = (inputs[:, :4].sum(axis=1, keepdims=True) - inputs[:, 4:].sum(axis=1, keepdims=True)).astype(np.float32)
    if not directory.is_dir():
        write_dataset(directory, {"inputs": inputs, "targets": targets}, 512)
    return torch.from_numpy(inputs), torch.from_numpy(targets)


def run(root: str | None = None) -> dict:
    """Execute the snippet; returns its namespace (trainer, compressor, dataset, ...)."""
    from ai_platform import Dataset

    snippet = SEED_SNIPPET
    if root:
        snippet = snippet.replace('"/shared/', f'"{root}/shared/').replace('"/backup/', f'"{root}/backup/')
    shared = Path(root or "/") / "shared"
    inputs, targets = tiny_data(shared / "dataset")
    torch.manual_seed(0)
    namespace = {
        "your_model": nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)),
        "your_dataset": torch.utils.data.TensorDataset(inputs, targets),
        "Dataset": Dataset,
        "rank": int(os.environ.get("RANK", "0")),
    }
    exec(compile(snippet, "<seed example>", "exec"), namespace)
    namespace["trainer"].close()
    return namespace


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=None, help="directory standing in for / (default: a temporary one)")
    args = parser.parse_args(argv)
    namespace = run(args.root or tempfile.mkdtemp(prefix="seed-api-"))
    trainer, dataset = namespace["trainer"], namespace["dataset"]
    print(f"trained to step {trainer.step}; checkpoints: {trainer.checkpoint_config}")
    print(f"compressor: {namespace['compressor']}; dataset: {dataset}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
