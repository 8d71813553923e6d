"""Running Slurm's client commands (sbatch, squeue, sacct, scancel, sacctmgr, sinfo) and reading their output.

No Django here. Every command gets a small, explicit environment: the portal's own secrets (database URL, secret
key, broker credentials) must never reach a job through ``sbatch --export``. A controller or slurmdbd that cannot be
reached raises ``BackendUnavailable``; a command Slurm refuses raises ``SlurmError`` with Slurm's own words.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from cluster.backends.base import BackendUnavailable

# What Slurm's clients print when slurmctld or slurmdbd is not there (22.05 wording).
UNREACHABLE = re.compile(
    r"Unable to contact slurm controller|Socket timed out|Connection refused|Connection timed out"
    r"|Problem talking to the database|slurm_persist_conn_open|Zero Bytes were transmitted"
    r"|Failed while looking for jobs|Unable to establish connection|Transport endpoint is not connected"
    r"|temporarily unable to accept|Resource temporarily unavailable",
    re.IGNORECASE,
)
# After the controller was found down, a cheap TCP probe answers the next calls for this long instead of letting
# every squeue wait out Slurm's ~9 s connect retries.
DOWN_MEMORY_SECONDS = 30.0
SAFE_ENV = ("PATH", "LANG", "TZ")
# conf path → when its controller was last found down; per process, as backends are built per call.
_down_since: dict[str, float] = {}


class SlurmError(RuntimeError):
    """Slurm refused the command; the message is Slurm's, without the command-name prefix."""


@dataclass(frozen=True)
class SlurmConf:
    """The few slurm.conf values the portal needs: where the controller listens, and the cluster's name."""

    path: str
    cluster: str
    controller: str
    port: int

    @classmethod
    def read(cls, path: str) -> SlurmConf:
        values: dict[str, str] = {}
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise BackendUnavailable(f"cannot read Slurm's configuration {path}: {exc.strerror}") from exc
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if "=" in line and " " not in line.split("=", 1)[0]:
                key, value = line.split("=", 1)
                values.setdefault(key.strip().lower(), value.strip().split()[0] if value.strip() else "")
        host = values.get("slurmctldhost") or values.get("controlmachine", "localhost")
        # SlurmctldHost=name(address): connect to the address when one is given.
        match = re.match(r"^([^(]+)(?:\(([^)]+)\))?$", host)
        controller = (match.group(2) or match.group(1)) if match else host
        return cls(
            path=path,
            cluster=values.get("clustername", "cluster"),
            controller=controller,
            port=int(values.get("slurmctldport", "6817").split("-")[0]),
        )


class SlurmCLI:
    def __init__(self, conf: str, *, timeout: float = 30.0) -> None:
        self.conf_path = conf
        self.timeout = timeout
        self._conf: SlurmConf | None = None

    @property
    def conf(self) -> SlurmConf:
        if self._conf is None:
            self._conf = SlurmConf.read(self.conf_path)
        return self._conf

    def environment(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {key: os.environ[key] for key in SAFE_ENV if key in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env.update({"SLURM_CONF": self.conf_path, **(extra or {})})
        return env

    def run(
        self,
        argv: list[str],
        *,
        input: str | None = None,
        env: dict[str, str] | None = None,
        controller: bool = True,
        cwd: str | None = None,
    ) -> str:
        """Run one Slurm command and return its stdout. `controller`: the command needs slurmctld (not sacct/-mgr)."""
        if controller:
            self._check_controller()
        try:
            done = subprocess.run(
                argv,
                input=input,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                env=self.environment(env),
                cwd=cwd or "/",
            )
        except FileNotFoundError as exc:
            raise BackendUnavailable(f"{argv[0]} is not installed on this host") from exc
        except subprocess.TimeoutExpired as exc:
            self._mark_down(controller)
            raise BackendUnavailable(f"{argv[0]} did not answer within {self.timeout:g} s") from exc
        if done.returncode != 0:
            self.fail(_message(argv[0], done.stderr) or f"{argv[0]} exited with status {done.returncode}", controller)
        if controller:
            _down_since.pop(self.conf_path, None)
        return done.stdout

    def fail(self, message: str, controller: bool = True):
        """Raise what `message` means: BackendUnavailable when Slurm cannot be reached, else SlurmError."""
        if UNREACHABLE.search(message):
            self._mark_down(controller)
            raise BackendUnavailable(f"Slurm is unreachable: {message}")
        raise SlurmError(message)

    # --- a controller known to be down answers fast ---------------------------------------------------------

    def _mark_down(self, controller: bool) -> None:
        if controller:
            _down_since[self.conf_path] = time.monotonic()

    def _check_controller(self) -> None:
        since = _down_since.get(self.conf_path)
        if since is None or time.monotonic() - since > DOWN_MEMORY_SECONDS:
            return
        try:
            with socket.create_connection((self.conf.controller, self.conf.port), timeout=1.0):
                pass
        except OSError as exc:
            raise BackendUnavailable(
                f"Slurm's controller {self.conf.controller}:{self.conf.port} is unreachable ({exc.strerror or exc})"
            ) from exc
        _down_since.pop(self.conf_path, None)


def _message(command: str, stderr: str) -> str:
    """Slurm's error lines without the ``sbatch: error:`` prefixes, joined into one line."""
    lines = []
    for line in stderr.splitlines():
        line = re.sub(rf"^{re.escape(command)}: (error: |fatal: )?", "", line.strip())
        if line and not line.startswith("warning:"):
            lines.append(line)
    return "; ".join(lines)


# --- output formats ---------------------------------------------------------------------------------------


_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def expand_hostlist(text: str) -> list[str]:
    """Slurm's compressed hostlist, expanded: ``"n[1-3,5],gpu07"`` → ``["n1", "n2", "n3", "n5", "gpu07"]``."""
    names: list[str] = []
    for item in _split_top_level(text or ""):
        match = re.match(r"^([^\[]*)\[([^\]]+)\](.*)$", item)
        if not match:
            names.append(item)
            continue
        prefix, ranges, suffix = match.groups()
        for part in ranges.split(","):
            bounds = _RANGE.match(part.strip())
            if not bounds:
                names.append(item)
                break
            low, high = bounds.group(1), bounds.group(2) or bounds.group(1)
            width = len(low) if low.startswith("0") else 0
            names.extend(f"{prefix}{number:0{width}d}{suffix}" for number in range(int(low), int(high) + 1))
    return names


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets."""
    items, depth, current = [], 0, []
    for char in text:
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        current.append(char)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def decode_wait_status(status: int | None) -> int | None:
    """squeue --json reports the raw wait status: 768 is exit code 3; a signal N becomes 128 + N, as in a shell."""
    if status is None:
        return None
    if status & 0x7F:
        return 128 + (status & 0x7F)
    return (status >> 8) & 0xFF


def parse_exit_code(text: str) -> int | None:
    """sacct's ``ExitCode`` column ``"3:0"`` (code:signal) → 3; a signal N → 128 + N."""
    match = re.match(r"^(\d+):(\d+)$", text or "")
    if not match:
        return None
    code, signal = int(match.group(1)), int(match.group(2))
    return 128 + signal if signal else code
