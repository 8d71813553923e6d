"""``aipool sreport``: allocated vs used accelerator-hours over a window, and GrpTRESMins budgets (HTTP only).

aipool sreport user -S 2026-03-01 -E 2026-03-08            # like sreport cluster AccountUtilizationByUser
aipool sreport group -S -30d --csv > usage.csv
aipool sreport budget                                        # GrpTRESMins burn-down and forecast
"""

from __future__ import annotations

import csv
import io

import click

from aipool_cli import formatting as fmt

REPORTS = ("cluster", "tenant", "group", "user", "partition", "budget")
USAGE_HEADERS = ("ALLOC_HOURS", "ALLOC_MIN", "USED_HOURS", "EFFICIENCY", "JOBS")
CSV_COLUMNS = ("name", "allocated_minutes", "allocated_hours", "measured_hours", "used_hours", "efficiency", "jobs")
BUDGET_HEADERS = ("GROUP", "TENANT", "BUDGET_MIN", "SPENT_MIN", "LEFT_MIN", "SPENT%", "BURN/DAY", "RUNS_OUT")


def _percent(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _dash(value) -> str:
    return "not measured" if value is None else f"{value:.2f}"


def usage_text(report: dict) -> str:
    rows = [
        [row["name"], f"{row['allocated_hours']:.2f}", row["allocated_minutes"], _dash(row["used_hours"]),
         _percent(row["efficiency"]), row["jobs"]]
        for row in [*report["rows"], report["total"]]
    ]  # fmt: skip
    head = (
        f"Accelerator usage by {report['by']}, {report['start']} - {report['end']} (UTC)\n"
        f"pool capacity {report['pool_capacity_hours']:.2f} h, "
        f"allocated {report['pool_allocated_percent'] if report['pool_allocated_percent'] is not None else '-'}%"
    )
    body = fmt.table((report["by"].upper(), *USAGE_HEADERS), rows, right=range(1, 6))
    return f"{head}\n{body}\nused: {report['used_method']}"


def usage_csv(report: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([report["by"], *CSV_COLUMNS[1:]])
    for row in [*report["rows"], report["total"]]:
        writer.writerow(["" if row[c] is None else row[c] for c in CSV_COLUMNS])
    return out.getvalue().rstrip("\n")


def budget_text(data: dict) -> str:
    if not data["budgets"]:
        return "No group you may see has an accelerator GrpTRESMins budget."
    rows = [
        [b["group"], b["tenant"], b["budget_minutes"], b["spent_minutes"], b["remaining_minutes"],
         f"{b['spent_percent']:.1f}", f"{b['burn_per_day']:.1f}", b["runs_out_at"] or "never at this rate"]
        for b in data["budgets"]
    ]  # fmt: skip
    return f"{fmt.table(BUDGET_HEADERS, rows, right=range(2, 7))}\nforecast: {data['method']}"


def budget_csv(data: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    columns = ("group", "tenant", "budget_minutes", "spent_minutes", "remaining_minutes", "spent_percent",
               "burn_per_day", "runs_out_at")  # fmt: skip
    writer.writerow(columns)
    for budget in data["budgets"]:
        writer.writerow(["" if budget[c] is None else budget[c] for c in columns])
    return out.getvalue().rstrip("\n")


@click.command("sreport")
@click.argument("report", type=click.Choice(REPORTS), default="group")
@click.option("-S", "--start", metavar="TIME", help="Window start: 2026-03-01, 2026-03-01T08:00, -7d (UTC) [-7d]")
@click.option("-E", "--end", metavar="TIME", help="Window end, as --start [now]")
@click.option("-A", "--account", "group", metavar="GROUP", help="Only this group and its subgroups")
@click.option("--tenant", metavar="TENANT", help="Only this tenant")
@click.option("-u", "--user", metavar="USER", help="Only this user's jobs")
@click.option("-p", "--partition", metavar="PARTITION", help="Only this partition")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV (for spreadsheets).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def sreport(ctx, report, start, end, group, tenant, user, partition, as_csv, as_json) -> None:
    """Allocated and used accelerator-hours by cluster, tenant, group, user or partition; or GrpTRESMins budgets.

    Used hours come from monitoring samples; runs without samples are shown as 'not measured'.
    """
    from aipool_cli.main import emit_json, get_client, want_json

    client = get_client(ctx)
    if report == "budget":
        data = client.get("accounting/budgets/")
        text = budget_csv(data) if as_csv else budget_text(data)
    else:
        params = {"by": report, "start": start, "end": end, "group": group, "tenant": tenant, "user": user,
                  "partition": partition}  # fmt: skip
        data = client.get("accounting/usage/", {k: v for k, v in params.items() if v})
        text = usage_csv(data) if as_csv else usage_text(data)
    if want_json(ctx, as_json) and not as_csv:
        emit_json(data)
    else:
        click.echo(text)


# `aipool report` is the name api-contract.md announced; `sreport` is what Slurm users type.
report_command = click.Command(
    "report", callback=sreport.callback, params=sreport.params, help=sreport.help, short_help="Same as sreport."
)

COMMANDS: tuple = (sreport, report_command)
