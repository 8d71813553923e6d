"""The Slurm backend's usage readings: ``sstat`` lines (TRESUsageInAve / TRESUsageInMax) as TaskUsage. Pure stdlib.

Each job step is one task (rank = step index in the order sstat lists them; the batch step and the extern step are
left out when real steps exist). CPU time is the average per task times the step's task count, so two readings give
the step's busy cores; memory is the largest task's resident set; ``pages`` (major page faults) stands in for swap
activity, which Slurm does not account. A gres utilisation TRES (``gres/gpuutil``, ``gres/accelerator...util``, from
AcctGatherGpu) is the accelerator utilisation where present.
"""

from __future__ import annotations

import re

from cluster.backends.base import TaskUsage

SSTAT_FORMAT = "JobID,NodeList,NTasks,TRESUsageInAve,TRESUsageInMax"
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_DURATION = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")


def parse_tres_usage(text: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in text.split(",") if "=" in item)


def duration_seconds(text: str) -> float | None:
    """Slurm's [DD-][HH:]MM:SS[.mmm] as seconds."""
    match = _DURATION.match(text.strip())
    if not match:
        return None
    days, hours, minutes, seconds = match.groups()
    return int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)


def size_bytes(text: str) -> int | None:
    match = re.match(r"^(\d+(?:\.\d+)?)([KMGT]?)$", text.strip())
    return None if not match else int(float(match.group(1)) * _UNITS[match.group(2)])


def _accel_util(tres: dict[str, str]) -> float | None:
    for name, value in tres.items():
        if name.startswith("gres/") and name.endswith("util"):
            try:
                return float(value) / 100.0
            except ValueError:
                return None
    return None


def usage_from_sstat(output: str, *, at: float) -> list[TaskUsage]:
    rows = [line.split("|") for line in output.splitlines() if line.count("|") >= 4]
    real = [r for r in rows if not r[0].endswith((".batch", ".extern"))]
    samples = []
    for rank, (_step, nodelist, ntasks, ave, peak) in enumerate(r[:5] for r in (real or rows)):
        average, maximum = parse_tres_usage(ave), parse_tres_usage(peak)
        tasks = int(ntasks) if ntasks.strip().isdigit() else 1
        cpu = duration_seconds(average.get("cpu", ""))
        pages = maximum.get("pages", "")
        samples.append(
            TaskUsage(
                rank=rank,
                node=nodelist.split(",")[0],
                at=at,
                cpu_seconds=None if cpu is None else cpu * tasks,
                rss_bytes=size_bytes(maximum.get("mem", "")),
                major_faults=int(pages) if pages.isdigit() else None,
                accel_util=_accel_util(average),
                processes=tasks,
            )
        )
    return samples
