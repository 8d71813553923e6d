"""``manage.py slurm_sync [--dry-run] [--check]``: aipool's tenants, groups, members and limits vs Slurm's associations.

Prints every difference (missing in Slurm, only in Slurm, differs) with the sacctmgr command that repairs it, and runs
those commands unless --dry-run. --check (implies --dry-run) exits with status 1 when there is drift: for monitoring.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from cluster.backends.base import BackendUnavailable
from cluster.backends.slurm_cli import SlurmError


class Command(BaseCommand):
    help = "Show and repair the drift between aipool's limits and Slurm's associations (sacctmgr)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="show the drift and the repairs; change nothing")
        parser.add_argument("--check", action="store_true", help="like --dry-run, and exit 1 when there is drift")

    def handle(self, *args, **options) -> None:
        from jobs.slurm_sync import NameClash, sync

        dry_run = options["dry_run"] or options["check"]
        try:
            report = sync(dry_run=dry_run)
        except (BackendUnavailable, SlurmError, NameClash) as exc:
            raise CommandError(str(exc)) from exc
        if not report.changes:
            self.stdout.write("No drift: Slurm's associations match aipool.")
            return
        verb = "would run" if dry_run else "ran"
        self.stdout.write(f"{len(report.changes)} differences between aipool and Slurm:")
        for change in report.changes:
            self.stdout.write(f"  {change.line()}")
            outcome = f"FAILED: {change.error}" if change.error else verb
            self.stdout.write(f"      {outcome}: {change.command()}")
        if report.failed:
            raise CommandError(f"{len(report.failed)} of {len(report.changes)} repairs failed")
        if options["check"]:
            raise SystemExit(1)
