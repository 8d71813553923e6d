"""`aipool monitor` against a fake API (httpx.MockTransport): frames, JSON lines, refresh until the job ends, errors."""

import json

import httpx
from click.testing import CliRunner

from aipool_cli.main import cli
from aipool_cli.monitoring import health_text

HEALTH = {
    "job_id": 7, "state": "RUNNING", "status": "bad", "measured_at": "2026-01-05T10:00:10Z", "resolution": "raw",
    "utilisation_source": "cpu", "note": "CPU stands in.", "active": True, "sampling_seconds": 10.0, "idle": None,
    "rules": [
        {"rule": "utilisation", "title": "Compute utilisation", "value": 0.42, "display": "42%",
         "target": "above 85%", "status": "bad", "advice": "compute utilisation is 42%"},
        {"rule": "swapping", "title": "Memory swapping", "value": 0.0, "display": "0 B", "target": "0",
         "status": "ok", "advice": "no memory in swap"},
    ],
    "tasks": [{"rank": 0, "node": "node1", "utilisation": 0.42, "cpu_cores": 0.42, "rss_bytes": 3 << 30,
               "swap_bytes": 0, "step_time_s": 0.5, "comm_share": 0.31, "throughput": 1200.0}],
}  # fmt: skip


def invoke(handler, *args):
    calls = []

    def record(request):
        calls.append(request)
        return handler(request, len(calls))

    obj = {"transport": httpx.MockTransport(record), "sleep": lambda s: None}
    result = CliRunner().invoke(cli, ["--url", "http://pool.test", "--token", "t", *args], obj=obj)
    return result, calls


def test_frame_shows_rules_advice_and_tasks():
    text = health_text(7, HEALTH)
    assert "job 7  RUNNING  health: BAD" in text and "CPU stand-in" in text
    assert "Compute utilisation  42%" in text and "utilisation: compute utilisation is 42%" in text
    assert "no memory in swap" not in text  # advice only for rules that are not ok
    assert "3.0G" in text and "31%" in text and "1200" in text


def test_refreshes_until_the_job_ends(monkeypatch):
    monkeypatch.setattr("aipool_cli.monitoring.time.sleep", lambda s: None)

    def handler(request, n):
        body = {**HEALTH, "state": "RUNNING" if n < 3 else "COMPLETED", "active": n < 3}
        return httpx.Response(200, json=body)

    result, calls = invoke(handler, "monitor", "--jobid", "7", "--interval", "1")
    assert result.exit_code == 0, result.output
    assert len(calls) == 3 and calls[0].url.path == "/api/v1/jobs/7/health/"
    assert result.output.count("health: BAD") == 3 and "COMPLETED" in result.output


def test_json_lines(monkeypatch):
    monkeypatch.setattr("aipool_cli.monitoring.time.sleep", lambda s: None)
    result, _ = invoke(lambda r, n: httpx.Response(200, json=HEALTH), "monitor", "7", "--json", "--count", "2")
    lines = result.output.splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["rules"][0]["display"] == "42%"


def test_unknown_job_is_one_line_and_exit_1():
    body = {"code": "not_found", "detail": "Not found."}
    result, _ = invoke(lambda r, n: httpx.Response(404, json=body), "monitor", "--jobid", "99")
    assert result.exit_code == 1 and result.output.startswith("aipool: job 99")


def test_missing_token_is_exit_2():
    body = {"code": "not_authenticated", "detail": "no token"}
    result, _ = invoke(lambda r, n: httpx.Response(401, json=body), "monitor", "--jobid", "7")
    assert result.exit_code == 2 and "not authenticated" in result.output


def test_no_job_id_is_a_usage_error():
    result, _ = invoke(lambda r, n: httpx.Response(200, json=HEALTH), "monitor")
    assert result.exit_code == 2 and "aipool monitor --jobid ID" in result.output
