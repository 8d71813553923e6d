"""Sizes as people write them: ``"2GB"``, ``"512MiB"``, ``"20%"`` (of this machine's memory), or plain bytes."""

from __future__ import annotations

import os
import re

# Binary multiples for both spellings, as Slurm reads --mem=2G: "2GB" is 2 GiB.
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


def total_memory() -> int:
    """Bytes of memory this process may use: the machine's, or its cgroup's limit when lower."""
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            raw = open(path).read().strip()
        except OSError:
            continue
        if raw.isdigit():
            return min(physical, int(raw))
    return physical


def parse_size(value: int | str, *, name: str = "size", allow_percent: bool = True) -> int:
    """Bytes from an int, ``"2GB"``/``"2G"``/``"2GiB"``, or (if allowed) ``"20%"`` of total_memory()."""
    if isinstance(value, bool):
        raise ValueError(f"{name}: expected bytes or a size such as '2GB', got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{name}: must not be negative, got {value}")
        return value
    if not isinstance(value, str):
        raise ValueError(f"{name}: expected bytes or a size such as '2GB', got {value!r}")
    percent = _PERCENT.match(value)
    if percent:
        if not allow_percent:
            raise ValueError(f"{name}: a share of memory ({value!r}) is not accepted here; give a size such as '2GB'")
        share = float(percent.group(1))
        if share > 100:
            raise ValueError(f"{name}: {value!r} is more than all of this machine's memory")
        return int(total_memory() * share / 100)
    match = _SIZE.match(value)
    if not match:
        hint = "'2GB', '512MiB', '20%' or bytes" if allow_percent else "'2GB', '512MiB' or bytes"
        raise ValueError(f"{name}: cannot read {value!r} as a size; use e.g. {hint}")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])
