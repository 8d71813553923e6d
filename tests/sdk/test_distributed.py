"""Two ranks over gloo: DDP, FSDP and hybrid sharding, accumulation, top-k compression, checkpoint resume."""

import socket

import pytest

from tests.sdk.support import regression_data, require

torch = require("torch")
require("zstandard")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """The results of every scenario of tests/sdk/_gloo_workers.py on each of two ranks."""
    import torch.multiprocessing as mp

    from tests.sdk import _gloo_workers

    root = tmp_path_factory.mktemp("gloo")
    data = regression_data(root / "dataset")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    mp.spawn(_gloo_workers.run, args=(2, port, str(data), str(root)), nprocs=2, join=True)
    return [torch.load(root / f"rank-{rank}.pt", weights_only=False) for rank in range(2)]


def scenario(ranks, name):
    results = [rank[name] for rank in ranks]
    for result in results:
        assert "error" not in result, result.get("error")
    return results


@pytest.mark.parametrize("strategy", ["ddp", "fsdp", "hybrid"])
def test_two_ranks_train_to_a_lower_loss(ranks, strategy):
    first, second = scenario(ranks, strategy)
    assert first["losses"][-1] < first["losses"][0] / 4
    assert first["losses"] == second["losses"]  # the reported loss is the mean over both ranks


@pytest.mark.parametrize("strategy", ["ddp", "fsdp", "hybrid"])
def test_both_ranks_end_with_identical_parameters(ranks, strategy):
    first, second = scenario(ranks, strategy)
    for name, tensor in first["params"].items():
        assert torch.equal(tensor, second["params"][name]), name


def test_strategies_compute_the_same_training(ranks):
    ddp, fsdp, hybrid = (scenario(ranks, name)[0]["losses"] for name in ("ddp", "fsdp", "hybrid"))
    assert fsdp == pytest.approx(ddp, rel=1e-4) and hybrid == pytest.approx(ddp, rel=1e-4)


@pytest.mark.parametrize("strategy", ["ddp", "fsdp", "hybrid"])
def test_step_metrics_count_communication(ranks, strategy):
    history = scenario(ranks, strategy)[0]["history"]
    assert all(record["comm_bytes"] > 0 and record["comm_time_s"] > 0 for record in history)
    assert all(record["compute_time_s"] <= record["step_time_s"] for record in history)


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_accumulated_micro_batches_give_the_gradient_of_one_big_batch(ranks, strategy):
    for result in scenario(ranks, f"accumulation_{strategy}"):
        for name, big_batch in result[1].items():
            assert torch.allclose(result[4][name], big_batch, atol=1e-6), name


def test_topk_sends_about_a_hundredth_of_the_dense_bytes(ranks):
    result = scenario(ranks, "topk")[0]
    dense, sparse = result["dense"]["bytes"], result["topk"]["bytes"]
    assert sparse[:5] == dense[:5]  # dense all-reduce during warm-up
    ratio = sum(sparse[5:]) / sum(dense[5:])
    assert 0.01 < ratio < 0.03  # 1% of the values plus an int32 index each
    assert result["topk"]["compressed_steps"] == len(sparse) - 5


def test_topk_with_error_feedback_still_converges(ranks):
    result = scenario(ranks, "topk")[0]
    dense, sparse = result["dense"]["losses"], result["topk"]["losses"]
    assert sparse[-1] < sparse[0] / 4
    assert sparse[-1] < 3 * dense[-1] + 0.05
    assert result["topk"]["residual_norm"] > 0  # what was not sent is carried, not dropped


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_async_checkpoint_resume_gives_the_next_losses_of_an_unbroken_run(ranks, strategy):
    for result in scenario(ranks, f"resume_{strategy}"):
        assert result["from"] == 6
        assert result["resumed"] == pytest.approx(result["unbroken"][6:], rel=1e-6)
