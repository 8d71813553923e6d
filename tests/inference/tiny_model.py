"""A tiny real model for the tests (no Django): 4 inputs, a hidden ReLU layer, 3 classes."""

from __future__ import annotations

import io
import json

import numpy as np

LABELS = ["cat", "dog", "bird"]


def mlp_layers(scale: float = 1.0) -> list[tuple[np.ndarray, np.ndarray]]:
    """4 inputs → 8 hidden (ReLU) → 3 classes; input i pushes towards class i % 3, so answers are predictable."""
    w0 = np.zeros((4, 8))
    for i in range(4):
        w0[i, i] = 1.0
    w1 = np.zeros((8, 3))
    for i in range(4):
        w1[i, i % 3] = 2.0 * scale
    return [(w0, np.zeros(8)), (w1, np.zeros(3))]


def model_files(scale: float = 1.0) -> dict[str, bytes]:
    buffer = io.BytesIO()
    arrays = {}
    for index, (weights, bias) in enumerate(mlp_layers(scale)):
        arrays[f"W{index}"], arrays[f"b{index}"] = weights, bias
    np.savez(buffer, **arrays)
    config = json.dumps({"output": "softmax", "labels": LABELS}).encode()
    return {"model.npz": buffer.getvalue(), "config.json": config}
