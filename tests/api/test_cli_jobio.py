"""`aipool submit --input/--output` through the real API: the job reads and publishes repository versions."""

import pytest

from jobs.models import Job
from registry.models import JobInput, JobOutput
from tests.api.test_cli_contract import aipool  # noqa: F401 - the fixture
from tests.registry.helpers import make_collection, publish

pytestmark = pytest.mark.django_db


def test_submit_with_an_input_and_an_output(world, aipool):  # noqa: F811
    model = make_collection(world.alice, world.ai_team, "llama", parameters=8_000_000_000)
    publish(world.alice, model, {"config.json": b"{}"}, aliases=["production"])
    code, out, err = aipool(world.alice, "submit", "-A", "ai-team", "-t", "30", "--wrap", "python ft.py",
                            "--input", "model:acme/llama@production=BASE",
                            "--output", "model:acme/llama-ft,checkpoint=final,alias=candidate")  # fmt: skip
    assert code == 0, err
    job = Job.objects.get(pk=int(out))
    (read,) = JobInput.objects.filter(job=job)
    assert (read.version.number, read.env_name) == (1, "AIPOOL_MODEL_BASE_PATH")  # the alias resolved at submit
    (written,) = JobOutput.objects.filter(job=job)
    assert (written.checkpoint, written.aliases) == ("final", ["candidate"])


def test_an_unknown_input_is_a_field_error_and_no_job(world, aipool):  # noqa: F811
    code, out, err = aipool(world.alice, "submit", "-A", "ai-team", "-t", "30", "--wrap", "true",
                            "--input", "model:acme/nope@1")  # fmt: skip
    assert code != 0 and "inputs" in err and not Job.objects.exists()
