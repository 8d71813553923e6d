"""The preset catalog: 100+ models and 20+ datasets from the data files, loaded idempotently, searchable."""

import pytest
from django.core.management import call_command

from registry import catalog
from registry.models import Collection, Kind

pytestmark = pytest.mark.django_db


@pytest.fixture
def loaded(db):
    call_command("load_catalog", stdout=open("/dev/null", "w"))


def test_load_catalog_gives_at_least_100_models_and_20_datasets(loaded):
    assert Collection.objects.models().filter(from_catalog=True, tenant=None).count() >= 100
    assert Collection.objects.datasets().filter(from_catalog=True, tenant=None).count() >= 20


def test_loading_twice_changes_nothing(loaded, capsys):
    before = list(Collection.objects.order_by("pk").values())
    call_command("load_catalog")
    assert "0 added, 0 updated" in capsys.readouterr().out
    assert list(Collection.objects.order_by("pk").values()) == before


def test_the_catalog_covers_llms_vision_speech_multimodal_and_embeddings(loaded):
    tasks = set(Collection.objects.models().values_list("task", flat=True))
    assert {
        "text-generation",
        "image-classification",
        "automatic-speech-recognition",
        "image-text-to-text",
        "feature-extraction",
        "sentence-similarity",
    } <= tasks


def test_every_model_has_the_facts_the_catalog_promises(loaded):
    for model in Collection.objects.models():
        assert model.organisation and model.license and model.task and model.source_url.startswith("https://"), model
        assert model.parameters and model.parameters > 1_000_000, model


def test_known_facts_are_loaded_as_the_cards_state_them(loaded):
    llama = Collection.objects.get(namespace="meta-llama", name="Llama-3.1-8B-Instruct")
    assert (llama.parameters, llama.license, llama.context_length) == (8_030_000_000, "llama3.1", 131072)
    mixtral = Collection.objects.get(name="Mixtral-8x7B-Instruct-v0.1")
    assert (mixtral.parameters, mixtral.active_parameters) == (46_700_000_000, 12_900_000_000)
    assert Collection.objects.get(name="whisper-large-v3").task == "automatic-speech-recognition"


def test_a_typo_in_the_data_file_fails_loudly(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text("- {id: acme/x, org: A, params: 1B, license: mit, task: text-generation, contxt: 4096}\n")
    with pytest.raises(catalog.CatalogError, match="unknown keys contxt"):
        catalog.read(Kind.MODEL, path)


def test_parameter_counts_read_as_cards_write_them():
    assert catalog.parse_count("8.03B") == 8_030_000_000
    assert catalog.parse_count("22.7M") == 22_700_000
    with pytest.raises(catalog.CatalogError):
        catalog.parse_count("8 billion")


def test_the_api_filters_by_task_and_license(loaded, world, api):
    client = api(world.mallory)
    rows = client.get("/api/v1/models/?task=automatic-speech-recognition&license=mit&page_size=500").json()["results"]
    assert rows and {(r["task"], r["license"]) for r in rows} == {("automatic-speech-recognition", "mit")}
    assert "openai/whisper-large-v3-turbo" in {r["full_name"] for r in rows}


def test_the_api_searches_words_in_names(loaded, world, api):
    rows = api(world.alice).get("/api/v1/models/?search=llama instruct&page_size=500").json()["results"]
    names = {r["full_name"] for r in rows}
    assert "meta-llama/Llama-3.1-8B-Instruct" in names and "openai/whisper-tiny" not in names


def test_datasets_are_listed_apart_from_models(loaded, world, api):
    rows = api(world.alice).get("/api/v1/datasets/?license=mit&page_size=500").json()["results"]
    assert "openai/gsm8k" in {r["full_name"] for r in rows}
    assert all(r["kind"] == "dataset" for r in rows)


def test_the_browser_list_filters_by_task_and_license(loaded, world, client):
    client.force_login(world.alice)
    page = client.get("/models/", {"task": "text-to-image", "license": "apache-2.0"}).content.decode()
    assert "black-forest-labs/FLUX.1-schnell" in page
    assert "FLUX.1-dev" not in page and "Llama-3.1-8B" not in page


def test_the_browser_list_searches(loaded, world, client):
    client.force_login(world.alice)
    page = client.get("/datasets/", {"search": "fineweb"}).content.decode()
    assert "HuggingFaceFW/fineweb-edu" in page and "openai/gsm8k" not in page


def test_a_catalog_model_page_shows_its_card_and_fit_check(loaded, world, client):
    client.force_login(world.alice)
    page = client.get("/models/meta-llama/Llama-3.1-70B-Instruct/").content.decode()
    assert "llama3.1" in page and "131072 tokens" in page and "70B" in page
    assert "Fit check" in page and "ai-team" in page
