"""The `aipool` CLI against an in-process fake API (httpx.MockTransport): no Django, no database, no network."""

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from aipool_cli import formatting as fmt
from aipool_cli.main import cli, exit_status
from aipool_cli.slurmargs import (
    SlurmArgError,
    SubmitArgs,
    build_job_body,
    parse_exports,
    parse_gres,
    parse_sbatch_directives,
    parse_switches,
)

URL = "http://pool.test"
ENV = {"AIPOOL_URL": URL, "AIPOOL_TOKEN": "tok", "AIPOOL_IDEMPOTENCY_KEY": None, "AIPOOL_DEBUG": None}


def job(id=7, state="RUNNING", **extra):
    base = {
        "id": id,
        "name": "train",
        "tenant": "acme",
        "group": "ai-team",
        "user": "alice",
        "partition": "main",
        "nodes": 2,
        "accelerators_per_node": 8,
        "time_limit": 4320,
        "state": state,
        "reason": "None",
        "exit_code": None,
        "submitted_at": "2025-01-01T10:00:00Z",
        "started_at": "2025-01-01T10:00:05Z" if state != "PENDING" else None,
        "ended_at": None,
        "nodelist": ["node1", "node2"] if state != "PENDING" else [],
        "switches": ["leaf0"],
        "backend": "local",
        "backend_job_id": "123",
    }
    base.update(extra)
    return base


class FakeAPI:
    """Routes (method, path) to a handler; records every request."""

    def __init__(self, routes):
        self.routes = routes
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        handler = self.routes.get((request.method, request.url.path))
        if handler is None:
            return httpx.Response(404, json={"code": "not_found", "detail": "Not found."})
        result = handler(request)
        if isinstance(result, httpx.Response):
            return result
        return httpx.Response(200, json=result)

    def bodies(self, method="POST"):
        return [json.loads(r.content) for r in self.requests if r.method == method]


def invoke(api, args, input=None, sleeps=None):
    transport = httpx.MockTransport(api) if not isinstance(api, httpx.BaseTransport) else api
    sleeps = [] if sleeps is None else sleeps
    obj = {"transport": transport, "sleep": sleeps.append}
    return CliRunner().invoke(cli, args, obj=obj, env=ENV, input=input, catch_exceptions=False)


# --- submit ----------------------------------------------------------------------------------------------------


def test_submit_builds_the_body_from_slurm_flags_and_prints_the_id():
    api = FakeAPI({("POST", "/api/v1/jobs/"): lambda r: httpx.Response(201, json=job(id=42, state="PENDING"))})
    args = ["submit", "-A", "ai-team", "-N", "2", "--gres=accelerator:8", "-t", "72:00:00"]
    args += ["--network=topology_aware", "--switches=1", "--wrap", "python train.py"]
    result = invoke(api, args)
    assert result.exit_code == 0, result.output
    assert result.stdout == "42\n"
    assert api.bodies() == [
        {
            "group": "ai-team",
            "name": "wrap",
            "nodes": 2,
            "accelerators_per_node": 8,
            "time_limit": "72:00:00",
            "topology_aware": True,
            "max_switches": 1,
            "command": "python train.py",
        }
    ]
    assert api.requests[0].headers["authorization"] == "Bearer tok"
    assert "idempotency-key" not in api.requests[0].headers


def test_submit_sends_every_optional_field_and_json_prints_the_object():
    api = FakeAPI({("POST", "/api/v1/jobs/"): lambda r: httpx.Response(201, json=job(id=5))})
    args = ["submit", "-A", "g", "-p", "big", "-J", "run1", "-c", "16", "--mem=64G", "--runtime", "ai-suite/2.1"]
    args += ["--export", "A=1,B=x,2", "--export", "C=3", "-t", "30", "--json", "--wrap", "true"]
    result = invoke(api, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["id"] == 5
    body = api.bodies()[0]
    assert body["partition"] == "big" and body["name"] == "run1" and body["cpus_per_node"] == 16
    assert body["memory_per_node"] == "64G" and body["runtime"] == "ai-suite/2.1"
    assert body["environment"] == {"A": "1", "B": "x,2", "C": "3"}
    assert body["topology_aware"] is False


def test_submit_idempotency_key_comes_from_the_environment():
    api = FakeAPI({("POST", "/api/v1/jobs/"): lambda r: httpx.Response(200, json=job(id=9))})
    transport = httpx.MockTransport(api)
    env = {**ENV, "AIPOOL_IDEMPOTENCY_KEY": "pipeline-123"}
    result = CliRunner().invoke(
        cli, ["submit", "-A", "g", "--wrap", "x"], obj={"transport": transport, "sleep": lambda s: None}, env=env
    )
    assert result.exit_code == 0
    assert result.stdout == "9\n"
    assert api.requests[0].headers["idempotency-key"] == "pipeline-123"
    assert "already submitted" in result.stderr


def test_submit_script_honours_sbatch_lines_and_the_command_line_wins(tmp_path):
    script = tmp_path / "train.sbatch"
    script.write_text(
        "#!/bin/bash\n#SBATCH -A ai-team\n#SBATCH -N 4 --gres=accelerator:2\n#SBATCH --time=1:00:00\n"
        "#SBATCH -J fromscript\n#SBATCH --output=out.log\nsrun python train.py\n#SBATCH -p never\n"
    )
    api = FakeAPI({("POST", "/api/v1/jobs/"): lambda r: httpx.Response(201, json=job(id=3))})
    result = invoke(api, ["submit", "-N", "2", str(script)])
    assert result.exit_code == 0, result.output
    body = api.bodies()[0]
    assert body["group"] == "ai-team" and body["nodes"] == 2 and body["accelerators_per_node"] == 2
    assert body["time_limit"] == "1:00:00" and body["name"] == "fromscript"
    assert "partition" not in body  # directives stop at the first command
    assert body["script"] == script.read_text() and "command" not in body
    assert "ignoring #SBATCH --output=out.log" in result.stderr


def test_submit_without_account_uses_the_only_group():
    api = FakeAPI(
        {
            ("GET", "/api/v1/me/"): lambda r: {"username": "alice", "groups": [{"slug": "ai-team", "name": "AI"}]},
            ("POST", "/api/v1/jobs/"): lambda r: httpx.Response(201, json=job(id=4)),
        }
    )
    result = invoke(api, ["submit", "-t", "10", "--wrap", "x"])
    assert result.exit_code == 0, result.output
    assert api.bodies()[0]["group"] == "ai-team"


def test_submit_without_account_and_several_groups_is_a_usage_error():
    api = FakeAPI({("GET", "/api/v1/me/"): lambda r: {"groups": ["a", "b"]}})
    result = invoke(api, ["submit", "--wrap", "x"])
    assert result.exit_code == 2
    assert "missing -A/--account GROUP (your groups: a, b)" in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--gres=accelerator:x"], "must be a whole number"),
        (["--gres=gpu:a100:8"], "GRES types are not supported"),
        (["--gres=fpga:2"], "unknown GRES 'fpga'"),
        (["-N", "2-4"], "node count ranges"),
        (["--network=ib"], "unsupported --network value"),
        (["--switches=0"], "--switches needs a whole number"),
    ],
)
def test_submit_bad_slurm_flags_are_usage_errors(args, message):
    api = FakeAPI({})
    result = invoke(api, ["submit", "-A", "g", *args, "--wrap", "x"])
    assert result.exit_code == 2
    assert message in result.stderr
    assert api.requests == []


def test_submit_wrap_and_script_together_is_a_usage_error(tmp_path):
    script = tmp_path / "s.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    result = invoke(FakeAPI({}), ["submit", "-A", "g", "--wrap", "x", str(script)])
    assert result.exit_code == 2
    assert "not both" in result.stderr


def test_submit_with_nothing_to_run_is_a_usage_error():
    result = invoke(FakeAPI({}), ["submit", "-A", "g"])
    assert result.exit_code == 2
    assert "nothing to run" in result.stderr


# --- errors ----------------------------------------------------------------------------------------------------


def test_400_prints_detail_and_one_line_per_field_error():
    error = {
        "code": "validation_error",
        "detail": "the job spec is invalid",
        "errors": {"nodes": ["must be at least 1"], "time_limit": ["bad time limit 'x'", "second message"]},
    }
    api = FakeAPI({("POST", "/api/v1/jobs/"): lambda r: httpx.Response(400, json=error)})
    result = invoke(api, ["submit", "-A", "g", "--wrap", "x"])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "aipool: error: the job spec is invalid",
        "  nodes: must be at least 1",
        "  time_limit: bad time limit 'x'",
        "  time_limit: second message",
    ]
    assert result.stdout == ""


def test_401_says_how_to_get_a_token():
    api = FakeAPI({("GET", "/api/v1/me/"): lambda r: httpx.Response(401, json={"detail": "Invalid token."})})
    result = invoke(api, ["me"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        "aipool: not authenticated: set AIPOOL_TOKEN (create one with manage.py create_token or on /tokens/)"
    )


def test_connection_refused_is_one_line_and_exit_2():
    def refuse(request):
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    sleeps = []
    result = invoke(httpx.MockTransport(refuse), ["queue"], sleeps=sleeps)
    assert result.exit_code == 2
    assert result.stderr == (
        f"aipool: cannot reach {URL}: connection refused (is the portal running? set AIPOOL_URL)\n"
    )
    assert len(sleeps) == 2  # retried before giving up


def test_404_prints_the_servers_detail_and_exit_1():
    result = invoke(FakeAPI({}), ["show", "99"])
    assert result.exit_code == 1
    assert result.stderr == "aipool: job 99: Not found.\n"


def test_409_prints_the_servers_detail():
    conflict = {"code": "idempotency_conflict", "detail": "Idempotency-Key reused with a different request"}
    api = FakeAPI({("POST", "/api/v1/jobs/"): lambda r: httpx.Response(409, json=conflict)})
    result = invoke(api, ["submit", "-A", "g", "--idempotency-key", "k", "--wrap", "x"])
    assert result.exit_code == 1
    assert result.stderr == "aipool: Idempotency-Key reused with a different request\n"


def test_non_json_500_is_a_server_error_exit_2():
    api = FakeAPI({("GET", "/api/v1/me/quota/"): lambda r: httpx.Response(500, text="<h1>Server Error</h1>")})
    result = invoke(api, ["quota"])
    assert result.exit_code == 2
    assert result.stderr == f"aipool: server error 500 at {URL}/api/v1/me/quota/\n"


def test_429_is_retried_after_retry_after():
    answers = iter([httpx.Response(429, headers={"Retry-After": "7"}, json={"detail": "slow down"})])
    api = FakeAPI({("GET", "/api/v1/me/"): lambda r: next(answers, {"username": "alice"})})
    sleeps = []
    result = invoke(api, ["me"], sleeps=sleeps)
    assert result.exit_code == 0, result.output
    assert sleeps == [7.0]
    assert "username: alice" in result.stdout


# --- wait / run / logs -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "state, exit_code, expected",
    [
        ("COMPLETED", 0, 0),
        ("FAILED", 3, 3),
        ("FAILED", 0, 1),
        ("FAILED", None, 1),
        ("CANCELLED", None, 130),
        ("TIMEOUT", None, 124),
        ("OUT_OF_MEMORY", None, 137),
        ("NODE_FAIL", None, 75),
    ],
)
def test_wait_exit_status_per_state(state, exit_code, expected):
    states = iter([job(state="PENDING"), job(state="RUNNING"), job(state=state, exit_code=exit_code)])
    api = FakeAPI({("GET", "/api/v1/jobs/7/"): lambda r: next(states)})
    sleeps = []
    result = invoke(api, ["wait", "7", "--interval", "0.5"], sleeps=sleeps)
    assert result.exit_code == expected
    assert sleeps == [0.5, 0.5]
    assert f"job 7 {state}" in result.stderr


def test_every_final_state_but_completed_is_nonzero():
    for state in ("FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "SOMETHING_NEW"):
        assert exit_status({"state": state, "exit_code": 0}) != 0
    assert exit_status({"state": "COMPLETED", "exit_code": 0}) == 0


def test_wait_timeout_exits_3_and_leaves_the_job():
    clock = iter(range(0, 1000, 10))
    api = FakeAPI({("GET", "/api/v1/jobs/7/"): lambda r: job(state="RUNNING")})
    obj = {"transport": httpx.MockTransport(api), "sleep": lambda s: None, "clock": lambda: next(clock)}
    result = CliRunner().invoke(cli, ["wait", "7", "--timeout", "25"], obj=obj, env=ENV)
    assert result.exit_code == 3
    assert "still RUNNING" in result.stderr
    assert not [r for r in api.requests if r.method == "POST"]


def logs_api(chunks, states):
    """A log endpoint that serves `chunks` one per poll (then nothing) and the job state per poll."""
    text = "".join(chunks)
    served = iter(chunks)
    state_iter = iter(states)

    def logs(request):
        offset = int(request.url.params["offset"])
        if request.url.params["stream"] != "stdout":
            return {"text": "", "offset": 0, "size": 0, "state": "RUNNING"}
        chunk = next(served, "")
        state = next(state_iter, states[-1])
        if offset + len(chunk) > len(text):
            chunk = ""
        return {"text": chunk, "offset": offset + len(chunk.encode()), "size": len(text), "state": state}

    return logs


def test_logs_follow_reads_from_the_offset_until_final_and_quiet():
    # one chunk per poll, empty polls in between; the job finishes with a chunk in flight
    chunks = ["epoch 1\n", "", "epoch 2\n", "", "done\n"]
    api = FakeAPI(
        {("GET", "/api/v1/jobs/7/logs/"): logs_api(chunks, ["RUNNING", "RUNNING", "RUNNING", "RUNNING", "COMPLETED"])}
    )
    result = invoke(api, ["logs", "7", "-f"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "epoch 1\nepoch 2\ndone\n"
    offsets = [int(r.url.params["offset"]) for r in api.requests]
    assert offsets == [0, 8, 8, 16, 16, 21, 21]  # stops after the final state brings nothing new twice


def test_logs_without_follow_reads_once_to_the_end():
    api = FakeAPI(
        {("GET", "/api/v1/jobs/7/logs/"): lambda r: {"text": "all\n", "offset": 4, "size": 4, "state": "COMPLETED"}}
    )
    result = invoke(api, ["logs", "7"])
    assert result.stdout == "all\n"
    assert len(api.requests) == 1


def test_logs_stderr_asks_for_the_stderr_stream():
    api = FakeAPI(
        {("GET", "/api/v1/jobs/7/logs/"): lambda r: {"text": "", "offset": 0, "size": 0, "state": "COMPLETED"}}
    )
    invoke(api, ["logs", "7", "--stderr"])
    assert api.requests[0].url.params["stream"] == "stderr"


def test_run_submits_streams_and_exits_like_wait():
    states = iter([job(id=8, state="RUNNING"), job(id=8, state="FAILED", exit_code=2)])
    api = FakeAPI(
        {
            ("POST", "/api/v1/jobs/"): lambda r: httpx.Response(201, json=job(id=8, state="PENDING")),
            ("GET", "/api/v1/jobs/8/"): lambda r: next(states),
            ("GET", "/api/v1/jobs/8/logs/"): logs_api(["hello\n", "", "bye\n"], ["RUNNING"]),
        }
    )
    result = invoke(api, ["run", "-A", "g", "-t", "5", "--wrap", "python x.py"])
    assert result.exit_code == 2
    assert result.stdout == "hello\nbye\n"
    assert "Submitted job 8" in result.stderr
    assert "job 8 FAILED, exit code 2" in result.stderr


# --- queue / show / explain / quota ----------------------------------------------------------------------------


def test_queue_follows_next_and_prints_an_squeue_table():
    page2 = f"{URL}/api/v1/jobs/?cursor=abc&user=me"

    def jobs(request):
        state = request.url.params.get("state")
        assert request.url.params["user"] == "me"
        if state == "PENDING":
            return {"next": None, "previous": None, "results": [job(id=12, state="PENDING", reason="AssocGrpGRES")]}
        if request.url.params.get("cursor") == "abc":
            return {"next": None, "previous": None, "results": [job(id=3, state="RUNNING", nodelist=["node4"])]}
        return {"next": page2, "previous": None, "results": [job(id=10, state="RUNNING")]}

    api = FakeAPI({("GET", "/api/v1/jobs/"): jobs})
    result = invoke(api, ["queue"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["JOBID", "PARTITION", "NAME", "USER", "ST", "TIME", "NODES", "NODELIST(REASON)"]
    assert [line.split()[0] for line in lines[1:]] == ["3", "10", "12"]
    assert lines[1].split()[4] == "R" and lines[1].split()[-1] == "node4"
    assert lines[2].split()[-1] == "node[1-2]"
    assert lines[3].split()[4] == "PD" and lines[3].split()[-1] == "(AssocGrpGRES)"
    assert any(r.url.params.get("cursor") == "abc" for r in api.requests)


def test_queue_all_states_and_all_users():
    api = FakeAPI(
        {
            ("GET", "/api/v1/jobs/"): lambda r: {
                "next": None,
                "results": [job(id=1, state="TIMEOUT", reason="TimeLimit")],
            }
        }
    )
    result = invoke(api, ["queue", "--all", "-t", "all"])
    assert "user" not in api.requests[0].url.params and "state" not in api.requests[0].url.params
    assert result.stdout.splitlines()[1].split()[4] == "TO"


def test_queue_json_is_a_list():
    api = FakeAPI({("GET", "/api/v1/jobs/"): lambda r: {"next": None, "results": [job(id=1, state="RUNNING")]}})
    result = invoke(api, ["queue", "-t", "R", "--json"])
    assert [j["id"] for j in json.loads(result.stdout)] == [1]
    assert api.requests[0].url.params["state"] == "RUNNING"


def test_queue_unknown_state_is_a_usage_error():
    result = invoke(FakeAPI({}), ["queue", "-t", "XX"])
    assert result.exit_code == 2
    assert "unknown state 'XX'" in result.stderr


def test_show_prints_scontrol_key_values():
    api = FakeAPI({("GET", "/api/v1/jobs/7/"): lambda r: job(command="python train.py", extra_field=1)})
    result = invoke(api, ["show", "7"])
    assert result.stdout.startswith("JobId=7 JobName=train\n")
    assert "JobState=RUNNING" in result.stdout and "TimeLimit=3-00:00:00" in result.stdout
    assert "NodeList=node[1-2]" in result.stdout and "extra_field" not in result.stdout
    result = invoke(api, ["show", "7", "-o", "all"])
    assert '   command="python train.py"' in result.stdout and "extra_field=1" in result.stdout


def test_explain_prints_causes_with_numbers_and_suggestions():
    data = {
        "state": "PENDING",
        "reason": "AssocGrpGRES",
        "causes": [
            {
                "code": "AssocGrpGRES",
                "message": "group ai-team is at its accelerator limit",
                "limit": 16,
                "in_use": 16,
                "requested": 8,
            }
        ],
        "estimated_start": None,
        "suggestions": [{"message": "Ask for 1 node instead of 2", "change": {"nodes": 1}, "estimated_start": None}],
    }
    result = invoke(FakeAPI({("GET", "/api/v1/jobs/7/explain/"): lambda r: data}), ["explain", "7"])
    out = result.stdout
    assert "Job 7 is PENDING (reason: AssocGrpGRES)." in out
    assert "AssocGrpGRES: group ai-team is at its accelerator limit" in out
    assert "limit 16, in use 16, requested 8" in out
    assert "Estimated start: unknown" in out
    assert "1. Ask for 1 node instead of 2" in out and "change: nodes=1" in out


def test_quota_prints_a_table_per_group():
    data = {
        "groups": [
            {
                "group": "ai-team",
                "tenant": "acme",
                "limits": {"GrpTRES": {"gres/accelerator": 16, "cpu": 128}, "GrpJobs": 10, "MaxWall": 4320},
                "usage": {
                    "running": {"gres/accelerator": 8, "cpu": 32},
                    "pending": {"gres/accelerator": 16},
                    "jobs": {"running": 1, "pending": 2},
                },
                "user_usage": {"running": {"gres/accelerator": 8}, "jobs": {"running": 1, "pending": 0}},
            }
        ]
    }
    result = invoke(FakeAPI({("GET", "/api/v1/me/quota/"): lambda r: data}), ["quota"])
    lines = result.stdout.splitlines()
    assert lines[0] == "ai-team (tenant acme)"
    assert lines[1].split() == ["RESOURCE", "LIMIT", "IN", "USE", "PENDING", "YOURS"]
    assert lines[2].split() == ["accelerator", "16", "8", "16", "8"]
    assert lines[3].split() == ["cpu", "128", "32", "0", "0"]
    assert lines[4].split() == ["jobs", "(running)", "10", "1", "2", "1"]
    assert "MaxWall: 3-00:00:00" in result.stdout


def test_quota_unknown_shape_still_prints_what_is_there():
    data = [{"name": "g", "GrpTRES": {"cpu": 4}, "mystery": 5}]
    result = invoke(FakeAPI({("GET", "/api/v1/me/quota/"): lambda r: data}), ["quota"])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == "g"
    assert "cpu" in result.stdout


# --- pure helpers ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, count",
    [("accelerator:8", 8), ("gres/accelerator:4", 4), ("accelerator", 1), ("gpu:2", 2), ("none", 0)],
)
def test_parse_gres(text, count):
    assert parse_gres(text) == count


@pytest.mark.parametrize("text", ["", "accelerator:", "accelerator:-1", "accelerator:1,accelerator:2", "disk:1"])
def test_parse_gres_errors(text):
    with pytest.raises(SlurmArgError):
        parse_gres(text)


def test_parse_switches_with_wait_time():
    assert parse_switches("2@1:00:00") == (2, "1:00:00")


def test_parse_exports_copies_bare_names_from_the_local_environment():
    assert parse_exports(["ALL,HOME", "X=1"], {"HOME": "/h"}) == {"HOME": "/h", "X": "1"}
    with pytest.raises(SlurmArgError):
        parse_exports(["MISSING"], {})


def test_sbatch_directives_stop_at_the_first_command():
    found = parse_sbatch_directives("#!/bin/bash\n\n#SBATCH -N2\n# note\n#SBATCH -t 5 # five\necho\n#SBATCH -A x\n")
    assert found.values == {"nodes": "2", "time": "5"}


def test_build_job_body_refuses_disagreeing_accelerator_counts():
    with pytest.raises(SlurmArgError, match="--gres asks for 8"):
        build_job_body(SubmitArgs(account="g", gres="accelerator:8", accelerators_per_node=4, wrap="x"))


def test_hostlist_compresses_ranges():
    assert fmt.hostlist(["node1", "node2", "node3", "node5", "login"]) == "node[1-3,5],login"
    assert fmt.hostlist(["n01", "n02"]) == "n[01-02]"


def test_elapsed_formats_like_squeue():
    assert [fmt.format_elapsed(s) for s in (0, 65, 3723, 93784)] == ["0:00", "1:05", "1:02:03", "1-02:03:04"]


# --- packaging -------------------------------------------------------------------------------------------------


def test_the_cli_does_not_import_django():
    code = "import aipool_cli.main, sys; assert not any(m.startswith('django') for m in sys.modules)"
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_version_option():
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.startswith("aipool, version ")


def test_submit_inputs_and_outputs_become_the_api_fields():
    from aipool_cli.slurmargs import parse_input, parse_output

    args = SubmitArgs(
        account="ai-team",
        wrap="python ft.py",
        inputs=["model:acme/llama@production", "dataset:acme/corpus@3=TRAIN"],
        outputs=["model:acme/llama-ft,checkpoint=final,alias=candidate,alias=staging,as=FT"],
    )
    body = build_job_body(args, environ={})
    assert body["inputs"] == ["model:acme/llama@production", {"ref": "dataset:acme/corpus@3", "as": "TRAIN"}]
    assert body["outputs"] == [
        {"ref": "model:acme/llama-ft", "checkpoint": "final", "aliases": ["candidate", "staging"], "as": "FT"}
    ]
    assert "inputs" not in build_job_body(SubmitArgs(account="g", wrap="true"), environ={})
    for bad, words in (
        (lambda: parse_input("model:acme/x="), "give a name after '='"),
        (lambda: parse_input(" "), "needs a reference"),
        (lambda: parse_output("checkpoint=x"), "needs a reference first"),
        (lambda: parse_output("model:acme/x,color=red"), "unknown or empty option"),
        (lambda: parse_output("slurm-%j.out"), "aipool logs"),
    ):
        with pytest.raises(SlurmArgError, match=words):
            bad()


def test_submit_sends_input_and_output_flags():
    api = FakeAPI({("POST", "/api/v1/jobs/"): lambda r: httpx.Response(201, json=job(id=9, state="PENDING"))})
    result = invoke(api, ["submit", "-A", "ai-team", "--wrap", "true", "--input", "model:acme/llama@2",
                          "--output", "model:acme/ft,alias=candidate"])  # fmt: skip
    assert result.exit_code == 0, result.output
    (sent,) = api.bodies()
    assert sent["inputs"] == ["model:acme/llama@2"]
    assert sent["outputs"] == [{"ref": "model:acme/ft", "aliases": ["candidate"]}]
    bad = invoke(api, ["submit", "-A", "ai-team", "--wrap", "true", "--output", "model:acme/ft,color=red"])
    assert bad.exit_code == 2 and "unknown or empty option" in bad.output and len(api.bodies()) == 1


def test_sprio_table_shows_each_factor_and_the_total():
    entry = {
        "job_id": 42,
        "priority": 5350,
        "factors": {
            "age": {"factor": 0.1, "weight": 1000, "value": 100.0},
            "fairshare": {"factor": 0.5, "weight": 10000, "value": 5000.0},
            "job_size": {"factor": 0.25, "weight": 1000, "value": 250.0},
            "partition": {"factor": 0.0, "weight": 1000, "value": 0.0},
        },
        "fairshare": {"association": "group ai-team"},
    }
    lines = fmt.sprio_table([entry]).splitlines()
    assert lines[0].split() == ["JOBID", "PRIORITY", "AGE", "FAIRSHARE", "JOBSIZE", "PARTITION", "ACCOUNT"]
    assert lines[1].split() == ["42", "5350", "100", "5000", "250", "0", "group", "ai-team"]
