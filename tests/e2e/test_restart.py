"""Kill the web server and the Celery worker while jobs run, start them again: every job ends in its true state,
none lost and none run twice."""

import httpx
import pytest

from tests.e2e.stack import Stack, wait_for

pytestmark = pytest.mark.slow

SUBMIT = """
import json
from jobs.services import job_submit
from jobs.spec import parse_job_spec
from tenants.models import Group
from django.contrib.auth.models import User
alice = User.objects.get(username="alice")
group = Group.objects.get(name="acme-research")
ids = []
for i, (seconds, code) in enumerate([(6, 0), (6, 4), (1, 0)]):
    spec = parse_job_spec({"name": f"j{i}", "nodes": 1, "accelerators_per_node": 2, "time_limit": "10",
        "command": f"echo run >> MARKERS/j{i}; sleep {seconds}; exit {code}"})
    ids.append(job_submit(user=alice, group=group, spec=spec)[0].pk)
print(json.dumps(ids))
"""

STATES = """
import json
from jobs.models import Job
print(json.dumps({j.pk: [j.state, j.exit_code, bool(j.backend_job_id)] for j in Job.objects.filter(pk__in=IDS)}))
"""


@pytest.fixture
def stack(tmp_path):
    stack = Stack(tmp_path)
    stack.manage("migrate", "--no-input")
    stack.manage("seed_demo")
    yield stack
    stack.close()


def test_killing_worker_and_web_server_mid_run_loses_nothing(stack, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    stack.start_worker()
    stack.start_web()
    ids = stack.python(SUBMIT.replace("MARKERS", str(markers)))
    states = STATES.replace("IDS", repr(ids))

    def launched():
        current = stack.python(states)
        return all(s[0] != "PENDING" and s[2] for s in current.values()) and current

    wait_for(launched, timeout=60)
    wait_for(lambda: httpx.get(stack.url("/accounts/login/")).status_code == 200, timeout=30)

    stack.kill(stack.worker)
    stack.kill(stack.web)
    stack.start_worker()
    stack.start_web()

    def all_ended():
        current = stack.python(states)
        return all(s[0] not in ("PENDING", "RUNNING") for s in current.values()) and current

    final = wait_for(all_ended, timeout=90)
    assert [final[str(i)][:2] for i in ids] == [["COMPLETED", 0], ["FAILED", 4], ["COMPLETED", 0]]
    for i in range(3):
        assert (markers / f"j{i}").read_text() == "run\n", f"job j{i} ran more than once"
    assert wait_for(lambda: httpx.get(stack.url("/accounts/login/")).status_code == 200, timeout=30)
