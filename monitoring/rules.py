"""The seed's three rules of thumb, as a pure function: measured window in, value/status/advice out. No ORM.

- compute utilisation should be above 85%
- communication should take less than 15% of the step
- memory swapping should be 0
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

UTILISATION_TARGET = 0.85
UTILISATION_WARN = 0.60  # below this it is bad, not just short of the target
COMM_LIMIT = 0.15
COMM_WARN = 0.25
DATA_WAIT_NOTABLE = 0.10

OK, WARN, BAD, UNKNOWN = "ok", "warn", "bad", "unknown"
SEVERITY = {OK: 0, UNKNOWN: 1, WARN: 2, BAD: 3}


@dataclass(frozen=True)
class Window:
    """What the last samples of a job say, summed over its tasks."""

    utilisation: float | None = None
    utilisation_source: str = "cpu"  # "nvml" / "slurm" when the accelerators were measured themselves
    comm_share: float | None = None
    data_share: float | None = None
    step_time_s: float | None = None
    swap_bytes: int | None = None
    swap_rate: float | None = None
    samples: int = 0


@dataclass(frozen=True)
class Shape:
    nodes: int = 1
    accelerators: int = 0
    switches: int = 0
    topology_aware: bool = False
    memory_per_node_mb: int = 0


@dataclass(frozen=True)
class RuleResult:
    rule: str
    title: str
    value: float | None
    display: str
    target: str
    status: str
    advice: str

    def as_dict(self) -> dict:
        return asdict(self)


def percent(value: float) -> str:
    return f"{value * 100:.0f}%"


def size(value: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def evaluate(window: Window, shape: Shape) -> list[RuleResult]:
    return [utilisation_rule(window, shape), communication_rule(window, shape), swap_rule(window, shape)]


def overall(results: list[RuleResult]) -> str:
    return max((r.status for r in results), key=SEVERITY.__getitem__, default=UNKNOWN)


def utilisation_rule(window: Window, shape: Shape) -> RuleResult:
    title, target = "Compute utilisation", "above 85%"
    stand_in = " (CPU stand-in: one busy core per accelerator)" if window.utilisation_source == "cpu" else ""
    value = window.utilisation
    if value is None:
        return RuleResult("utilisation", title, None, "—", target, UNKNOWN, "no utilisation measured yet")
    shown = percent(value)
    head = f"compute utilisation is {shown}{stand_in}"
    if value > UTILISATION_TARGET:
        return RuleResult("utilisation", title, value, shown, target, OK, f"{head}: the accelerators are kept busy")
    status = WARN if value >= UTILISATION_WARN else BAD
    return RuleResult("utilisation", title, value, shown, target, status, f"{head}, target above 85%: {_why(window)}")


def _why(window: Window) -> str:
    if window.data_share is not None and window.data_share >= DATA_WAIT_NOTABLE:
        return (
            f"{percent(window.data_share)} of each step waits for input data — add data-loader workers, "
            "prefetch, or stage the dataset on local disk"
        )
    if window.comm_share is not None and window.comm_share >= COMM_LIMIT:
        return f"{percent(window.comm_share)} of each step is communication (see the communication rule)"
    if window.utilisation is not None and window.utilisation < 0.10:
        return (
            "the job holds its accelerators but barely uses them — is it sleeping, waiting on I/O or running on "
            "the CPU only? Release the allocation if it is not needed"
        )
    return "raise the batch size, overlap data loading with compute, or profile the step for host-side stalls"


def communication_rule(window: Window, shape: Shape) -> RuleResult:
    title, target = "Communication share of step", "below 15%"
    value = window.comm_share
    if value is None:
        return RuleResult(
            "communication", title, None, "—", target, UNKNOWN,
            "the job reports no step metrics: train with ai_platform's Trainer (it writes "
            "$AIPOOL_RUN_DIR/metrics/rank-N.jsonl) to measure communication time",
        )  # fmt: skip
    shown = percent(value)
    step = f" of a {window.step_time_s:.2f} s step" if window.step_time_s else " of step time"
    head = f"communication is {shown}{step}"
    if value < COMM_LIMIT:
        return RuleResult("communication", title, value, shown, target, OK, f"{head}: well overlapped")
    status = WARN if value <= COMM_WARN else BAD
    return RuleResult(
        "communication", title, value, shown, target, status, f"{head}, target below 15%: {_comm_fix(shape)}"
    )


def _comm_fix(shape: Shape) -> str:
    if shape.nodes > 1 and shape.switches > 1:
        return (
            f"the job spans {shape.switches} switches — try topology-aware placement "
            "(--network=topology_aware --switches=1) or gradient compression"
        )
    if shape.nodes > 1 and not shape.topology_aware:
        return "try topology-aware placement (--network=topology_aware) or gradient compression"
    return "try gradient compression, larger gradient buckets, or more computation per step (a bigger batch)"


def swap_rule(window: Window, shape: Shape) -> RuleResult:
    title, target = "Memory swapping", "0"
    if window.swap_bytes is None:
        return RuleResult("swapping", title, None, "—", target, UNKNOWN, "this backend does not report swap use")
    growth = window.swap_rate or 0.0
    if window.swap_bytes == 0 and growth == 0:
        return RuleResult("swapping", title, 0.0, "0 B", target, OK, "no memory in swap")
    shown = size(window.swap_bytes)
    moving = f", growing {size(growth)}/s" if growth > 0 else ""
    memory = f" (now {shape.memory_per_node_mb} MiB per node)" if shape.memory_per_node_mb else ""
    advice = (
        f"{shown} of the job's memory is in swap{moving}: every access to it stalls the step — request more memory "
        f"per node{memory}, or lower the batch size or the number of data-loader workers"
    )
    return RuleResult("swapping", title, float(window.swap_bytes), shown, target, BAD, advice)
