"""``aipool``: submit and watch jobs on the pool from a shell or a CI pipeline, with sbatch/squeue habits.

HTTP only (``aipool_cli.client``); no Django, no portal module. docs/cli.md is the user manual.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from contextlib import contextmanager
from urllib.parse import quote

import click
import httpx

from aipool_cli import __version__, accounting, inference, monitoring, notifications, registry, simulation
from aipool_cli import formatting as fmt
from aipool_cli.client import EXIT_TROUBLE, AipoolError, Client, make_client
from aipool_cli.slurmargs import (
    SlurmArgError,
    SubmitArgs,
    build_job_body,
    merge_directives,
    parse_sbatch_directives,
    parse_switches,
)

ACTIVE_STATES = {
    "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "SIGNALING", "STAGE_OUT",
}  # fmt: skip

# `aipool wait` / `aipool run` exit statuses (docs/cli.md has the table)
EXIT_WAIT_TIMEOUT = 3  # --timeout ran out; the job keeps running
EXIT_BY_STATE = {
    "CANCELLED": 130,  # as if interrupted (128 + SIGINT)
    "TIMEOUT": 124,  # coreutils `timeout`'s status: the job hit its -t time limit
    "OUT_OF_MEMORY": 137,  # 128 + SIGKILL, what the OOM killer leaves
    "NODE_FAIL": 75,  # EX_TEMPFAIL: not the job's fault, a retry usually works
    "BOOT_FAIL": 75,
    "PREEMPTED": 75,
}
EXIT_INTERRUPTED = 130
OUTAGE_GRACE_S = 600.0  # how long wait/logs -f ride out an unreachable portal before giving up


def exit_status(job: dict) -> int:
    """The exit status of `aipool wait` for a job in a final state: 0 only for COMPLETED with exit code 0."""
    state = str(job.get("state") or "").upper()
    code = job.get("exit_code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if state == "COMPLETED":
        return code if code is not None and 0 <= code <= 255 else (0 if code is None else 1)
    if state == "FAILED":
        return code if code is not None and 1 <= code <= 255 else 1
    return EXIT_BY_STATE.get(state, 1)


# --- the group -------------------------------------------------------------------------------------------------


class AipoolGroup(click.Group):
    """Turns every failure into one ``aipool: …`` line and an exit status, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except SlurmArgError as exc:
            raise click.UsageError(str(exc), ctx) from exc
        except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt, SystemExit):
            raise
        except httpx.HTTPError as exc:
            raise AipoolError(f"HTTP error: {exc}", EXIT_TROUBLE) from exc
        except OSError as exc:
            raise AipoolError(str(exc), EXIT_TROUBLE) from exc
        except Exception as exc:
            if os.environ.get("AIPOOL_DEBUG"):
                raise
            raise AipoolError(
                f"internal error: {type(exc).__name__}: {exc} (AIPOOL_DEBUG=1 shows the traceback)", EXIT_TROUBLE
            ) from exc


@click.group(cls=AipoolGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", metavar="URL", help="Portal address [env AIPOOL_URL; default http://127.0.0.1:8000].")
@click.option("--token", metavar="TOKEN", help="Personal access token [env AIPOOL_TOKEN].")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables (every command).")
@click.version_option(__version__, "-V", "--version", prog_name="aipool")
@click.pass_context
def cli(ctx: click.Context, url: str | None, token: str | None, as_json: bool) -> None:
    """The aipool compute pool from the command line (sbatch/squeue habits, HTTP API underneath)."""
    obj = ctx.ensure_object(dict)  # tests pre-fill transport/sleep/clock here
    obj.update(url=url, token=token, json=as_json)


def get_client(ctx: click.Context) -> Client:
    obj = ctx.find_root().ensure_object(dict)
    if obj.get("client") is None:
        obj["client"] = make_client(
            obj.get("url"),
            obj.get("token"),
            transport=obj.get("transport"),
            sleep=obj.get("sleep"),
            clock=obj.get("clock"),
        )
        ctx.find_root().call_on_close(obj["client"].close)
    return obj["client"]


def want_json(ctx: click.Context, local: bool) -> bool:
    return bool(local or ctx.find_root().ensure_object(dict).get("json"))


def emit_json(data) -> None:
    click.echo(json.dumps(data, indent=2))


def note(message: str) -> None:
    click.echo(f"aipool: {message}", err=True)


def job_path(job_id, suffix: str = "") -> str:
    return f"jobs/{quote(str(job_id).strip().lstrip('#'), safe='')}/{suffix}"


def job_call(client: Client, method: str, job_id, suffix: str = "", **kwargs):
    try:
        return client.request(method, job_path(job_id, suffix), **kwargs)
    except AipoolError as exc:
        if exc.status == 404:
            exc.message = f"job {job_id}: {exc.message}"
        raise


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


# --- submit / run ----------------------------------------------------------------------------------------------


def submit_options(func):
    options = [
        click.option("-A", "--account", "account", metavar="GROUP", help="Group to charge (its slug)."),
        click.option("-p", "--partition", metavar="PART", help="Partition [default: the group's default]."),
        click.option("-N", "--nodes", metavar="N", help="Number of nodes."),
        click.option("--gres", metavar="accelerator:N", help="Accelerators per node, e.g. --gres=accelerator:8."),
        click.option("--gpus-per-node", "--accelerators-per-node", "accelerators_per_node", type=int,
                     metavar="N", help="Accelerators per node (alternative to --gres)."),
        click.option("-t", "--time", metavar="TIME", help="Time limit in Slurm's formats: 30, 4:00:00, 2-00:00:00."),
        click.option("-J", "--job-name", metavar="NAME", help="Job name [default: script name, or 'wrap']."),
        click.option("-c", "--cpus-per-node", "--cpus-per-task", "cpus_per_node", metavar="N", help="CPUs per node."),
        click.option("--mem", metavar="SIZE", help="Memory per node, e.g. 64G."),
        click.option("--network", metavar="topology_aware", help="topology_aware: pack the nodes under few switches."),
        click.option("--switches", metavar="N[@TIME]", help="At most N leaf switches (Slurm --switches)."),
        click.option("--export", "exports", multiple=True, metavar="NAME=VAL[,…]",
                     help="Environment variables for the job; repeatable. A bare NAME copies the local value."),
        click.option("--runtime", metavar="NAME", help="Software runtime, e.g. ai-suite/2.1."),
        click.option("--idempotency-key", envvar="AIPOOL_IDEMPOTENCY_KEY", metavar="KEY",
                     help="Submit at most once per key (retries return the same job) [env AIPOOL_IDEMPOTENCY_KEY]."),
        click.option("--input", "inputs", multiple=True, metavar="REF[=NAME]",
                     help="A model or dataset version to read, e.g. model:acme/llama@production or "
                          "dataset:acme/corpus@3=TRAIN (NAME: its AIPOOL_*_<NAME>_PATH); repeatable."),
        click.option("--output", "outputs", multiple=True, metavar="REF[,checkpoint=DIR][,alias=A][,as=NAME]",
                     help="Publish what the job leaves in AIPOOL_OUTPUT_<NAME>_PATH as a new version on success, "
                          "e.g. model:acme/llama-ft,alias=candidate; repeatable."),
        click.option("--wrap", metavar="CMD", help="Run this shell command instead of a script."),
        click.argument("script", required=False, type=click.Path(dir_okay=False, allow_dash=True, exists=True)),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return func


def _submit(ctx: click.Context, client: Client, params: dict) -> dict:
    args = SubmitArgs(
        account=params["account"],
        partition=params["partition"],
        nodes=params["nodes"],
        gres=params["gres"],
        accelerators_per_node=params["accelerators_per_node"],
        time=params["time"],
        job_name=params["job_name"],
        cpus_per_node=params["cpus_per_node"],
        mem=params["mem"],
        network=params["network"],
        switches=params["switches"],
        exports=list(params["exports"]),
        runtime=params["runtime"],
        inputs=list(params.get("inputs") or ()),
        outputs=list(params.get("outputs") or ()),
        wrap=params["wrap"],
        script_path=params["script"],
    )
    if args.wrap is not None and args.script_path is not None:
        raise click.UsageError('give either --wrap "CMD" or a SCRIPT file, not both', ctx)
    if args.script_path is not None:
        args.script_text = _read_script(args.script_path)
        if args.wrap is None:
            try:
                directives = parse_sbatch_directives(args.script_text)
            except SlurmArgError as exc:
                raise click.UsageError(f"{args.script_path}: {exc}", ctx) from exc
            for ignored in directives.ignored:
                note(f"warning: ignoring #SBATCH {ignored} (not used on this pool)")
            merge_directives(args, directives)
    if not args.account and (args.wrap is not None or args.script_path is not None):
        args.account = _only_group(ctx, client)
    try:
        body = build_job_body(args)
        if args.switches is not None and parse_switches(args.switches)[1]:
            note("warning: the @time part of --switches is not supported; the job waits as long as it takes")
    except SlurmArgError as exc:
        raise click.UsageError(str(exc), ctx) from exc
    headers = {"Idempotency-Key": params["idempotency_key"]} if params["idempotency_key"] else None
    status, job = client.request_full("POST", "jobs/", json=body, headers=headers)
    if status == 200 and headers:
        note(f"job {job.get('id')} was already submitted with this idempotency key")
    return job


def _read_script(path: str) -> str:
    try:
        if path == "-":
            return click.get_text_stream("stdin").read()
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except UnicodeDecodeError as exc:
        raise click.BadParameter(f"{path} is not a text file", param_hint="SCRIPT") from exc


def _only_group(ctx: click.Context, client: Client) -> str:
    """No -A: take the user's group when there is exactly one (like Slurm's default account)."""
    me = client.get("me/")
    groups = me.get("groups") if isinstance(me, dict) else None
    names = [fmt.name_of(g) for g in groups or []]
    if len(names) == 1:
        return names[0]
    hint = f" (your groups: {', '.join(names)})" if names else ""
    raise click.UsageError(f"missing -A/--account GROUP{hint}", ctx)


@cli.command()
@submit_options
@json_option
@click.pass_context
def submit(ctx: click.Context, as_json: bool, **params) -> None:
    """Submit a job (sbatch): prints its id.

    \b
      aipool submit -A ai-team -N 2 --gres=accelerator:8 -t 72:00:00 --wrap "python train.py"
      aipool submit train.sbatch          # honours its #SBATCH -A/-p/-N/--gres/-t/-J lines
    """
    job = _submit(ctx, get_client(ctx), params)
    if want_json(ctx, as_json):
        emit_json(job)
    else:
        click.echo(job.get("id"))


@cli.command()
@submit_options
@click.option(
    "--interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True, help="Seconds between polls."
)
@click.option("--no-logs", is_flag=True, help="Do not stream the job's output.")
@click.option("--no-cancel-on-interrupt", is_flag=True, help="On Ctrl-C/SIGTERM leave the job running.")
@click.option("-q", "--quiet", is_flag=True, help="No state-change notes on stderr.")
@click.pass_context
def run(ctx: click.Context, interval: float, no_logs: bool, no_cancel_on_interrupt: bool, quiet: bool,
        **params) -> None:  # fmt: skip
    """Submit, stream the output, wait; exit with the job's status (like `aipool wait`).

    Ctrl-C or SIGTERM (a cancelled CI pipeline) cancels the job unless --no-cancel-on-interrupt.
    """
    client = get_client(ctx)
    job = _submit(ctx, client, params)
    job_id = job.get("id")
    click.echo(f"Submitted job {job_id}", err=True)
    with _sigterm_as_interrupt():
        try:
            code = _wait(client, job_id, interval=interval, timeout=None, logs=not no_logs, quiet=quiet)
        except KeyboardInterrupt:
            if no_cancel_on_interrupt:
                note(f"interrupted; job {job_id} keeps running (aipool cancel {job_id} stops it)")
            else:
                _cancel_quietly(client, job_id)
            ctx.exit(EXIT_INTERRUPTED)
    ctx.exit(code)


@contextmanager
def _sigterm_as_interrupt():
    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _cancel_quietly(client: Client, job_id) -> None:
    try:
        client.retries = 0
        job_call(client, "POST", job_id, "cancel/")
        note(f"interrupted; cancelled job {job_id}")
    except (AipoolError, KeyboardInterrupt) as exc:
        note(f"interrupted; could not cancel job {job_id} ({getattr(exc, 'message', 'interrupted')}); "
             f"run: aipool cancel {job_id}")  # fmt: skip


# --- wait / logs -----------------------------------------------------------------------------------------------


class Outage:
    """Rides out a portal restart during long polls: transient errors are retried for OUTAGE_GRACE_S."""

    def __init__(self, client: Client):
        self.client = client
        self.since: float | None = None

    def call(self, func, *args, **kwargs):
        try:
            result = func(*args, **kwargs)
        except AipoolError as exc:
            if not exc.transient:
                raise
            now = self.client.clock()
            if self.since is None:
                self.since = now
                note(f"{exc.message}; retrying for up to {int(OUTAGE_GRACE_S)}s")
            elif now - self.since > OUTAGE_GRACE_S:
                raise
            return None
        if self.since is not None:
            note("back in contact with the portal")
            self.since = None
        return result


class LogStream:
    """One of a job's log streams, read from a byte offset like ``tail -f``."""

    def __init__(self, client: Client, job_id, stream: str, err: bool = False):
        self.client, self.job_id, self.stream, self.err = client, job_id, stream, err
        self.offset = 0
        self.state: str | None = None
        self.size: int | None = None
        self.enabled = True
        self.mid_line = False  # the last text printed did not end with a newline

    def read_once(self) -> bool:
        """Fetch from the offset and print what is new; True if the offset grew."""
        try:
            data = job_call(self.client, "GET", self.job_id, "logs/",
                            params={"stream": self.stream, "offset": self.offset})  # fmt: skip
        except AipoolError as exc:
            if self.stream != "stdout" and exc.status in (400, 404):
                self.enabled = False  # the server keeps no separate stderr
                return False
            raise
        data = data if isinstance(data, dict) else {}
        text = data.get("text") or ""
        reported = data.get("offset")
        if isinstance(reported, int) and reported > self.offset:
            new_offset = reported  # the server reports where the next read starts
        else:
            new_offset = self.offset + len(text.encode("utf-8"))
        self.state = data.get("state") or self.state
        self.size = data.get("size") if isinstance(data.get("size"), int) else None
        if text:
            click.echo(text, nl=False, err=self.err)
            self.mid_line = not text.endswith("\n")
        grew = new_offset > self.offset
        self.offset = new_offset
        return grew

    def drain(self) -> None:
        """Read until nothing new comes."""
        while self.enabled and self.read_once():
            if self.size is not None and self.offset >= self.size:
                break


def _follow(client: Client, job_id, stream: str, interval: float) -> None:
    """``logs -f``: poll the offset until the job is in a final state and the offset stops growing."""
    log = LogStream(client, job_id, stream)
    outage = Outage(client)
    quiet_final_reads = 0
    while True:
        grew = outage.call(log.read_once)
        if grew:
            quiet_final_reads = 0
            continue
        if grew is not None:
            state = log.state
            if state is None:
                job = outage.call(job_call, client, "GET", job_id)
                state = job.get("state") if isinstance(job, dict) else None
            if state and str(state).upper() not in ACTIVE_STATES:
                quiet_final_reads += 1
                if quiet_final_reads >= 2:  # one more look after the end: late flushes
                    return
        client.sleep(interval)


def _wait(client: Client, job_id, *, interval: float, timeout: float | None, logs: bool, quiet: bool) -> int:
    streams = [LogStream(client, job_id, "stdout"), LogStream(client, job_id, "stderr", err=True)] if logs else []
    outage = Outage(client)
    started = client.clock()
    last_seen: tuple | None = None
    while True:
        for log in streams:
            if log.enabled:
                outage.call(log.drain)
        job = outage.call(job_call, client, "GET", job_id)
        if isinstance(job, dict):
            state = str(job.get("state") or "").upper()
            seen = (state, job.get("reason"))
            if not quiet and seen != last_seen and state in ACTIVE_STATES:
                _note_state(job_id, job)
            last_seen = seen
            if state and state not in ACTIVE_STATES:
                break
        if timeout is not None and client.clock() - started >= timeout:
            state = last_seen[0] if last_seen else "unknown"
            note(f"job {job_id} is still {state} after {timeout:g}s (--timeout); it keeps running")
            return EXIT_WAIT_TIMEOUT
        client.sleep(interval)
    if streams:
        client.sleep(min(interval, 1.0))  # late flushes after the end
        for log in streams:
            if log.enabled:
                outage.call(log.drain)
    for log in streams:
        if log.mid_line:
            click.echo("", err=log.err)
    code = exit_status(job)
    if not quiet or code:
        exit_code = job.get("exit_code")
        detail = f", exit code {exit_code}" if exit_code is not None else ""
        note(f"job {job_id} {job.get('state')}{detail} → exit status {code}")
    return code


def _note_state(job_id, job: dict) -> None:
    state = job.get("state")
    if state == "PENDING":
        reason = job.get("reason") or "None"
        note(f"job {job_id} PENDING ({reason}); `aipool explain {job_id}` says why")
    elif state == "RUNNING":
        where = fmt.hostlist(job.get("nodelist"))
        note(f"job {job_id} RUNNING" + (f" on {where}" if where else ""))
    else:
        note(f"job {job_id} {state}")


@cli.command()
@click.argument("job_id")
@click.option(
    "--interval", type=click.FloatRange(min=0.1), default=5.0, show_default=True, help="Seconds between polls."
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=None,
    help="Give up after this many seconds (exit 3; the job keeps running).",
)
@click.option("--logs", is_flag=True, help="Stream the job's stdout/stderr while waiting.")
@click.option("-q", "--quiet", is_flag=True, help="No state-change notes on stderr.")
@click.pass_context
def wait(ctx: click.Context, job_id: str, interval: float, timeout: float | None, logs: bool, quiet: bool) -> None:
    """Wait until a job ends; exit with its status.

    \b
    0    COMPLETED
    N    FAILED with exit code N (1 when the job reported 0 or none)
    124  TIMEOUT          130  CANCELLED (also Ctrl-C)
    137  OUT_OF_MEMORY    75   NODE_FAIL (retry)
    3    --timeout ran out (the job keeps running)
    """
    client = get_client(ctx)
    try:
        code = _wait(client, job_id, interval=interval, timeout=timeout, logs=logs, quiet=quiet)
    except KeyboardInterrupt:
        note(f"interrupted; job {job_id} keeps running (aipool cancel {job_id} stops it)")
        ctx.exit(EXIT_INTERRUPTED)
    ctx.exit(code)


@cli.command()
@click.argument("job_id")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new output until the job ends.")
@click.option("--stderr", "use_stderr", is_flag=True, help="The job's stderr instead of its stdout.")
@click.option(
    "--interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True, help="Seconds between polls with -f."
)
@click.pass_context
def logs(ctx: click.Context, job_id: str, follow: bool, use_stderr: bool, interval: float) -> None:
    """Print a job's output (-f: follow it like tail -f)."""
    client = get_client(ctx)
    stream = "stderr" if use_stderr else "stdout"
    if follow:
        try:
            _follow(client, job_id, stream, interval)
        except KeyboardInterrupt:
            ctx.exit(EXIT_INTERRUPTED)
    else:
        LogStream(client, job_id, stream).drain()


# --- queue / show / explain / cancel ---------------------------------------------------------------------------


def _parse_states(ctx: click.Context, value: str | None) -> list[str] | None:
    """squeue -t: default PENDING,RUNNING; ``all`` for every state; short (PD) or long (pending) names."""
    if value is None:
        return ["PENDING", "RUNNING"]
    words = [w for w in value.split(",") if w.strip()]
    if any(w.strip().lower() == "all" for w in words):
        return None
    states = []
    for word in words:
        state = fmt.long_state(word)
        if state is None:
            known = ", ".join(f"{code} ({name})" for name, code in list(fmt.STATE_CODES.items())[:8])
            raise click.BadParameter(f"unknown state {word.strip()!r}; use all or {known}", ctx, param_hint="-t")
        if state not in states:
            states.append(state)
    return states


@cli.command()
@click.option("-t", "--states", metavar="STATES", help="PD,R (default), CD, F, CA, TO, NF, OOM … or all.")
@click.option("-A", "--account", "group", metavar="GROUP", help="Only this group's jobs.")
@click.option("-p", "--partition", metavar="PART", help="Only this partition's jobs.")
@click.option("-u", "--user", metavar="USER", help="Only this user's jobs (default: yours).")
@click.option("--all", "all_users", is_flag=True, help="Everyone's jobs that you may see, not only yours.")
@json_option
@click.pass_context
def queue(ctx, states, group, partition, user, all_users, as_json) -> None:
    """List jobs like squeue (pending and running ones unless -t)."""
    client = get_client(ctx)
    wanted = _parse_states(ctx, states)
    params = {"user": None if all_users else (user or "me"), "group": group, "partition": partition}
    jobs: dict = {}
    for state in wanted or [None]:
        for job in client.paginate("jobs/", {**params, "state": state}):
            if state is None or str(job.get("state") or "").upper() == state:
                jobs.setdefault(job.get("id"), job)
    ordered = sorted(jobs.values(), key=_id_key)
    if want_json(ctx, as_json):
        emit_json(ordered)
    else:
        click.echo(fmt.queue_table(ordered))


def _id_key(job: dict):
    value = job.get("id")
    return (0, int(value), "") if str(value).isdigit() else (1, 0, str(value))


@cli.command()
@click.argument("job_id")
@click.option("-o", "--output", "fields", metavar="all|FIELD,…", help="all: every field; or just these fields.")
@json_option
@click.pass_context
def show(ctx, job_id: str, fields: str | None, as_json: bool) -> None:
    """Show one job like scontrol show job."""
    job = job_call(get_client(ctx), "GET", job_id)
    if want_json(ctx, as_json):
        emit_json(job)
    else:
        click.echo(fmt.show_text(job, fields))


@cli.command()
@click.argument("job_id")
@json_option
@click.pass_context
def explain(ctx, job_id: str, as_json: bool) -> None:
    """Why a job is not running yet, when it may start, and what would make it start sooner."""
    data = job_call(get_client(ctx), "GET", job_id, "explain/")
    if want_json(ctx, as_json):
        emit_json(data)
    else:
        click.echo(fmt.explain_text(job_id, data))


@cli.command()
@click.argument("job_ids", nargs=-1, required=True)
@json_option
@click.pass_context
def cancel(ctx, job_ids: tuple[str, ...], as_json: bool) -> None:
    """Cancel jobs (scancel)."""
    client = get_client(ctx)
    failed = 0
    results = []
    for job_id in job_ids:
        try:
            job = job_call(client, "POST", job_id, "cancel/")
        except AipoolError as exc:
            if exc.exit_code != 1 or len(job_ids) == 1:
                raise
            exc.show()
            failed = 1
            continue
        results.append(job)
        if not want_json(ctx, as_json):
            state = job.get("state") if isinstance(job, dict) else None
            click.echo(f"job {job_id}: {state}" if state else f"job {job_id}: cancel requested")
    if want_json(ctx, as_json):
        emit_json(results[0] if len(job_ids) == 1 and results else results)
    ctx.exit(failed)


@cli.command()
@click.option("-j", "--jobs", "job_ids", metavar="ID[,ID…]", help="Only these jobs (any state they are in).")
@click.option("-A", "--account", "group", metavar="GROUP", help="Only this group's pending jobs.")
@click.option("-p", "--partition", metavar="PART", help="Only this partition's pending jobs.")
@click.option("-u", "--user", metavar="USER", help="Only this user's pending jobs (default: everyone's you may see).")
@json_option
@click.pass_context
def sprio(ctx, job_ids: str | None, group, partition, user, as_json: bool) -> None:
    """Pending jobs' priorities like sprio: the total and each factor's points, highest priority first."""
    client = get_client(ctx)
    if job_ids:
        ids = [i.strip() for i in job_ids.split(",") if i.strip()]
        entries = [job_call(client, "GET", job_id, "priority/") for job_id in ids]
    else:
        params = {"group": group, "partition": partition, "user": user}
        entries = list(client.paginate("jobs/priorities/", {k: v for k, v in params.items() if v}))
    if want_json(ctx, as_json):
        emit_json(entries)
    else:
        click.echo(fmt.sprio_table(entries))


# --- quota / me ------------------------------------------------------------------------------------------------


@cli.command()
@json_option
@click.pass_context
def quota(ctx, as_json: bool) -> None:
    """Your groups' limits and what is in use and pending (like quota -u $USER)."""
    data = get_client(ctx).get("me/quota/")
    if want_json(ctx, as_json):
        emit_json(data)
    else:
        click.echo(fmt.quota_text(data))


@cli.command()
@json_option
@click.pass_context
def me(ctx, as_json: bool) -> None:
    """Who the token belongs to: user, tenants and roles, groups."""
    data = get_client(ctx).get("me/")
    if want_json(ctx, as_json):
        emit_json(data)
    else:
        click.echo(fmt.me_text(data))


# Each domain's commands live in their own module: push/pull/cp (registry), apply/get/delete (inference), monitor,
# sreport (accounting), notify, simulate.
for _module in (registry, inference, monitoring, accounting, notifications, simulation):
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main() -> None:  # `python -m aipool_cli.main`
    cli(prog_name="aipool")


if __name__ == "__main__":
    sys.exit(main())
