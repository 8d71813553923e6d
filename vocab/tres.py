"""Slurm TRES strings: ``cpu=64,mem=512G,node=4,gres/accelerator=800``.

Parsed into a plain dict ``{"cpu": 64, "mem": 524288, "gres/accelerator": 800}`` with memory in MiB, as Slurm stores
it. A value of ``-1`` means "clear this limit" (``CLEAR``), exactly like ``sacctmgr modify ... set GrpTRES=cpu=-1``.
"""

from __future__ import annotations

import re

CPU = "cpu"
MEM = "mem"
NODE = "node"
ACCEL = "gres/accelerator"

# Slurm prints TRES in the order of their ids: cpu(1), mem(2), node(4), then gres.
KNOWN_TRES = (CPU, MEM, NODE, ACCEL)
ALIASES = {"accelerator": ACCEL, "gres/accelerator": ACCEL, "cpu": CPU, "mem": MEM, "node": NODE}
CLEAR = -1

_MEM_UNITS = {"": 1, "M": 1, "G": 1024, "T": 1024 * 1024, "P": 1024 * 1024 * 1024}
_MEM_RE = re.compile(r"^(\d+)([MGTP]?)B?$", re.IGNORECASE)


class TRESError(ValueError):
    """A TRES string a person typed is malformed; the message says what and where."""


def parse_memory(text: str) -> int:
    """``"512G"`` → 524288 (MiB). A bare number is MiB, as in Slurm."""
    match = _MEM_RE.match(text.strip())
    if not match:
        raise TRESError(f"bad memory size {text!r}: use a whole number with an optional unit M, G, T or P (e.g. 512G)")
    return int(match.group(1)) * _MEM_UNITS[match.group(2).upper()]


def format_memory(mib: int) -> str:
    """Largest unit that divides evenly, like Slurm: 524288 → ``512G``, 1536 → ``1536M``."""
    for unit in ("P", "T", "G"):
        size = _MEM_UNITS[unit]
        if mib and mib % size == 0:
            return f"{mib // size}{unit}"
    return f"{mib}M"


def parse_tres(text: str, *, allow_clear: bool = True) -> dict[str, int]:
    """Parse a TRES string; values of -1 (``CLEAR``) are kept so the caller can merge them as removals."""
    text = (text or "").strip()
    if not text:
        return {}
    result: dict[str, int] = {}
    for item in text.split(","):
        item = item.strip()
        if "=" not in item:
            raise TRESError(f"bad TRES item {item!r}: expected NAME=COUNT such as gres/accelerator=8")
        raw_name, raw_value = (part.strip() for part in item.split("=", 1))
        name = ALIASES.get(raw_name.lower())
        if name is None:
            raise TRESError(
                f"unknown TRES {raw_name!r}: known are {', '.join(KNOWN_TRES)} "
                "(accelerator is short for gres/accelerator)"
            )
        if name in result:
            raise TRESError(f"TRES {name!r} given twice")
        result[name] = _parse_value(name, raw_value, allow_clear=allow_clear)
    return result


def _parse_value(name: str, raw: str, *, allow_clear: bool) -> int:
    if raw == "-1":
        if not allow_clear:
            raise TRESError(f"{name}=-1: -1 (clear) is not allowed here")
        return CLEAR
    if raw.startswith("-"):
        raise TRESError(f"{name}={raw}: counts cannot be negative (use -1 to clear a limit)")
    if name == MEM:
        return parse_memory(raw)
    if not raw.isdigit():
        raise TRESError(f"{name}={raw}: expected a whole number")
    return int(raw)


def merge_tres(current: dict[str, int] | None, change: dict[str, int]) -> dict[str, int]:
    """Apply a parsed change to a stored TRES dict: ``-1`` removes a key, other values replace it."""
    merged = dict(current or {})
    for name, value in change.items():
        if value == CLEAR:
            merged.pop(name, None)
        else:
            merged[name] = value
    return merged


def format_tres(tres: dict[str, int] | None) -> str:
    """Print as sacctmgr does, in Slurm's TRES order: ``cpu=64,mem=512G,gres/accelerator=800``."""
    if not tres:
        return ""
    parts = []
    for name in sorted(tres, key=_order):
        value = tres[name]
        parts.append(f"{name}={format_memory(value) if name == MEM else value}")
    return ",".join(parts)


def _order(name: str) -> int:
    return KNOWN_TRES.index(name) if name in KNOWN_TRES else len(KNOWN_TRES)


def job_tres(*, nodes: int, accelerators_per_node: int, cpus_per_node: int, memory_per_node: int) -> dict[str, int]:
    """The TRES a job allocates (memory in MiB), the unit every limit is checked in."""
    return {
        CPU: nodes * cpus_per_node,
        MEM: nodes * memory_per_node,
        NODE: nodes,
        ACCEL: nodes * accelerators_per_node,
    }


def tres_label(name: str) -> str:
    return {CPU: "cpus", MEM: "memory", NODE: "nodes", ACCEL: "accelerators"}[name]
