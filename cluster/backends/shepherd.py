"""Per-job supervisor for the local backend, in the spirit of slurmstepd. Pure stdlib: no Django.

Run as ``python -m cluster.backends.shepherd RUNDIR``. It detaches (double fork) so the process that started
it (a web or Celery worker) can exit or restart without taking the job down, launches one task per allocated
node, copies their output into log files, enforces the time limit, honours cancellation, and finally writes
``status.json``. Everything the backend needs to know lives in files inside RUNDIR:

    spec.json      the LaunchSpec (plus kill_grace_seconds), written by the backend
    script.sh      the batch script, when the job has one
    lock           flock-ed exclusively by the shepherd for its whole life: at most one shepherd per run
    shepherd.pid   "<pid> <start time>" of the shepherd
    started        unix time at which tasks were about to be launched: a run is never launched twice
    tasks.json     pid/pgid/start time of each task, so that tasks can be killed even if the shepherd dies
    cancel         marker written by the backend's cancel()
    stdout, stderr           all tasks' output, line by line
    stdout.N, stderr.N       output of the task of rank N
    status.json    the final state, written atomically
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

COMPLETED = "COMPLETED"
FAILED = "FAILED"
CANCELLED = "CANCELLED"
TIMEOUT = "TIMEOUT"
NODE_FAIL = "NODE_FAIL"

REASON_NON_ZERO_EXIT = "NonZeroExitCode"
REASON_TIME_LIMIT = "TimeLimit"
REASON_CANCELLED = "Cancelled"

# The backend's own probes hold the lock for microseconds; a shepherd must not mistake one for a rival.
LOCK_RETRY_SECONDS = 2.0
TICK_SECONDS = 0.05
KILL_WAIT_SECONDS = 2.0  # for SIGKILLed processes to be gone (more only if stuck in the kernel)
MAX_LINE_BYTES = 1 << 16  # a task that never writes a newline must not grow the shepherd's memory


# --- process bookkeeping shared with the backend --------------------------------------------------


def proc_stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, pgrp, session, start time in clock ticks) of a process, or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name may contain spaces and parentheses; the fields we want all come after its last ')'.
    rest = raw[raw.rindex(b")") + 2 :].split()
    return rest[0].decode(), int(rest[2]), int(rest[3]), int(rest[19])


def proc_start_time(pid: int) -> int | None:
    stat = proc_stat(pid)
    return None if stat is None else stat[3]


def is_alive(pid: int, start_time: int) -> bool:
    """True if `pid` is the live, non-zombie process that started at `start_time` (pids are recycled)."""
    stat = proc_stat(pid)
    return stat is not None and stat[0] not in ("Z", "X") and stat[3] == start_time


def group_members(pgid: int, not_before: int) -> list[int]:
    """Live processes of a task: its process group or session, started no earlier than the task itself.

    Scanning /proc rather than trusting killpg alone also finds members after the group leader has exited and
    processes that moved to their own group with setpgid; the start-time bound keeps a recycled id harmless.
    """
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        stat = proc_stat(int(entry.name))
        if stat is None or stat[0] in ("Z", "X") or stat[3] < not_before:
            continue
        if pgid in (stat[1], stat[2]):
            members.append(int(entry.name))
    return members


def signal_task(task: dict, sig: int) -> int:
    """Send `sig` to every live process of a task (a tasks.json entry); returns how many were signalled."""
    count = 0
    for pid in group_members(task["pgid"], task["start_time"]):
        try:
            os.kill(pid, sig)
            count += 1
        except ProcessLookupError:
            pass
    return count


def kill_tasks(tasks: list[dict], grace: float) -> None:
    """SIGTERM every process of the tasks, SIGKILL what is left after `grace` seconds, and wait for the end.

    Waiting after SIGKILL too means that a final status written afterwards has no processes left behind.
    """
    for task in tasks:
        signal_task(task, signal.SIGTERM)
    if wait_gone(tasks, grace):
        return
    for task in tasks:
        signal_task(task, signal.SIGKILL)
    wait_gone(tasks, KILL_WAIT_SECONDS)


def wait_gone(tasks: list[dict], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while any(group_members(task["pgid"], task["start_time"]) for task in tasks):
        if time.monotonic() >= deadline:
            return False
        time.sleep(TICK_SECONDS)
    return True


def read_tasks(rundir: Path) -> list[dict]:
    try:
        return json.loads((rundir / "tasks.json").read_text())
    except (OSError, ValueError):
        return []


def read_started(rundir: Path) -> float | None:
    try:
        return float((rundir / "started").read_text().strip())
    except (OSError, ValueError):
        return None


def write_json_atomic(path: Path, data: object) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def write_status(rundir: Path, state: str, exit_code: int | None, reason: str, tasks: list[dict]) -> None:
    write_json_atomic(
        rundir / "status.json",
        {
            "state": state,
            "exit_code": exit_code,
            "started_at": read_started(rundir),
            "ended_at": time.time(),
            "reason": reason,
            "tasks": tasks,
        },
    )


def try_lock(rundir: Path, retry_seconds: float = 0.0) -> int | None:
    """An fd holding the run's exclusive lock, or None if another holds it. Closing the fd releases it."""
    fd = os.open(rundir / "lock", os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by children (PEP 446)
    deadline = time.monotonic() + retry_seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(TICK_SECONDS)


# --- environment ----------------------------------------------------------------------------------


def compress_hostlist(names: list[str] | tuple[str, ...]) -> str:
    """Slurm's compressed hostlist: ["node1", "node2", "node4"] -> "node[1-2,4]".

    Names are grouped by prefix (all but the trailing digits) and zero padding, and sorted as Slurm does.
    """
    groups: dict[tuple[str, int], set[int]] = {}
    plain: set[str] = set()
    for name in names:
        digits = len(name) - len(name.rstrip("0123456789"))
        if digits == 0:
            plain.add(name)
            continue
        prefix, number = name[:-digits], name[-digits:]
        width = len(number) if number.startswith("0") and len(number) > 1 else 0
        groups.setdefault((prefix, width), set()).add(int(number))
    parts = [(name, name) for name in plain]
    for (prefix, width), numbers in groups.items():
        parts.append((prefix, _format_group(prefix, width, sorted(numbers))))
    return ",".join(text for _, text in sorted(parts))


def _format_group(prefix: str, width: int, numbers: list[int]) -> str:
    if len(numbers) == 1:
        return f"{prefix}{numbers[0]:0{width}d}"
    ranges: list[list[int]] = []
    for number in numbers:
        if ranges and number == ranges[-1][1] + 1:
            ranges[-1][1] = number
        else:
            ranges.append([number, number])
    text = ",".join(f"{a:0{width}d}" if a == b else f"{a:0{width}d}-{b:0{width}d}" for a, b in ranges)
    return f"{prefix}[{text}]"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# Only these pass from the portal's environment into a job: the worker's own settings (secret key, database URL,
# broker credentials) must never reach user code.
INHERITED = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ", "TMPDIR", "TERM")


def inherited_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in INHERITED or k.startswith("LC_")}


def task_environment(spec: dict, rank: int, master_port: int, rundir: Path) -> dict[str, str]:
    nodes = spec["nodes"]
    node = nodes[rank]
    accelerators = ",".join(str(i) for i in spec["accelerators"].get(node, []))
    env = {**inherited_environment(), **spec.get("environment", {})}
    env.update(
        {
            "AIPOOL_JOB_ID": str(spec["job_id"]),
            "AIPOOL_RUN_DIR": str(rundir),
            "AIPOOL_ACCELERATORS": accelerators,
            "SLURM_JOB_ID": str(spec["job_id"]),
            "SLURM_JOB_NAME": spec.get("name", ""),
            "SLURM_NNODES": str(len(nodes)),
            "SLURM_NTASKS": str(len(nodes)),
            "SLURM_NODEID": str(rank),
            "SLURM_PROCID": str(rank),
            "SLURM_LOCALID": "0",
            "SLURMD_NODENAME": node,
            "SLURM_JOB_NODELIST": compress_hostlist(nodes),
            "SLURM_JOB_PARTITION": spec.get("partition", ""),
            "SLURM_JOB_ACCOUNT": spec.get("account", ""),
            "SLURM_JOB_USER": spec.get("user", ""),
            "WORLD_SIZE": str(len(nodes)),
            "RANK": str(rank),
            "LOCAL_RANK": "0",
            "LOCAL_WORLD_SIZE": "1",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(master_port),
        }
    )
    if os.path.exists("/dev/nvidia0"):
        env["CUDA_VISIBLE_DEVICES"] = accelerators
    return env


def task_argv(spec: dict, rundir: Path) -> list[str]:
    prologue = spec.get("prologue", "")
    if spec.get("script"):
        script = str(rundir / "script.sh")
        if not prologue:
            return ["/bin/bash", script]
        # exec keeps one process per task; what the prologue exports reaches the script.
        return ["/bin/bash", "-c", f"{prologue}\nexec /bin/bash {_quote(script)}"]
    return [
        "/bin/bash",
        "-c",
        f"{prologue}\n{spec.get('command', '')}" if prologue else spec.get("command", ""),
    ]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# --- the supervisor -------------------------------------------------------------------------------


@dataclass
class Task:
    rank: int
    node: str
    proc: subprocess.Popen
    start_time: int
    pumps: list[threading.Thread] = field(default_factory=list)

    def record(self) -> dict:
        pid = self.proc.pid
        return {"rank": self.rank, "node": self.node, "pid": pid, "pgid": pid, "start_time": self.start_time}

    def exit_code(self) -> int | None:
        code = self.proc.returncode
        return None if code is None else (128 - code if code < 0 else code)


class Sink:
    """An append-only log file shared by several pump threads; each line is written whole and flushed."""

    def __init__(self, path: Path) -> None:
        self.file = open(path, "ab", buffering=0)  # unbuffered: readable by read_log as soon as written
        self.lock = threading.Lock()

    def write(self, line: bytes) -> None:
        with self.lock:
            self.file.write(line)


def pump(pipe: BinaryIO, sinks: list[Sink]) -> None:
    with pipe:
        for line in iter(lambda: pipe.readline(MAX_LINE_BYTES), b""):
            for sink in sinks:
                sink.write(line)


class Shepherd:
    def __init__(self, rundir: Path) -> None:
        self.rundir = rundir
        self.spec = json.loads((rundir / "spec.json").read_text())
        self.grace = float(self.spec.get("kill_grace_seconds", 10.0))
        self.tasks: list[Task] = []
        self.cancel_requested = False

    def on_sigterm(self, signum: int, frame: object) -> None:
        self.cancel_requested = True

    def cancelled(self) -> bool:
        return self.cancel_requested or (self.rundir / "cancel").exists()

    def run(self) -> None:
        started = time.time()
        # Written before any task exists: a shepherd that finds it knows this run was launched already.
        (self.rundir / "started").write_text(f"{started}\n")
        if self.cancelled():
            write_status(self.rundir, CANCELLED, None, REASON_CANCELLED, [])
            return
        try:
            self.launch()
        except OSError as exc:
            self.finish_launch_failure(exc)
            return
        state, reason = self.supervise(started + self.spec["time_limit_seconds"])
        self.finish(state, reason)

    def launch(self) -> None:
        master_port = free_port()
        combined = {stream: Sink(self.rundir / stream) for stream in ("stdout", "stderr")}
        for rank, node in enumerate(self.spec["nodes"]):
            proc = subprocess.Popen(
                task_argv(self.spec, self.rundir),
                cwd=self.rundir,
                env=task_environment(self.spec, rank, master_port, self.rundir),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # one process group per task, so every descendant can be signalled
            )
            task = Task(rank, node, proc, proc_start_time(proc.pid) or 0)
            self.tasks.append(task)
            write_json_atomic(self.rundir / "tasks.json", [t.record() for t in self.tasks])
            for stream, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
                sinks = [Sink(self.rundir / f"{stream}.{rank}"), combined[stream]]
                thread = threading.Thread(target=pump, args=(pipe, sinks), daemon=True)
                thread.start()
                task.pumps.append(thread)

    def supervise(self, deadline: float) -> tuple[str | None, str]:
        """Wait for the tasks; returns (forced final state, reason) when they had to be stopped."""
        while any(task.proc.poll() is None for task in self.tasks):
            if self.cancelled():
                self.stop()
                return CANCELLED, REASON_CANCELLED
            if self.spec["time_limit_seconds"] > 0 and time.time() >= deadline:
                self.stop()
                return TIMEOUT, REASON_TIME_LIMIT
            time.sleep(TICK_SECONDS)
        return None, ""

    def stop(self) -> None:
        kill_tasks([task.record() for task in self.tasks], self.grace)
        for task in self.tasks:
            task.proc.wait()

    def finish(self, forced_state: str | None, reason: str) -> None:
        # As Slurm ends a step: nothing of the job outlives it (stray writers would hold the pipes open).
        kill_tasks([task.record() for task in self.tasks], grace=0)
        for task in self.tasks:
            for thread in task.pumps:
                thread.join(timeout=5)
        codes = [task.exit_code() for task in self.tasks]
        first_failure = next((code for code in codes if code), None)
        if forced_state:
            state = forced_state
        elif first_failure is None:
            state, reason = COMPLETED, ""
        else:
            state, reason = FAILED, REASON_NON_ZERO_EXIT
        summary = [{"rank": t.rank, "node": t.node, "exit_code": c} for t, c in zip(self.tasks, codes, strict=True)]
        write_status(self.rundir, state, first_failure or 0, reason, summary)

    def finish_launch_failure(self, exc: OSError) -> None:
        with open(self.rundir / "stderr", "ab") as log:
            log.write(f"aipool: cannot launch task: {exc}\n".encode())
        self.stop()
        write_status(self.rundir, FAILED, 1, "launch failed", [])


def daemonize() -> None:
    """Double fork: the caller reaps the first child at once, and the shepherd is nobody's zombie-to-be."""
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)


def main(argv: list[str]) -> int:
    foreground = "--foreground" in argv
    args = [arg for arg in argv if arg != "--foreground"]
    if len(args) != 1:
        print("usage: python -m cluster.backends.shepherd [--foreground] RUNDIR", file=sys.stderr)
        return 2
    rundir = Path(args[0]).resolve()
    if not foreground:
        daemonize()
    lock_fd = try_lock(rundir, retry_seconds=LOCK_RETRY_SECONDS)
    if lock_fd is None:
        return 0  # another shepherd owns this run
    if (rundir / "started").exists() or (rundir / "status.json").exists():
        return 0  # launched before (maybe by a shepherd that died): never run a job twice
    shepherd = Shepherd(rundir)
    # Before the pid is published, so that cancel()'s SIGTERM always finds the handler.
    signal.signal(signal.SIGTERM, shepherd.on_sigterm)
    (rundir / "shepherd.pid").write_text(f"{os.getpid()} {proc_start_time(os.getpid())}\n")
    try:
        shepherd.run()
    except Exception:
        traceback.print_exc()  # into shepherd.log
        # From memory: the run directory itself may be what went wrong (deleted, disk full).
        kill_tasks([task.record() for task in shepherd.tasks], shepherd.grace)
        with contextlib.suppress(OSError):
            if not (rundir / "status.json").exists():
                write_status(rundir, NODE_FAIL, None, "shepherd error", [])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
