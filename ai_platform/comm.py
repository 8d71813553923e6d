"""Gradient communication: top-k compression with error feedback, and timed collectives for the step metrics.

``GradientCompressor(algorithm="topk", ratio=0.01, warmup_steps=1000)`` is a DDP communication hook. For its first
``warmup_steps`` optimizer steps it all-reduces dense gradients (early gradients are large and change fast, and
sparsifying them slows convergence most). After that each rank adds the residual it kept from the previous step to
its gradient bucket, sends only the ``ratio`` largest entries (values plus int32 indices, with an all-gather since
ranks pick different indices), and keeps what it did not send as the next residual: nothing is ever dropped, only
delayed (error feedback, as in Lin et al., "Deep Gradient Compression", 2018).

Byte counts are the payload this rank hands to the collective; the wire traffic of a ring all-reduce is about twice
that, and of an all-gather (world_size - 1) times that.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from ai_platform.metrics import CommTimer

ALGORITHMS = ("topk",)
INDEX_BYTES = 4  # int32 indices: a bucket never holds 2**31 elements


@dataclass
class CommStats:
    steps: int = 0
    compressed_steps: int = 0
    bytes_sent: int = 0
    dense_bytes: int = 0  # what dense all-reduce would have sent for the same buckets

    @property
    def ratio(self) -> float:
        return self.bytes_sent / self.dense_bytes if self.dense_bytes else 1.0


def topk_compress(flat, residual, k: int):
    """(indices, values) of the k largest-magnitude entries of flat + residual; updates residual in place.

    With error feedback (residual is not None) the residual becomes what was not sent, so that
    sum(sent over steps) + residual == sum(gradients over steps) exactly, up to float rounding.
    """
    acc = flat if residual is None else flat + residual
    _, indices = acc.abs().topk(k, sorted=False)
    values = acc[indices]
    if residual is not None:
        residual.copy_(acc)
        residual[indices] = 0
    return indices, values


class DenseAllReduce:
    """DDP's default hook (average by all-reduce) with its time and bytes recorded."""

    def __init__(self, timer: CommTimer | None = None) -> None:
        self.timer = timer or CommTimer()
        self.stats = CommStats()

    def install(self, ddp_model, process_group=None) -> None:
        ddp_model.register_comm_hook(process_group, self.hook)

    def hook(self, process_group, bucket):
        import torch.distributed as dist

        start = time.perf_counter()
        buffer = bucket.buffer()
        group = process_group if process_group is not None else dist.group.WORLD
        nbytes = buffer.numel() * buffer.element_size()
        buffer.div_(dist.get_world_size(group))
        future = dist.all_reduce(buffer, group=group, async_op=True).get_future()
        self.stats.bytes_sent += nbytes
        self.stats.dense_bytes += nbytes
        if bucket.is_last():
            self.stats.steps += 1

        def done(fut):
            self.timer.record(start, time.perf_counter(), nbytes)
            return fut.value()[0]

        return future.then(done)


class GradientCompressor:
    """Top-k gradient sparsification with error feedback, installed as a DDP communication hook.

    Use it through the trainer (``DistributedTrainer(..., compressor=compressor)``) or on your own DDP model with
    ``compressor.install(ddp_model)``. ``stats`` holds the bytes actually sent and what dense would have sent.
    """

    def __init__(
        self,
        algorithm: str = "topk",
        ratio: float = 0.01,
        warmup_steps: int = 0,
        error_feedback: bool = True,
    ) -> None:
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm={algorithm!r} is not supported; use one of {', '.join(ALGORITHMS)}")
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 1:
            raise ValueError(f"ratio must be a fraction in (0, 1], got {ratio!r}")
        if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or warmup_steps < 0:
            raise ValueError(f"warmup_steps must be a whole number >= 0, got {warmup_steps!r}")
        self.algorithm = algorithm
        self.ratio = float(ratio)
        self.warmup_steps = warmup_steps
        self.error_feedback = error_feedback
        self.timer = CommTimer()
        self.stats = CommStats()
        self._residuals: dict[tuple[int, ...], object] = {}
        self._param_residuals: dict[int, object] = {}  # views into _residuals, to survive DDP's bucket rebuild
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"GradientCompressor(algorithm={self.algorithm!r}, ratio={self.ratio}, "
            f"warmup_steps={self.warmup_steps}, error_feedback={self.error_feedback})"
        )

    @property
    def step(self) -> int:
        return self.stats.steps

    def install(self, ddp_model, process_group=None) -> None:
        """Register as the communication hook of a DistributedDataParallel model."""
        from torch.nn.parallel import DistributedDataParallel

        if not isinstance(ddp_model, DistributedDataParallel):
            raise TypeError(
                "GradientCompressor is a DDP communication hook: install it on a DistributedDataParallel model "
                f"(got {type(ddp_model).__name__}); FSDP reduce-scatters sharded gradients and has no such hook"
            )
        ddp_model.register_comm_hook(process_group, self.hook)

    def k_for(self, numel: int) -> int:
        return max(1, math.ceil(self.ratio * numel))

    def residual_norm(self) -> float:
        with self._lock:
            return math.sqrt(sum(float(r.float().pow(2).sum()) for r in self._residuals.values()))

    def hook(self, process_group, bucket):
        import torch
        import torch.distributed as dist

        start = time.perf_counter()
        group = process_group if process_group is not None else dist.group.WORLD
        world = dist.get_world_size(group)
        buffer = bucket.buffer()
        numel, elem = buffer.numel(), buffer.element_size()
        k = self.k_for(numel)
        dense = numel * elem
        in_warmup = self.stats.steps < self.warmup_steps
        if bucket.is_last():
            self.stats.steps += 1
        self.stats.dense_bytes += dense
        if in_warmup or k * (elem + INDEX_BYTES) >= dense:
            self.stats.bytes_sent += dense
            buffer.div_(world)
            future = dist.all_reduce(buffer, group=group, async_op=True).get_future()

            def dense_done(fut):
                self.timer.record(start, time.perf_counter(), dense)
                return fut.value()[0]

            return future.then(dense_done)

        self.stats.compressed_steps += bucket.is_last()
        residual = self._residual_for(bucket, buffer) if self.error_feedback else None
        indices, values = topk_compress(buffer, residual, k)
        indices = indices.to(torch.int32)
        sent = k * (elem + INDEX_BYTES)
        self.stats.bytes_sent += sent
        all_indices = [torch.empty_like(indices) for _ in range(world)]
        all_values = [torch.empty_like(values) for _ in range(world)]
        works = [
            dist.all_gather(all_indices, indices, group=group, async_op=True),
            dist.all_gather(all_values, values, group=group, async_op=True),
        ]
        future = torch.futures.collect_all([work.get_future() for work in works])

        def sparse_done(_):
            buffer.zero_()
            buffer.index_add_(0, torch.cat(all_indices).long(), torch.cat(all_values))
            buffer.div_(world)
            self.timer.record(start, time.perf_counter(), sent)
            return buffer

        return future.then(sparse_done)

    def _residual_for(self, bucket, buffer):
        """This bucket's residual, rebuilt from per-parameter pieces when DDP has regrouped its buckets."""
        import torch

        params = bucket.parameters()
        key = tuple(id(p) for p in params)
        with self._lock:
            residual = self._residuals.get(key)
            if residual is not None and residual.numel() == buffer.numel():
                return residual
            residual = torch.zeros_like(buffer)
            offset = 0
            for param, grad in zip(params, bucket.gradients(), strict=True):
                size = grad.numel()
                previous = self._param_residuals.get(id(param))
                if previous is not None and previous.numel() == size:
                    residual[offset : offset + size].copy_(previous.reshape(-1))
                self._param_residuals[id(param)] = residual[offset : offset + size]
                offset += size
            self._residuals = {k: r for k, r in self._residuals.items() if not set(k) & set(key)}
            self._residuals[key] = residual
            return residual


class TimedAllGather:
    """FSDP2's all-gather with its time and bytes recorded (``FSDPModule.set_custom_all_gather``)."""

    def __init__(self, timer: CommTimer) -> None:
        self.timer = timer

    def allocate(self, size, *, dtype, device):
        import torch

        return torch.empty(*size, dtype=dtype, device=device)

    def __call__(self, output_tensor, input_tensor, group, async_op: bool = False):
        import torch.distributed as dist

        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        start = time.perf_counter()
        work = gather(output_tensor, input_tensor, group=group, async_op=async_op)
        return _timed(self.timer, start, work, input_tensor.numel() * input_tensor.element_size())


class TimedReduceScatter:
    """FSDP2's reduce-scatter with its time and bytes recorded; also marks where an HSDP all-reduce begins."""

    def __init__(self, timer: CommTimer) -> None:
        self.timer = timer
        self.last_end = None

    def allocate(self, size, *, dtype, device):
        import torch

        # FSDP allocates the output right before reducing: with a shard group of one there is no reduce-scatter,
        # and the replica all-reduce starts about here.
        self.last_end = time.perf_counter()
        return torch.empty(*size, dtype=dtype, device=device)

    def __call__(self, output_tensor, input_tensor, group, op, async_op: bool = False):
        import torch.distributed as dist

        scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        start = time.perf_counter()
        work = scatter(output_tensor, input_tensor, op=op, group=group, async_op=async_op)
        result = _timed(self.timer, start, work, input_tensor.numel() * input_tensor.element_size())
        self.last_end = time.perf_counter()
        return result

    def all_reduce_hook(self, reduce_output) -> None:
        """Runs after HSDP's all-reduce across replicas: the interval since the reduce-scatter is that all-reduce."""
        if self.last_end is not None:
            self.timer.record(self.last_end, time.perf_counter(), reduce_output.numel() * reduce_output.element_size())
            self.last_end = None


def _timed(timer: CommTimer, start: float, work, nbytes: int):
    if work is None:  # a synchronous collective has finished already
        timer.record(start, time.perf_counter(), nbytes)
        return None
    work.get_future().then(lambda _: timer.record(start, time.perf_counter(), nbytes))
    return work
