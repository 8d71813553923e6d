"""Policies side by side over one workload: run them, then a table (relative to the Slurm default) and JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler.metrics import Report
from scheduler.model import AssocLimits, JobRequest, NodeView
from scheduler.policies import BASELINE
from scheduler.policy import Policy
from scheduler.priority import Association
from scheduler.replay import simulate
from scheduler.workload import Workload, WorkloadError
from vocab.tres import format_tres

LIVE_POLICY = "multifactor"


@dataclass
class Scenario:
    """One replay's inputs: a pool, jobs with their real run times, limits, and (optionally) the fair-share tree."""

    nodes: list[NodeView]
    requests: list[JobRequest]
    runtimes: dict[int, float]
    limits: dict[str, AssocLimits] = field(default_factory=dict)
    tree: list[Association] | None = None
    partition_tier: dict[str, int] | None = None
    labels: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    policy: Policy | None = None

    @classmethod
    def from_workload(cls, workload: Workload, *, policy: Policy | None = None) -> Scenario:
        requests, runtimes = workload.requests()
        return cls(workload.nodes, requests, runtimes, dict(workload.limits), notes=list(workload.notes), policy=policy)


def compare(scenario: Scenario, names: Sequence[str]) -> list[Report]:
    if not scenario.requests:
        raise WorkloadError("the workload has no jobs to replay")
    reports = []
    for name in names:
        report = simulate(
            scenario.nodes,
            scenario.requests,
            scenario.runtimes,
            name,
            limits=scenario.limits,
            policy=scenario.policy,
            tree=scenario.tree,
            partition_tier=scenario.partition_tier,
            labels=scenario.labels,
        )
        report.notes = list(scenario.notes)
        reports.append(report)
    return reports


@dataclass
class WhatIf:
    before: Report
    after: Report
    changes: dict[str, str]  # association → the proposed limit, in words

    def tenant_rows(self) -> list[dict]:
        """Per tenant: mean wait now and under the proposal, and the change."""
        rows = []
        for tenant in sorted(set(self.before.tenant_wait) | set(self.after.tenant_wait)):
            was, will = self.before.tenant_wait.get(tenant, 0.0), self.after.tenant_wait.get(tenant, 0.0)
            rows.append({"tenant": tenant, "wait_now": was, "wait_proposed": will, "change": will - was})
        return rows

    def as_dict(self) -> dict:
        return {
            "before": self.before.as_dict(),
            "after": self.after.as_dict(),
            "changes": self.changes,
            "tenants": self.tenant_rows(),
        }


def whatif(scenario: Scenario, proposed: dict[str, AssocLimits], policy_name: str = LIVE_POLICY) -> WhatIf:
    """The same history under today's limits and with `proposed` replacing the named associations' limits."""
    (before,) = compare(scenario, [policy_name])
    changed = Scenario(**{**scenario.__dict__, "limits": {**scenario.limits, **proposed}})
    (after,) = compare(changed, [policy_name])
    words = {scenario.labels.get(key, key): describe(limit) for key, limit in proposed.items()}
    return WhatIf(before, after, words)


def describe(limit: AssocLimits) -> str:
    parts = [f"GrpTRES={format_tres(limit.grp_tres) or 'none'}"]
    if limit.grp_jobs is not None:
        parts.append(f"GrpJobs={limit.grp_jobs}")
    return " ".join(parts)


def baseline_of(reports: Sequence[Report]) -> Report | None:
    return next((r for r in reports if r.policy == BASELINE), None)


def ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base else "-"


def _duration(seconds: float) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:.1f}d"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    if seconds >= 60:
        return f"{seconds / 60:.1f}m"
    return f"{seconds:.0f}s"


COLUMNS = (
    "policy",
    "jobs",
    "never ran",
    "avg JCT",
    "med JCT",
    "p99 JCT",
    "avg wait",
    "med wait",
    "p99 wait",
    "JCT vs easy",
    "wait vs easy",
    "util",
    "busy|wait",
    "makespan",
    "frag",
    "switches",
    "Jain",
    "quota viol.",
    "cpu s",
)


def rows(reports: Sequence[Report]) -> list[list[str]]:
    base = baseline_of(reports)
    table = []
    for r in reports:
        table.append(
            [
                r.policy,
                str(r.jobs),
                str(r.never_started),
                _duration(r.jct.mean),
                _duration(r.jct.median),
                _duration(r.jct.p99),
                _duration(r.wait.mean),
                _duration(r.wait.median),
                _duration(r.wait.p99),
                ratio(r.jct.mean, base.jct.mean) if base else "-",
                ratio(r.wait.mean, base.wait.mean) if base else "-",
                f"{r.utilisation:.1%}",
                f"{r.busy_while_waiting:.1%}",
                _duration(r.makespan),
                f"{r.fragmentation:.1%}",
                f"{r.switch_span:.2f}" if r.multi_node_jobs else "-",
                f"{r.jain_fairness:.3f}",
                str(r.quota_violations),
                f"{r.seconds:.1f}",
            ]
        )
    return table


def format_table(reports: Sequence[Report]) -> str:
    table = [list(COLUMNS), *rows(reports)]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in table]
    return "\n".join(lines)


def format_markdown(reports: Sequence[Report]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in rows(reports)]
    return "\n".join(lines)


def tenant_table(reports: Sequence[Report]) -> str:
    tenants = sorted({t for r in reports for t in r.tenant_wait})
    header = ["tenant (avg wait)", *(r.policy for r in reports)]
    body = [[t, *(_duration(r.tenant_wait.get(t, 0.0)) for r in reports)] for t in tenants]
    table = [header, *body]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip() for row in table)


def to_json(reports: Sequence[Report]) -> str:
    return json.dumps({"policies": [r.as_dict() for r in reports], "baseline": BASELINE}, indent=2)
