"""NVML readings, with a stand-in pynvml module (no GPU on the machines that run the suite)."""

from types import SimpleNamespace

import pytest

from cluster.backends import nvml


class FakeNvml:
    def __init__(self, devices):
        self.devices = devices  # index -> (utilisation %, memory used bytes)

    def nvmlDeviceGetHandleByIndex(self, index):  # noqa: N802  (pynvml's names)
        if index not in self.devices:
            raise RuntimeError("NVML_ERROR_INVALID_ARGUMENT")
        return index

    def nvmlDeviceGetUtilizationRates(self, handle):  # noqa: N802
        return SimpleNamespace(gpu=self.devices[handle][0])

    def nvmlDeviceGetMemoryInfo(self, handle):  # noqa: N802
        return SimpleNamespace(used=self.devices[handle][1])


def test_mean_utilisation_and_summed_memory_of_the_tasks_accelerators(monkeypatch):
    monkeypatch.setattr(nvml, "_nvml", lambda: FakeNvml({0: (90, 10), 1: (30, 20), 2: (0, 0)}))
    utilisation, memory = nvml.accelerator_usage((0, 1))
    assert utilisation == pytest.approx(0.6) and memory == 30


def test_no_nvml_or_a_missing_device_is_no_reading(monkeypatch):
    monkeypatch.setattr(nvml, "_nvml", lambda: None)
    assert nvml.accelerator_usage((0,)) is None
    monkeypatch.setattr(nvml, "_nvml", lambda: FakeNvml({0: (50, 1)}))
    assert nvml.accelerator_usage((0, 7)) is None
    assert nvml.accelerator_usage(()) is None
