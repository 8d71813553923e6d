"""GradientCompressor's compression arithmetic and arguments (the two-rank behaviour is in test_distributed)."""

import pytest

from tests.sdk.support import require

torch = require("torch")

from ai_platform.comm import GradientCompressor, topk_compress  # noqa: E402


def test_topk_error_feedback_delays_but_never_drops_gradient():
    torch.manual_seed(0)
    residual = torch.zeros(1000)
    sent_total, grad_total = torch.zeros(1000), torch.zeros(1000)
    for _ in range(50):
        grad = torch.randn(1000)
        grad_total += grad
        indices, values = topk_compress(grad, residual, k=10)
        sent_total.index_add_(0, indices, values)
    assert torch.allclose(sent_total + residual, grad_total, atol=1e-4)


def test_topk_sends_the_largest_entries():
    flat = torch.tensor([0.1, -5.0, 0.2, 3.0, -0.3])
    indices, values = topk_compress(flat, None, k=2)
    assert sorted(indices.tolist()) == [1, 3]
    assert sorted(values.tolist()) == [-5.0, 3.0]


def test_compressor_keeps_ratio_of_the_entries():
    assert GradientCompressor(ratio=0.01).k_for(10_000) == 100
    assert GradientCompressor(ratio=0.01).k_for(50) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"algorithm": "powersgd"}, "algorithm='powersgd' is not supported"),
        ({"ratio": 0}, "ratio must be a fraction in"),
        ({"ratio": 1.5}, "ratio must be a fraction in"),
        ({"warmup_steps": -1}, "warmup_steps must be a whole number"),
    ],
)
def test_compressor_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GradientCompressor(**kwargs)


def test_compressor_installs_only_on_ddp():
    with pytest.raises(TypeError, match="install it on a DistributedDataParallel model"):
        GradientCompressor().install(torch.nn.Linear(2, 2))
