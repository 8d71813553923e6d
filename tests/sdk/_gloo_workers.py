"""What each of two spawned ranks runs for test_distributed: every scenario on one process group, results to disk.

One spawn for all scenarios keeps the suite fast: starting two PyTorch processes costs more than the scenarios.
"""

from __future__ import annotations

import traceback
from pathlib import Path

import torch

from ai_platform import Dataset, DistributedTrainer
from ai_platform.comm import GradientCompressor
from ai_platform.env import DistEnv, init_process_group
from tests.sdk.support import mlp


def run(rank: int, world: int, port: int, data: str, out: str) -> None:
    torch.set_num_threads(1)
    init_process_group(DistEnv(rank=rank, world_size=world, master_port=port), "gloo")
    results = {}
    for name, scenario in SCENARIOS.items():
        try:
            results[name] = scenario(rank, world, port, Path(data), Path(out) / name)
        except Exception:
            results[name] = {"error": traceback.format_exc()}
    torch.save(results, Path(out) / f"rank-{rank}.pt")
    torch.distributed.destroy_process_group()


def trainer(rank, world, port, data, strategy="ddp", model=None, per_node=1, **kwargs):
    env = DistEnv(rank=rank, world_size=world, local_rank=rank % per_node, local_world_size=per_node, master_port=port)
    kwargs = {"lr": 1e-2, "log_every": 0, **kwargs}
    return DistributedTrainer(model or mlp(), Dataset(data), strategy, env=env, **kwargs)


def full_parameters(model) -> dict[str, torch.Tensor]:
    return {
        name: (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().clone()
        for name, p in model.named_parameters()
    }


def local_gradients(model) -> dict[str, torch.Tensor]:
    return {name: (p.grad.to_local() if hasattr(p.grad, "to_local") else p.grad).clone()
            for name, p in model.named_parameters()}  # fmt: skip


def train_to_lower_loss(strategy, per_node=1):
    def scenario(rank, world, port, data, out):
        with trainer(rank, world, port, data, strategy, per_node=per_node) as t:
            result = t.train(epochs=3, batch_size=32)
            return {"losses": result.losses, "params": full_parameters(t.model), "history": t.history}

    return scenario


def accumulation(strategy):
    def scenario(rank, world, port, data, out):
        grads = {}
        for accum in (1, 4):
            with trainer(rank, world, port, data, strategy, grad_accum_steps=accum, optimizer="sgd") as t:
                t.train(epochs=1, batch_size=32, max_steps=1)
                grads[accum] = local_gradients(t.model)
        return grads

    return scenario


def topk(rank, world, port, data, out):
    results = {}
    for name, compressor in (("dense", None), ("topk", GradientCompressor("topk", ratio=0.01, warmup_steps=5))):
        with trainer(rank, world, port, data, model=mlp(hidden=256), compressor=compressor) as t:
            result = t.train(epochs=4, batch_size=32)
            results[name] = {"losses": result.losses, "bytes": [r["comm_bytes"] for r in t.history]}
            if compressor is not None:
                results[name]["residual_norm"] = compressor.residual_norm()
                results[name]["compressed_steps"] = compressor.stats.compressed_steps
    return results


def resume(strategy):
    def scenario(rank, world, port, data, out):
        def run_to(max_steps, directory, seed=0):
            with trainer(rank, world, port, data, strategy, model=mlp(seed=seed), checkpoint_dir=directory) as t:
                if directory:
                    t.configure_checkpoint(interval=3, mode="async", compression="zstd", backup_dir=out / "backup")
                return t.train(epochs=2, batch_size=32, max_steps=max_steps)

        unbroken = run_to(12, None)
        run_to(6, out / "ckpt")
        resumed = run_to(12, out / "ckpt", seed=1)
        return {"unbroken": unbroken.losses, "resumed": resumed.losses, "from": resumed.resumed_from.step}

    return scenario


SCENARIOS = {
    "ddp": train_to_lower_loss("ddp"),
    "fsdp": train_to_lower_loss("fsdp"),
    "hybrid": train_to_lower_loss("hybrid_parallel", per_node=2),
    "accumulation_ddp": accumulation("ddp"),
    "accumulation_fsdp": accumulation("fsdp"),
    "topk": topk,
    "resume_ddp": resume("ddp"),
    "resume_fsdp": resume("fsdp"),
}
