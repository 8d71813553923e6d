"""ai_platform: the in-job SDK of the pool — distributed training, gradient compression, datasets, checkpoints.

Runs inside a job, on PyTorch, and needs nothing of the portal: ``pip install aipool[sdk]``. See docs/sdk.md.
"""

from ai_platform.errors import (
    CheckpointError,
    DatasetError,
    DeviceError,
    EnvironmentConfigError,
    SDKError,
    StrategyError,
)

__all__ = [
    "CheckpointError",
    "Dataset",
    "DatasetError",
    "DeviceError",
    "DistributedTrainer",
    "EnvironmentConfigError",
    "GradientCompressor",
    "SDKError",
    "StrategyError",
]


def __getattr__(name: str):
    # Lazy, so that `import ai_platform` (and the env, units and data helpers) work before torch is imported.
    if name == "DistributedTrainer":
        from ai_platform.trainer import DistributedTrainer

        return DistributedTrainer
    if name == "Dataset":
        from ai_platform.data import Dataset

        return Dataset
    if name == "GradientCompressor":
        from ai_platform.comm import GradientCompressor

        return GradientCompressor
    raise AttributeError(f"module 'ai_platform' has no attribute {name!r}")
