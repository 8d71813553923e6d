"""Fit check: accelerators to serve or fine-tune a model, against the pool's accelerator memory and group limits."""

import pytest

from registry import fit
from registry.models import Collection, Visibility


def test_an_8b_model_in_bf16_is_served_by_one_80gb_accelerator():
    result = fit.estimate(
        parameters=8_030_000_000, mode="serve", precision="bf16", accelerator_memory_gb=80, accelerators_per_node=8
    )
    assert (result.accelerators, result.nodes, result.memory_gb) == (1, 1, 19.3)


def test_a_70b_model_in_bf16_needs_a_power_of_two_for_tensor_parallelism():
    result = fit.estimate(
        parameters=70_000_000_000, mode="serve", precision="bf16", accelerator_memory_gb=80, accelerators_per_node=8
    )
    assert result.memory_gb == 168.0 and result.accelerators == 4  # 3 would do by memory; TP wants 4


def test_full_fine_tuning_counts_sixteen_bytes_per_parameter_and_spans_nodes():
    result = fit.estimate(
        parameters=70_000_000_000, mode="finetune", precision="bf16", accelerator_memory_gb=80, accelerators_per_node=8
    )
    assert result.memory_gb == 1344.0 and (result.accelerators, result.nodes) == (24, 3)


def test_qlora_needs_far_less_than_full_fine_tuning():
    common = {
        "parameters": 70_000_000_000,
        "precision": "bf16",
        "accelerator_memory_gb": 80,
        "accelerators_per_node": 8,
    }
    assert fit.estimate(mode="qlora", **common).accelerators == 1


def test_an_unknown_mode_is_a_clear_error():
    with pytest.raises(ValueError, match="mode: use one of"):
        fit.estimate(parameters=1, mode="train", precision="bf16", accelerator_memory_gb=80, accelerators_per_node=8)


@pytest.fixture
def llama70(db):
    return Collection.objects.create(
        kind="model", namespace="meta-llama", name="Llama-3.3-70B-Instruct", visibility=Visibility.PUBLIC,
        parameters=70_000_000_000,
    )  # fmt: skip


@pytest.mark.django_db
def test_the_api_says_whether_the_groups_limits_allow_it(world, api, llama70):
    response = api(world.alice).get(f"/api/v1/models/{llama70.pk}/fit/?mode=finetune")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["estimate"]["accelerators"] == 24
    (group,) = body["groups"]
    assert group["group"] == "ai-team" and group["limit"] == 16 and group["allowed"] is False
    assert "GrpTRES of group ai-team allows 16" in group["message"]


@pytest.mark.django_db
def test_the_accelerator_memory_comes_from_the_pool_setting(world, api, llama70, monkeypatch):
    monkeypatch.setenv("AIPOOL_ACCELERATOR_MEMORY_GB", "141")
    body = api(world.alice).get(f"/api/v1/models/{llama70.pk}/fit/").json()
    assert body["estimate"]["accelerator_memory_gb"] == 141 and body["estimate"]["accelerators"] == 2
    assert body["groups"][0]["allowed_now"] is True


@pytest.mark.django_db
def test_a_model_without_a_parameter_count_is_a_400(world, api):
    model = Collection.objects.create(kind="model", namespace="x", name="y", visibility=Visibility.PUBLIC)
    response = api(world.alice).get(f"/api/v1/models/{model.pk}/fit/")
    assert response.status_code == 400 and "parameters" in response.json()["errors"]
