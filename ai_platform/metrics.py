"""Per-step training metrics as JSON lines, one file per rank, where the portal's monitoring can read them.

The file is ``$AIPOOL_METRICS_DIR/rank-<r>.jsonl``, or ``$AIPOOL_RUN_DIR/metrics/rank-<r>.jsonl`` inside a pool job.
Each line is one optimizer step; a reader may tail the file while the job runs (every line is flushed whole).

Fields: step, epoch, rank, world_size, time (unix), loss (mean over all ranks), lr, samples (global batch),
samples_per_s, step_time_s, data_time_s (waiting for batches), comm_time_s (wall time with a gradient collective in
flight), compute_time_s (the rest of the step), comm_bytes (payload this rank sent in gradient collectives),
memory_bytes (peak: CUDA allocator on GPU, resident set on CPU), and checkpoint_stall_s on steps that saved.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO


def metrics_dir(environ=None) -> Path | None:
    environ = os.environ if environ is None else environ
    if environ.get("AIPOOL_METRICS_DIR"):
        return Path(environ["AIPOOL_METRICS_DIR"])
    if environ.get("AIPOOL_RUN_DIR"):
        return Path(environ["AIPOOL_RUN_DIR"]) / "metrics"
    return None


def peak_memory_bytes(device) -> int:
    if device is not None and device.type == "cuda":
        import torch

        return int(torch.cuda.max_memory_allocated(device))
    # ru_maxrss is in KiB on Linux, bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


class CommTimer:
    """Collects the intervals during which gradient collectives were in flight, from any thread.

    Buckets overlap each other and the backward pass; the union of their intervals is the step's communication
    time, so compute_time = step_time - comm_time is the time with nothing on the wire.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._intervals: list[tuple[float, float]] = []
        self._bytes = 0

    def record(self, start: float, end: float, nbytes: int) -> None:
        with self._lock:
            self._intervals.append((start, end))
            self._bytes += nbytes

    def add_bytes(self, nbytes: int) -> None:
        with self._lock:
            self._bytes += nbytes

    def take(self) -> tuple[float, int]:
        """(seconds with a collective in flight, bytes) since the last take()."""
        with self._lock:
            intervals, nbytes = sorted(self._intervals), self._bytes
            self._intervals, self._bytes = [], 0
        total, end = 0.0, float("-inf")
        for start, stop in intervals:
            if stop <= end:
                continue
            total += stop - max(start, end)
            end = stop
        return total, nbytes


class MetricsWriter:
    """Appends one JSON object per step to this rank's file (and keeps them in memory for the caller)."""

    def __init__(self, directory: Path | None, rank: int, keep: int = 10_000) -> None:
        self.path = None if directory is None else Path(directory) / f"rank-{rank}.jsonl"
        self.history: list[dict[str, Any]] = []
        self._keep = keep
        self._file: TextIO | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", buffering=1)

    def write(self, record: dict[str, Any]) -> None:
        record = {"time": round(time.time(), 3), **record}
        self.history.append(record)
        if len(self.history) > self._keep:
            del self.history[: len(self.history) - self._keep]
        if self._file is not None:
            self._file.write(json.dumps(record, separators=(",", ":")) + "\n")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
