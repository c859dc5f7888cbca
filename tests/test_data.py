import pytest
import torch

from gtlib import data


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    import os
    os.environ["GTLIB_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    return data.mnist1d(200, 100)


def test_mnist1d_shapes_and_balance(ds):
    assert ds.x.shape == (200, 40) and ds.x_test.shape == (100, 40)
    assert ds.x.dtype == torch.float32 and ds.y.dtype == torch.int64
    counts = torch.bincount(torch.cat([ds.y, ds.y_test]), minlength=10)
    assert counts.min() >= 25 and counts.max() <= 35


def test_mnist1d_is_cached_and_deterministic(ds):
    again = data.mnist1d(200, 100)
    assert torch.equal(ds.x, again.x) and torch.equal(ds.y_test, again.y_test)


def test_mnist1d_leaves_global_numpy_rng_alone(ds):
    import numpy as np
    np.random.seed(123)
    expected = np.random.rand()
    np.random.seed(123)
    data.mnist1d(200, 100, data_seed=7)  # generates a new set (not cached)
    assert np.random.rand() == expected


@pytest.mark.parametrize("kw,err", [({"n_train": 0}, ValueError), ({"n_test": -3}, ValueError),
                                    ({"n_train": 2.5}, TypeError)])
def test_mnist1d_bad_sizes(kw, err):
    with pytest.raises(err, match=list(kw)[0]):
        data.mnist1d(**{"n_train": 10, "n_test": 10, **kw})


def test_digits():
    d = data.digits(test_fraction=0.25)
    assert d.x.shape[1] == 64 and d.n + len(d.y_test) == 1797
    assert 0 <= float(d.x.min()) and float(d.x.max()) <= 1
    with pytest.raises(ValueError, match="test_fraction"):
        data.digits(test_fraction=1.0)


def test_corrupt_labels_fraction_and_nesting():
    y = torch.arange(1000) % 10
    assert torch.equal(data.corrupt_labels(y, 0.0, 10), y)
    half = data.corrupt_labels(y, 0.5, 10, seed=1)
    changed = (half != y).float().mean().item()
    assert abs(changed - 0.5 * 0.9) < 0.05  # a random label equals the true one 1 time in 10
    full = data.corrupt_labels(y, 1.0, 10, seed=1)
    assert torch.equal(full[half != y], half[half != y])  # smaller corruption is nested in larger
    assert torch.equal(data.corrupt_labels(y, 0.5, 10, seed=1), half)


@pytest.mark.parametrize("args,err,match", [((1.5, 10), ValueError, "fraction"),
                                            ((-0.1, 10), ValueError, "fraction"),
                                            (("a", 10), TypeError, "fraction"),
                                            ((0.5, 1), ValueError, "num_classes")])
def test_corrupt_labels_bad_input(args, err, match):
    with pytest.raises(err, match=match):
        data.corrupt_labels(torch.zeros(5, dtype=torch.int64), *args)
    with pytest.raises(TypeError, match="y"):
        data.corrupt_labels(torch.zeros(5), 0.5, 10)


def test_long_tail_profile():
    y = torch.arange(1000) % 10  # 100 per class
    idx = data.long_tail_indices(y, 10.0, 10)
    counts = torch.bincount(y[idx], minlength=10)
    assert counts[0] == 100 and counts[-1] == 10
    assert all(counts[i] >= counts[i + 1] for i in range(9))
    assert torch.equal(torch.bincount(y[data.long_tail_indices(y, 1, 10)]), torch.full((10,), 100))


def test_long_tail_bad_ratio():
    y = torch.arange(100) % 10
    with pytest.raises(ValueError, match="imbalance_ratio"):
        data.long_tail_indices(y, 0.5, 10)
    with pytest.raises(ValueError, match="every class"):
        data.long_tail_indices(torch.zeros(10, dtype=torch.int64), 2, 10)


def test_dataset_helpers(ds):
    sub = data.long_tailed(ds, 5.0)
    assert sub.n < ds.n and torch.equal(sub.x_test, ds.x_test)
    with pytest.raises(ValueError, match="y must be"):
        ds.with_labels(torch.zeros(3, dtype=torch.int64))
