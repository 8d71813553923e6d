"""Human output: squeue-like tables, scontrol-like key=value lines, explain and quota views. Pure functions."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

STATE_CODES = {
    "PENDING": "PD",
    "RUNNING": "R",
    "COMPLETED": "CD",
    "FAILED": "F",
    "CANCELLED": "CA",
    "TIMEOUT": "TO",
    "NODE_FAIL": "NF",
    "OUT_OF_MEMORY": "OOM",
    # Slurm's other states, should the server ever report them
    "COMPLETING": "CG",
    "CONFIGURING": "CF",
    "SUSPENDED": "S",
    "PREEMPTED": "PR",
    "BOOT_FAIL": "BF",
    "DEADLINE": "DL",
    "REQUEUED": "RQ",
}
STATE_NAMES = {code: name for name, code in STATE_CODES.items()}


def short_state(state: str | None) -> str:
    return STATE_CODES.get(str(state or "").upper(), str(state or "?"))


def long_state(word: str) -> str | None:
    """``PD`` / ``pd`` / ``pending`` → ``PENDING``; None for a word that is no state."""
    upper = word.strip().upper()
    if upper in STATE_CODES:
        return upper
    return STATE_NAMES.get(upper)


def name_of(value) -> str:
    """A related object as text: the API may give a slug, a username, an id or a nested object."""
    if value is None:
        return ""
    if isinstance(value, dict):
        for key in ("username", "slug", "name", "path", "id"):
            if value.get(key) not in (None, ""):
                return str(value[key])
        return json.dumps(value, sort_keys=True)
    return str(value)


# --- times -----------------------------------------------------------------------------------------------------


def parse_dt(value) -> datetime | None:
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def format_dt(value) -> str:
    dt = parse_dt(value)
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S") if dt else "Unknown"


def format_elapsed(seconds: float | None) -> str:
    """squeue's TIME column: ``0:00``, ``5:07``, ``1:02:03``, ``2-03:04:05``."""
    if seconds is None:
        return "0:00"
    total = max(0, int(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def format_limit(value) -> str:
    """A time limit in minutes (or already text) the way Slurm shows it: ``3-00:00:00``, ``04:00:00``."""
    if value is None or value == "":
        return "UNLIMITED"
    if isinstance(value, str) and not value.strip().isdigit():
        return value
    minutes = int(value)
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    clock = f"{hours:02d}:{mins:02d}:00"
    return f"{days}-{clock}" if days else clock


def humanize_until(value, now: datetime | None = None) -> str:
    dt = parse_dt(value)
    if dt is None:
        return ""
    now = now or datetime.now(UTC)
    seconds = (dt - now).total_seconds()
    if seconds <= 60:
        return "now"
    minutes = int(seconds // 60)
    days, minutes = divmod(minutes, 1440)
    hours, minutes = divmod(minutes, 60)
    parts = [f"{days}d"] if days else []
    if hours:
        parts.append(f"{hours}h")
    if minutes and not days:
        parts.append(f"{minutes}m")
    return "in " + " ".join(parts)


def job_elapsed(job: dict, now: datetime | None = None) -> float | None:
    start = parse_dt(job.get("started_at"))
    if start is None:
        return None
    end = parse_dt(job.get("ended_at")) or now or datetime.now(UTC)
    return (end - start).total_seconds()


# --- hostlists -------------------------------------------------------------------------------------------------

_HOST = re.compile(r"^(.*?)(\d+)$")


def hostlist(names) -> str:
    """``["node1", "node2", "node4"]`` → ``node[1-2,4]`` (Slurm's compressed hostlist)."""
    if not names:
        return ""
    if isinstance(names, str):
        return names
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    order: list[tuple[str, int] | str] = []
    for raw in names:
        name = name_of(raw)
        match = _HOST.match(name)
        if not match:
            if name not in plain:
                plain.append(name)
                order.append(name)
            continue
        prefix, digits = match.groups()
        key = (prefix, len(digits) if digits.startswith("0") else 0)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(digits))
    out = []
    for key in order:
        if isinstance(key, str):
            out.append(key)
            continue
        prefix, width = key
        numbers = sorted(set(groups[key]))
        if len(numbers) == 1:
            out.append(f"{prefix}{numbers[0]:0{width}d}")
            continue
        ranges = []
        start = prev = numbers[0]
        for n in numbers[1:] + [None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
            if n is not None:
                start = prev = n
        out.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(out)


# --- tables ----------------------------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Iterable[Sequence], right: Iterable[int] = ()) -> str:
    rows = [[("" if c is None else str(c)) for c in row] for row in rows]
    right = set(right)
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        out = [c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(cells)]
        return "  ".join(out).rstrip()

    return "\n".join([line(list(headers))] + [line(r) for r in rows])


QUEUE_HEADERS = ("JOBID", "PARTITION", "NAME", "USER", "ST", "TIME", "NODES", "NODELIST(REASON)")


def queue_row(job: dict, now: datetime | None = None) -> list[str]:
    state = str(job.get("state") or "").upper()
    nodes_used = hostlist(job.get("nodelist"))
    reason = job.get("reason")
    if state == "PENDING" or not nodes_used:
        where = f"({reason or 'None'})" if state == "PENDING" or (reason and reason != "None") else nodes_used
    else:
        where = nodes_used
    return [
        name_of(job.get("id")),
        name_of(job.get("partition")),
        name_of(job.get("name")),
        name_of(job.get("user")),
        short_state(state),
        format_elapsed(job_elapsed(job, now)),
        name_of(job.get("nodes")),
        where,
    ]


def queue_table(jobs: Iterable[dict], now: datetime | None = None) -> str:
    return table(QUEUE_HEADERS, [queue_row(j, now) for j in jobs], right={0, 5, 6})


SPRIO_HEADERS = ("JOBID", "PRIORITY", "AGE", "FAIRSHARE", "JOBSIZE", "PARTITION", "ACCOUNT")
SPRIO_FACTORS = ("age", "fairshare", "job_size", "partition")


def sprio_row(entry: dict) -> list[str]:
    factors = entry.get("factors") if isinstance(entry.get("factors"), dict) else {}
    values = []
    for name in SPRIO_FACTORS:
        factor = factors.get(name) if isinstance(factors.get(name), dict) else {}
        value = factor.get("value")
        values.append(f"{value:.0f}" if isinstance(value, int | float) else "")
    fairshare = entry.get("fairshare") if isinstance(entry.get("fairshare"), dict) else {}
    account = name_of(fairshare.get("association"))
    return [name_of(entry.get("job_id")), name_of(entry.get("priority")), *values, account]


def sprio_table(entries: Iterable[dict]) -> str:
    """``sprio``: per pending job its total priority and each factor's weighted points (like ``sprio -l``)."""
    return table(SPRIO_HEADERS, [sprio_row(e) for e in entries], right={0, 1, 2, 3, 4, 5})


def tres_text(value) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={_scalar(v)}" for k, v in value.items()) or "(none)"
    return _scalar(value)


def _scalar(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


# --- show ------------------------------------------------------------------------------------------------------


# scontrol's layout: (label, job key or a function of the job), one tuple per printed line
def _show_layout(job: dict, now: datetime | None) -> list[list[tuple[str, str]]]:
    apn = job.get("accelerators_per_node")
    nodes = job.get("nodes")
    tres = []
    if nodes is not None:
        tres.append(f"node={nodes}")
    if job.get("cpus_per_node") is not None and nodes is not None:
        tres.append(f"cpu={int(job['cpus_per_node']) * int(nodes)}")
    if apn is not None and nodes is not None:
        tres.append(f"gres/accelerator={int(apn) * int(nodes)}")
    exit_code = job.get("exit_code")

    def v(key: str) -> str:
        value = job.get(key)
        return "None" if value in (None, "", []) else name_of(value)

    return [
        [("JobId", v("id")), ("JobName", v("name"))],
        [("UserId", v("user")), ("Account", v("group")), ("Tenant", v("tenant"))],
        [
            ("JobState", v("state")),
            ("Reason", v("reason")),
            ("ExitCode", "None" if exit_code is None else str(exit_code)),
        ],
        [("RunTime", format_elapsed(job_elapsed(job, now))), ("TimeLimit", format_limit(job.get("time_limit")))],
        [
            ("SubmitTime", format_dt(job.get("submitted_at"))),
            ("StartTime", format_dt(job.get("started_at"))),
            ("EndTime", format_dt(job.get("ended_at"))),
        ],
        [
            ("Partition", v("partition")),
            ("NumNodes", v("nodes")),
            ("NodeList", hostlist(job.get("nodelist")) or "None"),
        ],
        [("AcceleratorsPerNode", v("accelerators_per_node")), ("TRES", ",".join(tres) or "None")],
        [("Switches", ",".join(name_of(s) for s in job.get("switches") or []) or "None")],
        [("Backend", v("backend")), ("BackendJobId", v("backend_job_id"))],
    ]


SHOWN_KEYS = {
    "id", "name", "user", "group", "tenant", "state", "reason", "exit_code", "time_limit", "submitted_at",
    "started_at", "ended_at", "partition", "nodes", "nodelist", "accelerators_per_node", "switches", "backend",
    "backend_job_id",
}  # fmt: skip


def show_text(job: dict, fields: str | None = None, now: datetime | None = None) -> str:
    """``scontrol show job``: key=value lines. ``fields='all'`` adds every other key of the object; a comma list
    prints just those keys, one per line."""
    if fields and fields.lower() != "all":
        keys = [k.strip() for k in fields.split(",") if k.strip()]
        return "\n".join(f"{k}={_kv_value(job.get(k))}" for k in keys)
    lines = []
    for i, pairs in enumerate(_show_layout(job, now)):
        indent = "" if i == 0 else "   "
        lines.append(indent + " ".join(f"{k}={val}" for k, val in pairs))
    if fields:
        for key in sorted(set(job) - SHOWN_KEYS):
            lines.append(f"   {key}={_kv_value(job[key])}")
    return "\n".join(lines)


def _kv_value(value) -> str:
    if value is None or value == "":
        return "None"
    if isinstance(value, str):
        return json.dumps(value) if ("\n" in value or " " in value) else value
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


# --- explain ---------------------------------------------------------------------------------------------------


def explain_text(job_id, data: dict, now: datetime | None = None) -> str:
    state = data.get("state") or "?"
    reason = data.get("reason")
    head = f"Job {job_id} is {state}"
    if reason and reason != "None":
        head += f" (reason: {reason})"
    lines = [head + "."]
    causes = data.get("causes") or []
    if causes:
        lines += ["", "Why it is not running:"]
        for cause in causes:
            if not isinstance(cause, dict):
                lines.append(f"  - {cause}")
                continue
            code = cause.get("code")
            message = cause.get("message") or ""
            lines.append(f"  - {code}: {message}" if code else f"  - {message}")
            numbers = [
                f"{label} {tres_text(cause[key])}"
                for key, label in (("limit", "limit"), ("in_use", "in use"), ("requested", "requested"))
                if cause.get(key) is not None
            ]
            if numbers:
                lines.append("      " + ", ".join(numbers))
    elif state == "PENDING":
        lines += ["", "Nothing blocks it but its turn: it waits for the scheduler."]
    else:
        lines += ["", "Nothing blocks it."]
    if state == "PENDING" or data.get("estimated_start"):
        lines += ["", f"Estimated start: {_when(data.get('estimated_start'), now)}"]
    suggestions = data.get("suggestions") or []
    if suggestions:
        lines += ["", "To start sooner:"]
        for n, tip in enumerate(suggestions, start=1):
            if not isinstance(tip, dict):
                lines.append(f"  {n}. {tip}")
                continue
            lines.append(f"  {n}. {tip.get('message') or 'change the request'}")
            extra = []
            if tip.get("change"):
                change = tip["change"]
                extra.append("change: " + (tres_text(change) if isinstance(change, dict) else str(change)))
            if "estimated_start" in tip:
                extra.append(f"estimated start: {_when(tip.get('estimated_start'), now)}")
            if extra:
                lines.append("     " + "; ".join(extra))
    return "\n".join(lines)


def _when(value, now: datetime | None) -> str:
    if not value:
        return "unknown"
    dt = parse_dt(value)
    if dt is None:
        return str(value)
    relative = humanize_until(value, now)
    return f"{format_dt(value)} UTC ({relative})" if relative else f"{format_dt(value)} UTC"


# --- quota -----------------------------------------------------------------------------------------------------


def _norm(key) -> str:
    return re.sub(r"[^a-z]", "", str(key).lower())


def _pick(d: dict, *names: str):
    """The first value whose normalised key is one of ``names`` (and the key it was found under)."""
    table_ = {_norm(k): k for k in d}
    for name in names:
        if name in table_:
            key = table_[name]
            return d[key], key
    return None, None


def _tres_label(name: str) -> str:
    return name.split("/", 1)[1] if name.startswith("gres/") else name


def _tres_order(name: str) -> tuple:
    order = {"gres/accelerator": 0, "accelerator": 0, "cpu": 1, "mem": 2, "node": 3}
    return (order.get(name, 9), name)


def _quota_entries(data) -> list[tuple[str, dict]]:
    items = data
    if isinstance(data, dict):
        for key in ("groups", "results", "quota", "quotas"):
            if isinstance(data.get(key), (list, dict)):
                items = data[key]
                break
    if isinstance(items, list):
        out = []
        for entry in items:
            if not isinstance(entry, dict):
                continue
            title = name_of(entry.get("group") or entry.get("path") or entry.get("name") or entry.get("slug"))
            tenant = name_of(entry.get("tenant"))
            out.append((f"{title} (tenant {tenant})" if tenant else title or "?", entry))
        return out
    if isinstance(items, dict) and items and all(isinstance(v, dict) for v in items.values()):
        return [(str(k), v) for k, v in items.items()]
    return []


def quota_text(data) -> str:
    entries = _quota_entries(data)
    if not entries:
        if isinstance(data, dict) and data:
            return "\n".join(f"{k}: {tres_text(v)}" for k, v in data.items())
        return "No groups: ask a tenant admin to add you to one."
    return "\n\n".join(_quota_block(title, entry) for title, entry in entries)


def _usage_parts(usage: dict) -> dict:
    """running/pending TRES, job counts and TRES-minutes out of one usage dict, whatever its exact keys."""
    used: set = set()

    def take(*names):
        value, key = _pick(usage, *names)
        if key is not None:
            used.add(key)
        return value

    running = take("running", "runningtres", "tresrunning", "inuse", "used", "tres", "allocated")
    pending = take("pending", "pendingtres", "trespending")
    jobs = take("jobs", "jobcount", "jobcounts")
    running_jobs = take("runningjobs", "jobsrunning")
    pending_jobs = take("pendingjobs", "jobspending")
    submitted_jobs = take("submittedjobs", "jobssubmitted", "submitjobs")
    minutes = take("tresminutes", "tresmins", "consumedtresminutes", "usedtresminutes", "consumed", "minutes")
    if isinstance(jobs, dict):
        running_jobs = running_jobs if running_jobs is not None else _pick(jobs, "running")[0]
        pending_jobs = pending_jobs if pending_jobs is not None else _pick(jobs, "pending")[0]
        submitted_jobs = submitted_jobs if submitted_jobs is not None else _pick(jobs, "submitted", "total")[0]
    elif jobs is not None and running_jobs is None:
        running_jobs = jobs
    if submitted_jobs is None and isinstance(running_jobs, int) and isinstance(pending_jobs, int):
        submitted_jobs = running_jobs + pending_jobs
    return {
        "running": running if isinstance(running, dict) else {},
        "pending": pending if isinstance(pending, dict) else {},
        "running_jobs": running_jobs,
        "pending_jobs": pending_jobs,
        "submitted_jobs": submitted_jobs,
        "minutes": minutes if isinstance(minutes, dict) else {},
        "rest": {k: v for k, v in usage.items() if k not in used},
    }


def _quota_block(title: str, entry: dict) -> str:
    limits = entry.get("limits")
    if not isinstance(limits, dict):
        limits = {k: v for k, v in entry.items() if _norm(k).startswith(("grp", "max"))}
    usage = entry.get("usage") if isinstance(entry.get("usage"), dict) else {}
    mine = None
    for key in ("user_usage", "my_usage", "mine", "you", "user"):
        if isinstance(entry.get(key), dict):
            mine = entry[key]
            break
    nested_group, _ = _pick(usage, "group")
    nested_user, _ = _pick(usage, "user", "mine", "you")
    if isinstance(nested_group, dict) or isinstance(nested_user, dict):
        mine = nested_user if isinstance(nested_user, dict) else mine
        usage = nested_group if isinstance(nested_group, dict) else {}
    group = _usage_parts(usage)
    me = _usage_parts(mine) if mine is not None else None

    used_limits: set = set()

    def limit(*names):
        value, key = _pick(limits, *names)
        if key is not None:
            used_limits.add(key)
        return value

    grp_tres = limit("grptres") or {}
    grp_jobs = limit("grpjobs")
    grp_submit = limit("grpsubmitjobs", "grpsubmit")
    grp_mins = limit("grptresmins", "grptresminutes") or {}

    headers = ["RESOURCE", "LIMIT", "IN USE", "PENDING"] + (["YOURS"] if me else [])
    rows = []
    names = set(grp_tres if isinstance(grp_tres, dict) else {}) | set(group["running"]) | set(group["pending"])
    if me:
        names |= set(me["running"])
    for name in sorted(names, key=_tres_order):
        row = [
            _tres_label(name),
            _limit_cell(grp_tres.get(name) if isinstance(grp_tres, dict) else None),
            _scalar(group["running"].get(name, 0)),
            _scalar(group["pending"].get(name, 0)),
        ]
        if me:
            row.append(_scalar(me["running"].get(name, 0)))
        rows.append(row)
    if grp_jobs is not None or group["running_jobs"] is not None:
        row = ["jobs (running)", _limit_cell(grp_jobs), _scalar(group["running_jobs"]), _scalar(group["pending_jobs"])]
        rows.append(row + ([_scalar(me["running_jobs"])] if me else []))
    if grp_submit is not None:
        row = ["jobs (submitted)", _limit_cell(grp_submit), _scalar(group["submitted_jobs"]), ""]
        rows.append(row + ([_scalar(me["submitted_jobs"])] if me else []))
    minute_names = set(grp_mins if isinstance(grp_mins, dict) else {}) | set(group["minutes"])
    for name in sorted(minute_names, key=_tres_order):
        row = [
            f"{_tres_label(name)}-minutes",
            _limit_cell(grp_mins.get(name) if isinstance(grp_mins, dict) else None),
            _scalar(group["minutes"].get(name, 0)),
            "",
        ]
        rows.append(row + ([_scalar(me["minutes"].get(name, 0))] if me else []))

    lines = [title]
    if rows:
        right = set(range(1, len(headers)))
        lines += ["  " + line for line in table(headers, rows, right=right).splitlines()]
    for key, value in limits.items():
        if key in used_limits or value in (None, {}, ""):
            continue
        shown = format_limit(value) if _norm(key) == "maxwall" else tres_text(value)
        lines.append(f"  {key}: {shown}")
    for key, value in group["rest"].items():
        lines.append(f"  {key}: {tres_text(value)}")
    return "\n".join(lines)


def _limit_cell(value) -> str:
    if value is None or value == -1:
        return "-"
    return _scalar(value)


# --- me --------------------------------------------------------------------------------------------------------


def me_text(data: dict) -> str:
    if not isinstance(data, dict):
        return _scalar(data)
    lines = []
    for key, value in data.items():
        if isinstance(value, list):
            shown = ", ".join(_member_text(v) for v in value) or "(none)"
        elif isinstance(value, dict):
            shown = tres_text(value)
        else:
            shown = _scalar(value)
        lines.append(f"{key}: {shown}")
    return "\n".join(lines)


def _member_text(value) -> str:
    if not isinstance(value, dict):
        return str(value)
    text = name_of(value)
    extras = [name_of(value[k]) for k in ("role", "tenant") if value.get(k) not in (None, "")]
    return f"{text} ({', '.join(extras)})" if extras else text
