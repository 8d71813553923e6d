"""`aipool simulate`: offline, through the pure core; tables, JSON, plots, one-line errors."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from aipool_cli.main import cli
from scheduler.workload import CANONICAL_HEADER
from tests.simulation.helpers import DATA

CSV = ",".join(CANONICAL_HEADER) + "\n0,3600,7200,1,8,a,g1,u1\n10,60,600,1,8,b,g2,u2\n20,60,600,1,1,b,g2,u2\n"


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text(CSV)
    return path


def test_table_compares_policies_against_the_slurm_default(trace):
    result = CliRunner().invoke(cli, ["simulate", str(trace), "--nodes", "1", "--policies", "fifo,easy"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:5] == ["policy", "jobs", "never", "ran", "avg"]
    assert lines[1].startswith("fifo") and lines[2].startswith("easy")
    assert "1.00x" in lines[2]


def test_json_and_plots(trace, tmp_path):
    result = CliRunner().invoke(cli, ["simulate", str(trace), "--nodes", "2", "--json", "--plots", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[: result.output.rindex("}") + 1])
    assert [p["policy"] for p in data["policies"]] == ["fifo", "easy", "multifactor", "learned"]
    assert all(p["quota_violations"] == 0 and p["jobs"] == 3 for p in data["policies"])
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["pool.png", "tenants.png", "times.png"]


def test_openb_trace_finds_its_node_list_next_to_it():
    result = CliRunner().invoke(cli, ["simulate", str(DATA / "openb_pod_list_default.csv"), "--policies", "easy"])
    assert result.exit_code == 0, result.output
    assert "note: openb:" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "which pool? give --pool FILE.yaml, --node-list CSV (openb format) or --nodes N"),
        (["--nodes", "1", "--policies", "sjf"], "unknown policy 'sjf'"),
        (["--nodes", "1", "--quotas", "/nonexistent"], "cannot read /nonexistent"),
    ],
)
def test_bad_input_is_one_line_and_exit_1(trace, args, message):
    result = CliRunner().invoke(cli, ["simulate", str(trace), *args])
    assert result.exit_code == 1
    assert result.output.strip() == f"Error: {message}" or message in result.output.strip().splitlines()[-1]


def test_a_bad_row_names_its_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(",".join(CANONICAL_HEADER) + "\n0,60,,1,8,a,b,c\n5,60,,zero,8,a,b,c\n")
    result = CliRunner().invoke(cli, ["simulate", str(path), "--nodes", "1"])
    assert result.exit_code == 1 and result.output.strip() == "Error: line 3: nodes='zero' is not a whole number"


def test_the_cli_replays_without_django():
    code = (
        "import sys; from aipool_cli import simulation; "
        "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules), 'django imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


LIVE_API = {
    "/api/v1/nodes/": {
        "next": None,
        "previous": None,
        "results": [
            {"name": "node1", "switch": "leaf0", "accelerators_total": 8, "partitions": ["main"], "state": "IDLE"},
            {"name": "node2", "switch": "leaf0", "accelerators_total": 8, "partitions": ["main"], "state": "DOWN"},
        ],
    },
    "/api/v1/tenants/": {"next": None, "previous": None, "results": [{"name": "a", "limits": {"grp_tres": {}}}]},
    "/api/v1/groups/": {
        "next": None,
        "previous": None,
        "results": [{"name": "g2", "limits": {"grp_tres": {"gres/accelerator": 8}, "grp_jobs": 1}}],
    },
}


def _live(args, trace):
    import httpx

    seen = []

    def api(request):
        seen.append(request.url.path)
        if request.headers.get("Authorization") != "Bearer tok":
            return httpx.Response(401, json={"code": "not_authenticated", "detail": "no token"})
        return httpx.Response(200, json=LIVE_API[request.url.path])

    env = {"AIPOOL_URL": "http://pool.test", "AIPOOL_TOKEN": "tok"}
    obj = {"transport": httpx.MockTransport(api), "sleep": lambda s: None}
    return CliRunner().invoke(cli, ["simulate", str(trace), *args], obj=obj, env=env), seen


def test_live_pool_and_quotas_come_from_the_api(trace):
    result, seen = _live(["--pool", "live", "--quotas", "live", "--policies", "easy", "--json"], trace)
    assert result.exit_code == 0, result.output
    assert seen == ["/api/v1/nodes/", "/api/v1/tenants/", "/api/v1/groups/"]
    (report,) = json.loads(result.output)["policies"]
    # one node in service: the two 8-accelerator jobs of g2 run one after the other (also GrpJobs=1)
    assert report["jobs"] == 3 and report["never_started"] == 0 and report["quota_violations"] == 0
    assert report["tenant_wait"]["b"] > 0


def test_live_pool_with_a_bad_token_says_so_as_every_command_does(trace):
    import httpx

    def api(request):
        return httpx.Response(401, json={"code": "not_authenticated", "detail": "Invalid token."})

    obj = {"transport": httpx.MockTransport(api), "sleep": lambda s: None}
    env = {"AIPOOL_URL": "http://pool.test", "AIPOOL_TOKEN": "bad"}
    result = CliRunner().invoke(cli, ["simulate", str(trace), "--pool", "live"], obj=obj, env=env)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.startswith("aipool: not authenticated: set AIPOOL_TOKEN")
