"""``manage.py autoscale_replay [TRACE.csv]``: the autoscaler on a virtual clock over a request trace.

Prints replica-hours against a fixed fleet at the peak (and against the smallest fixed fleet as good on the SLO) and
the share of requests served within the SLO. See docs/autoscaling.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from inference.autoscaler import METRICS, Policy
from inference.replay import ReplaySettings, format_report, load_arrivals, replay


def default_trace() -> Path:
    return Path(settings.BASE_DIR).parent / "shared" / "traces" / "AzureLLMInferenceTrace_code.csv"


class Command(BaseCommand):
    help = "Replay the autoscaler over a CSV of request times; print the replica-hours saved and the SLO share."

    def add_arguments(self, parser):
        defaults = ReplaySettings()
        parser.add_argument("trace", nargs="?", help="CSV of request times (default: the Azure LLM code trace)")
        parser.add_argument("--column", help="the column of times (default: TIMESTAMP/time/ts…, else the first)")
        parser.add_argument("--min", type=int, default=defaults.min_replicas, dest="min_replicas")
        parser.add_argument("--max", type=int, default=defaults.max_replicas, dest="max_replicas")
        parser.add_argument("--metric", choices=METRICS, default=defaults.metric)
        parser.add_argument("--target", type=float, default=defaults.target, help="metric per replica")
        parser.add_argument("--service-time", type=float, default=defaults.service_time_s, help="seconds per request")
        parser.add_argument("--slots", type=int, default=defaults.slots, help="requests a replica serves at once")
        parser.add_argument("--cold-start", type=float, default=defaults.cold_start_s, help="seconds to ready")
        parser.add_argument("--slo", type=float, default=defaults.slo_s, help="seconds from arrival to answer")
        parser.add_argument("--tick", type=float, default=defaults.tick_s, help="seconds between decisions")
        parser.add_argument("--quota", type=int, default=None, help="the most replicas the quota admits")
        parser.add_argument("--fixed", type=int, default=None, help="baseline fleet (default: the autoscaled peak)")
        parser.add_argument("--stable-window", type=float, default=defaults.policy.stable_window_s)
        parser.add_argument("--panic-window", type=float, default=defaults.policy.panic_window_s)
        parser.add_argument("--scale-down-rate", type=float, default=defaults.policy.max_scale_down_rate)
        parser.add_argument(
            "--scale-down-delay", type=float, default=defaults.policy.scale_down_delay_s, help="seconds (Knative's)"
        )
        parser.add_argument("--json", action="store_true", help="the report as JSON")

    def handle(self, *args, **options):
        path = Path(options["trace"]) if options["trace"] else default_trace()
        if not path.is_file():
            raise CommandError(f"no trace at {path}; give the path of a CSV of request times")
        try:
            replay_settings = self._settings(options)
            report = replay(load_arrivals(path, options["column"]), replay_settings)
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            self.stdout.write(json.dumps({"trace": str(path), **report.as_dict()}, indent=2))
        else:
            self.stdout.write(f"{path.name}\n{format_report(report)}")

    @staticmethod
    def _settings(options) -> ReplaySettings:
        policy = Policy(
            stable_window_s=options["stable_window"],
            panic_window_s=options["panic_window"],
            max_scale_down_rate=options["scale_down_rate"],
            scale_down_delay_s=options["scale_down_delay"],
        )
        return ReplaySettings(
            min_replicas=options["min_replicas"],
            max_replicas=options["max_replicas"],
            metric=options["metric"],
            target=options["target"],
            service_time_s=options["service_time"],
            slots=options["slots"],
            cold_start_s=options["cold_start"],
            slo_s=options["slo"],
            tick_s=options["tick"],
            quota_replicas=options["quota"],
            fixed_replicas=options["fixed"],
            policy=policy,
        )
