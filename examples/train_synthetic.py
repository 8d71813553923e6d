r"""A complete training job on synthetic data: no downloads, runs on one process or as a multi-node pool job.

One process (CPU):
    python examples/train_synthetic.py --epochs 3 --batch_size 256

As a 2-node job on the pool (the backend sets RANK, WORLD_SIZE, MASTER_ADDR, ... for every node):
    aipool submit -A ai-team -N 2 --gres=accelerator:1 -t 30 --export PYTHONPATH=$PWD --wrap \
        "python $PWD/examples/train_synthetic.py --strategy hybrid_parallel --epochs 5 --batch_size 2048 \
         --checkpoint_dir /shared/checkpoints --backup_dir '/backup/\$USER' --mode async --compression zstd"

The data are Gaussian clusters, one per class, written once as .npy shards (see ai_platform.data); the model is a
small MLP classifier. Every rank prints its progress, and per-step metrics go to $AIPOOL_RUN_DIR/metrics/.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ai_platform import Dataset, DistributedTrainer
from ai_platform.comm import GradientCompressor
from ai_platform.data import write_dataset


def synthetic_dataset(path: Path, samples: int, features: int, classes: int, shards: int, seed: int = 0) -> Path:
    """Write the data set once; ranks racing to do it each build a private copy and the first rename wins."""
    if path.is_dir():
        return path
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((classes, features)).astype(np.float32) * 2
    targets = rng.integers(0, classes, samples)
    inputs = centres[targets] + rng.standard_normal((samples, features)).astype(np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    tmp.chmod(0o755)  # mkdtemp's 0700 would hide a shared data set from everyone else
    write_dataset(tmp, {"inputs": inputs, "targets": targets.astype(np.int64)}, -(-samples // shards))
    try:
        os.rename(tmp, path)
    except OSError:  # another rank got there first with the same data
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def build_model(features: int, classes: int, hidden: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes)
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--strategy", default="ddp", choices=["ddp", "fsdp", "hybrid_parallel"])
    add("--epochs", type=int, default=3)
    add("--batch_size", "--batch-size", type=int, default=256, help="global batch per optimizer step")
    add("--grad_accum_steps", type=int, default=None)
    add("--max_steps", type=int, default=None)
    add("--lr", type=float, default=3e-3)
    add("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    add("--data_dir", default=None, help="default: $AIPOOL_RUN_DIR/data, or a temporary directory")
    add("--samples", type=int, default=8192)
    add("--features", type=int, default=32)
    add("--classes", type=int, default=10)
    add("--hidden", type=int, default=128)
    add("--shards", type=int, default=8)
    add("--prefetch_workers", type=int, default=2)
    add("--cache_size", default="20%")
    add("--buffer_size", default=None, help="memory-map the shards with this read-ahead, e.g. 2GB")
    add("--checkpoint_dir", default=None)
    add("--backup_dir", default=None, help="quote it to let the SDK expand $USER")
    add("--interval", type=int, default=1000, help="steps between checkpoints")
    add("--mode", default="async", choices=["sync", "async"])
    add("--compression", default="zstd", choices=["zstd", "none"])
    add("--max_to_keep", type=int, default=5)
    add("--algorithm", default=None, choices=["topk"], help="compress DDP gradients")
    add("--ratio", type=float, default=0.01)
    add("--warmup_steps", type=int, default=100)
    add("--log_every", type=int, default=10)
    add("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    default_root = os.environ.get("AIPOOL_RUN_DIR") or tempfile.gettempdir()
    data_dir = Path(args.data_dir or Path(default_root) / "data")
    synthetic_dataset(data_dir, args.samples, args.features, args.classes, args.shards, args.seed)

    dataset = Dataset(data_dir, prefetch=True, cache_size=args.cache_size, prefetch_workers=args.prefetch_workers)
    if args.buffer_size:
        dataset.enable_mmap(buffer_size=args.buffer_size)
    compressor = None
    if args.algorithm:
        compressor = GradientCompressor(algorithm=args.algorithm, ratio=args.ratio, warmup_steps=args.warmup_steps)
    trainer = DistributedTrainer(
        model=build_model(args.features, args.classes, args.hidden),
        dataset=dataset,
        strategy=args.strategy,
        checkpoint_dir=args.checkpoint_dir,
        lr=args.lr,
        precision=args.precision,
        grad_accum_steps=args.grad_accum_steps,
        compressor=compressor,
        seed=args.seed,
        log_every=args.log_every,
    )
    if args.checkpoint_dir:
        trainer.configure_checkpoint(
            interval=args.interval,
            mode=args.mode,
            compression=None if args.compression == "none" else args.compression,
        )
        trainer.configure_checkpoint(
            primary_dir=args.checkpoint_dir, backup_dir=args.backup_dir, max_to_keep=args.max_to_keep
        )
    with trainer:
        result = trainer.train(epochs=args.epochs, batch_size=args.batch_size, max_steps=args.max_steps)
        rank = trainer.env.rank
        print(f"[rank {rank}/{trainer.env.world_size}] done: step {result.steps}, loss {result.final_loss:.4f}")
        if compressor is not None:
            stats = compressor.stats
            print(f"[rank {rank}] sent {stats.bytes_sent} B, dense would be {stats.dense_bytes} B ({stats.ratio:.2%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
