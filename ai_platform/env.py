"""The distributed environment a job runs in, read from the variables the pool's backends set.

The local backend and Slurm both export torch.distributed's names (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
MASTER_ADDR, MASTER_PORT) and the accelerators of the node (AIPOOL_ACCELERATORS, comma-separated indices). Under
plain ``srun`` only SLURM_* may be set, so those are the fallback. Without any of them the job is one process.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from ai_platform.errors import DeviceError, EnvironmentConfigError

BACKENDS = ("gloo", "nccl")


@dataclass(frozen=True)
class DistEnv:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    master_addr: str = "127.0.0.1"
    master_port: int | None = None
    accelerators: tuple[int, ...] = ()
    job_id: str = ""
    run_dir: Path | None = None

    @property
    def num_nodes(self) -> int:
        return self.world_size // self.local_world_size

    @property
    def node_rank(self) -> int:
        return self.rank // self.local_world_size

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def _int(environ: Mapping[str, str], names: tuple[str, ...], default: int | None) -> int | None:
    for name in names:
        raw = environ.get(name)
        if raw is None or raw == "":
            continue
        try:
            return int(raw)
        except ValueError:
            raise EnvironmentConfigError(f"{name}={raw!r} is not a whole number") from None
    return default


def _accelerators(raw: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in raw.split(",") if part.strip())
    except ValueError:
        raise EnvironmentConfigError(
            f"AIPOOL_ACCELERATORS={raw!r}: expected comma-separated accelerator indices such as '0,1'"
        ) from None


def from_environ(environ: Mapping[str, str] | None = None) -> DistEnv:
    """The DistEnv described by `environ` (os.environ by default); raises EnvironmentConfigError if inconsistent."""
    environ = os.environ if environ is None else environ
    world_size = _int(environ, ("WORLD_SIZE", "SLURM_NTASKS"), 1)
    rank = _int(environ, ("RANK", "SLURM_PROCID"), 0)
    local_rank = _int(environ, ("LOCAL_RANK", "SLURM_LOCALID"), 0)
    local_world_size = _int(environ, ("LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE"), 1)
    port = _int(environ, ("MASTER_PORT",), None)
    if world_size < 1:
        raise EnvironmentConfigError(f"WORLD_SIZE must be at least 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise EnvironmentConfigError(f"RANK={rank} is outside 0..{world_size - 1} (WORLD_SIZE={world_size})")
    if local_world_size < 1 or world_size % local_world_size:
        raise EnvironmentConfigError(
            f"LOCAL_WORLD_SIZE={local_world_size} does not divide WORLD_SIZE={world_size}: "
            "every node must run the same number of processes"
        )
    if not 0 <= local_rank < local_world_size:
        raise EnvironmentConfigError(f"LOCAL_RANK={local_rank} is outside 0..{local_world_size - 1}")
    if world_size > 1 and port is None:
        raise EnvironmentConfigError(f"WORLD_SIZE={world_size} but MASTER_PORT is not set: cannot rendezvous")
    run_dir = environ.get("AIPOOL_RUN_DIR")
    return DistEnv(
        rank=rank,
        world_size=world_size,
        local_rank=local_rank,
        local_world_size=local_world_size,
        master_addr=environ.get("MASTER_ADDR") or "127.0.0.1",
        master_port=port,
        accelerators=_accelerators(environ.get("AIPOOL_ACCELERATORS", "")),
        job_id=environ.get("AIPOOL_JOB_ID") or environ.get("SLURM_JOB_ID") or "",
        run_dir=Path(run_dir) if run_dir else None,
    )


def select_device(env: DistEnv, device: str | None = None):
    """The torch.device this rank trains on: its own GPU when CUDA is usable, else the CPU.

    Without CUDA_VISIBLE_DEVICES the rank picks its accelerator from AIPOOL_ACCELERATORS; with it (the local backend
    sets it to the same list) the visible devices are renumbered from 0 and LOCAL_RANK indexes them.
    """
    import torch

    if device is not None:
        chosen = torch.device(device)
        if chosen.type == "cuda" and not torch.cuda.is_available():
            raise DeviceError(f"device={device!r} needs a CUDA GPU and none is visible; use device='cpu'")
        return chosen
    if not torch.cuda.is_available():
        return torch.device("cpu")
    count = torch.cuda.device_count()
    if env.accelerators and "CUDA_VISIBLE_DEVICES" not in os.environ:
        index = env.accelerators[env.local_rank % len(env.accelerators)]
    else:
        index = env.local_rank % count
    return torch.device("cuda", index)


def select_backend(device, backend: str | None = None) -> str:
    """gloo for CPU tensors, nccl for CUDA ones; a clear error for a backend this device cannot use."""
    import torch.distributed as dist

    if backend is None:
        backend = "nccl" if device.type == "cuda" else "gloo"
    if backend not in BACKENDS:
        raise DeviceError(f"backend={backend!r} is not supported; use one of {', '.join(BACKENDS)}")
    if backend == "nccl" and device.type != "cuda":
        raise DeviceError("backend='nccl' needs CUDA GPUs and this process has none; use backend='gloo' on CPU")
    if backend == "nccl" and not dist.is_nccl_available():
        raise DeviceError("backend='nccl' is not built into this PyTorch; install a CUDA build or use 'gloo'")
    if backend == "gloo" and not dist.is_gloo_available():
        raise DeviceError("backend='gloo' is not built into this PyTorch")
    return backend


def init_process_group(env: DistEnv, backend: str, timeout_s: float = 600.0) -> bool:
    """Join (or create) the default process group; returns True if this call created it.

    A single process still gets a group (an in-memory store, no port) so that DDP, FSDP and the checkpoint code
    run the same way at every scale.
    """
    import torch.distributed as dist

    if dist.is_initialized():
        if dist.get_world_size() != env.world_size or dist.get_rank() != env.rank:
            raise EnvironmentConfigError(
                f"a process group of rank {dist.get_rank()}/{dist.get_world_size()} already exists, "
                f"but the environment says {env.rank}/{env.world_size}"
            )
        return False
    timeout = timedelta(seconds=timeout_s)
    if env.world_size == 1:
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timeout)
        return True
    dist.init_process_group(
        backend,
        init_method=f"tcp://{env.master_addr}:{env.master_port}",
        rank=env.rank,
        world_size=env.world_size,
        timeout=timeout,
    )
    return True
