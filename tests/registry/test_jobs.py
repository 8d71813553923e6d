"""Jobs read model and dataset versions from paths in their environment and publish outputs as new versions."""

import pytest
from django.core.exceptions import ValidationError

from cluster.backends.registry import get_backend
from registry.jobio import publish_outputs
from registry.models import Collection, JobInput, JobOutput, OutputState, Version
from registry.services import alias_set
from tests.jobs.helpers import drive_until, ended, submit
from tests.registry.helpers import make_collection, publish

pytestmark = pytest.mark.django_db

CONFIG = b'{"hidden_size": 4096}'


@pytest.fixture
def llama(world):
    model = make_collection(world.alice, world.ai_team, "Llama-3.1-8B", parameters=8_030_000_000)
    publish(world.alice, model, {"config.json": CONFIG, "weights/shard-0.bin": b"w" * 1000}, aliases=["production"])
    return model


def run(job):
    drive_until(ended(job))
    return job


def test_a_job_naming_a_model_version_finds_its_files_at_the_path_in_its_environment(world, llama):
    command = (
        'cat "$AIPOOL_MODEL_LLAMA_3_1_8B_PATH/config.json" && '
        'test "$(wc -c < "$AIPOOL_MODEL_LLAMA_3_1_8B_PATH/weights/shard-0.bin")" -eq 1000'
    )
    job = run(submit(world.alice, world.ai_team, command=command, inputs=["acme/Llama-3.1-8B@production"]))
    assert job.state == "COMPLETED", stdout(job, "stderr")
    assert stdout(job) == CONFIG.decode()
    assert JobInput.objects.get(job=job).version.number == 1


def stdout(job, stream="stdout") -> str:
    return get_backend(job.backend).read_log(job.backend_job_id, stream).text


def test_an_alias_is_resolved_at_submit_time(world, llama):
    job = submit(world.alice, world.ai_team, inputs=["model:acme/Llama-3.1-8B@production"])
    publish(world.alice, llama, {"config.json": b"{}"})
    alias_set(actor=world.alice, collection=llama, name="production", version=llama.versions.get(number=2))
    assert JobInput.objects.get(job=job).version.number == 1


def test_an_input_the_user_may_not_see_reads_as_unknown(world, llama):
    with pytest.raises(ValidationError) as error:
        submit(world.mallory, world.rivals, inputs=["model:acme/Llama-3.1-8B"])
    assert error.value.message_dict == {"inputs": ["unknown model acme/Llama-3.1-8B"]}


def test_a_malformed_input_is_a_field_error(world):
    with pytest.raises(ValidationError) as error:
        submit(world.alice, world.ai_team, inputs=["model:no-slash"])
    assert "inputs" in error.value.message_dict


def test_a_job_that_publishes_an_output_creates_a_version_whose_lineage_points_back_to_it(
    world, llama, django_capture_on_commit_callbacks
):
    command = (
        'mkdir -p "$AIPOOL_OUTPUT_LLAMA_FT_PATH/final" && echo tuned > "$AIPOOL_OUTPUT_LLAMA_FT_PATH/final/adapter.bin"'
    )
    with django_capture_on_commit_callbacks(execute=True):
        job = submit(
            world.alice,
            world.ai_team,
            command=command,
            inputs=["model:acme/Llama-3.1-8B@production"],
            outputs=[{"model": "acme/llama-ft", "checkpoint": "final", "aliases": ["candidate"]}],
        )
        run(job)
    assert job.state == "COMPLETED", job.reason
    output = JobOutput.objects.get(job=job)
    assert output.state == OutputState.PUBLISHED, output.detail
    version = Version.objects.get(collection__name="llama-ft")
    assert version.source_job == job and version.checkpoint == "final"
    assert list(version.parents.all()) == [llama.versions.get(number=1)]
    assert [f.path for f in version.files.all()] == ["adapter.bin"]
    assert set(version.aliases.values_list("name", flat=True)) == {"latest", "candidate"}
    assert Collection.objects.get(name="llama-ft").group == world.ai_team


def test_a_job_that_fails_publishes_nothing(world):
    job = run(submit(world.alice, world.ai_team, command="exit 3", outputs=["model:acme/never"]))
    publish_outputs(job.pk)
    assert JobOutput.objects.get(job=job).state == OutputState.SKIPPED
    assert not Version.objects.filter(collection__name="never").exists()


def test_an_output_into_another_tenants_model_is_refused(world):
    make_collection(world.mallory, world.rivals, "theirs")
    with pytest.raises(ValidationError) as error:
        submit(world.alice, world.ai_team, outputs=["model:globex/theirs"])
    assert "outputs" in error.value.message_dict


def test_publishing_twice_creates_one_version(world):
    job = run(
        submit(
            world.alice,
            world.ai_team,
            command='echo x > "$AIPOOL_OUTPUT_RESULT_PATH/x"',
            outputs=["dataset:acme/result"],
        )
    )
    publish_outputs(job.pk)
    publish_outputs(job.pk)
    assert Version.objects.filter(collection__name="result").count() == 1


def test_the_job_api_accepts_inputs_and_outputs(world, llama, api):
    body = {"group": "ai-team", "time_limit": "10", "command": "true", "inputs": ["model:acme/Llama-3.1-8B"]}
    response = api(world.alice).post("/api/v1/jobs/", {**body, "outputs": [{"dataset": "acme/scores"}]})
    assert response.status_code == 201, response.content
    assert JobInput.objects.get(job_id=response.json()["id"]).env_name == "AIPOOL_MODEL_LLAMA_3_1_8B_PATH"


def test_the_job_api_answers_an_unknown_input_with_a_field_error(world, api):
    body = {"group": "ai-team", "time_limit": "10", "command": "true", "inputs": ["model:acme/nothing"]}
    response = api(world.alice).post("/api/v1/jobs/", body)
    assert response.status_code == 400 and response.json()["errors"] == {"inputs": ["unknown model acme/nothing"]}


def test_the_same_idempotency_key_with_other_inputs_is_a_conflict(world, llama):
    from jobs.services import IdempotencyConflict, job_submit
    from jobs.spec import parse_job_spec

    base = {"time_limit": "10", "command": "true"}
    job_submit(user=world.alice, group=world.ai_team, spec=parse_job_spec(base), idempotency_key="k")
    with pytest.raises(IdempotencyConflict):
        spec = parse_job_spec({**base, "inputs": ["model:acme/Llama-3.1-8B"]})
        job_submit(user=world.alice, group=world.ai_team, spec=spec, idempotency_key="k")
