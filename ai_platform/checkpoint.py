"""Checkpoints: atomic, checksummed, optionally zstd-compressed, written in the background, rotated, backed up.

A checkpoint is a directory ``step-<9 digits>`` in ``primary_dir`` (and a copy in ``backup_dir``)::

    state.pt.zst       model and optimizer state (DDP: one full copy, written by rank 0), or
    shards/            the same, sharded, written by every rank through torch.distributed.checkpoint (FSDP)
    trainer.pt         step, epoch, scheduler, grad scaler and every rank's RNG states
    manifest.json      written last: format, step, world size, and the size and SHA-256 of every file above

It is written into ``.tmp-step-…`` next to its final place, each file fsync-ed, then renamed: a directory named
``step-…`` is complete or was damaged afterwards, which the checksums catch. Resuming takes the newest checkpoint whose
manifest and checksums verify, trying the backup copy of a step before an older step, and reports what it skipped.

In ``mode="async"`` the state is first copied into host buffers (reused from one checkpoint to the next, so the copy
is a memcpy and not a page-faulting allocation), then serialised, compressed, hashed and written by a background
thread while training continues; the next save waits for the previous one. Sharded checkpoints use DCP's async_save
on a process group of their own, so the background collectives never interleave with the training ones.
"""

from __future__ import annotations

import getpass
import hashlib
import io
import json
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ai_platform.errors import CheckpointError

FORMAT = "ai_platform-checkpoint/1"
MODES = ("sync", "async")
COMPRESSIONS = ("zstd", None)
STEP_DIR = re.compile(r"^step-(\d{9,})$")
TMP_PREFIX = ".tmp-step-"
STATE_FILE = "state.pt"
TRAINER_FILE = "trainer.pt"
MANIFEST = "manifest.json"
SHARDS = "shards"
CHUNK = 1 << 22

_UNSET: Any = object()


@dataclass(frozen=True)
class CheckpointConfig:
    primary_dir: Path | None = None
    backup_dir: Path | None = None
    interval: int = 1000
    mode: str = "sync"
    compression: str | None = None
    max_to_keep: int = 3
    level: int = 3

    @property
    def enabled(self) -> bool:
        return self.primary_dir is not None

    def updated(self, **changes: Any) -> CheckpointConfig:
        """A copy with the given settings changed; settings not given (``_UNSET``) keep their value."""
        changes = {k: v for k, v in changes.items() if v is not _UNSET}
        for key in ("primary_dir", "backup_dir"):
            if key in changes and changes[key] is not None:
                changes[key] = expand_dir(changes[key], name=key)
        config = replace(self, **changes)
        config.validate()
        return config

    def validate(self) -> None:
        if isinstance(self.interval, bool) or not isinstance(self.interval, int) or self.interval < 1:
            raise ValueError(f"interval must be a whole number of steps >= 1, got {self.interval!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be 'sync' or 'async', got {self.mode!r}")
        if self.compression not in COMPRESSIONS:
            raise ValueError(f"compression must be 'zstd' or None, got {self.compression!r}")
        if self.compression == "zstd":
            _zstd()
        if isinstance(self.max_to_keep, bool) or not isinstance(self.max_to_keep, int) or self.max_to_keep < 1:
            raise ValueError(f"max_to_keep must be a whole number >= 1, got {self.max_to_keep!r}")
        if self.backup_dir is not None and self.primary_dir is None:
            raise ValueError("backup_dir needs a primary_dir (or the trainer's checkpoint_dir) to back up")
        if self.backup_dir is not None and self.backup_dir == self.primary_dir:
            raise ValueError("backup_dir must differ from primary_dir: a backup in the same place protects nothing")


def expand_dir(path: str | os.PathLike, *, name: str = "directory") -> Path:
    """`path` with ~ and $VARIABLES expanded; $USER falls back to the login name; an unset variable is an error."""
    text = os.path.expanduser(str(path))
    environ = dict(os.environ)
    if "USER" not in environ:
        try:
            environ["USER"] = getpass.getuser()
        except (KeyError, OSError):
            pass

    def substitute(match: re.Match) -> str:
        variable = match.group(1) or match.group(2)
        if variable not in environ:
            raise ValueError(f"{name}={str(path)!r}: environment variable {variable} is not set")
        return environ[variable]

    return Path(re.sub(r"\$(?:\{(\w+)\}|(\w+))", substitute, text))


def _zstd():
    try:
        import zstandard
    except ImportError:
        raise CheckpointError(
            "compression='zstd' needs the 'zstandard' package: pip install zstandard (or aipool[sdk])"
        ) from None
    return zstandard


# --- files ---------------------------------------------------------------------------------------------------


class _HashingWriter:
    """A write-only file object that hashes and counts what passes through it."""

    def __init__(self, handle) -> None:
        self.handle = handle
        self.sha256 = hashlib.sha256()
        self.bytes = 0

    def write(self, data) -> int:
        self.sha256.update(data)
        self.bytes += len(data)
        return self.handle.write(data)

    def flush(self) -> None:
        self.handle.flush()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _save_torch(obj: Any, path: Path, compression: str | None, level: int) -> dict:
    import torch

    with open(path, "wb") as handle:
        hashing = _HashingWriter(handle)
        if compression == "zstd":
            writer = _zstd().ZstdCompressor(level=level).stream_writer(hashing, closefd=False)
            torch.save(obj, writer)
            writer.close()
        else:
            torch.save(obj, hashing)
        handle.flush()
        os.fsync(handle.fileno())
    return {"bytes": hashing.bytes, "sha256": hashing.sha256.hexdigest()}


def _load_torch(path: Path) -> Any:
    import torch

    with open(path, "rb") as handle:
        if path.suffix == ".zst":
            data = _zstd().ZstdDecompressor().stream_reader(handle).read()
            return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        return torch.load(handle, map_location="cpu", weights_only=True)


def _file_digest(path: Path) -> dict:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
            size += len(chunk)
    return {"bytes": size, "sha256": digest.hexdigest()}


def step_dirs(directory: Path) -> list[tuple[int, Path]]:
    """(step, path) of the complete-looking checkpoints in `directory`, newest first."""
    if directory is None or not directory.is_dir():
        return []
    found = []
    for entry in directory.iterdir():
        match = STEP_DIR.match(entry.name)
        if match and entry.is_dir():
            found.append((int(match.group(1)), entry))
    return sorted(found, reverse=True)


def verify(path: Path) -> dict:
    """The manifest of a checkpoint directory after checking every file in it; raises CheckpointError."""
    try:
        manifest = json.loads((path / MANIFEST).read_text())
    except FileNotFoundError:
        raise CheckpointError("no manifest.json (the write did not finish)") from None
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"unreadable manifest.json ({exc})") from None
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != FORMAT
        or not isinstance(manifest.get("files"), dict)
    ):
        raise CheckpointError(f"manifest.json is not a {FORMAT} manifest")
    for name, expected in manifest["files"].items():
        try:
            actual = _file_digest(path / name)
        except OSError:
            raise CheckpointError(f"{name} is missing") from None
        if actual["bytes"] != expected.get("bytes"):
            raise CheckpointError(f"{name} has {actual['bytes']} bytes, the manifest says {expected.get('bytes')}")
        if actual["sha256"] != expected.get("sha256"):
            raise CheckpointError(f"{name} fails its SHA-256 check")
    return manifest


def rotate(directory: Path, keep: int) -> list[Path]:
    """Delete all but the `keep` newest checkpoints in `directory`; returns what was deleted."""
    doomed = [path for _, path in step_dirs(directory)[keep:]]
    for path in doomed:
        shutil.rmtree(path, ignore_errors=True)
    return doomed


def copy_checkpoint(source: Path, directory: Path) -> Path:
    """Copy a finished checkpoint into `directory` with the same atomic rename; returns the copy."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / source.name
    tmp = directory / f"{TMP_PREFIX}{source.name.removeprefix('step-')}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp)
    for path in sorted(tmp.rglob("*")):
        if path.is_file():
            with open(path, "rb+") as handle:
                os.fsync(handle.fileno())
    if target.exists():
        shutil.rmtree(target)
    os.rename(tmp, target)
    _fsync_dir(directory)
    return target


# --- host snapshots ------------------------------------------------------------------------------------------


class Snapshotter:
    """Copies a nested state (dicts, lists, tensors) into host buffers kept from one checkpoint to the next.

    On GPU the copies run on a stream of their own, ordered after the work queued when the save began.
    """

    def __init__(self) -> None:
        self._buffers: dict[str, Any] = {}
        self._stream = None

    def copy(self, state: Any, path: str = "", ready=None) -> Any:
        """A host copy of `state`; `ready` is a CUDA event recorded when the state was current."""
        import torch

        if ready is None or not torch.cuda.is_available():
            return self._copy(state, path)
        if self._stream is None:
            self._stream = torch.cuda.Stream()
        with torch.cuda.stream(self._stream):
            self._stream.wait_event(ready)
            copied = self._copy(state, path)
        self._stream.synchronize()
        return copied

    def _copy(self, state: Any, path: str) -> Any:
        import torch

        if isinstance(state, torch.Tensor):
            return self._copy_tensor(state, path)
        if isinstance(state, dict):
            return {key: self._copy(value, f"{path}/{key}") for key, value in state.items()}
        if isinstance(state, (list, tuple)):
            copied = [self._copy(value, f"{path}/{i}") for i, value in enumerate(state)]
            return copied if isinstance(state, list) else tuple(copied)
        return state  # ints, floats, strings: immutable

    def _copy_tensor(self, tensor, path: str):
        import torch

        tensor = tensor.detach()
        buffer = self._buffers.get(path)
        if buffer is None or buffer.shape != tensor.shape or buffer.dtype != tensor.dtype:
            pin = tensor.device.type == "cuda"
            buffer = torch.empty(tensor.shape, dtype=tensor.dtype, device="cpu", pin_memory=pin)
            self._buffers[path] = buffer
        buffer.copy_(tensor, non_blocking=tensor.device.type == "cuda")
        return buffer


def _cuda_event():
    """An event marking the work queued so far on the current CUDA stream, or None on CPU."""
    import torch

    if not torch.cuda.is_available():
        return None
    event = torch.cuda.Event()
    event.record()
    return event


# --- the manager ---------------------------------------------------------------------------------------------


@dataclass
class SaveReport:
    step: int
    stall_s: float
    path: Path | None = None


@dataclass
class ResumeReport:
    path: Path | None = None
    step: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)


class CheckpointManager:
    """Saves and restores training state according to a CheckpointConfig, on every rank of the job.

    ``sharded`` selects DCP (every rank writes its own shards) instead of rank 0 writing one full copy.
    """

    def __init__(self, config: CheckpointConfig, *, rank: int, world_size: int, sharded: bool, group=None) -> None:
        self.config = config
        self.rank = rank
        self.world_size = world_size
        self.sharded = sharded
        self.group = group  # a process group for DCP's background collectives (sharded async only)
        self._snapshots = Snapshotter()
        self._pending: threading.Thread | None = None
        self._pending_future = None
        self._copied: threading.Event | None = None
        self._error: BaseException | None = None
        self.warnings: list[str] = []
        self.saved: list[SaveReport] = []

    # -- saving

    def save(self, step: int, model_state: dict, trainer_state: dict, extra: dict | None = None) -> SaveReport:
        """Checkpoint `step`. Collective for sharded state: every rank calls it. Returns the time training stalled."""
        started = time.perf_counter()
        self.wait()
        tmp = self.config.primary_dir / f"{TMP_PREFIX}{step:09d}"
        summary = {"step": step, "world_size": self.world_size, "sharded": self.sharded, **(extra or {})}
        if self.sharded:
            self._save_sharded(step, tmp, model_state, trainer_state, summary)
        elif self.rank == 0:
            self._save_full(step, tmp, model_state, trainer_state, summary)
        report = SaveReport(step, time.perf_counter() - started, self.config.primary_dir / f"step-{step:09d}")
        self.saved.append(report)
        return report

    def _save_full(self, step: int, tmp: Path, model_state: dict, trainer_state: dict, summary: dict) -> None:
        copied = None
        if self.config.mode == "async":
            # The copy itself runs in the background too, overlapping the next forward and backward pass, which
            # only read the parameters; fence() holds the next optimizer step until it is done. Whatever a forward
            # pass writes (module buffers) the caller passes as copies.
            trainer_state = self._snapshots.copy(trainer_state, "trainer")
            copied, ready = threading.Event(), _cuda_event()
            self._copied = copied

        def write() -> None:
            nonlocal model_state
            if copied is not None:
                try:
                    model_state = self._snapshots.copy(model_state, "model", ready)
                finally:
                    copied.set()
            _prepare_tmp(tmp)
            name = STATE_FILE + (".zst" if self.config.compression == "zstd" else "")
            files = {name: _save_torch(model_state, tmp / name, self.config.compression, self.config.level)}
            files[TRAINER_FILE] = _save_torch(trainer_state, tmp / TRAINER_FILE, None, 0)
            self._finalize(step, tmp, files, summary)

        self._run(write)

    def _save_sharded(self, step: int, tmp: Path, model_state: dict, trainer_state: dict, summary: dict) -> None:
        import torch.distributed as dist
        import torch.distributed.checkpoint as dcp

        if self.rank == 0:
            _prepare_tmp(tmp)
        dist.barrier()
        writer = dcp.FileSystemWriter(str(tmp / SHARDS), **self._dcp_extensions())
        if self.config.mode == "async":
            future = dcp.async_save(model_state, storage_writer=writer, process_group=self.group)
            future = getattr(future, "upload_completion", future)  # newer releases return a response object
        else:
            dcp.save(model_state, storage_writer=writer)
            future = None
        if self.rank != 0:
            self._pending_future = future
            return
        trainer_state = self._snapshots.copy(trainer_state, "trainer")

        def finish() -> None:
            if future is not None:
                future.result()
            files = {TRAINER_FILE: _save_torch(trainer_state, tmp / TRAINER_FILE, None, 0)}
            for path in sorted((tmp / SHARDS).rglob("*")):
                if path.is_file():
                    files[str(path.relative_to(tmp))] = _file_digest(path)
            self._finalize(step, tmp, files, summary)

        self._run(finish)

    def _dcp_extensions(self) -> dict:
        if self.config.compression != "zstd":
            return {}
        try:
            from torch.distributed.checkpoint._extension import ZStandard
        except ImportError:
            self._warn("this PyTorch's DCP has no zstd extension: sharded checkpoints are written uncompressed")
            return {}
        return {"_extensions": [ZStandard()]}

    def _finalize(self, step: int, tmp: Path, files: dict, summary: dict) -> None:
        manifest = {
            "format": FORMAT,
            "created": time.time(),
            "compression": self.config.compression,
            **summary,
            "files": files,
        }
        with open(tmp / MANIFEST, "w") as handle:
            json.dump(manifest, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        _fsync_dir(tmp)
        final = self.config.primary_dir / f"step-{step:09d}"
        if final.exists():
            shutil.rmtree(final)
        os.rename(tmp, final)
        _fsync_dir(self.config.primary_dir)
        rotate(self.config.primary_dir, self.config.max_to_keep)
        if self.config.backup_dir is not None:
            try:
                copy_checkpoint(final, self.config.backup_dir)
                rotate(self.config.backup_dir, self.config.max_to_keep)
            except OSError as exc:  # a lost backup must not stop training; the primary copy is complete
                self._warn(f"backup of step {step} to {self.config.backup_dir} failed: {exc}")

    def _run(self, work: Callable[[], None]) -> None:
        if self.config.mode == "sync":
            try:
                work()
            except OSError as exc:
                raise CheckpointError(f"cannot write checkpoint in {self.config.primary_dir}: {exc}") from exc
            return

        def background() -> None:
            try:
                work()
            except BaseException as exc:  # raised in the training thread at the next save or wait
                self._error = exc

        self._pending = threading.Thread(target=background, name="ai_platform-checkpoint", daemon=True)
        self._pending.start()

    def fence(self) -> None:
        """Block until the state being checkpointed has been copied: call it before changing the parameters."""
        copied, self._copied = self._copied, None
        if copied is None or copied.is_set():
            return
        started = time.perf_counter()
        copied.wait()
        if self.saved:
            self.saved[-1].stall_s += time.perf_counter() - started

    def wait(self) -> None:
        """Block until the checkpoint being written in the background is done; re-raise its failure."""
        if self._pending is not None:
            self._pending.join()
            self._pending = None
        if self._pending_future is not None:
            self._pending_future.result()
            self._pending_future = None
        if self._error is not None:
            error, self._error = self._error, None
            raise CheckpointError(f"writing a checkpoint in {self.config.primary_dir} failed: {error}") from error

    @property
    def busy(self) -> bool:
        return self._pending is not None and self._pending.is_alive()

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        print(f"ai_platform: {message}", file=sys.stderr, flush=True)

    # -- restoring

    def find_latest(self) -> ResumeReport:
        """The newest verified checkpoint in primary or backup (run on one rank; broadcast the answer)."""
        report = ResumeReport()
        candidates: dict[int, list[Path]] = {}
        for directory in (self.config.primary_dir, self.config.backup_dir):
            for step, path in step_dirs(directory):
                candidates.setdefault(step, []).append(path)
        for step in sorted(candidates, reverse=True):
            for path in candidates[step]:
                try:
                    verify(path)
                except CheckpointError as exc:
                    report.skipped.append((str(path), str(exc)))
                    self._warn(f"skipping checkpoint {path}: {exc}")
                    continue
                report.path, report.step = path, step
                return report
        return report

    def remove_partial(self) -> list[Path]:
        """Delete ``.tmp-step-*`` directories left by a writer that died (call before training starts)."""
        removed = []
        for directory in (self.config.primary_dir, self.config.backup_dir):
            if directory is None or not directory.is_dir():
                continue
            for entry in directory.iterdir():
                if entry.name.startswith(TMP_PREFIX):
                    shutil.rmtree(entry, ignore_errors=True)
                    removed.append(entry)
        return removed

    @staticmethod
    def load_full(path: Path) -> dict:
        for name in (STATE_FILE + ".zst", STATE_FILE):
            if (path / name).exists():
                return _load_torch(path / name)
        raise CheckpointError(f"{path} has no {STATE_FILE}")

    @staticmethod
    def load_sharded(path: Path, model_state: dict) -> None:
        """Fill `model_state` (this rank's sharded tensors) in place from the checkpoint's DCP shards."""
        import torch.distributed.checkpoint as dcp

        dcp.load(model_state, storage_reader=dcp.FileSystemReader(str(path / SHARDS)))

    @staticmethod
    def load_trainer(path: Path) -> dict:
        return _load_torch(path / TRAINER_FILE)

    def close(self) -> None:
        self.wait()


def _prepare_tmp(tmp: Path) -> None:
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
