"""How many accelerators a model needs, from its parameter count: the usual rules of thumb, no Django.

- serve: weights at the serving precision, plus 20% for the KV cache, activations and the runtime;
- finetune (full, mixed precision with AdamW): 16 bytes per parameter (bf16 weights and gradients, fp32 master
  weights and two optimizer moments), plus 20% for activations;
- lora: frozen weights at the precision, plus 30% for adapters, their optimizer state and activations;
- qlora: 4-bit frozen weights (0.5 bytes per parameter), plus 30%.

Tensor parallelism splits a model over a power-of-two number of accelerators within a node; past one node it takes
whole nodes. Mixture-of-experts models need memory for all experts, so the total parameter count is what counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

BYTES_PER_PARAMETER = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
MODES = ("serve", "finetune", "lora", "qlora")
OVERHEAD = {"serve": 1.2, "finetune": 1.2, "lora": 1.3, "qlora": 1.3}
GB = 10**9


@dataclass(frozen=True)
class Estimate:
    mode: str
    precision: str
    memory_gb: float
    accelerators: int
    nodes: int
    accelerator_memory_gb: float
    method: str


def bytes_per_parameter(mode: str, precision: str) -> float:
    if mode == "finetune":
        return 16.0
    if mode == "qlora":
        return BYTES_PER_PARAMETER["int4"]
    return BYTES_PER_PARAMETER[precision]


def estimate(
    *, parameters: int, mode: str, precision: str, accelerator_memory_gb: float, accelerators_per_node: int
) -> Estimate:
    if mode not in MODES:
        raise ValueError(f"mode: use one of {', '.join(MODES)}")
    if precision not in BYTES_PER_PARAMETER:
        raise ValueError(f"precision: use one of {', '.join(BYTES_PER_PARAMETER)}")
    if parameters <= 0 or accelerator_memory_gb <= 0 or accelerators_per_node <= 0:
        raise ValueError("parameters, accelerator memory and accelerators per node must be positive")
    per_parameter = bytes_per_parameter(mode, precision)
    memory_gb = parameters * per_parameter * OVERHEAD[mode] / GB
    accelerators = spread(math.ceil(memory_gb / accelerator_memory_gb), accelerators_per_node)
    return Estimate(
        mode=mode,
        precision="int4" if mode == "qlora" else ("bf16+fp32 optimizer" if mode == "finetune" else precision),
        memory_gb=round(memory_gb, 1),
        accelerators=accelerators,
        nodes=math.ceil(accelerators / accelerators_per_node),
        accelerator_memory_gb=accelerator_memory_gb,
        method=f"{parameters:,} parameters × {per_parameter:g} bytes × {OVERHEAD[mode]:g} overhead",
    )


def spread(needed: int, per_node: int) -> int:
    """Round up to what tensor parallelism can use: 1, 2, 4, … within a node, whole nodes beyond it."""
    needed = max(1, needed)
    if needed <= per_node:
        return min(per_node, 1 << (needed - 1).bit_length())
    return math.ceil(needed / per_node) * per_node
