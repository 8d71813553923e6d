"""Models the built-in server can load from a registry version's directory.

- ``model.npz`` (numpy): a multi-layer perceptron, arrays ``W0, b0, W1, b1, …``; ReLU between layers. An optional
  ``config.json`` says ``{"output": "softmax" | "linear", "labels": [...]}``.
- ``model.pt`` (TorchScript, needs PyTorch): called on a float tensor of the instances.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

MAX_INSTANCES = 1024


class ModelError(ValueError):
    """The model directory cannot be served, or a request does not fit the model; the message says why."""


@dataclass
class Model:
    name: str
    layers: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    output: str = "linear"
    labels: list[str] = field(default_factory=list)
    scripted: Any = None  # a TorchScript module instead of layers

    @property
    def input_size(self) -> int | None:
        return int(self.layers[0][0].shape[0]) if self.layers else None

    def metadata(self) -> dict:
        return {
            "name": self.name,
            "format": "torchscript" if self.scripted is not None else "npz-mlp",
            "inputs": self.input_size,
            "output": self.output,
            "labels": self.labels,
        }

    def predict(self, instances) -> list:
        batch = _batch(instances, self.input_size)
        if self.scripted is not None:
            return _torch_predict(self.scripted, batch)
        values = batch
        for index, (weights, bias) in enumerate(self.layers):
            values = values @ weights + bias
            if index < len(self.layers) - 1:
                values = np.maximum(values, 0.0)
        if self.output == "softmax":
            return self._classes(values)
        return values.tolist()

    def _classes(self, logits: np.ndarray) -> list[dict]:
        shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
        probabilities = shifted / shifted.sum(axis=1, keepdims=True)
        best = probabilities.argmax(axis=1)
        return [
            {
                "class": int(b),
                "label": self.labels[b] if b < len(self.labels) else str(b),
                "probabilities": [round(float(p), 6) for p in row],
            }
            for b, row in zip(best, probabilities, strict=True)
        ]


def _batch(instances, width: int | None) -> np.ndarray:
    if not isinstance(instances, list) or not instances:
        raise ModelError('"instances" must be a non-empty list of rows, e.g. [[0.1, 0.2, 0.3, 0.4]]')
    if len(instances) > MAX_INSTANCES:
        raise ModelError(f"at most {MAX_INSTANCES} instances per request")
    try:
        batch = np.asarray(instances, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ModelError("every instance must be a list of numbers of the same length") from exc
    if batch.ndim != 2:
        raise ModelError("every instance must be a flat list of numbers")
    if width is not None and batch.shape[1] != width:
        raise ModelError(f"each instance needs {width} numbers, got {batch.shape[1]}")
    if not np.isfinite(batch).all():
        raise ModelError("instances must be finite numbers")
    return batch


def _torch_predict(module, batch: np.ndarray) -> list:
    import torch

    with torch.no_grad():
        return module(torch.as_tensor(batch, dtype=torch.float32)).tolist()


def load_model(directory: str | Path, name: str = "model") -> Model:
    root = Path(directory)
    if not root.is_dir():
        raise ModelError(f"model directory {root} does not exist")
    config = _config(root)
    if (root / "model.npz").is_file():
        return _load_npz(root / "model.npz", name, config)
    if (root / "model.pt").is_file():
        import torch

        module = torch.jit.load(str(root / "model.pt"), map_location="cpu")
        module.eval()
        return Model(name=name, scripted=module, output="linear", labels=list(config.get("labels") or []))
    raise ModelError(f"{root} holds neither model.npz nor model.pt")


def _config(root: Path) -> dict:
    path = root / "config.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelError(f"{path}: {exc}") from exc
    return data if isinstance(data, dict) else {}


def _load_npz(path: Path, name: str, config: dict) -> Model:
    with np.load(path) as arrays:
        layers = []
        index = 0
        while f"W{index}" in arrays:
            weights, bias = arrays[f"W{index}"], arrays.get(f"b{index}")
            if bias is None:
                bias = np.zeros(weights.shape[1])
            layers.append((weights.astype(np.float64), bias.astype(np.float64)))
            index += 1
    if not layers:
        raise ModelError(f"{path} has no layer W0")
    for (w1, _), (w2, _) in zip(layers, layers[1:], strict=False):
        if w1.shape[1] != w2.shape[0]:
            raise ModelError(f"{path}: layer shapes {w1.shape} and {w2.shape} do not chain")
    output = config.get("output", "linear")
    if output not in ("linear", "softmax"):
        raise ModelError(f'config.json: output must be "linear" or "softmax", got {output!r}')
    return Model(name=name, layers=layers, output=output, labels=[str(x) for x in config.get("labels") or []])


def save_mlp(directory: str | Path, layers: list[tuple[np.ndarray, np.ndarray]], **config) -> Path:
    """Write a model the server loads (used by tests and the docs' example)."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for index, (weights, bias) in enumerate(layers):
        arrays[f"W{index}"], arrays[f"b{index}"] = weights, bias
    np.savez(root / "model.npz", **arrays)
    if config:
        (root / "config.json").write_text(json.dumps(config))
    return root
