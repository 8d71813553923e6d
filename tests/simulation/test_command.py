"""`manage.py simulate`: the admins' command, on the openb slice and on the pool's own history."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from tests.jobs.helpers import submit
from tests.simulation.helpers import DATA

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def traces(monkeypatch):
    monkeypatch.setenv("AIPOOL_TRACES_DIR", str(DATA))


def simulate(*args) -> str:
    out = StringIO()
    call_command("simulate", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_openb_all_policies_table():
    text = simulate("--trace", "openb", "--policies", "all", "--load", "50")
    rows = [line.split()[0] for line in text.splitlines()[1:5]]
    assert rows == ["fifo", "easy", "multifactor", "learned"]
    assert "note: openb:" in text


def test_openb_json_and_markdown(tmp_path):
    data = json.loads(simulate("--trace", "openb", "--policies", "easy,learned", "--json"))
    assert data["baseline"] == "easy" and [p["policy"] for p in data["policies"]] == ["easy", "learned"]
    markdown = simulate("--trace", "openb", "--policies", "easy", "--markdown", "--plots", str(tmp_path))
    assert markdown.startswith("| policy |") and (tmp_path / "times.png").exists()


def test_history_whatif(world, tmp_path):
    for _ in range(2):
        submit(world.alice, world.ai_team, accelerators_per_node=8, time_limit="30")
    proposal = tmp_path / "proposal.txt"
    proposal.write_text("group ai-team GrpTRES=accelerator=8\n")
    start = (timezone.now() - timedelta(hours=1)).isoformat()
    end = (timezone.now() + timedelta(minutes=1)).isoformat()
    text = simulate("--trace", "history", "--start", start, "--end", end, "--whatif", str(proposal))
    assert "proposed: ai-team GrpTRES=gres/accelerator=8" in text
    acme = next(line for line in text.splitlines() if line.startswith("acme"))
    assert float(acme.split()[2]) > float(acme.split()[1])  # one of the two now waits for the other


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--trace", "history"], "--trace history needs --start and --end"),
        (["--trace", "/nonexistent.csv"], "cannot read /nonexistent.csv"),
        (["--trace", "openb", "--policies", "sjf"], "unknown policy 'sjf'"),
        (["--trace", "history", "--start", "yesterday", "--end", "2026-01-01"], "start: 'yesterday' is not an ISO"),
    ],
)
def test_bad_arguments_are_command_errors(args, message):
    with pytest.raises(CommandError, match=message):
        simulate(*args)


def test_whatif_naming_an_unknown_group_says_so(world, tmp_path):
    proposal = tmp_path / "p.txt"
    proposal.write_text("group nope GrpTRES=accelerator=8\n")
    with pytest.raises(CommandError, match="no group named 'nope' in this pool"):
        simulate("--trace", "history", "--start", "2026-01-01", "--end", "2026-02-01", "--whatif", str(proposal))
