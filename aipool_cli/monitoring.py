"""``aipool monitor``: the seed's ``ai-monitor --jobid $SLURM_JOBID --interval 10`` over the API (HTTP only).

A live table of the job's health (compute utilisation, communication share, swapping: each with status and advice)
and per-task numbers, redrawn every --interval seconds until the job ends; ``--json`` prints one JSON object per line.
"""

from __future__ import annotations

import json
import sys
import time

import click

from aipool_cli import formatting as fmt
from aipool_cli.client import AipoolError

CLEAR = "\x1b[H\x1b[2J"
MAX_OUTAGES = 10  # consecutive failed refreshes before giving up


def _percent(value) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def _size(value) -> str:
    if value is None:
        return "—"
    for unit in ("B", "K", "M", "G"):
        if abs(value) < 1024:
            return f"{value:.0f}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}T"


def _number(value, digits: int, suffix: str = "") -> str:
    return "—" if value is None else f"{value:.{digits}f}{suffix}"


def health_text(job_id, health: dict) -> str:
    """One frame of the live view (pure: tests render it from a dict)."""
    measured = fmt.format_dt(health.get("measured_at")) if health.get("measured_at") else "no samples yet"
    source = health.get("utilisation_source") or "cpu"
    head = [
        f"job {job_id}  {health.get('state', '?')}  health: {str(health.get('status', 'unknown')).upper()}",
        f"measured {measured}  ·  utilisation: {'CPU stand-in' if source == 'cpu' else f'accelerators ({source})'}",
    ]
    rules = health.get("rules") or []
    rule_rows = [[r.get("title"), r.get("display"), r.get("target"), str(r.get("status", "")).upper()] for r in rules]
    lines = [*head, "", fmt.table(("RULE", "VALUE", "TARGET", "STATUS"), rule_rows)]
    lines += [f"  {r.get('rule')}: {r.get('advice')}" for r in rules if r.get("status") != "ok"]
    idle = health.get("idle")
    if idle and idle.get("flagged"):
        verb = "cancelled" if idle.get("action") == "cancelled" else "flagged"
        since = fmt.format_dt(idle.get("idle_since"))
        level = f"utilisation {_percent(idle.get('utilisation'))} below {_percent(idle.get('threshold'))}"
        lines += ["", f"idle accelerators: {verb} ({level} since {since})"]
    tasks = health.get("tasks") or []
    if tasks:
        rows = [
            [
                t.get("rank"), t.get("node") or "—", _percent(t.get("utilisation")), _number(t.get("cpu_cores"), 2),
                _size(t.get("rss_bytes")), _size(t.get("swap_bytes")), _number(t.get("step_time_s"), 3, "s"),
                _percent(t.get("comm_share")), _number(t.get("throughput"), 0),
            ]
            for t in tasks
        ]  # fmt: skip
        headers = ("RANK", "NODE", "UTIL", "CPUS", "RSS", "SWAP", "STEP", "COMM", "SAMPLES/S")
        lines += ["", fmt.table(headers, rows, right=range(2, 9))]
    if health.get("note"):
        lines += ["", health["note"]]
    return "\n".join(lines)


@click.command("monitor")
@click.argument("job_arg", metavar="[JOB_ID]", required=False)
@click.option("-j", "--jobid", "job_id", metavar="ID", help="The job to watch (like ai-monitor --jobid).")
@click.option(
    "-i",
    "--interval",
    type=click.FloatRange(min=1.0),
    default=10.0,
    show_default=True,
    help="Seconds between refreshes.",
)
@click.option("-n", "--count", type=click.IntRange(min=1), help="Stop after N refreshes (default: until the job ends).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per refresh, one per line.")
@click.pass_context
def monitor_command(ctx, job_arg, job_id, interval, count, as_json) -> None:  # fmt: skip
    """Watch a job's health live: utilisation, communication share, swapping, per-task numbers.

    \b
      aipool monitor --jobid 42 --interval 10
      aipool monitor 42 --json --count 1
    """
    from aipool_cli.main import get_client, job_call, want_json

    job_id = job_id or job_arg
    if not job_id:
        raise click.UsageError("which job? aipool monitor --jobid ID", ctx)
    if job_arg and job_id != job_arg:
        raise click.UsageError(f"two job ids given: {job_arg} and --jobid {job_id}", ctx)
    client = get_client(ctx)
    json_lines = want_json(ctx, as_json)
    live = not json_lines and sys.stdout.isatty()
    frames = outages = 0
    try:
        while True:
            try:
                health = job_call(client, "GET", job_id, "health/")
                outages = 0
            except AipoolError as exc:
                outages += 1
                if not exc.transient or frames == 0 or outages >= MAX_OUTAGES:
                    raise
                click.echo(f"aipool: {exc.message} (retrying)", err=True)
                time.sleep(interval)
                continue
            frames += 1
            _emit(job_id, health, json_lines=json_lines, live=live)
            if not health.get("active", False) or (count is not None and frames >= count):
                return
            time.sleep(interval)
    except KeyboardInterrupt:
        return  # Ctrl-C is how one stops watching: not an error


def _emit(job_id, health: dict, *, json_lines: bool, live: bool) -> None:
    if json_lines:
        click.echo(json.dumps(health, separators=(",", ":")))
        return
    text = health_text(job_id, health)
    if live:
        click.echo(CLEAR + text)
    else:
        click.echo(text + "\n")


COMMANDS: tuple = (monitor_command,)
