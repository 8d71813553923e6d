"""DistributedTrainer: data-parallel training with DDP, FSDP or hybrid sharding, AMP, checkpoints and metrics.

    trainer = DistributedTrainer(model=model, dataset=dataset, strategy="hybrid_parallel",
                                 checkpoint_dir="/shared/checkpoints")
    trainer.configure_checkpoint(interval=1000, mode="async", compression="zstd")
    trainer.train(epochs=100, batch_size=2048)

Strategies:
    ddp              a full replica per rank, gradients averaged by all-reduce (optionally top-k compressed)
    fsdp             parameters, gradients and optimizer state sharded over all ranks (FSDP2, ``fully_shard``)
    hybrid_parallel  sharded within a node, replicated across nodes (FSDP2 on a 2-D device mesh: HSDP)

``batch_size`` is the global batch of one optimizer step. Each rank gets ``batch_size / world_size`` samples, in
``grad_accum_steps`` micro-batches of ``micro_batch_size`` (give either; the other follows), and gradients are only
synchronised on the last micro-batch.
"""

from __future__ import annotations

import atexit
import math
import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import TensorDataset

from ai_platform import env as envmod
from ai_platform.checkpoint import _UNSET, CheckpointConfig, CheckpointManager, ResumeReport
from ai_platform.comm import DenseAllReduce, GradientCompressor, TimedAllGather, TimedReduceScatter
from ai_platform.data import Dataset
from ai_platform.errors import DeviceError, StrategyError
from ai_platform.metrics import CommTimer, MetricsWriter, metrics_dir, peak_memory_bytes

STRATEGIES = ("ddp", "fsdp", "hybrid_parallel")
PRECISIONS = ("fp32", "bf16", "fp16")
OPTIMIZERS = ("adamw", "adam", "sgd")
SCHEDULERS = ("cosine", "linear", "constant")


def _fully_shard():
    """FSDP2's fully_shard: public from PyTorch 2.6, under _composable from 2.4."""
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        try:
            from torch.distributed._composable.fsdp import fully_shard
        except ImportError:
            return None
    return fully_shard


@dataclass
class TrainResult:
    steps: int = 0  # the global optimizer step reached
    epochs: int = 0
    final_loss: float | None = None
    losses: list[float] = field(default_factory=list)  # of the steps run by this call
    resumed_from: ResumeReport | None = None
    stopped_early: bool = False  # SIGTERM (time limit, cancel): saved a checkpoint and returned


class _ShardBatches:
    """Batches of an ai_platform Dataset: already split per rank, read with prefetch."""

    def __init__(self, dataset: Dataset, micro: int, seed: int, shuffle: bool) -> None:
        self.dataset, self.micro, self.seed, self.shuffle = dataset, micro, seed, shuffle

    def __len__(self) -> int:
        return self.dataset.num_batches(self.micro)

    def iterate(self, epoch: int, start: int) -> Iterator:
        return self.dataset.batches(self.micro, epoch=epoch, seed=self.seed, shuffle=self.shuffle, start=start)


class _MapBatches:
    """Batches of any map-style dataset, split across ranks as DistributedSampler does."""

    def __init__(self, dataset, rank, world, micro, seed, shuffle, num_workers, collate_fn, pin) -> None:
        self.dataset, self.rank, self.world, self.micro = dataset, rank, world, micro
        self.seed, self.shuffle, self.num_workers, self.collate_fn, self.pin = (
            seed,
            shuffle,
            num_workers,
            collate_fn,
            pin,
        )

    def __len__(self) -> int:
        return (len(self.dataset) // self.world) // self.micro

    def iterate(self, epoch: int, start: int) -> Iterator:
        from torch.utils.data import DataLoader, DistributedSampler

        sampler = DistributedSampler(
            self.dataset, self.world, self.rank, shuffle=self.shuffle, seed=self.seed, drop_last=True
        )
        sampler.set_epoch(epoch)
        indices = list(sampler)
        batches = [indices[i * self.micro : (i + 1) * self.micro] for i in range(start, len(self))]
        if isinstance(self.dataset, TensorDataset) and self.collate_fn is None:
            # Index the tensors with the whole batch at once instead of stacking it sample by sample.
            return (tuple(t[torch.as_tensor(b)] for t in self.dataset.tensors) for b in batches)
        return iter(
            DataLoader(
                self.dataset,
                batch_sampler=batches,
                num_workers=self.num_workers,
                collate_fn=self.collate_fn,
                pin_memory=self.pin,
            )
        )


def default_loss(output, target):
    """Cross-entropy for class indices, mean squared error for anything else."""
    if not target.is_floating_point() and output.dim() == target.dim() + 1:
        return nn.functional.cross_entropy(output.float(), target)
    return nn.functional.mse_loss(output.float(), target.float().reshape(output.shape))


class DistributedTrainer:
    """Trains `model` on `dataset` across every rank of the job; see the module docstring for the strategies."""

    def __init__(
        self,
        model: nn.Module,
        dataset,
        strategy: str = "ddp",
        checkpoint_dir: str | os.PathLike | None = None,
        *,
        optimizer: str | Callable | torch.optim.Optimizer = "adamw",
        lr: float = 1e-3,
        weight_decay: float = 0.01,
        optimizer_kwargs: dict | None = None,
        scheduler: str | Callable | None = "cosine",
        warmup_steps: int = 0,
        loss_fn: Callable | None = None,
        precision: str = "fp32",
        micro_batch_size: int | None = None,
        grad_accum_steps: int | None = None,
        max_grad_norm: float | None = None,
        compressor: GradientCompressor | None = None,
        device: str | None = None,
        backend: str | None = None,
        seed: int = 0,
        shuffle: bool = True,
        num_workers: int = 0,
        collate_fn: Callable | None = None,
        fsdp_units: tuple[type, ...] | None = None,
        metrics_dir: str | os.PathLike | None = None,
        log_every: int = 10,
        resume: bool = True,
        env: envmod.DistEnv | None = None,
        timeout_s: float = 600.0,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
            raise TypeError(
                "dataset must be map-style (with __len__ and __getitem__), such as ai_platform.Dataset: the trainer "
                "splits it across ranks and resumes mid-epoch by index"
            )
        if strategy not in STRATEGIES:
            raise StrategyError(f"strategy={strategy!r} is not one of {', '.join(STRATEGIES)}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision={precision!r} is not one of {', '.join(PRECISIONS)}")
        if micro_batch_size is not None and grad_accum_steps is not None:
            raise ValueError("give micro_batch_size or grad_accum_steps, not both: each determines the other")
        for name, value in (("micro_batch_size", micro_batch_size), ("grad_accum_steps", grad_accum_steps)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
        if isinstance(optimizer, str) and optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer={optimizer!r} is not one of {', '.join(OPTIMIZERS)} (or pass a factory)")
        if isinstance(scheduler, str) and scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler={scheduler!r} is not one of {', '.join(SCHEDULERS)} (or None, or a factory)")
        self.model = model
        self.dataset = dataset
        self.strategy = strategy
        self.env = env or envmod.from_environ()
        self.device = envmod.select_device(self.env, device)
        self.backend = envmod.select_backend(self.device, backend)
        self.precision = precision
        self._check_strategy(compressor)
        self._check_precision()
        if isinstance(optimizer, torch.optim.Optimizer) and strategy != "ddp":
            raise StrategyError(
                f"strategy={strategy!r} replaces the model's parameters with sharded ones, so an optimizer built "
                "beforehand would update the wrong tensors: pass a factory such as "
                "optimizer=lambda params: torch.optim.AdamW(params, lr=1e-3)"
            )
        self.optimizer_spec = optimizer
        self.lr, self.weight_decay, self.optimizer_kwargs = lr, weight_decay, dict(optimizer_kwargs or {})
        self.scheduler_spec, self.warmup_steps = scheduler, warmup_steps
        self.loss_fn = loss_fn or default_loss
        self.micro_batch_size, self.grad_accum_steps = micro_batch_size, grad_accum_steps
        self.max_grad_norm = max_grad_norm
        self.compressor = compressor
        self.seed, self.shuffle, self.num_workers, self.collate_fn = seed, shuffle, num_workers, collate_fn
        self.fsdp_units = fsdp_units
        self.resume = resume
        self.log_every = log_every
        self.timeout_s = timeout_s
        self._metrics_dir = Path(metrics_dir) if metrics_dir is not None else metrics_dir
        self.checkpoint_config = CheckpointConfig().updated(primary_dir=checkpoint_dir)
        self.optimizer: torch.optim.Optimizer | None = None
        self.scheduler = None
        self.scaler = None
        self.timer = CommTimer()
        self.comm = None
        self.checkpoints: CheckpointManager | None = None
        self.metrics: MetricsWriter | None = None
        self.step = 0
        self._ready = False
        self._owns_group = False
        self._stop_requested = False
        self._ckpt_group = None

    # --- configuration ------------------------------------------------------------------------------------

    def configure_checkpoint(
        self,
        interval: int = _UNSET,
        mode: str = _UNSET,
        compression: str | None = _UNSET,
        primary_dir: str | os.PathLike | None = _UNSET,
        backup_dir: str | os.PathLike | None = _UNSET,
        max_to_keep: int = _UNSET,
    ) -> CheckpointConfig:
        """Change the checkpoint settings given; the others keep their values (call it as often as you like)."""
        self.checkpoint_config = self.checkpoint_config.updated(
            interval=interval,
            mode=mode,
            compression=compression,
            primary_dir=primary_dir,
            backup_dir=backup_dir,
            max_to_keep=max_to_keep,
        )
        return self.checkpoint_config

    def _check_strategy(self, compressor) -> None:
        if self.strategy in ("fsdp", "hybrid_parallel") and _fully_shard() is None:
            raise StrategyError(
                f"strategy={self.strategy!r} needs FSDP2 (torch.distributed.fsdp.fully_shard, PyTorch >= 2.4) and "
                f"this PyTorch {torch.__version__} has none; upgrade PyTorch or use strategy='ddp'"
            )
        if compressor is not None and self.strategy != "ddp":
            raise StrategyError(
                f"GradientCompressor is a DDP communication hook; strategy={self.strategy!r} reduce-scatters sharded "
                "gradients and has no such hook. Use strategy='ddp' with the compressor, or drop the compressor"
            )
        if compressor is not None and not isinstance(compressor, GradientCompressor):
            raise TypeError(f"compressor must be a GradientCompressor, got {type(compressor).__name__}")
        if self.strategy == "hybrid_parallel" and self.env.world_size % self.env.local_world_size:
            raise StrategyError(
                f"strategy='hybrid_parallel' shards within a node: WORLD_SIZE={self.env.world_size} must be a "
                f"multiple of LOCAL_WORLD_SIZE={self.env.local_world_size}"
            )

    def _check_precision(self) -> None:
        if self.precision == "fp16" and self.device.type != "cuda":
            raise DeviceError(
                "precision='fp16' needs a CUDA GPU (its gradient scaler works on GPU only here); "
                "on CPU use precision='bf16' or 'fp32'"
            )
        if self.precision == "bf16" and self.device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise DeviceError("this GPU has no bfloat16 support; use precision='fp16' (with a grad scaler) or 'fp32'")

    # --- setup --------------------------------------------------------------------------------------------

    def setup(self) -> None:
        """Join the process group, place and wrap the model, build the optimizer. Idempotent; train() calls it."""
        if self._ready:
            return
        self._owns_group = envmod.init_process_group(self.env, self.backend, self.timeout_s)
        if self._owns_group:
            atexit.register(self.close)
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        elif self.env.local_world_size > 1 and "OMP_NUM_THREADS" not in os.environ:
            # As torchrun does: ranks sharing a machine would otherwise each start a thread per core.
            torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // self.env.local_world_size))
        self.model.to(self.device)
        if self.strategy == "ddp":
            self._wrap_ddp()
        else:
            self._wrap_fsdp()
        self.optimizer = self._build_optimizer()
        if self.precision == "fp16":
            if self.strategy == "ddp":
                self.scaler = torch.amp.GradScaler("cuda")
            else:
                from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

                self.scaler = ShardedGradScaler("cuda")
        if isinstance(self.dataset, Dataset) and not self.dataset.is_sharded and self.env.world_size > 1:
            self.dataset.shard(num_shards=self.env.world_size, index=self.env.rank)
        directory = self._metrics_dir if self._metrics_dir is not None else metrics_dir()
        self.metrics = MetricsWriter(directory, self.env.rank)
        self._ready = True

    def _wrap_ddp(self) -> None:
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [self.device.index] if self.device.type == "cuda" else None
        self.model = DistributedDataParallel(self.model, device_ids=device_ids)
        if self.compressor is not None:
            self.compressor.timer = self.timer
            self.compressor.install(self.model)
            self.comm = self.compressor
        else:
            self.comm = DenseAllReduce(self.timer)
            self.comm.install(self.model)

    def _wrap_fsdp(self) -> None:
        from torch.distributed.device_mesh import init_device_mesh

        # fully_shard keeps each rank's own initial values: make them rank 0's, as DDP does, or replicas differ.
        with torch.no_grad():
            for tensor in [*self.model.parameters(), *self.model.buffers()]:
                dist.broadcast(tensor.data, src=0)
        if self.strategy == "fsdp":
            mesh = init_device_mesh(self.device.type, (self.env.world_size,))
        else:
            shape = (self.env.num_nodes, self.env.local_world_size)
            mesh = init_device_mesh(self.device.type, shape, mesh_dim_names=("replicate", "shard"))
        fully_shard = _fully_shard()
        units = [m for m in self._fsdp_units() if m is not self.model]
        for unit in units:
            fully_shard(unit, mesh=mesh)
        fully_shard(self.model, mesh=mesh)
        replicated = self.strategy == "hybrid_parallel" and self.env.num_nodes > 1
        for module in [*units, self.model]:
            self._time_fsdp_comms(module, replicated)

    def _fsdp_units(self) -> list[nn.Module]:
        """Modules sharded as one unit each: instances of fsdp_units, or else the model's children with parameters."""
        if self.fsdp_units:
            return [m for m in self.model.modules() if isinstance(m, self.fsdp_units)]
        return [m for m in self.model.children() if any(True for _ in m.parameters())]

    def _time_fsdp_comms(self, module, replicated: bool) -> None:
        if not hasattr(module, "set_custom_reduce_scatter"):
            return  # older FSDP2: no comm metrics
        reduce_scatter = TimedReduceScatter(self.timer)
        module.set_custom_all_gather(TimedAllGather(self.timer))
        module.set_custom_reduce_scatter(reduce_scatter)
        if replicated and hasattr(module, "set_all_reduce_hook"):
            module.set_all_reduce_hook(reduce_scatter.all_reduce_hook)

    def _build_optimizer(self) -> torch.optim.Optimizer:
        spec = self.optimizer_spec
        if isinstance(spec, torch.optim.Optimizer):
            return spec
        params = [p for p in self.model.parameters() if p.requires_grad]
        if callable(spec):
            return spec(params)
        kwargs = {"lr": self.lr, "weight_decay": self.weight_decay, **self.optimizer_kwargs}
        if spec == "sgd":
            kwargs.setdefault("momentum", 0.9)
            return torch.optim.SGD(params, **kwargs)
        return (torch.optim.AdamW if spec == "adamw" else torch.optim.Adam)(params, **kwargs)

    def _build_scheduler(self, total_steps: int):
        spec = self.scheduler_spec
        if spec is None:
            return None
        if callable(spec):
            return spec(self.optimizer)
        warmup = max(0, int(self.warmup_steps))
        horizon = max(1, total_steps - warmup)

        def factor(step: int) -> float:
            if step < warmup:
                return (step + 1) / warmup
            progress = min(1.0, (step - warmup) / horizon)
            if spec == "cosine":
                return 0.5 * (1 + math.cos(math.pi * progress))
            if spec == "linear":
                return 1 - progress
            return 1.0

        return torch.optim.lr_scheduler.LambdaLR(self.optimizer, factor)

    # --- training -----------------------------------------------------------------------------------------

    def train(self, epochs: int = 1, batch_size: int = 32, max_steps: int | None = None) -> TrainResult:
        """Train for `epochs` over the dataset with a global batch of `batch_size` samples per optimizer step.

        Resumes from the newest valid checkpoint when checkpoints are configured; `max_steps` stops at that global
        step (the learning-rate schedule still spans all epochs, so a stopped and resumed run matches an unbroken one).
        """
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
            raise ValueError(f"epochs must be a whole number >= 1, got {epochs!r}")
        self.setup()
        micro, accum = self._split_batch(batch_size)
        batches = self._batches(micro)
        steps_per_epoch = self._agreed_steps_per_epoch(len(batches) // accum, micro * accum)
        total = epochs * steps_per_epoch
        self.scheduler = self._build_scheduler(total)
        result = TrainResult()
        if self.checkpoint_config.enabled:
            self._setup_checkpoints()
            if self.resume:
                result.resumed_from = self._restore()
        stop_at = total if max_steps is None else min(total, max_steps)
        self._log(
            f"training {self.strategy} on {self.env.world_size} rank(s), {self.device}, {self.precision}: "
            f"global batch {batch_size} = {self.env.world_size} x {accum} x {micro}, "
            f"{steps_per_epoch} steps/epoch, from step {self.step} to {stop_at}"
        )
        with self._sigterm_handler():  # also while saving the last checkpoint: a second SIGTERM must not kill it
            self._loop(result, batches, accum, batch_size, steps_per_epoch, stop_at)
            if self.checkpoints is not None:
                saved = self.checkpoints.saved
                last_saved = saved[-1].step if saved else getattr(result.resumed_from, "step", None)
                if self.step > 0 and last_saved != self.step:
                    self._checkpoint()  # the end of training (or a stop request) is always recoverable
                self.checkpoints.wait()
        result.steps = self.step
        result.epochs = self.step // steps_per_epoch
        return result

    def _loop(self, result, batches, accum, batch_size, steps_per_epoch, stop_at) -> None:
        while self.step < stop_at:
            epoch, offset = divmod(self.step, steps_per_epoch)
            iterator = batches.iterate(epoch, offset * accum)
            try:
                for _ in range(offset, steps_per_epoch):
                    if self.step >= stop_at:
                        break
                    record = self._train_step(iterator, accum, batch_size)
                    record["epoch"] = epoch
                    stop = record.pop("_stop")
                    result.losses.append(record["loss"])
                    result.final_loss = record["loss"]
                    if self.checkpoints is not None and self.step % self.checkpoint_config.interval == 0:
                        record["checkpoint_stall_s"] = round(self._checkpoint(), 6)
                    self.metrics.write(record)
                    self._progress(record, stop_at)
                    if stop:
                        result.stopped_early = True
                        self._log(f"stop requested (SIGTERM) at step {self.step}: checkpointing and returning")
                        return
            finally:
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()

    def _train_step(self, iterator: Iterator, accum: int, batch_size: int) -> dict[str, Any]:
        started = time.perf_counter()
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        self.timer.take()
        data_time = 0.0
        loss_sum = torch.zeros((), device=self.device)
        for micro_step in range(accum):
            fetch = time.perf_counter()
            batch = _to_device(next(iterator), self.device)
            data_time += time.perf_counter() - fetch
            with self._gradient_sync(micro_step == accum - 1), self._autocast():
                loss = self.compute_loss(batch)
            scaled = loss / accum
            (self.scaler.scale(scaled) if self.scaler else scaled).backward()
            loss_sum += loss.detach().float()
        self._optimizer_step()
        self.step += 1
        comm_time, comm_bytes = self.timer.take()
        # One small all-reduce gives every rank the mean loss and a common answer to "was a stop requested?".
        shared = torch.stack([loss_sum / accum, torch.tensor(float(self._stop_requested), device=self.device)])
        dist.all_reduce(shared)
        step_time = time.perf_counter() - started
        loss_value = float(shared[0]) / self.env.world_size
        return {
            "step": self.step,
            "rank": self.env.rank,
            "world_size": self.env.world_size,
            "loss": loss_value,
            "lr": self.optimizer.param_groups[0]["lr"],
            "samples": batch_size,
            "samples_per_s": round(batch_size / step_time, 2),
            "step_time_s": round(step_time, 6),
            "data_time_s": round(data_time, 6),
            "comm_time_s": round(comm_time, 6),
            "compute_time_s": round(max(step_time - comm_time - data_time, 0.0), 6),
            "comm_bytes": comm_bytes,
            "memory_bytes": peak_memory_bytes(self.device),
            "_stop": bool(float(shared[1]) > 0),
        }

    def compute_loss(self, batch) -> torch.Tensor:
        """The loss of one micro-batch: (inputs..., target) tuples, dicts (HF style), or a model returning a loss."""
        if isinstance(batch, dict):
            output = self.model(**batch)
            loss = output.get("loss") if isinstance(output, dict) else getattr(output, "loss", None)
            if loss is None:
                target = batch.get("labels", batch.get("targets"))
                if target is None:
                    raise ValueError("a dict batch needs 'labels' or 'targets', or a model output with a 'loss'")
                loss = self.loss_fn(output, target)
            return loss
        if isinstance(batch, (tuple, list)) and len(batch) >= 2:
            *inputs, target = batch
            return self.loss_fn(self.model(*inputs), target)
        output = self.model(batch[0] if isinstance(batch, (tuple, list)) else batch)
        if output.dim() != 0:
            raise ValueError("with batches of inputs only, the model must return a scalar loss; or pass loss_fn")
        return output

    def _optimizer_step(self) -> None:
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        if self.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        if self.checkpoints is not None:
            self.checkpoints.fence()  # an async checkpoint may still be copying the parameters
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        if self.scheduler is not None:
            self.scheduler.step()

    @contextmanager
    def _gradient_sync(self, sync: bool):
        if sync:
            yield
        elif self.strategy == "ddp":
            with self.model.no_sync():
                yield
        else:
            self.model.set_requires_gradient_sync(False)
            try:
                yield
            finally:
                self.model.set_requires_gradient_sync(True)

    def _autocast(self):
        if self.precision == "fp32":
            return nullcontext()
        dtype = torch.bfloat16 if self.precision == "bf16" else torch.float16
        return torch.autocast(device_type=self.device.type, dtype=dtype)

    def _split_batch(self, batch_size: int) -> tuple[int, int]:
        world = self.env.world_size
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
        if batch_size % world:
            raise ValueError(f"batch_size={batch_size} does not split evenly over {world} ranks")
        per_rank = batch_size // world
        if self.micro_batch_size is not None:
            micro = self.micro_batch_size
            if per_rank % micro:
                raise ValueError(
                    f"each rank's share of the batch ({per_rank}) is not a multiple of micro_batch_size={micro}"
                )
            return micro, per_rank // micro
        accum = self.grad_accum_steps or 1
        if per_rank % accum:
            raise ValueError(
                f"each rank's share of the batch ({per_rank}) does not split into {accum} accumulation steps"
            )
        return per_rank // accum, accum

    def _batches(self, micro: int):
        if isinstance(self.dataset, Dataset):
            return _ShardBatches(self.dataset, micro, self.seed, self.shuffle)
        pin = self.device.type == "cuda"
        return _MapBatches(
            self.dataset, self.env.rank, self.env.world_size, micro, self.seed, self.shuffle,
            self.num_workers, self.collate_fn, pin,
        )  # fmt: skip

    def _agreed_steps_per_epoch(self, local_steps: int, per_rank: int) -> int:
        """The fewest steps any rank can make per epoch: a rank that ran out first would hang the others."""
        steps = torch.tensor([local_steps], device=self.device)
        dist.all_reduce(steps, op=dist.ReduceOp.MIN)
        agreed = int(steps.item())
        if agreed < 1:
            raise ValueError(
                f"a rank has fewer samples than one step needs ({per_rank} per rank); "
                "use a smaller batch_size or more data"
            )
        return agreed

    # --- checkpoints --------------------------------------------------------------------------------------

    @property
    def _sharded(self) -> bool:
        return self.strategy != "ddp"

    def _setup_checkpoints(self) -> None:
        config = self.checkpoint_config
        if self.checkpoints is not None and self.checkpoints.config == config:
            return
        if self.checkpoints is not None:
            self.checkpoints.wait()
        if self._sharded and config.mode == "async" and self._ckpt_group is None:
            # Collective: every rank creates it, at the same point.
            self._ckpt_group = dist.new_group(backend="gloo")
        if self.env.is_main:
            config.primary_dir.mkdir(parents=True, exist_ok=True)
        self.checkpoints = CheckpointManager(
            config, rank=self.env.rank, world_size=self.env.world_size, sharded=self._sharded, group=self._ckpt_group
        )

    def _trainer_state(self) -> dict:
        rng = {
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None,
            "python": random.getstate(),
            "numpy": _numpy_rng_state(),
        }
        all_rng = [None] * self.env.world_size
        dist.all_gather_object(all_rng, rng)
        return {
            "step": self.step,
            "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
            "scaler": self.scaler.state_dict() if self.scaler is not None else None,
            "compressor_steps": self.compressor.stats.steps if self.compressor is not None else None,
            "rng": all_rng,
        }

    def _checkpoint(self) -> float:
        """Save the current step; returns how long training stalled for it (so far: see CheckpointManager.fence)."""
        started = time.perf_counter()
        trainer_state = self._trainer_state()
        model_state = self._model_state() if self._sharded or self.env.is_main else {}
        extra = {"strategy": self.strategy, "precision": self.precision}
        report = self.checkpoints.save(self.step, model_state, trainer_state, extra)
        report.stall_s = time.perf_counter() - started
        return report.stall_s

    def _model_state(self) -> dict:
        from torch.distributed.checkpoint.state_dict import get_state_dict

        model_state, optim_state = get_state_dict(self.model, self.optimizer)
        if not self._sharded:
            # A forward pass updates buffers (batch-norm statistics) in place: hand the background copy a snapshot.
            module = getattr(self.model, "module", self.model)
            for name, buffer in module.named_buffers():
                if name in model_state:
                    model_state[name] = buffer.detach().clone()
        return {"model": model_state, "optimizer": optim_state}

    def _restore(self) -> ResumeReport:
        report = None
        if self.env.is_main:
            self.checkpoints.remove_partial()
            report = self.checkpoints.find_latest()
        shared = [report]
        dist.broadcast_object_list(shared, src=0)
        report = shared[0]
        if report.path is None:
            if report.skipped:
                self._log(f"no usable checkpoint ({len(report.skipped)} skipped): starting from scratch")
            return report
        self._load(Path(report.path))
        self._log(f"resumed from {report.path} at step {self.step}")
        return report

    def _load(self, path: Path) -> None:
        from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

        if self._sharded:
            model_state, optim_state = get_state_dict(self.model, self.optimizer)
            state = {"model": model_state, "optimizer": optim_state}
            CheckpointManager.load_sharded(path, state)
        else:
            state = CheckpointManager.load_full(path)
        set_state_dict(self.model, self.optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
        trainer = CheckpointManager.load_trainer(path)
        self.step = int(trainer["step"])
        if self.scheduler is not None and trainer.get("scheduler") is not None:
            self.scheduler.load_state_dict(trainer["scheduler"])
        if self.scaler is not None and trainer.get("scaler") is not None:
            self.scaler.load_state_dict(trainer["scaler"])
        if self.compressor is not None and trainer.get("compressor_steps") is not None:
            self.compressor.stats.steps = int(trainer["compressor_steps"])
        rng = trainer.get("rng") or []
        if len(rng) == self.env.world_size:  # a different world size cannot reproduce per-rank streams anyway
            _set_rng_state(rng[self.env.rank], self.device)

    # --- signals, logs, teardown --------------------------------------------------------------------------

    @contextmanager
    def _sigterm_handler(self):
        """On SIGTERM (time limit, cancel) finish the step, agree with the other ranks, checkpoint, return."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def request_stop(signum, frame):
            self._stop_requested = True

        previous = signal.signal(signal.SIGTERM, request_stop)
        try:
            yield
        finally:
            signal.signal(signal.SIGTERM, previous)

    def _progress(self, record: dict, stop_at: int) -> None:
        step = record["step"]
        if self.log_every and (step % self.log_every == 0 or step == stop_at or step == 1):
            comm_share = record["comm_time_s"] / record["step_time_s"] if record["step_time_s"] else 0.0
            self._log(
                f"epoch {record['epoch']} step {step}/{stop_at} loss {record['loss']:.4f} lr {record['lr']:.2e} "
                f"{record['samples_per_s']:.0f} samples/s comm {comm_share:.0%} {record['comm_bytes']} B",
                every_rank=True,
            )

    def _log(self, message: str, every_rank: bool = False) -> None:
        if self.log_every and (every_rank or self.env.is_main):
            print(f"[rank {self.env.rank}/{self.env.world_size}] {message}", flush=True)

    @property
    def history(self) -> list[dict]:
        return self.metrics.history if self.metrics is not None else []

    def close(self) -> None:
        """Wait for checkpoints, close files, and leave the process group if the trainer created it."""
        if self.checkpoints is not None:
            self.checkpoints.close()
        if self.metrics is not None:
            self.metrics.close()
        if isinstance(self.dataset, Dataset):
            self.dataset.close()
        if self._owns_group and dist.is_initialized():
            dist.destroy_process_group()
        self._owns_group = False
        self._ready = False

    def __enter__(self) -> DistributedTrainer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _to_device(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {k: _to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device(v, device) for v in batch)
    return batch


def _numpy_rng_state() -> list:
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return [name, keys.tolist(), int(pos), int(has_gauss), float(cached)]


def _set_rng_state(state: dict, device) -> None:
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None and device.type == "cuda":
        torch.cuda.set_rng_state(state["cuda"], device)
    python = state["python"]
    random.setstate((python[0], tuple(python[1]), python[2]))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
