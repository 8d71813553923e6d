"""The local backend runs jobs as real processes: these tests start them (seconds in all); no database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from cluster.backends import shepherd
from cluster.backends.base import BackendStatus, LaunchSpec
from cluster.backends.local import REPO_ROOT, LocalBackend
from cluster.backends.shepherd import compress_hostlist
from vocab.states import JobState

T = TypeVar("T")
FINAL = {state.value for state in JobState} - {"PENDING", "RUNNING"}


def wait_for(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.05) -> T:
    """The first truthy value of `predicate()`, polled until `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            assert value, f"condition not met within {timeout} s"
            return value
        time.sleep(interval)


def make_spec(command: str = "true", job_id: int = 1, run: int = 1, **overrides: object) -> LaunchSpec:
    fields: dict = {
        "job_id": job_id,
        "run": run,
        "name": "test",
        "user": "alice",
        "nodes": ("node1",),
        "accelerators": {"node1": (0, 1)},
        "time_limit_seconds": 60,
        "command": command,
        "partition": "main",
        "account": "acme",
    }
    return LaunchSpec(**{**fields, **overrides})


def status(backend: LocalBackend, backend_job_id: str) -> BackendStatus:
    return backend.poll([backend_job_id])[backend_job_id]


def final_status(backend: LocalBackend, backend_job_id: str, timeout: float = 10.0) -> BackendStatus:
    return wait_for(lambda: (s := status(backend, backend_job_id)).state in FINAL and s, timeout)


def shepherd_pid(backend: LocalBackend, backend_job_id: str) -> int:
    return int((backend.rundir(backend_job_id) / "shepherd.pid").read_text().split()[0])


def env_lines(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.split())


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[LocalBackend]:
    backend = LocalBackend(root=tmp_path, kill_grace_seconds=1)
    yield backend
    # A failing test must not leave sleeping processes behind.
    for rundir in (tmp_path / "jobs").glob("*/run-*"):
        backend_job_id = f"{rundir.parent.name}.{rundir.name.removeprefix('run-')}"
        for pid in backend.alive_pids(backend_job_id):
            os.kill(pid, signal.SIGKILL)
        backend.cancel(backend_job_id)


def test_multi_node_job_gets_one_task_per_node_with_slurm_and_torch_environment(
    backend: LocalBackend,
) -> None:
    command = (
        "echo RANK=$RANK WORLD_SIZE=$WORLD_SIZE SLURM_NNODES=$SLURM_NNODES SLURM_PROCID=$SLURM_PROCID"
        " SLURM_JOB_NODELIST=$SLURM_JOB_NODELIST SLURMD_NODENAME=$SLURMD_NODENAME MASTER_PORT=$MASTER_PORT"
        " AIPOOL_ACCELERATORS=$AIPOOL_ACCELERATORS SLURM_JOB_ID=$SLURM_JOB_ID SLURM_JOB_USER=$SLURM_JOB_USER"
    )
    spec = make_spec(
        command,
        job_id=7,
        nodes=("node1", "node2"),
        accelerators={"node1": (0, 1, 2, 3), "node2": (4, 5, 6, 7)},
    )
    backend_job_id = backend.submit(spec)

    final = final_status(backend, backend_job_id)

    assert backend_job_id == "7.1"
    assert (final.state, final.exit_code) == ("COMPLETED", 0)
    assert final.started_at <= final.ended_at
    tasks = [env_lines(backend.read_log(backend_job_id, f"stdout.{rank}").text) for rank in (0, 1)]
    assert [t["RANK"] for t in tasks] == ["0", "1"]
    assert [t["SLURM_PROCID"] for t in tasks] == ["0", "1"]
    assert [t["SLURMD_NODENAME"] for t in tasks] == ["node1", "node2"]
    assert [t["AIPOOL_ACCELERATORS"] for t in tasks] == ["0,1,2,3", "4,5,6,7"]
    assert {t["WORLD_SIZE"] for t in tasks} == {"2"}
    assert {t["SLURM_NNODES"] for t in tasks} == {"2"}
    assert {t["SLURM_JOB_NODELIST"] for t in tasks} == {"node[1-2]"}
    assert {t["SLURM_JOB_ID"] for t in tasks} == {"7"}
    assert {t["SLURM_JOB_USER"] for t in tasks} == {"alice"}
    assert len({t["MASTER_PORT"] for t in tasks}) == 1
    combined = backend.read_log(backend_job_id).text.splitlines()
    assert sorted(line.split()[0] for line in combined) == ["RANK=0", "RANK=1"]


RENDEZVOUS = """\
import os, socket, time
addr, port, rank = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), int(os.environ["RANK"])
if rank == 0:
    with socket.create_server((addr, port)) as server:
        conn, _ = server.accept()
        print("rank 0 heard", conn.recv(16).decode())
else:
    for _ in range(100):
        try:
            with socket.create_connection((addr, port)) as conn:
                conn.sendall(str(rank).encode())
                break
        except ConnectionRefusedError:
            time.sleep(0.05)
    else:
        raise SystemExit(1)
"""


def test_tasks_can_rendezvous_on_master_addr_and_port(backend: LocalBackend, tmp_path: Path) -> None:
    (tmp_path / "rendezvous.py").write_text(RENDEZVOUS)
    script = f"#!/bin/bash\nexec {sys.executable} {tmp_path / 'rendezvous.py'}\n"
    spec = make_spec(script=script, command="", nodes=("node1", "node2"), accelerators={})
    backend_job_id = backend.submit(spec)

    assert final_status(backend, backend_job_id).state == "COMPLETED"
    assert backend.read_log(backend_job_id, "stdout.0").text == "rank 0 heard 1\n"


def test_prologue_and_environment_reach_the_command(backend: LocalBackend) -> None:
    spec = make_spec('echo "$GREETING $FOO"', prologue="export GREETING=hello", environment={"FOO": "world"})
    backend_job_id = backend.submit(spec)

    assert final_status(backend, backend_job_id).state == "COMPLETED"
    assert backend.read_log(backend_job_id).text == "hello world\n"


def test_failing_command_ends_failed_with_its_exit_code(backend: LocalBackend) -> None:
    backend_job_id = backend.submit(make_spec("echo oops >&2; exit 3"))

    final = final_status(backend, backend_job_id)

    assert (final.state, final.exit_code, final.reason) == ("FAILED", 3, "NonZeroExitCode")
    assert backend.read_log(backend_job_id, "stderr").text == "oops\n"


def test_time_limit_ends_timeout_and_kills_the_processes(backend: LocalBackend) -> None:
    backend_job_id = backend.submit(make_spec("sleep 30", time_limit_seconds=1))
    wait_for(lambda: backend.alive_pids(backend_job_id))

    final = final_status(backend, backend_job_id)

    assert (final.state, final.reason) == ("TIMEOUT", "TimeLimit")
    assert backend.alive_pids(backend_job_id) == []


def test_cancel_kills_every_task_process_and_its_children(backend: LocalBackend) -> None:
    spec = make_spec("sleep 100 & sleep 100; wait", nodes=("node1", "node2"), accelerators={})
    backend_job_id = backend.submit(spec)
    # Two tasks, each a bash with two sleeps.
    wait_for(lambda: len(backend.alive_pids(backend_job_id)) >= 6)

    backend.cancel(backend_job_id)

    wait_for(lambda: backend.alive_pids(backend_job_id) == [], timeout=5)
    assert final_status(backend, backend_job_id).state == "CANCELLED"


def test_cancel_of_an_ended_job_changes_nothing(backend: LocalBackend) -> None:
    backend_job_id = backend.submit(make_spec("true"))
    final_status(backend, backend_job_id)

    backend.cancel(backend_job_id)

    assert status(backend, backend_job_id).state == "COMPLETED"


def test_cancel_with_a_dead_shepherd_kills_the_tasks_itself(backend: LocalBackend) -> None:
    backend_job_id = backend.submit(make_spec("sleep 100 & sleep 100; wait"))
    wait_for(lambda: len(backend.alive_pids(backend_job_id)) >= 3)
    os.kill(shepherd_pid(backend, backend_job_id), signal.SIGKILL)
    wait_for(lambda: not backend._shepherd_pid(backend.rundir(backend_job_id)))

    backend.cancel(backend_job_id)

    assert backend.alive_pids(backend_job_id) == []
    assert status(backend, backend_job_id).state == "CANCELLED"


def test_submitting_again_or_from_a_restarted_worker_runs_the_job_once(backend: LocalBackend, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    spec = make_spec(f"echo ran >> {counter}; sleep 0.5")

    first = backend.submit(spec)
    second = backend.submit(spec)
    third = LocalBackend(root=tmp_path, kill_grace_seconds=1).submit(spec)
    final_status(backend, first)
    fourth = backend.submit(spec)
    time.sleep(0.3)  # a wrongly started second run would have appended by now

    assert first == second == third == fourth
    assert counter.read_text() == "ran\n"


SUBMIT_AND_EXIT = """\
import sys
from pathlib import Path
from cluster.backends.base import LaunchSpec
from cluster.backends.local import REPO_ROOT, LocalBackend
spec = LaunchSpec(
    job_id=5, run=1, name="t", user="u", nodes=("node1",), accelerators={}, time_limit_seconds=60,
    command="sleep 2; echo done",
)
print(LocalBackend(root=Path(sys.argv[1])).submit(spec))
"""


def test_job_survives_the_process_that_submitted_it(tmp_path: Path) -> None:
    # Submit from a worker process that then exits, as a Celery worker restarting would.
    worker = subprocess.run(
        [sys.executable, "-c", SUBMIT_AND_EXIT, str(tmp_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    backend_job_id = worker.stdout.strip()

    restarted = LocalBackend(root=tmp_path, kill_grace_seconds=1)

    assert status(restarted, backend_job_id).state in ("PENDING", "RUNNING")
    assert final_status(restarted, backend_job_id).state == "COMPLETED"
    assert restarted.read_log(backend_job_id).text == "done\n"


def test_killed_shepherd_is_reported_node_fail_and_its_tasks_are_killed(backend: LocalBackend) -> None:
    backend_job_id = backend.submit(make_spec("sleep 100"))
    wait_for(lambda: backend.alive_pids(backend_job_id))

    os.kill(shepherd_pid(backend, backend_job_id), signal.SIGKILL)

    final = final_status(backend, backend_job_id)
    assert (final.state, final.reason) == ("NODE_FAIL", "shepherd died")
    assert backend.alive_pids(backend_job_id) == []


def test_read_log_from_an_offset_returns_what_was_written_since(backend: LocalBackend) -> None:
    backend_job_id = backend.submit(make_spec("for i in 1 2 3 4 5; do echo line$i; sleep 0.2; done"))
    chunks, offset = [], 0
    while status(backend, backend_job_id).state in ("PENDING", "RUNNING"):
        chunk = backend.read_log(backend_job_id, offset=offset)
        assert chunk.offset == offset + len(chunk.text.encode())
        chunks.append(chunk.text)
        offset = chunk.offset
        time.sleep(0.05)
    chunks.append(backend.read_log(backend_job_id, offset=offset).text)

    assert "".join(chunks) == "".join(f"line{i}\n" for i in range(1, 6))
    assert len([chunk for chunk in chunks if chunk]) >= 3


def test_read_log_never_splits_a_multibyte_character(backend: LocalBackend) -> None:
    backend_job_id = backend.submit(make_spec("printf 'h\\xc3\\xa9llo'"))
    final_status(backend, backend_job_id)

    head = backend.read_log(backend_job_id, limit=2)
    tail = backend.read_log(backend_job_id, offset=head.offset)

    assert (head.text, head.offset, head.size) == ("h", 1, 6)
    assert (tail.text, tail.offset) == ("éllo", 6)


def test_missing_log_is_an_empty_chunk(backend: LocalBackend) -> None:
    chunk = backend.read_log("99.1", "stderr.3", offset=10)

    assert (chunk.text, chunk.offset, chunk.size) == ("", 0, 0)


def test_unknown_job_is_node_fail_lost(backend: LocalBackend) -> None:
    statuses = backend.poll(["404.1", "not-an-id"])

    assert {(s.state, s.reason) for s in statuses.values()} == {("NODE_FAIL", "lost")}


@pytest.mark.parametrize("stream", ["spec.json", "../../../etc/passwd", "stdout/../spec.json", "stdout.x", ""])
def test_read_log_rejects_other_file_names(backend: LocalBackend, stream: str) -> None:
    with pytest.raises(ValueError):
        backend.read_log("1.1", stream)


def test_final_states_are_slurm_job_states() -> None:
    states = {shepherd.COMPLETED, shepherd.FAILED, shepherd.CANCELLED, shepherd.TIMEOUT, shepherd.NODE_FAIL}

    assert states <= {state.value for state in JobState}


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["node1", "node2", "node4"], "node[1-2,4]"),
        (["a"], "a"),
        (["node3"], "node3"),
        (["node2", "node1", "node2"], "node[1-2]"),
        (["gpu1", "gpu2", "cpu7", "login"], "cpu7,gpu[1-2],login"),
        (["node01", "node02", "node03", "node05"], "node[01-03,05]"),
        (["rack1-n1", "rack1-n2", "rack2-n1"], "rack1-n[1-2],rack2-n1"),
        ([], ""),
    ],
)
def test_compress_hostlist(names: list[str], expected: str) -> None:
    assert compress_hostlist(names) == expected


def test_portal_secrets_do_not_reach_the_job(tmp_path, monkeypatch):
    from cluster.backends.shepherd import inherited_environment

    monkeypatch.setenv("DJANGO_SECRET_KEY", "s3cret")
    monkeypatch.setenv("DATABASE_URL", "postgres://user:pw@db/aipool")
    env = inherited_environment()
    assert "DJANGO_SECRET_KEY" not in env and "DATABASE_URL" not in env
    assert env["PATH"]
