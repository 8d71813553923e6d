"""Parsing the seed's InferenceService YAML: canonical and KServe names, and one clear message per bad field."""

import pytest
import yaml
from django.core.exceptions import ValidationError

from inference.spec import load_document, parse_memory_quantity, parse_service_spec
from tests.inference.helpers import SEED_YAML, seed_yaml


def errors_of(text: str) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        parse_service_spec(yaml.safe_load(text))
    return caught.value.message_dict


def test_the_seed_yaml_parses_to_its_numbers():
    spec = parse_service_spec(load_document(SEED_YAML))
    assert (spec.name, spec.min_replicas, spec.max_replicas) == ("image-classifier", 2, 20)
    assert (spec.scale_metric, spec.scale_target) == ("qps", 1000)
    assert (spec.accelerator_type, spec.accelerators, spec.memory_mb) == ("nvidia-h100-80gb", 1, 32 * 1024)
    assert (spec.model.full_name, spec.model.version) == ("acme/classifier", "production")


def test_kserve_field_names_are_accepted():
    text = seed_yaml(**{"  scaling:\n    metric: qps\n    target: 1000\n": "  scaleMetric: rps\n  scaleTarget: 250\n"})
    spec = parse_service_spec(yaml.safe_load(text))
    assert (spec.scale_metric, spec.scale_target) == ("qps", 250)


@pytest.mark.parametrize(
    ("written", "name", "version"),
    [
        ("acme/classifier:production", "acme/classifier", "production"),
        ("acme/classifier@3", "acme/classifier", "3"),
        ("model:acme/classifier:3", "acme/classifier", "3"),
        ("acme/classifier", "acme/classifier", ""),
        ("{name: acme/classifier, alias: staging}", "acme/classifier", "staging"),
    ],
)
def test_the_model_reference_forms(written, name, version):
    spec = parse_service_spec(yaml.safe_load(seed_yaml(**{"acme/classifier:production": written})))
    assert (spec.model.full_name, spec.model.version) == (name, version)


def test_min_above_max_is_named():
    errors = errors_of(seed_yaml(**{"minReplicas: 2": "minReplicas: 5", "maxReplicas: 20": "maxReplicas: 3"}))
    assert errors == {"spec.minReplicas": ["minReplicas (5) is greater than maxReplicas (3)"]}


@pytest.mark.parametrize("memory", ["32Gx", "32", "lots", "-1Gi", "32 Gi"])
def test_bad_memory_units_are_refused_with_the_fix(memory):
    errors = errors_of(seed_yaml(**{"memory: 32Gi": f"memory: '{memory}'"}))
    assert list(errors) == ["spec.resources.memory"]
    assert "use a number and a unit such as 32Gi" in errors["spec.resources.memory"][0]


@pytest.mark.parametrize(("text", "mib"), [("32Gi", 32768), ("512Mi", 512), ("1.5Gi", 1536), ("32G", 30518)])
def test_memory_quantities_in_kubernetes_units(text, mib):
    assert parse_memory_quantity(text) == mib


def test_every_problem_is_reported_at_once():
    text = "apiVersion: v2\nkind: Pod\nmetadata: {name: Bad_Name}\nspec: {scaling: {metric: latency}}\n"
    errors = errors_of(text)
    assert set(errors) == {
        "apiVersion",
        "kind",
        "metadata.name",
        "spec.model",
        "spec.scaling.metric",
        "spec.scaling.target",
        "spec.resources.accelerator",
        "spec.resources.memory",
    }


def test_max_defaults_to_min_as_in_kserve():
    spec = parse_service_spec(yaml.safe_load(seed_yaml(**{"  maxReplicas: 20\n": ""})))
    assert (spec.min_replicas, spec.max_replicas) == (2, 2)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"- a\n- b\n", "expected an InferenceService document"),
        (b"spec: [unclosed", "not valid YAML (line 1)"),
        (b"\xff\xfe", "must be UTF-8 text"),
        (b"a: " + b"x" * 70_000, "at most 64 KiB"),
    ],
)
def test_bodies_that_are_not_a_document(body, message):
    with pytest.raises(ValidationError) as caught:
        load_document(body)
    assert message in caught.value.message_dict["body"][0]


def test_the_normalised_spec_round_trips():
    spec = parse_service_spec(load_document(SEED_YAML))
    assert parse_service_spec(spec.normalised()) == spec
