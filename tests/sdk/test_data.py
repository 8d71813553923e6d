"""Dataset: shard coverage, deterministic order, prefetch/cache/mmap reading, DataLoader compatibility."""

import pytest

from tests.sdk.support import require

torch = require("torch")
np = require("numpy")

from ai_platform.data import Dataset, write_dataset  # noqa: E402
from ai_platform.errors import DatasetError  # noqa: E402


@pytest.fixture
def shards(tmp_path):
    """1,000 samples in shards of 128: sample i has inputs [4i .. 4i+3] and target i."""
    inputs = np.arange(4000, dtype=np.float32).reshape(1000, 4)
    write_dataset(tmp_path / "dataset", {"inputs": inputs, "targets": np.arange(1000)}, 128)
    return tmp_path / "dataset"


def targets_of(batches):
    return [int(t) for _, targets in batches for t in targets]


@pytest.mark.parametrize("num_shards", [1, 2, 3, 7, 64])
def test_shards_cover_every_sample_exactly_once_and_evenly(shards, num_shards):
    sizes, seen = [], []
    for index in range(num_shards):
        part = Dataset(shards, prefetch=False).shard(num_shards=num_shards, index=index)
        sizes.append(len(part))
        seen += targets_of(part.batches(7, epoch=3, drop_last=False))
    assert sorted(seen) == list(range(1000))
    assert max(sizes) - min(sizes) <= 1


def test_shard_rejects_an_index_outside_the_shards(shards):
    with pytest.raises(ValueError, match="index must be in 0..3"):
        Dataset(shards).shard(num_shards=4, index=4)


def test_batches_pair_each_sample_with_its_own_fields(shards):
    for inputs, targets in Dataset(shards).shard(num_shards=3, index=1).batches(32, epoch=2):
        assert torch.equal(inputs[:, 0], targets.float() * 4)


def test_epoch_order_is_deterministic_and_changes_with_the_epoch(shards):
    first = Dataset(shards).epoch_order(epoch=1, seed=5)
    assert np.array_equal(first, Dataset(shards).epoch_order(epoch=1, seed=5))
    assert not np.array_equal(first, Dataset(shards).epoch_order(epoch=2, seed=5))
    assert sorted(first.tolist()) == list(range(1000))


def test_prefetch_and_mmap_read_the_same_batches_as_plain_reading(shards):
    plain = targets_of(Dataset(shards, prefetch=False).batches(50, epoch=4))
    prefetched = targets_of(Dataset(shards, prefetch=True, prefetch_workers=3).batches(50, epoch=4))
    mapped = targets_of(Dataset(shards, prefetch=True).enable_mmap(buffer_size="1MB").batches(50, epoch=4))
    assert plain == prefetched == mapped


def test_batches_can_start_at_a_later_batch(shards):
    dataset = Dataset(shards)
    assert targets_of(dataset.batches(10, epoch=1, start=30)) == targets_of(dataset.batches(10, epoch=1))[300:]


def test_cache_keeps_shards_read_once_when_they_fit(shards):
    dataset = Dataset(shards, prefetch=False, cache_size="1MB")
    for epoch in range(3):
        list(dataset.batches(100, epoch=epoch))
    assert dataset.stats.shard_loads == 8


def test_cache_smaller_than_the_data_stays_within_cache_size(shards):
    shard_bytes = 128 * (4 * 4 + 8)
    dataset = Dataset(shards, prefetch=True, cache_size=2 * shard_bytes)
    for epoch in range(2):
        list(dataset.batches(100, epoch=epoch))
        assert dataset._cache.size <= 2 * shard_bytes
    assert dataset.stats.shard_loads > 8


def test_plugs_into_a_torch_dataloader(shards):
    dataset = Dataset(shards).shard(num_shards=2, index=1)
    loader = torch.utils.data.DataLoader(dataset, batch_size=50, shuffle=False, num_workers=2)
    seen = [int(t) for _, targets in loader for t in targets]
    assert seen == list(range(500, 1000))


def test_shards_that_disagree_are_rejected(tmp_path):
    write_dataset(tmp_path, {"inputs": np.zeros((10, 4), np.float32), "targets": np.zeros(10)}, 5)
    np.save(tmp_path / "part-00001.inputs.npy", np.zeros((5, 3), np.float32))
    with pytest.raises(DatasetError, match="every shard needs the same dtype and per-sample shape"):
        Dataset(tmp_path)


def test_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        Dataset(tmp_path / "nowhere")
