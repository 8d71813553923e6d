"""In-job SDK (ai_platform) benchmarks, on CPU unless a GPU is there.

``checkpoint``: training stall per checkpoint, sync vs async (target: async <= 5% of the sync save), zstd size ratio.
``topk``: top-k 1% vs dense all-reduce on the example, two gloo ranks: bytes sent and final loss.
``dataset``: samples/s of naive per-batch reading vs Dataset with prefetch (cold and warm cache) and with mmap.
``gpu``: AMP speed-up (fp32 vs bf16 vs fp16 + grad scaler) and async checkpoint stall on a CUDA GPU; skipped on CPU.

    python -m bench sdk [checkpoint|topk|dataset|gpu|all] [--quick]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench sdk", description=__doc__)
    parser.add_argument("which", nargs="?", default="all", choices=["checkpoint", "topk", "dataset", "gpu", "all"])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = parser.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("sdk: skipped, PyTorch is not installed (pip install torch==2.13.0 zstandard)")
        return
    for name in ("checkpoint", "topk", "dataset", "gpu"):
        if args.which in (name, "all"):
            globals()[f"bench_{name}"](args.quick)


# --- checkpoints --------------------------------------------------------------------------------------------


def _wide_model(width: int, depth: int):
    from torch import nn

    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 1))


def _checkpoint_run(root: Path, mode: str, width: int, depth: int, steps: int, interval: int) -> dict:
    import torch

    from ai_platform import DistributedTrainer
    from ai_platform.checkpoint import verify
    from ai_platform.env import DistEnv

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64 * steps, width), torch.randn(64 * steps, 1))
    trainer = DistributedTrainer(_wide_model(width, depth), data, env=DistEnv(), log_every=0, checkpoint_dir=root)
    trainer.configure_checkpoint(interval=interval, mode=mode, compression="zstd", max_to_keep=2)
    with trainer:
        started = time.perf_counter()
        trainer.train(epochs=1, batch_size=64)
        wall = time.perf_counter() - started
        stalls = [s.stall_s for s in trainer.checkpoints.saved]
        step_times = [r["step_time_s"] for r in trainer.history]
    last = sorted(root.glob("step-*"))[-1]
    compressed = verify(last)["files"]["state.pt.zst"]["bytes"]
    params = sum(p.numel() for p in trainer.model.parameters())
    return {
        "stalls": stalls,
        "step": statistics.median(step_times),
        "wall": wall,
        "compressed": compressed,
        "raw": params * 4 * 3,  # weights + AdamW's two moments, float32
    }


def bench_checkpoint(quick: bool) -> None:
    width, depth = (512, 2) if quick else (1536, 3)
    steps, interval = (12, 4) if quick else (30, 5)
    with tempfile.TemporaryDirectory(prefix="bench-ckpt-") as tmp:
        sync = _checkpoint_run(Path(tmp) / "sync", "sync", width, depth, steps, interval)
        async_ = _checkpoint_run(Path(tmp) / "async", "async", width, depth, steps, interval)
    # The first async save allocates its host buffers; steady state is every save after it.
    sync_save = statistics.median(sync["stalls"])
    async_stall = statistics.median(async_["stalls"][1:-1] or async_["stalls"])
    print(f"sdk checkpoint: state {sync['raw'] / 2**20:.0f} MiB (weights + AdamW), step {sync['step'] * 1e3:.0f} ms")
    print(f"  sync save (training stalls for all of it): median {sync_save * 1e3:.1f} ms")
    share = async_stall / sync_save
    print(f"  async stall (copy to host buffers):        median {async_stall * 1e3:.1f} ms = {share:.1%} of it")
    print(f"    (target <= 5%; the first async save, which allocates the buffers: {async_['stalls'][0] * 1e3:.1f} ms)")
    print(f"  zstd: {sync['compressed'] / sync['raw']:.3f} of the raw size (float32 weights compress little)")


# --- top-k --------------------------------------------------------------------------------------------------


def _topk_rank(rank: int, world: int, port: int, data: str, out: str, algorithm: str, epochs: int) -> None:
    import torch

    sys.path.insert(0, str(REPO / "examples"))
    from train_synthetic import build_model

    from ai_platform import Dataset, DistributedTrainer
    from ai_platform.comm import GradientCompressor
    from ai_platform.env import DistEnv

    torch.set_num_threads(1)
    torch.manual_seed(0)
    compressor = GradientCompressor("topk", ratio=0.01, warmup_steps=20) if algorithm == "topk" else None
    env = DistEnv(rank=rank, world_size=world, master_port=port)
    trainer = DistributedTrainer(
        build_model(32, 10, 512), Dataset(data), env=env, compressor=compressor, lr=3e-3, log_every=0
    )
    with trainer:
        result = trainer.train(epochs=epochs, batch_size=256)
        sent = sum(r["comm_bytes"] for r in trainer.history)
        after = sum(r["comm_bytes"] for r in trainer.history[20:])
        if rank == 0:
            summary = {"loss": statistics.mean(result.losses[-10:]), "sent": sent, "after_warmup": after}
            torch.save(summary, Path(out) / f"{algorithm}.pt")


def bench_topk(quick: bool) -> None:
    import torch
    import torch.multiprocessing as mp

    from ai_platform.data import write_dataset

    epochs = 2 if quick else 6
    with tempfile.TemporaryDirectory(prefix="bench-topk-") as tmp:
        # The example's clusters, moved close together: classes overlap and the loss has a floor well above zero,
        # so that the two final losses say something.
        rng = np.random.default_rng(0)
        centres = rng.standard_normal((10, 32)).astype(np.float32) * 0.35
        targets = rng.integers(0, 10, 16384)
        inputs = centres[targets] + rng.standard_normal((16384, 32)).astype(np.float32)
        data = Path(tmp) / "data"
        write_dataset(data, {"inputs": inputs, "targets": targets}, 2048)
        results = {}
        for algorithm in ("dense", "topk"):
            mp.spawn(_topk_rank, args=(2, _free_port(), str(data), tmp, algorithm, epochs), nprocs=2)
            results[algorithm] = torch.load(Path(tmp) / f"{algorithm}.pt")
    dense, topk = results["dense"], results["topk"]
    print(f"sdk topk: 2 gloo ranks, example MLP (32-512-512-10), {epochs} epochs, 20 warm-up steps")
    print(f"  bytes after warm-up: topk {topk['after_warmup']} vs dense {dense['after_warmup']} "
          f"= {topk['after_warmup'] / dense['after_warmup']:.2%} (1% values + int32 indices: 2% expected)")  # fmt: skip
    print(f"  whole run incl. warm-up: {topk['sent'] / dense['sent']:.2%} of dense")
    print("  loss, mean of the last 10 steps (overlapping classes): "
          f"topk {topk['loss']:.4f} vs dense {dense['loss']:.4f} "
          f"({(topk['loss'] - dense['loss']) / max(dense['loss'], 1e-12):+.1%})")  # fmt: skip


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- dataset ------------------------------------------------------------------------------------------------


def _drop_page_cache(directory: Path) -> None:
    for path in directory.glob("*.npy"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _naive_epoch(directory: Path, order: np.ndarray, batch: int, lengths: int, compute_s: float) -> int:
    """Per batch, load each shard file it touches from disk and index it: no cache, no prefetch."""
    count = 0
    for start in range(0, len(order) - batch + 1, batch):
        indices = order[start : start + batch]
        for shard in np.unique(indices // lengths):
            rows = indices[indices // lengths == shard] - shard * lengths
            np.load(directory / f"part-{shard:05d}.inputs.npy")[rows]
            np.load(directory / f"part-{shard:05d}.targets.npy")[rows]
        time.sleep(compute_s)
        count += len(indices)
    return count


def _dataset_epoch(dataset, batch: int, epoch: int, compute_s: float) -> int:
    count = 0
    for inputs, _ in dataset.batches(batch, epoch=epoch):
        time.sleep(compute_s)
        count += len(inputs)
    return count


def bench_dataset(quick: bool) -> None:
    from ai_platform.data import Dataset, write_dataset

    shards, per_shard, features, batch, compute_s = (8, 4096, 256, 256, 0.002) if quick else (32, 8192, 256, 256, 0.002)
    with tempfile.TemporaryDirectory(
        prefix="bench-data-", dir=REPO / "var" if (REPO / "var").is_dir() else None
    ) as tmp:
        directory = Path(tmp)
        rng = np.random.default_rng(0)
        for number in range(shards):  # one shard at a time: the whole set need not fit in memory
            write_dataset(directory / "one", {"inputs": rng.standard_normal((per_shard, features), np.float32),
                                              "targets": rng.integers(0, 10, per_shard)}, per_shard)  # fmt: skip
            for field in ("inputs", "targets"):
                os.rename(directory / "one" / f"part-00000.{field}.npy", directory / f"part-{number:05d}.{field}.npy")
        size = shards * per_shard * (features * 4 + 8)
        print(f"sdk dataset: {shards} shards, {size / 2**20:.0f} MiB, batch {batch}, {compute_s * 1e3:.0f} ms of "
              "simulated compute per batch")  # fmt: skip
        order = Dataset(directory, prefetch=False).epoch_order(epoch=0)

        def measure(label: str, run) -> None:
            started = time.perf_counter()
            samples = run()
            print(f"  {label:<42} {samples / (time.perf_counter() - started):>10,.0f} samples/s")

        _drop_page_cache(directory)
        measure("naive, cold page cache", lambda: _naive_epoch(directory, order, batch, per_shard, compute_s))
        measure("naive, warm page cache", lambda: _naive_epoch(directory, order, batch, per_shard, compute_s))
        dataset = Dataset(directory, prefetch=True, cache_size=2 * size, prefetch_workers=4)
        _drop_page_cache(directory)
        measure("Dataset prefetch, cold", lambda: _dataset_epoch(dataset, batch, 0, compute_s))
        measure("Dataset prefetch, warm (in its cache)", lambda: _dataset_epoch(dataset, batch, 0, compute_s))
        small = Dataset(directory, prefetch=True, cache_size=size // 4, prefetch_workers=4)
        _drop_page_cache(directory)
        measure("Dataset prefetch, cold, cache = 1/4 of the data", lambda: _dataset_epoch(small, batch, 0, compute_s))
        mapped = Dataset(directory, prefetch=True, prefetch_workers=4).enable_mmap(buffer_size="256MB")
        _drop_page_cache(directory)
        measure("Dataset mmap + read-ahead, cold", lambda: _dataset_epoch(mapped, batch, 0, compute_s))
        measure("Dataset mmap, warm page cache", lambda: _dataset_epoch(mapped, batch, 0, compute_s))
        for item in (dataset, small, mapped):
            item.close()


# --- GPU ----------------------------------------------------------------------------------------------------


def bench_gpu(quick: bool) -> None:
    import torch

    if not torch.cuda.is_available():
        print("sdk gpu: skipped, no CUDA GPU here (run this suite on the GPU machine)")
        return
    from ai_platform import DistributedTrainer
    from ai_platform.env import DistEnv

    width, steps = (2048, 20) if quick else (8192, 40)
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(256 * steps, width), torch.randn(256 * steps, 1))
    print(f"sdk gpu: {torch.cuda.get_device_name()}, MLP width {width}, batch 256, {steps} steps")
    times = {}
    for precision in ("fp32", "bf16", "fp16"):
        with tempfile.TemporaryDirectory() as tmp:
            trainer = DistributedTrainer(_wide_model(width, 4), data, env=DistEnv(), precision=precision,
                                         log_every=0, checkpoint_dir=tmp)  # fmt: skip
            trainer.configure_checkpoint(interval=10, mode="async", compression="zstd")
            with trainer:
                trainer.train(epochs=1, batch_size=256)
                times[precision] = statistics.median(r["step_time_s"] for r in trainer.history[5:])
                stalls = [s.stall_s for s in trainer.checkpoints.saved][1:]
        print(f"  {precision}: step {times[precision] * 1e3:.1f} ms (x{times['fp32'] / times[precision]:.2f} vs fp32), "
              f"async checkpoint stall median {statistics.median(stalls) * 1e3:.1f} ms")  # fmt: skip
