"""Checkpoints: atomic and checksummed, async without blocking, rotation, backups, skipping corrupt ones, resume."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.sdk.support import REPO, regression_data, require

torch = require("torch")
require("zstandard")

from ai_platform import checkpoint as ckpt  # noqa: E402
from ai_platform.checkpoint import CheckpointConfig, CheckpointManager, expand_dir, verify  # noqa: E402
from ai_platform.data import Dataset  # noqa: E402
from ai_platform.env import DistEnv  # noqa: E402
from ai_platform.trainer import DistributedTrainer  # noqa: E402


def manager(tmp_path, **settings) -> CheckpointManager:
    settings = {"primary_dir": tmp_path / "primary", "compression": "zstd", **settings}
    config = CheckpointConfig().updated(**settings)
    config.primary_dir.mkdir(parents=True, exist_ok=True)
    return CheckpointManager(config, rank=0, world_size=1, sharded=False)


def state(value: float = 0.0, size: int = 1000) -> dict:
    return {"model": {"weight": torch.full((size,), value)}, "optimizer": {"state": {}, "param_groups": []}}


def trainer_state(step: int) -> dict:
    return {"step": step, "scheduler": None, "scaler": None, "compressor_steps": None, "rng": []}


def save_steps(mgr, steps):
    for step in steps:
        mgr.save(step, state(float(step)), trainer_state(step))
    mgr.wait()


def corrupt(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_checkpoint_files_match_their_manifest_and_no_temporary_is_left(tmp_path):
    mgr = manager(tmp_path)
    save_steps(mgr, [7])
    manifest = verify(tmp_path / "primary" / "step-000000007")
    assert set(manifest["files"]) == {"state.pt.zst", "trainer.pt"}
    assert (manifest["step"], manifest["compression"]) == (7, "zstd")
    assert [p.name for p in (tmp_path / "primary").iterdir()] == ["step-000000007"]
    restored = CheckpointManager.load_full(tmp_path / "primary" / "step-000000007")
    assert torch.equal(restored["model"]["weight"], torch.full((1000,), 7.0))


def test_async_save_returns_while_the_write_runs_and_keeps_the_state_of_its_step(tmp_path, monkeypatch):
    release = threading.Event()
    original = ckpt._save_torch

    def slow_save(*args, **kwargs):
        release.wait(10)
        return original(*args, **kwargs)

    monkeypatch.setattr(ckpt, "_save_torch", slow_save)
    mgr = manager(tmp_path, mode="async")
    live = state(1.0)
    mgr.save(1, live, trainer_state(1))
    assert mgr.busy and not (tmp_path / "primary" / "step-000000001").exists()
    mgr.fence()  # what the trainer does before its next optimizer step
    live["model"]["weight"].add_(100.0)  # training goes on and changes the parameters in place
    release.set()
    mgr.wait()
    restored = CheckpointManager.load_full(tmp_path / "primary" / "step-000000001")
    assert torch.equal(restored["model"]["weight"], torch.full((1000,), 1.0))


def test_async_stall_is_a_small_fraction_of_a_sync_save(tmp_path):
    big = state(0.5, size=4_000_000)
    big["model"]["weight"].uniform_()
    sync = manager(tmp_path / "sync")
    started = time.perf_counter()
    sync.save(1, big, trainer_state(1))
    sync_seconds = time.perf_counter() - started
    background = manager(tmp_path / "async", mode="async")
    background.save(1, big, trainer_state(1))  # allocates the host buffers that later saves reuse
    background.wait()
    report = background.save(2, big, trainer_state(2))
    background.fence()
    background.wait()
    stall = report.stall_s
    assert stall < sync_seconds / 4, (stall, sync_seconds)


def test_rotation_keeps_max_to_keep_in_primary_and_backup(tmp_path):
    mgr = manager(tmp_path, backup_dir=tmp_path / "backup", max_to_keep=2)
    save_steps(mgr, [1, 2, 3, 4, 5])
    for directory in ("primary", "backup"):
        assert sorted(p.name for p in (tmp_path / directory).iterdir()) == ["step-000000004", "step-000000005"]


def test_corrupt_primary_is_restored_from_its_backup(tmp_path):
    mgr = manager(tmp_path, backup_dir=tmp_path / "backup")
    save_steps(mgr, [1, 2])
    corrupt(tmp_path / "primary" / "step-000000002" / "state.pt.zst")
    report = mgr.find_latest()
    assert (report.path, report.step) == (tmp_path / "backup" / "step-000000002", 2)
    assert report.skipped == [(str(tmp_path / "primary" / "step-000000002"), "state.pt.zst fails its SHA-256 check")]


def test_corrupt_and_partial_checkpoints_are_skipped_and_reported(tmp_path):
    mgr = manager(tmp_path)
    save_steps(mgr, [1, 2, 3])
    corrupt(tmp_path / "primary" / "step-000000003" / "trainer.pt")
    (tmp_path / "primary" / "step-000000002" / "manifest.json").unlink()  # died before the manifest
    report = mgr.find_latest()
    assert report.step == 1
    assert [why for _, why in report.skipped] == [
        "trainer.pt fails its SHA-256 check",
        "no manifest.json (the write did not finish)",
    ]


def test_leftover_temporary_directories_are_removed_before_training(tmp_path):
    mgr = manager(tmp_path, backup_dir=tmp_path / "backup")
    save_steps(mgr, [1])
    (tmp_path / "primary" / ".tmp-step-000000002").mkdir()
    (tmp_path / "backup" / ".tmp-step-000000002-99").mkdir()
    assert len(mgr.remove_partial()) == 2
    assert mgr.find_latest().step == 1


def test_failed_backup_warns_and_keeps_the_primary(tmp_path):
    (tmp_path / "not-a-dir").write_text("")
    mgr = manager(tmp_path, backup_dir=tmp_path / "not-a-dir")
    save_steps(mgr, [1])
    assert verify(tmp_path / "primary" / "step-000000001")["step"] == 1
    assert "backup of step 1" in mgr.warnings[0]


def test_directories_expand_user_and_reject_unset_variables(monkeypatch):
    monkeypatch.setenv("USER", "alice")
    monkeypatch.delenv("NO_SUCH_VARIABLE", raising=False)
    assert str(expand_dir("/backup/$USER")) == "/backup/alice"
    with pytest.raises(ValueError, match="environment variable NO_SUCH_VARIABLE is not set"):
        expand_dir("/backup/$NO_SUCH_VARIABLE", name="backup_dir")


def test_configure_checkpoint_changes_only_what_is_given(tmp_path):
    config = CheckpointConfig().updated(primary_dir=tmp_path / "a")
    config = config.updated(interval=1000, mode="async", compression="zstd")
    config = config.updated(backup_dir=tmp_path / "b", max_to_keep=5)
    assert (config.primary_dir, config.backup_dir) == (tmp_path / "a", tmp_path / "b")
    assert (config.interval, config.mode, config.compression, config.max_to_keep) == (1000, "async", "zstd", 5)
    with pytest.raises(ValueError, match="mode must be 'sync' or 'async'"):
        config.updated(mode="later")


def dropout_mlp(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(0.2), torch.nn.Linear(32, 1))


def run_trainer(data, checkpoint_dir, max_steps, seed=0):
    trainer = DistributedTrainer(
        dropout_mlp(seed), Dataset(data), "ddp", checkpoint_dir, env=DistEnv(), lr=1e-2, log_every=0
    )
    if checkpoint_dir:
        trainer.configure_checkpoint(interval=4, mode="async", compression="zstd")
    with trainer:
        return trainer.train(epochs=2, batch_size=32, max_steps=max_steps)


def test_resume_gives_the_same_next_losses_as_an_uninterrupted_run(tmp_path):
    data = regression_data(tmp_path / "dataset")
    unbroken = run_trainer(data, None, max_steps=20)
    run_trainer(data, tmp_path / "ckpt", max_steps=12)
    resumed = run_trainer(data, tmp_path / "ckpt", max_steps=20, seed=1)  # its own init is overwritten
    assert resumed.resumed_from.step == 12
    assert resumed.losses == pytest.approx(unbroken.losses[12:], rel=1e-6)


def test_resume_after_kill_restores_step_and_optimizer_state(tmp_path):
    script = REPO / "examples" / "train_synthetic.py"
    command = [sys.executable, str(script), "--epochs", "100", "--batch_size", "64", "--samples", "2048",
               "--data_dir", str(tmp_path / "dataset"), "--checkpoint_dir", str(tmp_path / "ckpt"),
               "--interval", "5", "--mode", "async", "--log_every", "0"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    job = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "ckpt" / "step-000000010").exists():
            assert job.poll() is None and time.monotonic() < deadline, job.stderr.read() if job.poll() else "timeout"
            time.sleep(0.05)
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait()
    latest = max(int(p.name.removeprefix("step-")) for p in (tmp_path / "ckpt").glob("step-*"))
    saved = CheckpointManager.load_full(tmp_path / "ckpt" / f"step-{latest:09d}")

    sys.path.insert(0, str(script.parent))
    try:
        from train_synthetic import build_model
    finally:
        sys.path.remove(str(script.parent))
    trainer = DistributedTrainer(build_model(32, 10, 128), Dataset(tmp_path / "dataset"), "ddp", tmp_path / "ckpt",
                                 env=DistEnv(), log_every=0)  # fmt: skip
    with trainer:
        result = trainer.train(epochs=100, batch_size=64, max_steps=latest)
        assert (result.resumed_from.step, trainer.step, result.losses) == (latest, latest, [])
        optimizer = trainer.optimizer.state_dict()
    names = list(saved["optimizer"]["state"])
    for index, name in enumerate(names):
        assert torch.equal(optimizer["state"][index]["exp_avg"], saved["optimizer"]["state"][name]["exp_avg"])
    assert json.loads((tmp_path / "ckpt" / f"step-{latest:09d}" / "manifest.json").read_text())["step"] == latest
