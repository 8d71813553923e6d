import pytest


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """The test machine's cores are shared: more threads only add contention to tiny models."""
    try:
        import torch
    except ImportError:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
