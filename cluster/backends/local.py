"""The local backend: each run of a job is a set of real processes on this machine, one per allocated node.

A detached per-run supervisor (cluster/backends/shepherd.py) owns the processes, so jobs survive restarts
of the web server and the Celery worker; this class only writes the run directory, starts the shepherd and
reads back the files it leaves. No Django imports: the settings object is handed in.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cluster.backends import nvml, procfs
from cluster.backends import shepherd as sh
from cluster.backends.base import BackendStatus, ClusterBackend, LaunchSpec, LogChunk, TaskUsage

REPO_ROOT = Path(__file__).resolve().parents[2]  # holds the `cluster` package, so `python -m` finds the shepherd
LAUNCH_WINDOW_SECONDS = 30.0  # a run without a shepherd this long after its submission is lost
BACKEND_ID = re.compile(r"^(\d+)\.(\d+)$")
STREAM = re.compile(r"^(stdout|stderr)(\.\d+)?$")

PENDING = "PENDING"
RUNNING = "RUNNING"


class LocalBackend(ClusterBackend):
    name = "local"
    schedules_itself = False

    def __init__(self, root: Path, kill_grace_seconds: float = 10.0, python: str = sys.executable) -> None:
        self.root = Path(root)
        self.kill_grace_seconds = float(kill_grace_seconds)
        self.python = python

    @classmethod
    def from_settings(cls, settings: Any) -> LocalBackend:
        return cls(
            root=Path(settings.DATA_DIR) / "cluster",
            kill_grace_seconds=float(getattr(settings, "AIPOOL_KILL_GRACE_SECONDS", 10)),
        )

    # --- ClusterBackend ---------------------------------------------------------------------------

    def submit(self, spec: LaunchSpec) -> str:
        backend_job_id = f"{spec.job_id}.{spec.run}"
        rundir = self._rundir(backend_job_id)
        if not rundir.exists():
            self._create_rundir(spec, rundir)
        if not self._launched(rundir) and self._shepherd_pid(rundir) is None:
            self._spawn_shepherd(rundir)
        return backend_job_id

    def cancel(self, backend_job_id: str) -> None:
        rundir = self._rundir(backend_job_id)
        if not rundir.exists() or (rundir / "status.json").exists():
            return
        (rundir / "cancel").touch()  # seen by a shepherd that is starting up and not yet signalable
        pid = self._shepherd_pid(rundir)
        if pid is not None:
            try:
                os.kill(pid, signal.SIGTERM)
                return
            except ProcessLookupError:
                pass
        self._cancel_orphan(rundir)

    def poll(self, backend_job_ids: list[str]) -> dict[str, BackendStatus]:
        return {backend_job_id: self._status(backend_job_id) for backend_job_id in backend_job_ids}

    def read_log(self, backend_job_id: str, stream: str = "stdout", offset: int = 0, limit: int = 1 << 20) -> LogChunk:
        if not STREAM.match(stream):
            raise ValueError(f"unknown log stream {stream!r}: use stdout, stderr, stdout.N or stderr.N")
        if offset < 0 or limit <= 0:
            raise ValueError("offset must be >= 0 and limit > 0")
        try:
            with open(self._rundir(backend_job_id) / stream, "rb") as log:
                size = os.fstat(log.fileno()).st_size
                offset = min(offset, size)
                log.seek(offset)
                data = log.read(limit)
        except FileNotFoundError:
            return LogChunk("", 0, 0)
        size = max(size, offset + len(data))  # the file may have grown between fstat and read
        data = _trim_partial_char(data, more_follows=offset + len(data) < size)
        return LogChunk(data.decode("utf-8", errors="replace"), offset + len(data), size)

    def inventory(self) -> dict:
        return {}

    def usage(self, backend_job_id: str, proc: procfs.ProcFS | None = None) -> list[TaskUsage]:
        """Counters of each task's live processes (its process group or session, as the shepherd recorded it)."""
        try:
            rundir = self._rundir(backend_job_id)
        except ValueError:
            return []
        if (rundir / "status.json").exists():
            return []
        proc = proc or procfs.ProcFS()
        accelerators = _spec_accelerators(rundir)
        samples = []
        for task in sh.read_tasks(rundir):
            at = time.time()
            counters = proc.task_counters(sh.group_members(task["pgid"], task["start_time"]))
            accel = nvml.accelerator_usage(accelerators.get(task["node"], ()))
            samples.append(
                TaskUsage(
                    rank=int(task["rank"]),
                    node=task["node"],
                    at=at,
                    cpu_seconds=counters.cpu_seconds,
                    rss_bytes=counters.rss_bytes,
                    swap_bytes=counters.swap_bytes,
                    major_faults=counters.major_faults,
                    accel_util=None if accel is None else accel[0],
                    accel_memory_bytes=None if accel is None else accel[1],
                    processes=counters.processes,
                )
            )
        return samples

    def step_metrics(self, backend_job_id: str, *, since: float, limit_bytes: int = 1 << 16) -> dict[int, list[dict]]:
        try:
            directory = self._rundir(backend_job_id) / "metrics"  # the SDK's $AIPOOL_RUN_DIR/metrics/rank-N.jsonl
        except ValueError:
            return {}
        found = {}
        for path in directory.glob("rank-*.jsonl"):
            rank = path.stem.removeprefix("rank-")
            if rank.isdigit():
                found[int(rank)] = procfs.tail_records(path, since=since, limit_bytes=limit_bytes)
        return found

    # --- for tests and diagnostics ----------------------------------------------------------------

    def alive_pids(self, backend_job_id: str) -> list[int]:
        """Pids of the run's task processes and their descendants that are still alive."""
        tasks = sh.read_tasks(self._rundir(backend_job_id))
        return sorted({pid for task in tasks for pid in sh.group_members(task["pgid"], task["start_time"])})

    def rundir(self, backend_job_id: str) -> Path:
        return self._rundir(backend_job_id)

    # --- run directory ----------------------------------------------------------------------------

    def _rundir(self, backend_job_id: str) -> Path:
        match = BACKEND_ID.match(backend_job_id)
        if not match:
            raise ValueError(f"not a local backend job id: {backend_job_id!r}")
        job_id, run = match.groups()
        return self.root / "jobs" / job_id / f"run-{run}"

    def _create_rundir(self, spec: LaunchSpec, rundir: Path) -> None:
        """Fill a temporary directory, then rename it into place: a run directory is complete or absent."""
        rundir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{rundir.name}.", dir=rundir.parent))
        try:
            sh.write_json_atomic(tmp / "spec.json", {**asdict(spec), "kill_grace_seconds": self.kill_grace_seconds})
            if spec.script:
                (tmp / "script.sh").write_text(spec.script)
            (tmp / "lock").touch()
            os.rename(tmp, rundir)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not rundir.exists():  # not a lost race with a concurrent submit
                raise

    @staticmethod
    def _launched(rundir: Path) -> bool:
        return (rundir / "started").exists() or (rundir / "status.json").exists()

    def _spawn_shepherd(self, rundir: Path) -> None:
        (rundir / "submitted").write_text(f"{time.time()}\n")
        with open(rundir / "shepherd.log", "ab") as log:
            launcher = subprocess.Popen(
                [self.python, "-m", "cluster.backends.shepherd", str(rundir)],
                cwd=REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                close_fds=True,
                start_new_session=True,
            )
        # The shepherd double-forks; its first process exits at once and is reaped here, leaving no zombie.
        launcher.wait(timeout=60)

    @staticmethod
    def _shepherd_pid(rundir: Path) -> int | None:
        """The shepherd's pid if it is alive (checked against its start time: pids are recycled)."""
        try:
            pid, start_time = (int(field) for field in (rundir / "shepherd.pid").read_text().split())
        except (OSError, ValueError):
            return None
        return pid if sh.is_alive(pid, start_time) else None

    # --- status -----------------------------------------------------------------------------------

    def _status(self, backend_job_id: str) -> BackendStatus:
        try:
            rundir = self._rundir(backend_job_id)
        except ValueError:
            return BackendStatus(backend_job_id, sh.NODE_FAIL, reason="lost")
        final = _read_status(backend_job_id, rundir)
        if final is not None:
            return final
        if self._shepherd_pid(rundir) is not None:
            return _in_progress(backend_job_id, rundir)
        if not rundir.exists():
            return BackendStatus(backend_job_id, sh.NODE_FAIL, reason="lost")
        return self._status_without_shepherd(backend_job_id, rundir)

    def _status_without_shepherd(self, backend_job_id: str, rundir: Path) -> BackendStatus:
        lock = sh.try_lock(rundir)
        if lock is None:  # a shepherd holds the run but has not published its pid yet
            return _in_progress(backend_job_id, rundir)
        try:
            final = _read_status(backend_job_id, rundir)  # it may have finished since we last looked
            if final is not None:
                return final
            if (rundir / "started").exists():
                sh.kill_tasks(sh.read_tasks(rundir), grace=0)
                sh.write_status(rundir, sh.NODE_FAIL, None, "shepherd died", [])
            elif _seconds_since_submit(rundir) < LAUNCH_WINDOW_SECONDS:
                return BackendStatus(backend_job_id, PENDING)
            else:
                sh.write_status(rundir, sh.NODE_FAIL, None, "lost", [])
            return _read_status(backend_job_id, rundir)
        finally:
            os.close(lock)

    def _cancel_orphan(self, rundir: Path) -> None:
        """Cancel a run whose shepherd is dead or never came: stop its processes ourselves."""
        lock = sh.try_lock(rundir, retry_seconds=1.0)
        if lock is None:
            return  # a shepherd is starting: it finds the cancel marker before launching anything
        try:
            if (rundir / "status.json").exists():
                return
            sh.kill_tasks(sh.read_tasks(rundir), self.kill_grace_seconds)
            sh.write_status(rundir, sh.CANCELLED, None, sh.REASON_CANCELLED, [])
        finally:
            os.close(lock)


def _read_status(backend_job_id: str, rundir: Path) -> BackendStatus | None:
    try:
        data = json.loads((rundir / "status.json").read_text())
    except (OSError, ValueError):
        return None
    return BackendStatus(
        backend_job_id=backend_job_id,
        state=data["state"],
        exit_code=data.get("exit_code"),
        started_at=data.get("started_at"),
        ended_at=data.get("ended_at"),
        reason=data.get("reason", ""),
    )


def _spec_accelerators(rundir: Path) -> dict[str, tuple[int, ...]]:
    try:
        spec = json.loads((rundir / "spec.json").read_text())
    except (OSError, ValueError):
        return {}
    return {node: tuple(indices) for node, indices in (spec.get("accelerators") or {}).items()}


def _in_progress(backend_job_id: str, rundir: Path) -> BackendStatus:
    started = sh.read_started(rundir)
    return BackendStatus(backend_job_id, RUNNING if started else PENDING, started_at=started)


def _seconds_since_submit(rundir: Path) -> float:
    try:
        submitted = float((rundir / "submitted").read_text())
    except (OSError, ValueError):
        submitted = (rundir / "spec.json").stat().st_mtime
    return time.time() - submitted


def _trim_partial_char(data: bytes, more_follows: bool) -> bytes:
    """Drop a UTF-8 sequence cut off at the end, so that it is read whole next time."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # the last lead (or ASCII) byte
            needed = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4 if byte & 0xF8 == 0xF0 else 1
            if needed > back and (len(data) > back or not more_follows):
                return data[:-back]
            return data
    return data
