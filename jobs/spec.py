"""The job spec of api-contract.md, parsed once at the edge into a typed object with per-field messages."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError

from jobs import hooks
from vocab.slurmtime import TimeFormatError, parse_minutes
from vocab.tres import TRESError, parse_memory

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
MAX_SCRIPT_BYTES = 256 * 1024
MAX_INT = 2**31 - 1  # the database's integer columns
MAX_TIME_LIMIT = 365 * 1440  # a year: anything longer is a typo, and it keeps the column in range


@dataclass(frozen=True)
class JobSpec:
    name: str
    nodes: int
    accelerators_per_node: int
    time_limit: int  # minutes
    partition: str | None = None
    cpus_per_node: int | None = None
    memory_per_node: int | None = None  # MiB
    topology_aware: bool = False
    max_switches: int | None = None
    command: str = ""
    script: str = ""
    environment: dict[str, str] = field(default_factory=dict)
    runtime: str | None = None
    extensions: dict = field(default_factory=dict)  # fields other apps register in jobs.hooks (inputs, outputs)

    def canonical(self) -> dict:
        """A stable dict of the request, for idempotency comparison."""
        # Without extensions, the same dict as before they existed: stored request hashes keep matching.
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "extensions" or self.extensions}


def _int(data: dict, key: str, errors: dict, *, minimum: int, default=None, required=False):
    raw = data.get(key, default)
    if raw is None:
        if required:
            errors[key] = ["this field is required"]
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, str)) or not str(raw).strip().lstrip("-").isdigit():
        errors[key] = [f"must be a whole number, got {raw!r}"]
        return None
    value = int(raw)
    if value < minimum:
        errors[key] = [f"must be at least {minimum}"]
        return None
    if value > MAX_INT:
        errors[key] = [f"must be at most {MAX_INT}"]
        return None
    return value


def parse_job_spec(data: dict) -> JobSpec:
    """Raise ValidationError({field: [messages]}) listing every problem at once."""
    errors: dict[str, list[str]] = {}
    name = str(data.get("name") or "job").strip()
    if not NAME.match(name):
        errors["name"] = ["use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"]
    nodes = _int(data, "nodes", errors, minimum=1, default=1)
    apn = _int(data, "accelerators_per_node", errors, minimum=0, default=0)
    cpus = _int(data, "cpus_per_node", errors, minimum=1)
    max_switches = _int(data, "max_switches", errors, minimum=1)
    time_limit = _time_limit(data, errors)
    memory = _memory(data, errors)
    command, script = _payload(data, errors)
    environment = _environment(data, errors)
    partition = data.get("partition") or None
    runtime = data.get("runtime") or None
    topology_aware = data.get("topology_aware", False)
    if not isinstance(topology_aware, bool):
        errors["topology_aware"] = ["must be true or false"]
    extensions = hooks.parse_extensions(data, errors)
    if errors:
        raise ValidationError(errors)
    return JobSpec(
        name=name,
        nodes=nodes,
        accelerators_per_node=apn,
        time_limit=time_limit,
        partition=str(partition) if partition else None,
        cpus_per_node=cpus,
        memory_per_node=memory,
        topology_aware=topology_aware,
        max_switches=max_switches,
        command=command,
        script=script,
        environment=environment,
        runtime=str(runtime) if runtime else None,
        extensions=extensions,
    )


def _time_limit(data: dict, errors: dict) -> int | None:
    raw = data.get("time_limit")
    if raw in (None, ""):
        errors["time_limit"] = ["this field is required (Slurm -t format, e.g. 30, 4:00:00, 2-00:00:00)"]
        return None
    try:
        minutes = parse_minutes(raw if isinstance(raw, int) and not isinstance(raw, bool) else str(raw))
    except TimeFormatError as exc:
        errors["time_limit"] = [str(exc)]
        return None
    if minutes > MAX_TIME_LIMIT:
        errors["time_limit"] = ["must be at most 365-00:00:00 (a year)"]
        return None
    return minutes


def _memory(data: dict, errors: dict) -> int | None:
    raw = data.get("memory_per_node")
    if raw in (None, ""):
        return None
    try:
        value = parse_memory(str(raw))
    except TRESError as exc:
        errors["memory_per_node"] = [str(exc)]
        return None
    if value < 1:
        errors["memory_per_node"] = ["must be at least 1M"]
        return None
    return value


def _payload(data: dict, errors: dict) -> tuple[str, str]:
    command = data.get("command") or ""
    script = data.get("script") or ""
    if not isinstance(command, str) or not isinstance(script, str):
        errors["command"] = ["command and script must be text"]
        return "", ""
    if bool(command.strip()) == bool(script.strip()):
        errors["command"] = ["give exactly one of command or script"]
    if len(script.encode()) > MAX_SCRIPT_BYTES or len(command.encode()) > MAX_SCRIPT_BYTES:
        errors["script"] = [f"at most {MAX_SCRIPT_BYTES // 1024} KiB"]
    if "\x00" in command or "\x00" in script:
        errors["script"] = ["must not contain NUL bytes"]
    return command, script


def _environment(data: dict, errors: dict) -> dict[str, str]:
    env = data.get("environment") or {}
    if not isinstance(env, dict):
        errors["environment"] = ["must be an object of NAME: value"]
        return {}
    bad = [k for k in env if not isinstance(k, str) or not ENV_NAME.match(k)]
    if bad:
        errors["environment"] = [f"invalid variable names: {', '.join(map(str, bad))}"]
    if any(isinstance(v, (dict, list)) or v is None for v in env.values()):
        errors["environment"] = ["values must be text or numbers"]
        return {}
    if any("\x00" in str(v) for v in env.values()):
        errors["environment"] = ["values must not contain NUL bytes"]
    return {str(k): str(v) for k, v in env.items()}
