"""The Slurm backend: aipool submits with ``sbatch`` and Slurm places, limits and runs the jobs.

Why the command line and not slurmrestd: the CLI needs nothing but ``SLURM_CONF`` and munge on the portal's host,
behaves the same from 20.11 to 24.x, reports the controller being down in words we can match, and ``sbatch --uid``
(root only) runs each job as its owner's POSIX account without minting per-user JWTs. slurmrestd in 22.05 answers a
bad token with HTTP 500, serves three OpenAPI versions that each rename fields, and refuses to run as root; a REST
client would implement this same class (docs/slurm.md).

State comes from ``squeue --json`` (every job slurmctld still holds, MinJobAge after their end) and, for older jobs,
``sacct -P``: 22.05's ``sacct --json`` reports exit code 0 for failed jobs. Logs are the job's ``--output`` and
``--error`` files in a run directory the portal can read (a shared file system in a real cluster). No Django here:
the settings object is handed in.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import pwd
import re
import shlex
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from cluster.backends import procfs, slurm_usage
from cluster.backends.base import BackendStatus, ClusterBackend, JobRejected, LaunchSpec, LogChunk, TaskUsage
from cluster.backends.slurm_cli import SlurmCLI, SlurmError, decode_wait_status, expand_hostlist, parse_exit_code
from cluster.backends.slurm_limits import SHOW_FORMAT, Association, Change, diff, parse_show_assoc

STREAMS = ("stdout", "stderr")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SLURM_JOB_ID = re.compile(r"^\d+$")

# Slurm's job states (squeue/sacct) in aipool's words. Transitional states count as the one they lead to.
STATE_MAP = {
    "PENDING": "PENDING",
    "REQUEUED": "PENDING",
    "REQUEUE_HOLD": "PENDING",
    "REQUEUE_FED": "PENDING",
    "CONFIGURING": "RUNNING",
    "RUNNING": "RUNNING",
    "COMPLETING": "RUNNING",
    "SUSPENDED": "RUNNING",
    "STOPPED": "RUNNING",
    "SIGNALING": "RUNNING",
    "RESIZING": "RUNNING",
    "STAGE_OUT": "RUNNING",
    "COMPLETED": "COMPLETED",
    "FAILED": "FAILED",
    "SPECIAL_EXIT": "FAILED",
    "CANCELLED": "CANCELLED",
    "REVOKED": "CANCELLED",
    "PREEMPTED": "CANCELLED",
    "TIMEOUT": "TIMEOUT",
    "DEADLINE": "TIMEOUT",
    "NODE_FAIL": "NODE_FAIL",
    "BOOT_FAIL": "NODE_FAIL",
    "OUT_OF_MEMORY": "OUT_OF_MEMORY",
}
ACTIVE = ("PENDING", "RUNNING")
SACCT_FORMAT = "JobID,JobName,State,ExitCode,NodeList,Start,End,Reason"


class SlurmBackend(ClusterBackend):
    name = "slurm"
    schedules_itself = True

    def __init__(
        self,
        *,
        conf: str,
        log_root: Path,
        job_prefix: str = "aipool",
        organization: str = "aipool",
        timeout: float = 30.0,
    ) -> None:
        self.cli = SlurmCLI(conf, timeout=timeout)
        self.log_root = Path(log_root)
        self.job_prefix = job_prefix
        self.organization = organization.lower()

    @classmethod
    def from_settings(cls, settings: Any) -> SlurmBackend:
        conf = getattr(settings, "AIPOOL_SLURM_CONF", "") or os.environ.get("SLURM_CONF") or "/etc/slurm/slurm.conf"
        log_root = getattr(settings, "AIPOOL_SLURM_LOG_DIR", "") or Path(settings.DATA_DIR) / "slurm"
        return cls(
            conf=conf,
            log_root=Path(log_root),
            job_prefix=getattr(settings, "AIPOOL_SLURM_JOB_PREFIX", "aipool") or "aipool",
            organization=getattr(settings, "AIPOOL_SLURM_ORGANIZATION", "aipool") or "aipool",
            timeout=float(getattr(settings, "AIPOOL_SLURM_TIMEOUT", 30)),
        )

    @property
    def cluster(self) -> str:
        return self.cli.conf.cluster

    # --- submit ---------------------------------------------------------------------------------------------

    def job_name(self, job_id: int, run: int) -> str:
        """The name that makes dispatch idempotent: one Slurm job per (portal, job, run)."""
        return f"{self.job_prefix}-{job_id}-{run}"

    def rundir(self, job_id: int, run: int) -> Path:
        return self.log_root / "jobs" / str(job_id) / f"run-{run}"

    def submit(self, spec: LaunchSpec) -> str:
        name = self.job_name(spec.job_id, spec.run)
        rundir = self.rundir(spec.job_id, spec.run)
        # A run directory is written before sbatch: without one, no earlier attempt can have reached Slurm.
        if rundir.exists():
            existing = self.find(name)
            if existing:
                self._index(existing, rundir)
                return existing
        uid, gid, account = self._identity(spec)
        self._write_rundir(spec, rundir, uid, gid)
        argv = self._sbatch_argv(spec, name, rundir, uid, gid)
        try:
            out = self.cli.run(argv, env=_user_environment(account))
        except SlurmError as exc:
            unknown = "Invalid account" in str(exc)  # account or user association not (yet) in Slurm
            raise JobRejected(f"Slurm refused the job: {exc}", limits_out_of_date=unknown) from exc
        backend_job_id = out.strip().split(";")[0]
        if not SLURM_JOB_ID.match(backend_job_id):
            raise SlurmError(f"sbatch answered {out.strip()!r}, not a job id")
        self._index(backend_job_id, rundir)
        return backend_job_id

    def find(self, name: str) -> str | None:
        """The Slurm job with this name: squeue first (it holds recent jobs), then the accounting database."""
        out = self.cli.run(["squeue", "--noheader", "--states=all", f"--name={name}", "--format=%i"])
        ids = [line.strip() for line in out.splitlines() if SLURM_JOB_ID.match(line.strip())]
        if ids:
            return max(ids, key=int)
        out = self.cli.run(
            ["sacct", "--allusers", "-X", "-n", "-P", f"--name={name}", "--starttime=now-90days", "--format=JobID"],
            controller=False,
        )
        ids = [line.strip() for line in out.splitlines() if SLURM_JOB_ID.match(line.strip())]
        return max(ids, key=int) if ids else None

    def _identity(self, spec: LaunchSpec) -> tuple[int, int | None, pwd.struct_passwd | None]:
        user = spec.posix_user or spec.user
        try:
            account = pwd.getpwnam(user)
        except KeyError:
            if spec.posix_uid is None:
                raise JobRejected(
                    f"no POSIX account {user!r} on the portal's host: map the user to an existing account "
                    "(cluster.PosixAccount) or create it"
                ) from None
            return spec.posix_uid, None, None
        uid = spec.posix_uid if spec.posix_uid is not None else account.pw_uid
        return uid, account.pw_gid, account

    def _sbatch_argv(self, spec: LaunchSpec, name: str, rundir: Path, uid: int, gid: int | None) -> list[str]:
        nodes = spec.node_count or len(spec.nodes) or 1
        minutes = max(1, math.ceil(spec.time_limit_seconds / 60))
        argv = [
            "sbatch",
            "--parsable",
            f"--job-name={name}",
            f"--nodes={nodes}",
            "--ntasks-per-node=1",
            f"--cpus-per-task={max(1, spec.cpus_per_node)}",
            f"--time={minutes}",
            f"--output={rundir / 'stdout'}",
            f"--error={rundir / 'stderr'}",
            f"--chdir={rundir}",
            "--no-requeue",
            "--export=ALL",
        ]
        if spec.account:
            argv.append(f"--account={spec.account}")
        if spec.partition:
            argv.append(f"--partition={spec.partition}")
        if spec.memory_per_node_mb:
            argv.append(f"--mem={spec.memory_per_node_mb}")
        if spec.accelerators_per_node:
            argv.append(f"--gres=accelerator:{spec.accelerators_per_node}")
        if spec.topology_aware:
            argv.append(f"--switches={spec.max_switches or 1}")
        argv += self._identity_args(uid, gid)
        argv.append(str(rundir / "job.sh"))
        return argv

    @staticmethod
    def _identity_args(uid: int, gid: int | None) -> list[str]:
        if os.geteuid() == 0:
            return [f"--uid={uid}", *([f"--gid={gid}"] if gid is not None else [])]
        if uid == os.geteuid():
            return []  # a personal or development install: the portal's own account is the job's
        raise JobRejected(
            f"the portal runs as uid {os.geteuid()} and cannot submit as uid {uid}: "
            "sbatch --uid needs root (see docs/slurm.md, privilege model)"
        )

    def _write_rundir(self, spec: LaunchSpec, rundir: Path, uid: int, gid: int | None) -> None:
        for directory in (self.log_root, self.log_root / "jobs", rundir.parent):
            directory.mkdir(mode=0o755, parents=True, exist_ok=True)
        rundir.mkdir(mode=0o750, exist_ok=True)
        files = {"job.sh": batch_script(spec, rundir), "task.sh": task_script(spec)}
        if spec.script:
            files["script.sh"] = spec.script
        for name, text in files.items():
            path = rundir / name
            path.write_text(text)
            path.chmod(0o750)
        if os.geteuid() == 0:  # the job writes its logs here as its owner; the portal (root) reads them
            for path in (rundir, *(rundir / name for name in files)):
                os.chown(path, uid, gid if gid is not None else -1)

    def _index(self, backend_job_id: str, rundir: Path) -> None:
        """ids/<slurm id> → the run directory, so logs are found from the id the portal stores."""
        index = self.log_root / "ids"
        index.mkdir(mode=0o755, parents=True, exist_ok=True)
        link = index / backend_job_id
        tmp = index / f".{backend_job_id}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(rundir)
        os.replace(tmp, link)

    # --- cancel, poll, logs ---------------------------------------------------------------------------------

    def cancel(self, backend_job_id: str) -> None:
        if not SLURM_JOB_ID.match(backend_job_id):
            return
        try:
            self.cli.run(["scancel", backend_job_id])
        except SlurmError as exc:
            if not re.search(r"Invalid job id|already completing or completed|Job has finished", str(exc), re.I):
                raise

    def poll(self, backend_job_ids: list[str]) -> dict[str, BackendStatus]:
        wanted = {i for i in backend_job_ids if SLURM_JOB_ID.match(i)}
        found = self._squeue(wanted) if wanted else {}
        missing = wanted - set(found)
        if missing:
            found.update(self._sacct(missing))
        return {
            i: found.get(i) or BackendStatus(i, "NODE_FAIL", reason="lost: Slurm has no record of this job")
            for i in backend_job_ids
        }

    def _squeue(self, wanted: set[str]) -> dict[str, BackendStatus]:
        # 22.05's squeue --json ignores --jobs and friends: it always answers with every job slurmctld holds.
        data = json.loads(self.cli.run(["squeue", "--json"]) or "{}")
        errors = "; ".join(e.get("description") or e.get("error", "") for e in data.get("errors") or [])
        if errors:
            self.cli.fail(errors)
        statuses = {}
        for job in data.get("jobs", []):
            backend_job_id = str(job.get("job_id"))
            if backend_job_id in wanted:
                statuses[backend_job_id] = _status_from_squeue(backend_job_id, job)
        return statuses

    def _sacct(self, wanted: set[str]) -> dict[str, BackendStatus]:
        out = self.cli.run(
            ["sacct", "--allusers", "-X", "-n", "-P", f"--jobs={','.join(sorted(wanted))}", f"--format={SACCT_FORMAT}"],
            env={"SLURM_TIME_FORMAT": "%s"},  # Start and End as unix times
            controller=False,
        )
        statuses = {}
        for line in out.splitlines():
            cells = line.split("|")
            if len(cells) < 8 or cells[0] not in wanted:
                continue
            statuses[cells[0]] = _status_from_sacct(cells)
        return statuses

    def read_log(self, backend_job_id: str, stream: str = "stdout", offset: int = 0, limit: int = 1 << 20) -> LogChunk:
        if stream not in STREAMS:
            raise ValueError(f"unknown log stream {stream!r}: use stdout or stderr")
        if offset < 0 or limit <= 0:
            raise ValueError("offset must be >= 0 and limit > 0")
        if not SLURM_JOB_ID.match(backend_job_id):
            return LogChunk("", 0, 0)
        try:
            with open(self.log_root / "ids" / backend_job_id / stream, "rb") as log:
                size = os.fstat(log.fileno()).st_size
                offset = min(offset, size)
                log.seek(offset)
                data = log.read(limit)
        except (FileNotFoundError, NotADirectoryError):
            return LogChunk("", 0, 0)
        size = max(size, offset + len(data))
        data = _whole_characters(data, more_follows=offset + len(data) < size)
        return LogChunk(data.decode("utf-8", errors="replace"), offset + len(data), size)

    # --- usage (monitoring) ----------------------------------------------------------------------------------

    def usage(self, backend_job_id: str) -> list[TaskUsage]:
        if not SLURM_JOB_ID.match(backend_job_id):
            return []
        out = self.cli.run(
            ["sstat", "--allsteps", "-n", "-P", f"--jobs={backend_job_id}", f"--format={slurm_usage.SSTAT_FORMAT}"]
        )
        return slurm_usage.usage_from_sstat(out, at=time.time())

    def step_metrics(self, backend_job_id: str, *, since: float, limit_bytes: int = 1 << 16) -> dict[int, list[dict]]:
        if not SLURM_JOB_ID.match(backend_job_id):
            return {}
        found = {}
        for path in (self.log_root / "ids" / backend_job_id / "metrics").glob("rank-*.jsonl"):
            rank = path.stem.removeprefix("rank-")
            if rank.isdigit():
                found[int(rank)] = procfs.tail_records(path, since=since, limit_bytes=limit_bytes)
        return found

    # --- inventory --------------------------------------------------------------------------------------------

    def inventory(self) -> dict:
        """Nodes (sinfo --json) and partitions (sinfo -o) in the pool file's terms."""
        data = json.loads(self.cli.run(["sinfo", "--json"]) or "{}")
        nodes = {
            node["name"]: {
                "cpus": node.get("cpus"),
                "memory": f"{node.get('real_memory', 0)}M",
                "accelerators": _gres_count(node.get("gres", "")),
                "accelerators_allocated": _gres_count(node.get("gres_used", "")),
                "state": str(node.get("state", "")).upper(),
                "partitions": node.get("partitions", []),
            }
            for node in data.get("nodes", [])
        }
        partitions = {}
        for line in self.cli.run(["sinfo", "--noheader", "--format=%P|%l|%N|%a"]).splitlines():
            name, limit, nodelist, avail = (line.split("|") + ["", "", "", ""])[:4]
            partitions[name.rstrip("*")] = {
                "default": name.endswith("*"),
                "max_time": limit,
                "nodes": expand_hostlist(nodelist),
                "up": avail == "up",
            }
        return {"nodes": nodes, "partitions": partitions}

    # --- limits -----------------------------------------------------------------------------------------------

    def _pairs(self, *argv: str) -> dict[str, str]:
        """Two-column ``sacctmgr -n -P show …`` output as a dict."""
        pairs = {}
        for line in self.cli.run(["sacctmgr", "-n", "-P", *argv], controller=False).splitlines():
            if "|" in line:
                key, value = line.split("|", 1)
                pairs[key] = value
        return pairs

    def associations(self) -> tuple[list[Association], dict[str, str], dict[str, str]]:
        """What ``sacctmgr show assoc`` says now, each account's Organization and each user's DefaultAccount."""
        orgs = {k.lower(): v.lower() for k, v in self._pairs("show", "account", "format=Account,Organization").items()}
        defaults = self._pairs("show", "user", "format=User,DefaultAccount")
        shown = self.cli.run(
            [
                "sacctmgr",
                "-n",
                "-P",
                "show",
                "assoc",
                "where",
                f"cluster={self.cluster}",
                f"format={','.join(SHOW_FORMAT)}",
            ],
            controller=False,
        )
        return parse_show_assoc(shown), orgs, defaults

    def drift(self, associations: list[Association]) -> list[Change]:
        actual, orgs, defaults = self.associations()
        managed = [account for account, org in orgs.items() if org == self.organization]
        return diff(
            associations,
            actual,
            managed_accounts=managed,
            cluster=self.cluster,
            organization=self.organization,
            account_orgs=orgs,
            default_accounts=defaults,
        )

    def sync_limits(self, associations: list, *, dry_run: bool = False) -> list[Change]:
        if dry_run:
            return self.drift(associations)
        # One sync at a time: concurrent sacctmgr changes to one tree deadlock in slurmdbd 22.05 and can leave its
        # nested-set columns inconsistent (seen here: slurmdbd then crashes on every `show assoc`).
        with self._sync_lock():
            applied = []
            for change in self.drift(associations):
                try:
                    self.cli.run(list(change.argv), controller=False)
                    applied.append(change)
                except SlurmError as exc:
                    applied.append(replace(change, error=str(exc)))
            return applied

    @contextmanager
    def _sync_lock(self):
        """Every process of this host that changes this Slurm's associations takes the same lock."""
        digest = hashlib.sha256(os.path.abspath(self.cli.conf_path).encode()).hexdigest()[:16]
        with open(Path(tempfile.gettempdir()) / f"aipool-slurm-sync-{digest}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


# --- batch script -----------------------------------------------------------------------------------------------


def batch_script(spec: LaunchSpec, rundir: Path) -> str:
    """The script sbatch runs on the job's first node: the job's environment, then one task per node."""
    lines = [
        "#!/bin/bash",
        f"# aipool job {spec.job_id}, run {spec.run} ({spec.name}): generated by the portal's Slurm backend.",
    ]
    for key, value in sorted(spec.environment.items()):
        if ENV_NAME.match(key):
            lines.append(f"export {key}={shlex.quote(value)}")
    lines += [
        f"export AIPOOL_JOB_ID={spec.job_id} AIPOOL_RUN_DIR={shlex.quote(str(rundir))}",
        'cd "$AIPOOL_RUN_DIR" || exit 1',
        'if [ "${SLURM_JOB_NUM_NODES:-1}" -gt 1 ]; then',
        '  exec srun --ntasks-per-node=1 --kill-on-bad-exit=1 /bin/bash "$AIPOOL_RUN_DIR/task.sh"',
        "fi",
        'exec /bin/bash "$AIPOOL_RUN_DIR/task.sh"',
    ]
    return "\n".join(lines) + "\n"


def task_script(spec: LaunchSpec) -> str:
    """One task (per node): torch.distributed's variables from Slurm's, the runtime's prologue, the command."""
    accelerators = ",".join(str(i) for i in range(spec.accelerators_per_node))
    lines = [
        "#!/bin/bash",
        "export RANK=${SLURM_PROCID:-0} WORLD_SIZE=${SLURM_NTASKS:-1}",
        "export LOCAL_RANK=${SLURM_LOCALID:-0} LOCAL_WORLD_SIZE=1",
        "export MASTER_ADDR=${SLURM_LAUNCH_NODE_IPADDR:-127.0.0.1} MASTER_PORT=$((20000 + ${SLURM_JOB_ID:-0} % 20000))",
        f"export AIPOOL_ACCELERATORS={accelerators}",
    ]
    if spec.prologue:
        lines.append(spec.prologue)
    if spec.script:
        lines.append('exec /bin/bash "$AIPOOL_RUN_DIR/script.sh"')
    else:
        lines.append(spec.command)
    return "\n".join(lines) + "\n"


def _user_environment(account: pwd.struct_passwd | None) -> dict[str, str]:
    """What sbatch --export=ALL hands the job besides its own variables: who it is, and nothing of the portal's."""
    if account is None:
        return {}
    return {
        "HOME": account.pw_dir,
        "USER": account.pw_name,
        "LOGNAME": account.pw_name,
        "SHELL": "/bin/bash",
    }


# --- status -----------------------------------------------------------------------------------------------------


def _state(raw: str) -> str:
    return STATE_MAP.get((raw or "").split()[0].upper() if raw else "", "PENDING")


def _time(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _status_from_squeue(backend_job_id: str, job: dict) -> BackendStatus:
    state = _state(job.get("job_state", ""))
    started = _time(job.get("start_time"))
    final = state not in ACTIVE
    return BackendStatus(
        backend_job_id=backend_job_id,
        state=state,
        exit_code=decode_wait_status(job.get("exit_code")) if final else None,
        started_at=started if state != "PENDING" else None,
        ended_at=_time(job.get("end_time")) if final else None,
        reason=str(job.get("state_reason") or ""),
        nodelist=tuple(expand_hostlist(job.get("nodes", ""))) if state != "PENDING" else (),
        estimated_start=started if state == "PENDING" else None,
    )


def _status_from_sacct(cells: list[str]) -> BackendStatus:
    backend_job_id, _name, raw_state, exit_code, nodelist, start, end, reason = cells[:8]
    state = _state(raw_state)
    final = state not in ACTIVE
    return BackendStatus(
        backend_job_id=backend_job_id,
        state=state,
        exit_code=parse_exit_code(exit_code) if final else None,
        started_at=_time(start) if state != "PENDING" else None,
        ended_at=_time(end) if final else None,
        reason=reason if reason != "None" else "",
        nodelist=tuple(expand_hostlist(nodelist)) if nodelist and nodelist != "None assigned" else (),
    )


def _gres_count(text: str) -> int:
    match = re.search(r"accelerator(?::[^:(,]+)?:(\d+)", text or "")
    return int(match.group(1)) if match else 0


def _whole_characters(data: bytes, *, more_follows: bool) -> bytes:
    """Stop before a UTF-8 character cut in half by the read limit; the next read starts with it."""
    if not more_follows:
        return data
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:
            continue
        if byte & 0x80:
            needed = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4
            return data if back >= needed else data[:-back]
        return data
    return data
