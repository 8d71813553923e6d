"""sbatch habits → the job body of ``POST /api/v1/jobs/``. Pure functions: no HTTP, no click.

Every parser raises :class:`SlurmArgError` with a message a person understands; the CLI turns it into a usage error.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

GRES_NAMES = {"accelerator", "accelerators", "gres/accelerator", "gpu", "gres/gpu"}
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
JOB_NAME_BAD_CHARS = re.compile(r"[^A-Za-z0-9_.\-]+")


class SlurmArgError(ValueError):
    """A Slurm-style argument the CLI cannot turn into a request."""


def parse_gres(value: str) -> int:
    """``accelerator:8`` → 8 accelerators per node.

    Accepted like sbatch: ``accelerator:N``, ``gres/accelerator:N``, ``accelerator`` (= 1), ``none`` (= 0);
    ``gpu`` is taken as an alias of ``accelerator``. GRES types (``accelerator:a100:8``) are not supported.
    """
    text = (value or "").strip()
    if not text:
        raise SlurmArgError("empty --gres; use e.g. --gres=accelerator:8")
    if text.lower() == "none":
        return 0
    total: int | None = None
    for item in text.split(","):
        parts = item.strip().split(":")
        name = parts[0].strip().lower()
        if name.startswith("gres:"):
            name = name[len("gres:") :]
        if name == "gres" and len(parts) > 1:  # old 'gres:accelerator:8' spelling
            parts = parts[1:]
            name = parts[0].strip().lower()
        if name not in GRES_NAMES:
            raise SlurmArgError(
                f"unknown GRES {parts[0].strip()!r} in {value!r}: this pool has only 'accelerator' "
                "(e.g. --gres=accelerator:8)"
            )
        if total is not None:
            raise SlurmArgError(f"accelerator is given twice in --gres={value}")
        if len(parts) == 1:
            total = 1
        elif len(parts) == 2:
            total = _count(parts[1], value)
        else:
            raise SlurmArgError(
                f"GRES types are not supported (got {':'.join(parts[1:-1])!r} in {value!r}); use accelerator:N"
            )
    assert total is not None
    return total


def _count(raw: str, whole: str) -> int:
    raw = raw.strip()
    if not raw.isdigit():
        raise SlurmArgError(f"the accelerator count in --gres={whole} must be a whole number ≥ 0, got {raw!r}")
    return int(raw)


def parse_nodes(value: str | int) -> int:
    """``-N 2`` → 2. Slurm's ranges (``2-4``) are refused: the pool allocates an exact node count."""
    text = str(value).strip()
    if re.fullmatch(r"\d+\s*-\s*\d+", text):
        raise SlurmArgError(f"node count ranges ({text}) are not supported; give one number, e.g. -N 2")
    if not text.isdigit() or int(text) < 1:
        raise SlurmArgError(f"the node count must be a whole number ≥ 1, got {text!r}")
    return int(text)


def parse_network(value: str) -> bool:
    """``--network=topology_aware`` → True. Other Slurm network options do not exist on this pool."""
    wanted = False
    for item in (value or "").split(","):
        word = item.strip().lower().replace("-", "_")
        if not word:
            continue
        if word in {"topology_aware", "topology"}:
            wanted = True
        else:
            raise SlurmArgError(f"unsupported --network value {item.strip()!r}; the only one is topology_aware")
    return wanted


def parse_switches(value: str) -> tuple[int, str | None]:
    """``--switches=N[@max-time]`` → (N, max-time or None). ``N`` is the most leaf switches the job may span."""
    text = (value or "").strip()
    count, _, wait = text.partition("@")
    count = count.strip()
    if not count.isdigit() or int(count) < 1:
        raise SlurmArgError(
            f"--switches needs a whole number ≥ 1, optionally with @max-time (e.g. 1@2:00:00), got {text!r}"
        )
    return int(count), (wait.strip() or None)


def parse_time(value: str) -> str:
    """``-t`` is passed through to the server, which parses every Slurm format; only blanks are refused here."""
    text = str(value).strip()
    if not text:
        raise SlurmArgError("empty time limit; use Slurm's -t formats, e.g. 30, 4:00:00 or 2-00:00:00")
    return text


def parse_exports(values: Iterable[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``--export A=1,B=2 --export C`` → {"A": "1", "B": "2", "C": <local $C>}.

    Like sbatch, a bare ``NAME`` takes the value from the submitting shell; ``ALL`` and ``NONE`` are accepted and
    ignored (the job environment on the pool is never a copy of the local one). A piece without ``=`` that is not a
    variable name continues the previous value, so ``--export LIST=a,b,c`` keeps its commas.
    """
    environ = os.environ if environ is None else environ
    env: dict[str, str] = {}
    for value in values:
        last: str | None = None
        for piece in str(value).split(","):
            name, eq, val = piece.partition("=")
            name = name.strip()
            if eq:
                if not ENV_NAME.match(name):
                    raise SlurmArgError(f"invalid variable name {name!r} in --export {value}")
                env[name] = val
                last = name
            elif name.upper() in {"ALL", "NONE", "NIL"}:
                last = None
            elif ENV_NAME.match(name):
                if name not in environ:
                    raise SlurmArgError(f"--export {name}: ${name} is not set here; use {name}=VALUE")
                env[name] = environ[name]
                last = name
            elif last is not None:
                env[last] += "," + piece
            elif piece.strip():
                raise SlurmArgError(f"cannot read --export {value!r}: use NAME=VALUE[,NAME=VALUE...]")
    return env


def default_job_name(script_path: str | None) -> str:
    """sbatch names a job after its script file, and ``wrap`` for ``--wrap``."""
    if not script_path:
        return "wrap"
    if script_path == "-":
        return "sbatch"
    base = os.path.basename(script_path)
    name = JOB_NAME_BAD_CHARS.sub("_", base).strip("_.-")[:128]
    return name or "job"


# --- #SBATCH directives ------------------------------------------------------------------------------------------

# option spelling → key used by the CLI (the same names as the click parameters of `aipool submit`)
DIRECTIVE_OPTIONS = {
    "-A": "account",
    "--account": "account",
    "-p": "partition",
    "--partition": "partition",
    "-N": "nodes",
    "--nodes": "nodes",
    "--gres": "gres",
    "--gpus-per-node": "accelerators_per_node",
    "-t": "time",
    "--time": "time",
    "-J": "job_name",
    "--job-name": "job_name",
    "-c": "cpus_per_node",
    "--cpus-per-task": "cpus_per_node",
    "--mem": "mem",
    "--network": "network",
    "--switches": "switches",
    "--export": "export",
}


@dataclass
class Directives:
    values: dict[str, str] = field(default_factory=dict)
    exports: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def parse_sbatch_directives(text: str) -> Directives:
    """The ``#SBATCH`` lines at the top of a batch script, read the way sbatch reads them.

    Directives end at the first line that is neither blank nor a comment. Options this pool has no use for
    (``--output``, ``--qos``, …) are collected in ``ignored``.
    """
    found = Directives()
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if not line.startswith("#"):
            break
        if not line.startswith("#SBATCH"):
            continue
        try:
            tokens = shlex.split(line[len("#SBATCH") :], comments=True)
        except ValueError as exc:
            raise SlurmArgError(f"script line {lineno}: cannot read {line!r}: {exc}") from exc
        i = 0
        while i < len(tokens):
            token = tokens[i]
            option, value = _split_option(token)
            key = DIRECTIVE_OPTIONS.get(option)
            if key is None:
                found.ignored.append(token if value is not None else " ".join(tokens[i : i + 2]))
                if value is None and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                    i += 1
                i += 1
                continue
            if value is None:
                if i + 1 >= len(tokens):
                    raise SlurmArgError(f"script line {lineno}: {option} needs a value")
                value = tokens[i + 1]
                i += 1
            i += 1
            if key == "export":
                found.exports.append(value)
            else:
                found.values[key] = value
    return found


def _split_option(token: str) -> tuple[str, str | None]:
    if token.startswith("--"):
        name, eq, value = token.partition("=")
        return name, (value if eq else None)
    if token.startswith("-") and len(token) > 2:  # -N2
        return token[:2], token[2:]
    return token, None


# --- the request body -------------------------------------------------------------------------------------------


@dataclass
class SubmitArgs:
    """What the user asked for, before defaults; ``None`` means "not given"."""

    account: str | None = None
    partition: str | None = None
    nodes: str | None = None
    gres: str | None = None
    accelerators_per_node: int | None = None
    time: str | None = None
    job_name: str | None = None
    cpus_per_node: int | str | None = None
    mem: str | None = None
    network: str | None = None
    switches: str | None = None
    exports: list[str] = field(default_factory=list)
    runtime: str | None = None
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    wrap: str | None = None
    script_path: str | None = None
    script_text: str | None = None


def merge_directives(args: SubmitArgs, directives: Directives) -> SubmitArgs:
    """Fill what the command line left out from the script's ``#SBATCH`` lines (the command line wins)."""
    for key, value in directives.values.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.exports = list(directives.exports) + list(args.exports)
    return args


def build_job_body(args: SubmitArgs, environ: Mapping[str, str] | None = None) -> dict:
    """The JSON body of ``POST /api/v1/jobs/``. Fields the user did not give are left to the server's defaults."""
    if args.wrap is not None and args.script_path is not None:
        raise SlurmArgError('give either --wrap "CMD" or a SCRIPT file, not both')
    if args.wrap is None and args.script_path is None:
        raise SlurmArgError('nothing to run: give --wrap "CMD" or a SCRIPT file')
    if args.wrap is not None and not args.wrap.strip():
        raise SlurmArgError('--wrap needs a command, e.g. --wrap "python train.py"')
    if not args.account:
        raise SlurmArgError("missing -A/--account GROUP")

    body: dict = {"group": args.account, "name": args.job_name or default_job_name(args.script_path)}
    if args.partition:
        body["partition"] = args.partition
    if args.nodes is not None:
        body["nodes"] = parse_nodes(args.nodes)
    accelerators = parse_gres(args.gres) if args.gres is not None else None
    if args.accelerators_per_node is not None:
        apn = int(args.accelerators_per_node)
        if accelerators is not None and accelerators != apn:
            raise SlurmArgError(f"--gres asks for {accelerators} accelerators per node, --gpus-per-node for {apn}")
        accelerators = apn
    if accelerators is not None:
        body["accelerators_per_node"] = accelerators
    if args.cpus_per_node is not None:
        text = str(args.cpus_per_node).strip()
        if not text.isdigit() or int(text) < 1:
            raise SlurmArgError(f"-c/--cpus-per-node must be a whole number ≥ 1, got {text!r}")
        body["cpus_per_node"] = int(text)
    if args.mem is not None:
        body["memory_per_node"] = args.mem.strip()
    if args.time is not None:
        body["time_limit"] = parse_time(args.time)
    body["topology_aware"] = parse_network(args.network) if args.network is not None else False
    if args.switches is not None:
        body["max_switches"], _wait = parse_switches(args.switches)
    if args.wrap is not None:
        body["command"] = args.wrap
    else:
        body["script"] = args.script_text or ""
    environment = parse_exports(args.exports, environ)
    if environment:
        body["environment"] = environment
    if args.runtime:
        body["runtime"] = args.runtime
    if args.inputs:
        body["inputs"] = [parse_input(text) for text in args.inputs]
    if args.outputs:
        body["outputs"] = [parse_output(text) for text in args.outputs]
    return body


def parse_input(text: str) -> str | dict:
    """``--input model:acme/llama@3`` → the reference as the API takes it; ``REF=NAME`` also names its variable.

    The reference itself is checked by the server (400 with the field's message), which knows the names."""
    ref, _, name = text.strip().partition("=")
    ref, name = ref.strip(), name.strip()
    if not ref:
        raise SlurmArgError(f"--input needs a reference such as model:acme/llama@production, got {text!r}")
    if "=" in text and not name:
        raise SlurmArgError(f"--input {text!r}: give a name after '=', e.g. dataset:acme/corpus@3=TRAIN")
    return {"ref": ref, "as": name} if name else ref


OUTPUT_KEYS = {"checkpoint": "checkpoint", "alias": "aliases", "aliases": "aliases", "as": "as"}


def parse_output(text: str) -> dict:
    """``--output model:acme/llama-ft,checkpoint=final,alias=candidate,as=FT`` → the API's output object."""
    ref, *options = [part.strip() for part in text.split(",")]
    if not ref or "=" in ref:
        raise SlurmArgError(f"--output needs a reference first, such as model:acme/llama-ft, got {text!r}")
    if "/" not in ref:
        # sbatch's --output names the log file; here it names where the job's results are published.
        raise SlurmArgError(
            f"--output {text!r}: expected a model or dataset such as model:acme/llama-ft "
            "(the job's own output is read with `aipool logs`)"
        )
    output: dict = {"ref": ref}
    for option in options:
        key, _, value = option.partition("=")
        field_name = OUTPUT_KEYS.get(key.strip().lower())
        if field_name is None or not value.strip():
            known = ", ".join(f"{k}=…" for k in ("checkpoint", "alias", "as"))
            raise SlurmArgError(f"--output {text!r}: unknown or empty option {option!r} (known: {known})")
        if field_name == "aliases":
            output.setdefault("aliases", []).append(value.strip())
        else:
            output[field_name] = value.strip()
    return output
