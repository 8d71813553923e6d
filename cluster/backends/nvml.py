"""Accelerator utilisation and memory from NVML, where pynvml is importable and GPUs exist; otherwise nothing.

Pure stdlib around an optional import: a pool without NVIDIA GPUs (or without pynvml) gets None and monitoring falls
back to CPU utilisation as the stand-in, and says so.
"""

from __future__ import annotations

import functools


@functools.cache
def _nvml():
    try:
        import pynvml

        pynvml.nvmlInit()
        if pynvml.nvmlDeviceGetCount() == 0:
            return None
        return pynvml
    except Exception:  # no library, no driver, no device: all mean "no accelerator telemetry here"
        return None


def accelerator_usage(indices: tuple[int, ...] | list[int]) -> tuple[float, int] | None:
    """(mean utilisation 0..1, memory used in bytes) over the accelerators `indices`, or None without NVML."""
    nvml = _nvml()
    if nvml is None or not indices:
        return None
    try:
        utilisation, memory = 0.0, 0
        for index in indices:
            handle = nvml.nvmlDeviceGetHandleByIndex(int(index))
            utilisation += nvml.nvmlDeviceGetUtilizationRates(handle).gpu / 100.0
            memory += int(nvml.nvmlDeviceGetMemoryInfo(handle).used)
        return utilisation / len(indices), memory
    except Exception:  # an index this machine does not have, a device that fell off the bus
        return None
