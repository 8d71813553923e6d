"""Helpers of the SDK tests: torch gating, tiny data sets and models."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def require(module: str):
    """Import `module`, or skip the calling test module; CI sets AIPOOL_REQUIRE_TORCH=1 to make that a failure."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if os.environ.get("AIPOOL_REQUIRE_TORCH") == "1":
            raise ImportError(f"{module} is required (AIPOOL_REQUIRE_TORCH=1): {exc}") from exc
        pytest.skip(
            f"{module} is not installed: pip install torch==2.13.0 zstandard (the SDK tests need it)",
            allow_module_level=True,
        )


def regression_data(directory: Path, samples: int = 512, features: int = 16, shard: int = 100, seed: int = 0):
    """A linear regression problem written as a shard directory; returns the directory."""
    import numpy as np

    from ai_platform.data import write_dataset

    rng = np.random.default_rng(seed)
    inputs = rng.standard_normal((samples, features)).astype(np.float32)
    weights = rng.standard_normal((features, 1)).astype(np.float32)
    write_dataset(directory, {"inputs": inputs, "targets": inputs @ weights}, shard)
    return directory


def mlp(features: int = 16, hidden: int = 32, out: int = 1, seed: int = 0):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, out))
