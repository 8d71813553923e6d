"""Reading /proc and sstat. This kernel may have no swap: swapping is tested through a fake /proc tree, honestly
parsed by the same code that reads the real one."""

from pathlib import Path

import pytest

from cluster.backends.procfs import ProcFS, tail_records
from cluster.backends.slurm_usage import duration_seconds, usage_from_sstat


def fake_process(root: Path, pid: int, *, utime: int, stime: int, rss_kib: int, swap_kib: int, majflt: int = 0):
    (root / str(pid)).mkdir(parents=True)
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
    fields = [
        "S",
        "1",
        str(pid),
        str(pid),
        "0",
        "-1",
        "0",
        "0",
        "0",
        str(majflt),
        "0",
        str(utime),
        str(stime),
        "0",
        "0",
    ]
    fields += ["20", "0", "1", "0", "12345"]
    (root / str(pid) / "stat").write_text(f"{pid} (python (trainer)) {' '.join(fields)}\n")
    (root / str(pid) / "status").write_text(f"Name:\tpython\nVmRSS:\t  {rss_kib} kB\nVmSwap:\t  {swap_kib} kB\n")


def test_task_counters_sum_the_processes(tmp_path):
    fake_process(tmp_path, 10, utime=300, stime=100, rss_kib=1024, swap_kib=2048, majflt=7)
    fake_process(tmp_path, 11, utime=100, stime=0, rss_kib=512, swap_kib=0)
    counters = ProcFS(tmp_path, clock_ticks=100).task_counters([10, 11, 12])  # 12 exited meanwhile
    assert counters.cpu_seconds == pytest.approx(5.0)
    assert counters.rss_bytes == 1536 * 1024
    assert counters.swap_bytes == 2048 * 1024
    assert counters.major_faults == 7
    assert counters.processes == 2


def test_the_real_proc_of_this_process_reads(tmp_path):
    import os

    counters = ProcFS().task_counters([os.getpid()])
    assert counters.processes == 1 and counters.rss_bytes > 0 and counters.cpu_seconds > 0


def test_tail_records_skips_a_cut_line_and_old_records(tmp_path):
    path = tmp_path / "rank-0.jsonl"
    lines = [f'{{"time": {t}, "step_time_s": 0.5}}' for t in range(100, 110)]
    path.write_text("\n".join(lines) + '\n{"time": 200, "step_ti')
    records = tail_records(path, since=105, limit_bytes=200)  # starts inside the line of 104
    assert [r["time"] for r in records] == [106, 107, 108, 109]


SSTAT = (
    "77.batch|node1|1|cpu=00:00:01,mem=10M,pages=0|cpu=00:00:01,mem=10M,pages=0\n"
    "77.0|node1|2|cpu=00:01:30,mem=1G,pages=3,gres/gpuutil=45|cpu=00:01:40,mem=2G,pages=5\n"
    "77.1|node2|1|cpu=1-00:00:00,mem=512M,pages=0|cpu=1-00:00:00,mem=600M,pages=0\n"
)


def test_sstat_steps_become_tasks():
    first, second = usage_from_sstat(SSTAT, at=1000.0)
    assert (first.rank, first.node, first.cpu_seconds) == (0, "node1", 180.0)
    assert first.rss_bytes == 2 << 30 and first.major_faults == 5 and first.accel_util == pytest.approx(0.45)
    assert (second.rank, second.cpu_seconds, second.accel_util) == (1, 86400.0, None)


def test_slurm_durations():
    assert duration_seconds("01:02") == 62
    assert duration_seconds("1-02:03:04.5") == 93784.5
    assert duration_seconds("junk") is None
