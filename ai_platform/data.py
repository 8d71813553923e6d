"""A directory of NumPy shards, read with background prefetch, a bounded cache or memory maps.

Format: ``<name>.<field>.npy`` files, e.g. ``part-00000.inputs.npy`` and ``part-00000.targets.npy``; every shard has
the same fields, and a field's arrays have the same dtype and per-sample shape in every shard (the first axis counts
samples). Why ``.npy``: it is NumPy's own documented format, written by any tool that has NumPy, its header gives shape
and dtype without reading data, and its fixed-size records can be memory-mapped and indexed at random with no
decoding — which tar/jsonl shards (WebDataset) cannot do: they are read front to back. ``write_dataset`` makes one.

``shard(num_shards, index)`` gives each rank a contiguous block of the samples in global order, the blocks differing
in size by at most one: every sample is on exactly one rank, and each rank reads few files. ``batches`` shuffles per
epoch by permuting the (file, rows) segments of the block and the rows inside each segment, so reads stay within a
few files at a time while the order changes every epoch; the same (seed, epoch) always gives the same order.

Reading: by default whole shard files are loaded and kept in an LRU cache of at most ``cache_size`` bytes (plus the
shard in use), and with ``prefetch`` a pool of ``prefetch_workers`` threads loads the next shards and a producer
thread assembles the next batches while the model computes. After ``enable_mmap(buffer_size)`` shards are memory-mapped
instead: a batch copies only its own rows, the kernel's page cache does the caching, and prefetch asks the kernel to
read ahead (posix_fadvise WILLNEED) up to ``buffer_size`` bytes of the coming shards.
"""

from __future__ import annotations

import os
import queue
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ai_platform.errors import DatasetError
from ai_platform.units import parse_size

try:  # the SDK's Dataset is a torch Dataset when torch is there; the reading part needs only NumPy
    from torch.utils.data import Dataset as _TorchDataset
except ImportError:  # pragma: no cover - exercised only without torch
    _TorchDataset = object

SHARD_FILE = re.compile(r"^(?P<shard>.+)\.(?P<field>[A-Za-z_][A-Za-z0-9_-]*)\.npy$")
QUEUE_DEPTH = 4  # batches assembled ahead of the consumer


@dataclass(frozen=True)
class Shard:
    name: str
    files: dict[str, Path]
    length: int
    nbytes: int


@dataclass
class DatasetStats:
    shard_loads: int = 0
    cache_hits: int = 0
    bytes_read: int = 0


def write_dataset(path: str | os.PathLike, arrays: dict[str, np.ndarray], samples_per_shard: int) -> list[Path]:
    """Write `arrays` (same first dimension) as a shard directory; each file appears whole or not at all."""
    directory = Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    lengths = {name: len(array) for name, array in arrays.items()}
    if len(set(lengths.values())) != 1:
        raise DatasetError(f"all fields need the same number of samples, got {lengths}")
    total = next(iter(lengths.values()))
    written = []
    for number, start in enumerate(range(0, total, samples_per_shard)):
        for field, array in arrays.items():
            target = directory / f"part-{number:05d}.{field}.npy"
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            with open(tmp, "wb") as handle:
                np.save(handle, np.ascontiguousarray(array[start : start + samples_per_shard]))
            os.replace(tmp, target)
            written.append(target)
    return written


def scan(path: Path, fields: Sequence[str] | None = None) -> tuple[list[Shard], tuple[str, ...]]:
    """The shards of a directory in name order, after checking that they agree with each other."""
    if not path.is_dir():
        raise DatasetError(f"dataset directory {str(path)!r} does not exist")
    grouped: dict[str, dict[str, Path]] = {}
    for entry in sorted(path.iterdir()):
        match = SHARD_FILE.match(entry.name)
        if match and entry.is_file():
            grouped.setdefault(match["shard"], {})[match["field"]] = entry
    if not grouped:
        raise DatasetError(f"no '<shard>.<field>.npy' files in {str(path)!r}")
    names = tuple(fields) if fields else tuple(sorted(next(iter(grouped.values()))))
    shards, layout = [], {}
    for name, files in sorted(grouped.items()):
        missing = [field for field in names if field not in files]
        if missing:
            raise DatasetError(f"shard {name!r} in {str(path)!r} has no field {missing[0]!r}")
        lengths, nbytes = set(), 0
        for field in names:
            header = np.load(files[field], mmap_mode="r")
            lengths.add(header.shape[0] if header.ndim else -1)
            nbytes += header.nbytes
            shape = (header.dtype.str, header.shape[1:])
            if layout.setdefault(field, shape) != shape:
                raise DatasetError(
                    f"field {field!r} of shard {name!r} is {shape}, other shards have {layout[field]}: "
                    "every shard needs the same dtype and per-sample shape"
                )
        if len(lengths) != 1 or -1 in lengths:
            raise DatasetError(f"the fields of shard {name!r} disagree on the number of samples: {sorted(lengths)}")
        shards.append(Shard(name, {field: files[field] for field in names}, lengths.pop(), nbytes))
    return shards, names


class _ShardCache:
    """LRU of loaded shards bounded in bytes; concurrent requests for one shard share a single read."""

    def __init__(self, budget: int, load, stats: DatasetStats) -> None:
        self.budget = budget
        self._load = load
        self._stats = stats
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[dict, int]] = OrderedDict()
        self._inflight: dict[str, Future] = {}
        self.size = 0

    def get(self, shard: Shard) -> dict[str, np.ndarray]:
        with self._lock:
            entry = self._entries.get(shard.name)
            if entry is not None:
                self._entries.move_to_end(shard.name)
                self._stats.cache_hits += 1
                return entry[0]
            future = self._inflight.get(shard.name)
            owner = future is None
            if owner:
                future = self._inflight[shard.name] = Future()
        if not owner:
            return future.result()
        try:
            arrays = self._load(shard)
        except BaseException as exc:
            with self._lock:
                del self._inflight[shard.name]
            future.set_exception(exc)
            raise
        with self._lock:
            del self._inflight[shard.name]
            self._insert(shard, arrays)
        future.set_result(arrays)
        return arrays

    def contains(self, shard: Shard) -> bool:
        with self._lock:
            return shard.name in self._entries or shard.name in self._inflight

    def _insert(self, shard: Shard, arrays: dict) -> None:
        if shard.nbytes > self.budget:
            return  # used once and dropped: keeping it would evict everything else
        self._entries[shard.name] = (arrays, shard.nbytes)
        self.size += shard.nbytes
        while self.size > self.budget:
            _, (_, nbytes) = self._entries.popitem(last=False)
            self.size -= nbytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.size = 0


class Dataset(_TorchDataset):
    """A shard directory as a map-style PyTorch dataset, with fast batched reading through ``batches``."""

    def __init__(
        self,
        path: str | os.PathLike,
        prefetch: bool = True,
        cache_size: int | str = "10%",
        prefetch_workers: int = 4,
        fields: Sequence[str] | None = None,
    ) -> None:
        if isinstance(prefetch_workers, bool) or not isinstance(prefetch_workers, int) or prefetch_workers < 1:
            raise ValueError(f"prefetch_workers must be a whole number >= 1, got {prefetch_workers!r}")
        self.path = Path(os.path.expandvars(os.path.expanduser(str(path))))
        self.prefetch = bool(prefetch)
        self.prefetch_workers = prefetch_workers
        self.cache_size = parse_size(cache_size, name="cache_size")
        self.shards, self.fields = scan(self.path, fields)
        self._offsets = np.cumsum([0] + [s.length for s in self.shards])
        self.total_length = int(self._offsets[-1])
        self.num_shards, self.shard_index = 1, 0
        self._lo, self._hi = 0, self.total_length
        self.mmap = False
        self.buffer_size = 0
        self.stats = DatasetStats()
        self._cache = _ShardCache(self.cache_size, self._read_shard, self.stats)
        self._maps: dict[str, dict[str, np.ndarray]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def __repr__(self) -> str:
        return (
            f"Dataset({str(self.path)!r}, fields={self.fields}, samples={len(self)}/{self.total_length}, "
            f"shard={self.shard_index}/{self.num_shards}, mmap={self.mmap})"
        )

    # --- configuration ------------------------------------------------------------------------------------

    def enable_mmap(self, buffer_size: int | str = "2GB") -> Dataset:
        """Memory-map shards instead of loading them; prefetch reads ahead up to `buffer_size` bytes."""
        self.buffer_size = parse_size(buffer_size, name="buffer_size", allow_percent=False)
        self.mmap = True
        self._cache.clear()
        return self

    def shard(self, num_shards: int, index: int) -> Dataset:
        """Keep only this rank's contiguous block: sizes differ by at most one, every sample in exactly one block."""
        for name, value in (("num_shards", num_shards), ("index", index)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be a whole number, got {value!r}")
        if num_shards < 1:
            raise ValueError(f"num_shards must be at least 1, got {num_shards}")
        if not 0 <= index < num_shards:
            raise ValueError(f"index must be in 0..{num_shards - 1}, got {index}")
        if num_shards > self.total_length:
            raise DatasetError(f"cannot split {self.total_length} samples into {num_shards} non-empty shards")
        self.num_shards, self.shard_index = num_shards, index
        self._lo = index * self.total_length // num_shards
        self._hi = (index + 1) * self.total_length // num_shards
        return self

    @property
    def is_sharded(self) -> bool:
        return self.num_shards > 1

    @property
    def indices(self) -> range:
        """The global sample indices of this shard."""
        return range(self._lo, self._hi)

    # --- map-style access (PyTorch DataLoader) ------------------------------------------------------------

    def __len__(self) -> int:
        return self._hi - self._lo

    def __getitem__(self, index: int):
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} samples")
        return self._to_sample(self._gather(np.array([self._lo + index % len(self)])), 0)

    def __getitems__(self, indices: Sequence[int]) -> list:
        """DataLoader's batched fetch: one read per shard for the whole batch instead of one per sample."""
        batch = self._gather(self._lo + np.asarray(indices, dtype=np.int64) % max(len(self), 1))
        return [self._to_sample(batch, i) for i in range(len(indices))]

    def __getstate__(self) -> dict:
        # DataLoader workers get a copy: threads, maps and cached arrays stay behind.
        state = self.__dict__.copy()
        state.update(_pool=None, _maps={}, _cache=None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._cache = _ShardCache(self.cache_size, self._read_shard, self.stats)

    def _to_sample(self, batch: tuple[np.ndarray, ...], row: int):
        import torch

        values = tuple(torch.from_numpy(np.array(array[row])) for array in batch)
        return values[0] if len(values) == 1 else values

    # --- batched reading ----------------------------------------------------------------------------------

    def num_batches(self, batch_size: int, drop_last: bool = True) -> int:
        return len(self) // batch_size if drop_last else -(-len(self) // batch_size)

    def epoch_order(self, epoch: int = 0, seed: int = 0, shuffle: bool = True) -> np.ndarray:
        """Global sample indices of this shard in the order of `epoch`."""
        segments = self._segments()
        if not shuffle:
            return np.arange(self._lo, self._hi, dtype=np.int64)
        rng = np.random.default_rng([seed, epoch])
        parts = [start + rng.permutation(stop - start) for start, stop in segments]
        order = rng.permutation(len(parts))
        return np.concatenate([parts[i] for i in order]) if parts else np.empty(0, dtype=np.int64)

    def batches(
        self,
        batch_size: int,
        epoch: int = 0,
        seed: int = 0,
        shuffle: bool = True,
        start: int = 0,
        drop_last: bool = True,
    ) -> Iterator:
        """Batches (a tensor, or a tuple of tensors in `fields` order) of this shard, from batch number `start`."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        order = self.epoch_order(epoch, seed, shuffle)
        count = self.num_batches(batch_size, drop_last)
        slices = [order[i * batch_size : (i + 1) * batch_size] for i in range(start, count)]
        if not self.prefetch:
            return (self._to_batch(self._gather(indices)) for indices in slices)
        return self._prefetched(slices)

    def _prefetched(self, slices: list[np.ndarray]) -> Iterator:
        first_use, used_by = self._shard_plan(slices)
        requested: set[int] = set()
        ready: queue.Queue = queue.Queue(maxsize=QUEUE_DEPTH)
        stop = threading.Event()
        done = object()

        def produce() -> None:
            try:
                for number, indices in enumerate(slices):
                    if stop.is_set():
                        return
                    self._read_ahead(first_use, used_by[number], requested)
                    ready.put(self._to_batch(self._gather(indices)))
                ready.put(done)
            except BaseException as exc:  # handed to the consumer, raised there
                ready.put(exc)

        producer = threading.Thread(target=produce, name="ai_platform-prefetch", daemon=True)
        producer.start()
        try:
            while True:
                item = ready.get()
                if item is done:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            while producer.is_alive():  # unblock a producer waiting on a full queue
                try:
                    ready.get_nowait()
                except queue.Empty:
                    producer.join(timeout=0.05)

    def _shard_plan(self, slices: list[np.ndarray]) -> tuple[list[int], list[int]]:
        """Shards in order of first use, and for each batch how many of them it and the batches before it use."""
        first_use: list[int] = []
        used_by = []
        seen: set[int] = set()
        for indices in slices:
            for shard in np.unique(np.searchsorted(self._offsets, indices, side="right") - 1).tolist():
                if shard not in seen:
                    seen.add(shard)
                    first_use.append(shard)
            used_by.append(len(first_use))
        return first_use, used_by

    def _read_ahead(self, first_use: list[int], used: int, requested: set[int]) -> None:
        """Start reading the shards after the current one, as many as the cache (or mmap buffer) can hold."""
        current = self.shards[first_use[used - 1]].nbytes if used else 0
        budget = self.buffer_size if self.mmap else max(self.cache_size - current, 0)
        for number in first_use[used:]:
            shard = self.shards[number]
            if shard.nbytes > budget:
                break
            budget -= shard.nbytes
            if number in requested:
                continue
            requested.add(number)
            self._executor().submit(self._advise if self.mmap else self._cache.get, shard)

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.prefetch_workers, thread_name_prefix="ai_platform-read")
        return self._pool

    def _segments(self) -> list[tuple[int, int]]:
        """(start, stop) global index ranges of this shard, split at file boundaries."""
        segments = []
        for number in range(len(self.shards)):
            start = max(int(self._offsets[number]), self._lo)
            stop = min(int(self._offsets[number + 1]), self._hi)
            if start < stop:
                segments.append((start, stop))
        return segments

    def _gather(self, indices: np.ndarray) -> tuple[np.ndarray, ...]:
        """The rows at global `indices`, one array per field, in the order given."""
        shard_of = np.searchsorted(self._offsets, indices, side="right") - 1
        out = None
        for number in np.unique(shard_of).tolist():
            where = np.nonzero(shard_of == number)[0]
            rows = indices[where] - self._offsets[number]
            arrays = self._arrays(self.shards[number])
            if out is None:
                out = tuple(np.empty((len(indices), *arrays[f].shape[1:]), dtype=arrays[f].dtype) for f in self.fields)
            for target, field in zip(out, self.fields, strict=True):
                target[where] = arrays[field][rows]
        return out

    def _to_batch(self, arrays: tuple[np.ndarray, ...]):
        import torch

        tensors = tuple(torch.from_numpy(array) for array in arrays)
        return tensors[0] if len(tensors) == 1 else tensors

    def _arrays(self, shard: Shard) -> dict[str, np.ndarray]:
        if not self.mmap:
            return self._cache.get(shard)
        maps = self._maps.get(shard.name)
        if maps is None:
            maps = self._maps[shard.name] = {f: np.load(p, mmap_mode="r") for f, p in shard.files.items()}
        return maps

    def _read_shard(self, shard: Shard) -> dict[str, np.ndarray]:
        arrays = {field: np.load(path) for field, path in shard.files.items()}
        self.stats.shard_loads += 1
        self.stats.bytes_read += shard.nbytes
        return arrays

    def _advise(self, shard: Shard) -> None:
        for path in shard.files.values():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            finally:
                os.close(fd)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self._maps.clear()
        self._cache.clear()
