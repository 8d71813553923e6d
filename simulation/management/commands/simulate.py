"""``manage.py simulate``: replay a workload through the live scheduler core under several policies, side by side.

manage.py simulate --trace openb --policies all
manage.py simulate --trace openb --load 300 --pool-fraction 0.125 --json
manage.py simulate --trace history --start 2026-11-01 --end 2026-12-01 --whatif proposal.txt
manage.py simulate --trace jobs.csv --pool live --quotas quotas.txt --plots /tmp/plots
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from scheduler.compare import LIVE_POLICY, compare, format_markdown, format_table, tenant_table, to_json, whatif
from scheduler.plots import write_plots
from scheduler.policies import policy_names
from scheduler.workload import WorkloadError, read_text
from simulation.inputs import proposed_limits, scenario


class Command(BaseCommand):
    help = "What-if replay: policies side by side on a trace or the pool's history (see docs/simulation.md)."

    def add_arguments(self, parser):
        parser.add_argument("--trace", default="openb", help="openb, history, a canonical CSV file, or sacct:FILE.json")
        parser.add_argument("--policies", default="all", help="all, or some of fifo,easy,multifactor,learned")
        parser.add_argument("--load", type=float, default=1.0, help="arrivals this many times as fast")
        parser.add_argument("--pool", default="live", choices=["live", "openb"], help="pool for CSV and sacct input")
        parser.add_argument("--pool-fraction", type=float, default=1.0, help="keep every (1/F)th node")
        parser.add_argument("--tenants", type=int, default=8, help="tenants to hash owners into where a trace has none")
        parser.add_argument("--start", help="history window start (ISO 8601)")
        parser.add_argument("--end", help="history window end (ISO 8601)")
        parser.add_argument("--quotas", help="limits file (tenant|group NAME GrpTRES=... [GrpJobs=N] per line)")
        parser.add_argument("--whatif", help="proposed limits file: per-tenant waits now and with the change")
        parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
        parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
        parser.add_argument("--plots", help="write PNG plots into this folder")

    def handle(self, *args, **opts):
        try:
            params = self._params(opts)
            if opts["whatif"]:
                self._whatif(params, read_text(opts["whatif"]), opts)
                return
            reports = compare(scenario(params), policy_names(opts["policies"]))
        except (WorkloadError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if opts["json"]:
            self.stdout.write(to_json(reports))
        else:
            self.stdout.write(format_markdown(reports) if opts["markdown"] else format_table(reports))
            self.stdout.write("")
            self.stdout.write(tenant_table(reports))
            for note in reports[0].notes:
                self.stdout.write(f"note: {note}")
        if opts["plots"]:
            for path in write_plots([r.as_dict() for r in reports], Path(opts["plots"])):
                self.stderr.write(f"wrote {path}")

    def _params(self, opts) -> dict:
        trace = opts["trace"]
        params = {
            "load": opts["load"],
            "pool": opts["pool"],
            "pool_fraction": opts["pool_fraction"],
            "tenants": opts["tenants"],
            "quotas": read_text(opts["quotas"]) if opts["quotas"] else "",
        }
        if trace in ("openb", "history"):
            params["source"] = trace
        elif trace.startswith("sacct:"):
            params |= {"source": "sacct", "data": read_text(trace.removeprefix("sacct:"))}
        else:
            params |= {"source": "csv", "data": read_text(trace)}
        if trace == "history":
            if not (opts["start"] and opts["end"]):
                raise WorkloadError("--trace history needs --start and --end")
            params |= {"start": opts["start"], "end": opts["end"]}
        return params

    def _whatif(self, params: dict, proposal: str, opts) -> None:
        setting = scenario({**params, "quotas": ""})
        outcome = whatif(setting, proposed_limits(proposal, setting), LIVE_POLICY)
        if opts["json"]:
            self.stdout.write(json.dumps(outcome.as_dict(), indent=2))
            return
        for name, change in outcome.changes.items():
            self.stdout.write(f"proposed: {name} {change}")
        self.stdout.write(f"{'tenant':20} {'wait now':>12} {'proposed':>12} {'change':>12}")
        for row in outcome.tenant_rows():
            self.stdout.write(
                f"{row['tenant']:20} {row['wait_now']:12.0f} {row['wait_proposed']:12.0f} {row['change']:+12.0f}"
            )
        self.stdout.write(f"quota violations: {outcome.before.quota_violations} now, {outcome.after.quota_violations}")
