"""Tests of gtlib.data, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import hashlib
import matplotlib
import numpy as np
import pickle
import pytest
import random
import torch
import warnings

from gtlib import data
from gtlib.data import Dataset, corrupt_labels, long_tail_indices, mnist1d


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    import os

    os.environ["GTLIB_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    return data.mnist1d(200, 100)


def _fresh(monkeypatch, tmp_path):
    """A cache folder holding one good file for mnist1d(200, 100); return (dataset, file path)."""
    monkeypatch.setenv("GTLIB_CACHE_DIR", str(tmp_path))
    ds = data.mnist1d(200, 100, device="cpu")
    (path,) = tmp_path.glob("mnist1d_*.npz")
    return ds, path


def _reload_warns(path):
    with pytest.warns(data.CacheWarning, match=str(path.name)):
        return data.mnist1d(200, 100, device="cpu")


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (
            open,
            (str(self.marker), "w"),
        )  # loading this pickle would create the marker file


def _tiny(n=10, d=3, classes=3):
    g = torch.Generator().manual_seed(0)
    return torch.randn(n, d, generator=g), torch.arange(n) % classes


def _blobs(n=30, d=5, n_test=11, classes=3, seed=0, dtype=torch.float32):
    """Unbalanced, learnable labels and a test split of another size than the training split."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=dtype)
    xt = torch.randn(n_test, d, generator=g, dtype=dtype)
    w = torch.randn(d, classes, generator=g, dtype=dtype)
    return Dataset(
        x=x,
        y=(x @ w).argmax(1),
        x_test=xt,
        y_test=(xt @ w).argmax(1),
        num_classes=classes,
        name="blobs",
    )


def _mnist1d_reference(num_samples, seed, train_split=1.0, **overrides):
    """The mnist1d package's own generator, called here without gtlib; RNGs restored."""
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    args.num_samples, args.seed, args.train_split = num_samples, seed, train_split
    for k, v in overrides.items():
        setattr(args, k, v)
    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        return make_dataset(args)
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("GTLIB_CACHE_DIR", str(tmp_path))
    return tmp_path


def _valid(n=20, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 40)).astype(np.float32)
    y = (np.arange(n) % 10).astype(np.int64)
    rng.shuffle(y)
    return x, y


def _corrupt_reference(y, fraction, num_classes, seed):
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(y), generator=g).tolist()
    random_labels = torch.randint(num_classes, (len(y),), generator=g).tolist()
    out = y.tolist()
    k = int(round(fraction * len(y)))
    for i in order[:k]:
        out[i] = random_labels[i]
    return out


def _long_tail_reference(y, ratio, classes, seed):
    g = torch.Generator().manual_seed(seed)
    counts = [int((y == k).sum()) for k in range(classes)]
    n_max = min(counts)
    keep = []
    for k in range(classes):
        n_k = max(1, int(round(n_max * ratio ** (-k / (classes - 1)))))
        members = [i for i in range(len(y)) if int(y[i]) == k]
        perm = torch.randperm(len(members), generator=g).tolist()
        keep += [members[p] for p in perm[:n_k]]
    return sorted(keep)


matplotlib.use("Agg")


def _toy():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(30, 5, generator=g), torch.arange(30) % 3
    return data.Dataset(x, y, x[:9].clone(), y[:9].clone(), 3, "toy")


# =================================================================================================
# data.CacheWarning
# =================================================================================================
@pytest.mark.reference
def test_load_cached_reads_good_files_and_reports_bad_ones(tmp_path):
    x, y = _valid(30, seed=1)
    key = "k30"
    path = tmp_path / "c.npz"
    data._write_cache(path, x, y, key)
    assert [p.name for p in tmp_path.iterdir()] == [
        "c.npz"
    ]  # no temporary file left behind
    gx, gy = data._load_cached(path, 30, key)
    np.testing.assert_array_equal(gx, x)
    np.testing.assert_array_equal(gy, y)
    with pytest.warns(data.CacheWarning, match="checksum"):
        assert data._load_cached(path, 30, "another key") is None
    with open(path, "wb") as fh:  # an extra entry
        np.savez(fh, x=x, y=y, digest=data._digest(x, y, key), extra=np.zeros(1))
    with pytest.warns(data.CacheWarning, match="unexpected entries"):
        assert data._load_cached(path, 30, key) is None


# =================================================================================================
# data.Dataset
# =================================================================================================
@pytest.mark.parametrize(
    "change,err,match",
    [
        (lambda x, y: (x, y[:5]), ValueError, "same number of rows"),
        (lambda x, y: (x, y.float()), TypeError, "y must be a 1-D torch.int64"),
        (lambda x, y: (x, y + 5), ValueError, r"y must hold labels in \[0, 3\)"),
        (lambda x, y: (x, y - 1), ValueError, "y must hold labels"),
        (lambda x, y: (x.long(), y), TypeError, "x must be a 2-D floating-point"),
        (lambda x, y: (x[0], y), TypeError, "x must be a 2-D"),
        (
            lambda x, y: (x.masked_fill(x > 1, float("nan")), y),
            ValueError,
            "x must hold finite",
        ),
        (lambda x, y: (x[:0], y[:0]), ValueError, "at least one training row"),
    ],
)
def test_dataset_refuses_inconsistent_tensors(change, err, match):
    x, y = _tiny()
    bx, by = change(x, y)
    with pytest.raises(err, match=match):
        data.Dataset(bx, by, x, y, num_classes=3)


def test_dataset_test_split_must_match():
    x, y = _tiny()
    with pytest.raises(ValueError, match="x_test must match"):
        data.Dataset(x, y, x[:, :2], y, num_classes=3)
    with pytest.raises(ValueError, match="x_test must match"):
        data.Dataset(x, y, x.double(), y, num_classes=3)
    with pytest.raises(ValueError, match="num_classes"):
        data.Dataset(x, y, x, y, num_classes=1)


@pytest.mark.parametrize(
    "idx,err,match",
    [
        ([0.5, 1.7], TypeError, "idx must hold integer"),
        ([0, 10], ValueError, r"idx must hold indices in \[0, 10\)"),
        ([-1], ValueError, "idx"),
        ([[0, 1]], ValueError, "one-dimensional"),
        (torch.tensor([True, False]), TypeError, "idx"),
        (["a"], TypeError, "idx"),
    ],
)
def test_subset_refuses_non_integer_or_out_of_range_indices(idx, err, match):
    x, y = _tiny()
    ds = data.Dataset(x, y, x, y, num_classes=3)
    with pytest.raises(err, match=match):
        ds.subset(idx)
    assert ds.subset(range(3)).n == 3 and ds.subset(np.array([1, 1, 2])).n == 3


def test_with_labels_refuses_float_labels():
    x, y = _tiny()
    ds = data.Dataset(x, y, x, y, num_classes=3)
    with pytest.raises(TypeError, match="integer"):
        ds.with_labels(y.float())
    with pytest.raises(ValueError, match="labels"):
        ds.with_labels(y + 3)


def test_dataset_to_names_a_bad_device():
    x, y = _tiny()
    with pytest.raises(ValueError, match="device must name a torch device"):
        data.Dataset(x, y, x, y, num_classes=3).to("nonsense")


@pytest.mark.reference
def test_dataset_properties_subset_and_with_labels():
    ds = _blobs(n=12, d=4, n_test=5)
    assert (ds.n, ds.dim) == (12, 4)
    sub = ds.subset([11, 0, 0, 5])  # order kept, repeats allowed, last row reachable
    assert (
        torch.equal(sub.x, ds.x[[11, 0, 0, 5]])
        and sub.y.tolist() == ds.y[[11, 0, 0, 5]].tolist()
    )
    assert (
        torch.equal(sub.x_test, ds.x_test)
        and sub.num_classes == 3
        and sub.name == "blobs"
    )
    assert (sub.n, sub.dim) == (4, 4)
    with pytest.raises(ValueError, match="at least one index"):
        ds.subset([])
    new = torch.tensor([2, 1, 0] * 4, dtype=torch.int32)
    lab = ds.with_labels(new)
    assert lab.y.dtype == torch.int64 and lab.y.tolist() == new.tolist()
    assert torch.equal(lab.x, ds.x) and torch.equal(lab.y_test, ds.y_test)
    assert (
        lab.name == "blobs" and ds.y.tolist() != new.tolist()
    )  # the original is unchanged
    moved = ds.to("cpu")
    assert (
        torch.equal(moved.x, ds.x)
        and moved.name == "blobs"
        and moved.x.device.type == "cpu"
    )
    with pytest.raises(TypeError, match="integer"):
        ds.with_labels(torch.zeros(12, dtype=torch.bool))


@pytest.mark.reference
def test_dataset_checks_the_test_split_and_allows_an_empty_one():
    ds = _blobs(n=8, n_test=3)
    empty = Dataset(ds.x, ds.y, ds.x[:0], ds.y[:0], num_classes=3)
    assert len(empty.y_test) == 0 and empty.n == 8
    with pytest.raises(ValueError, match="y_test"):
        Dataset(ds.x, ds.y, ds.x_test, torch.tensor([0, 1, 3]), num_classes=3)
    with pytest.raises(ValueError, match="x_test and y_test"):
        Dataset(ds.x, ds.y, ds.x_test, ds.y_test[:2], num_classes=3)
    with pytest.raises(ValueError, match="x_test must hold finite"):
        Dataset(
            ds.x,
            ds.y,
            ds.x_test.masked_fill(ds.x_test > 0, float("inf")),
            ds.y_test,
            3,
        )
    with pytest.raises(TypeError, match="y_test"):
        Dataset(ds.x, ds.y, ds.x_test, ds.y_test.int(), num_classes=3)
    with pytest.raises(TypeError, match="name"):
        Dataset(ds.x, ds.y, ds.x_test, ds.y_test, num_classes=3, name=None)
    with pytest.raises(ValueError, match="x_test must match x in features"):
        Dataset(ds.x, ds.y, ds.x_test[:, :4], ds.y_test, num_classes=3)
    with pytest.raises(ValueError, match="x_test must match x in features"):
        Dataset(ds.x, ds.y, ds.x_test.double(), ds.y_test, num_classes=3)
    # labels up to num_classes - 1 pass, and two classes are enough
    two = Dataset(
        ds.x, ds.y.clamp(max=1), ds.x_test, ds.y_test.clamp(max=1), num_classes=2
    )
    assert two.num_classes == 2
    assert (
        Dataset(
            ds.x.double(), ds.y, ds.x_test.double(), ds.y_test, num_classes=3
        ).dim
        == 5
    )


@pytest.mark.mutation
def test_subset_keeps_each_row_with_its_own_label():
    """``subset`` picks rows of x and y together: here each row's label is written in the row."""
    y = torch.tensor([0, 1, 2, 1, 0, 2], dtype=torch.int64)
    x = torch.stack([y.double(), torch.arange(6.0, dtype=torch.float64)], 1)
    ds = Dataset(x=x, y=y, x_test=x[:2], y_test=y[:2], num_classes=3)
    sub = ds.subset([4, 1, 5, 2])
    assert sub.x[:, 1].tolist() == [4.0, 1.0, 5.0, 2.0]
    assert sub.y.tolist() == sub.x[:, 0].long().tolist() == [0, 1, 2, 2]


# =================================================================================================
# data.mnist1d
# =================================================================================================
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


@pytest.mark.parametrize(
    "kw,err",
    [
        ({"n_train": 0}, ValueError),
        ({"n_test": -3}, ValueError),
        ({"n_train": 2.5}, TypeError),
    ],
)
def test_mnist1d_bad_sizes(kw, err):
    with pytest.raises(err, match=list(kw)[0]):
        data.mnist1d(**{"n_train": 10, "n_test": 10, **kw})


def test_cache_holds_no_pickle_and_never_runs_one(monkeypatch, tmp_path):
    ds, path = _fresh(monkeypatch, tmp_path)
    with np.load(path, allow_pickle=False) as z:  # plain arrays only
        assert sorted(z.files) == ["digest", "x", "y"] and z["x"].dtype == np.float32
    marker = tmp_path / "pwned"
    path.write_bytes(pickle.dumps(_Payload(marker)))
    again = _reload_warns(path)
    assert not marker.exists()
    assert torch.equal(again.x, ds.x) and torch.equal(again.y_test, ds.y_test)
    with warnings.catch_warnings():
        warnings.simplefilter(
            "error"
        )  # the file was replaced: no warning the next time
        data.mnist1d(200, 100, device="cpu")


def test_cache_writes_are_atomic_under_parallel_writers(monkeypatch, tmp_path):
    import concurrent.futures as cf

    monkeypatch.setenv("GTLIB_CACHE_DIR", str(tmp_path))
    with cf.ThreadPoolExecutor(4) as pool:
        results = list(
            pool.map(
                lambda _: data.mnist1d(100, 50, data_seed=3, device="cpu"), range(4)
            )
        )
    assert all(torch.equal(r.x, results[0].x) for r in results)
    assert [p.name for p in tmp_path.iterdir()] == [
        next(tmp_path.glob("*.npz")).name
    ]
    # many writers of one file: each writes its own temporary file, then renames it
    (path,) = tmp_path.glob("*.npz")
    key = f"{data._CACHE_VERSION}-150-3"
    x, y = data._mnist1d_arrays(150, 3, tmp_path)
    with cf.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: data._write_cache(path, x, y, key), range(32)))
    assert (
        data._load_cached(path, 150, key) is not None
        and len(list(tmp_path.iterdir())) == 1
    )


def test_an_unwritable_cache_folder_only_warns(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setattr(data, "read_cache_dir", lambda: blocker / "sub")
    with pytest.warns(data.CacheWarning, match="could not write"):
        assert data.mnist1d(20, 10, device="cpu").n == 20


def test_mnist1d_train_and_test_are_disjoint_consecutive_slices(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("GTLIB_CACHE_DIR", str(tmp_path))
    ds = data.mnist1d(200, 100, device="cpu")
    x, y = data._mnist1d_arrays(300, 42, tmp_path)
    assert torch.equal(ds.x, torch.from_numpy(x[:200])) and torch.equal(
        ds.y, torch.from_numpy(y[:200])
    )
    assert torch.equal(ds.x_test, torch.from_numpy(x[200:300]))
    # no test signal equals a training signal (a shifted split would share rows)
    d = torch.cdist(ds.x_test.double(), ds.x.double())
    assert float(d.min()) > 1e-3


def test_mnist1d_with_explicit_device_ignores_a_bad_gtlib_device(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("GTLIB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GTLIB_DEVICE", "tpu")
    assert data.mnist1d(20, 10, device="cpu").x.device.type == "cpu"
    with pytest.raises(ValueError, match="GTLIB_DEVICE"):
        data.mnist1d(20, 10)


@pytest.mark.parametrize(
    "kw,err,match",
    [
        ({"n_train": 10**7}, ValueError, "n_train"),
        ({"data_seed": 2**40}, ValueError, "data_seed"),
        ({"data_seed": -1}, ValueError, "data_seed"),
    ],
)
def test_mnist1d_bad_request(kw, err, match):
    with pytest.raises(err, match=match):
        data.mnist1d(**{"n_train": 10, "n_test": 10, **kw})


@pytest.mark.reference
def test_mnist1d_is_the_packages_own_train_test_split(cache):
    """mnist1d(40, 10) is make_dataset(num_samples=50, train_split=0.8): same rows, same order."""
    ref = _mnist1d_reference(50, 9, train_split=0.8)
    ds = data.mnist1d(40, 10, data_seed=9, device="cpu")
    np.testing.assert_array_equal(ds.x.numpy(), ref["x"].astype(np.float32))
    np.testing.assert_array_equal(
        ds.x_test.numpy(), ref["x_test"].astype(np.float32)
    )
    np.testing.assert_array_equal(ds.y.numpy(), ref["y"])
    np.testing.assert_array_equal(ds.y_test.numpy(), ref["y_test"])
    assert (ds.num_classes, ds.name, ds.x.dtype, ds.y.dtype) == (
        10,
        "MNIST-1D",
        torch.float32,
        torch.int64,
    )


@pytest.mark.reference
def test_mnist1d_rounds_the_generated_set_up_and_slices_it(cache):
    """47 signals asked: 50 generated (5 per class), standardized together, first 31 train,
    next 16 test; the last 3 are dropped."""
    ref = _mnist1d_reference(50, 5)
    ds = data.mnist1d(31, 16, data_seed=5, device="cpu")
    np.testing.assert_array_equal(ds.x.numpy(), ref["x"][:31].astype(np.float32))
    np.testing.assert_array_equal(
        ds.x_test.numpy(), ref["x"][31:47].astype(np.float32)
    )
    np.testing.assert_array_equal(ds.y_test.numpy(), ref["y"][31:47])
    (path,) = cache.glob("*.npz")
    assert path.name.startswith("mnist1d_50_5_")


@pytest.mark.reference
def test_mnist1d_is_standardized_over_the_generated_set(cache):
    ds = data.mnist1d(60, 40, data_seed=3, device="cpu")
    allx = torch.cat([ds.x, ds.x_test]).double()
    assert abs(float(allx.mean())) < 1e-5 and float(
        allx.std(unbiased=False)
    ) == pytest.approx(1.0, abs=1e-5)
    counts = torch.bincount(torch.cat([ds.y, ds.y_test]), minlength=10)
    assert counts.tolist() == [10] * 10


@pytest.mark.reference
def test_mnist1d_data_seed_and_cache_keys_keep_requests_apart(cache):
    a = data.mnist1d(30, 10, data_seed=1, device="cpu")
    b = data.mnist1d(30, 10, data_seed=2, device="cpu")
    c = data.mnist1d(50, 10, data_seed=1, device="cpu")  # another size, same seed
    assert not torch.equal(a.x, b.x)
    for ds, (n, s) in ((a, (40, 1)), (b, (40, 2)), (c, (60, 1))):
        ref = _mnist1d_reference(n, s)
        np.testing.assert_array_equal(
            torch.cat([ds.x, ds.x_test]).numpy(), ref["x"].astype(np.float32)
        )
    assert len(list(cache.glob("*.npz"))) == 3
    # read back from the cache: identical, without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = data.mnist1d(30, 10, data_seed=2, device="cpu")
    assert torch.equal(again.x, b.x) and torch.equal(again.y_test, b.y_test)


@pytest.mark.reference
def test_mnist1d_leaves_pythons_random_alone(cache):
    random.seed(5)
    want = random.random()
    random.seed(5)
    data.mnist1d(20, 10, data_seed=8, device="cpu")
    assert random.random() == want


@pytest.mark.reference
def test_mnist1d_size_limits(cache, monkeypatch):
    monkeypatch.setattr(data, "MNIST1D_MAX_SAMPLES", 30)
    assert data.mnist1d(20, 10, device="cpu").n == 20  # exactly at the limit
    with pytest.raises(ValueError, match="n_train"):
        data.mnist1d(20, 11, device="cpu")
    assert data.MNIST1D_LENGTH == 40 and data.MNIST1D_CLASSES == 10


@pytest.mark.reference
@pytest.mark.parametrize(
    "kw,match",
    [
        ({"n_test": 0}, "n_test"),
        ({"n_train": 0}, "n_train"),
        ({"n_train": True}, "n_train"),
        ({"data_seed": 2**32}, "data_seed"),
    ],
)
def test_mnist1d_refuses_empty_splits_and_seeds_past_the_range(cache, kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        data.mnist1d(**{"n_train": 10, "n_test": 10, "device": "cpu", **kw})
    assert not list(cache.iterdir())  # refused before anything is generated


@pytest.mark.reference
def test_mnist1d_accepts_the_largest_data_seed(cache):
    ds = data.mnist1d(10, 10, data_seed=2**32 - 1, device="cpu")
    assert ds.n == 10 and len(ds.y_test) == 10


@pytest.mark.reference
def test_a_bad_cache_file_is_replaced_by_the_reference_data(cache):
    good = data.mnist1d(20, 10, data_seed=6, device="cpu")
    (path,) = cache.glob("*.npz")
    x, y = _valid(30, seed=2)
    with open(
        path, "wb"
    ) as fh:  # consistent in itself, but someone else's data under this name
        np.savez(fh, x=x, y=y, digest=data._digest(x, y, "mnist1d-v2-30-7"))
    with pytest.warns(data.CacheWarning, match=path.name):
        again = data.mnist1d(20, 10, data_seed=6, device="cpu")
    assert torch.equal(again.x, good.x)
    with np.load(path) as z:  # the file now holds the regenerated data
        np.testing.assert_array_equal(z["x"][:20], good.x.numpy())


@pytest.mark.reference
def test_another_seeds_intact_file_under_this_name_is_refused(cache):
    """The checksum's key names the seed: seed 7's genuine file copied over seed 6's is caught."""
    six = data.mnist1d(20, 10, data_seed=6, device="cpu")
    (p6,) = cache.glob("*.npz")
    data.mnist1d(20, 10, data_seed=7, device="cpu")
    (p7,) = [p for p in cache.glob("*.npz") if p != p6]
    p6.write_bytes(p7.read_bytes())
    with pytest.warns(data.CacheWarning, match="checksum"):
        again = data.mnist1d(20, 10, data_seed=6, device="cpu")
    assert torch.equal(again.x, six.x) and torch.equal(again.y_test, six.y_test)


@pytest.mark.mutation
def test_mnist1d_gives_exactly_the_sizes_asked_when_not_a_multiple_of_ten(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("GTLIB_CACHE_DIR", str(tmp_path))
    ds = mnist1d(n_train=35, n_test=12, device="cpu")
    assert (ds.n, len(ds.y), len(ds.x_test), len(ds.y_test)) == (35, 35, 12, 12)


# =================================================================================================
# data.digits
# =================================================================================================
def test_digits():
    d = data.digits(test_fraction=0.25)
    assert d.x.shape[1] == 64 and d.n + len(d.y_test) == 1797
    assert 0 <= float(d.x.min()) and float(d.x.max()) <= 1
    with pytest.raises(ValueError, match="test_fraction"):
        data.digits(test_fraction=1.0)


def test_digits_split_sizes():
    d = data.digits(test_fraction=0.25, device="cpu")
    assert len(d.y_test) == round(0.25 * 1797) and d.n == 1797 - round(0.25 * 1797)


@pytest.mark.reference
def test_digits_split_is_a_seeded_permutation_of_sklearns_digits():
    from sklearn.datasets import load_digits

    raw = load_digits()
    ds = data.digits(test_fraction=0.1, seed=5, device="cpu")
    perm = torch.randperm(1797, generator=torch.Generator().manual_seed(5))
    n_test = 180  # round(179.7)
    te, tr = perm[:n_test].numpy(), perm[n_test:].numpy()
    np.testing.assert_allclose(
        ds.x_test.numpy(), raw.data[te] / 16.0, rtol=0, atol=1e-7
    )
    np.testing.assert_allclose(ds.x.numpy(), raw.data[tr] / 16.0, rtol=0, atol=1e-7)
    np.testing.assert_array_equal(ds.y.numpy(), raw.target[tr])
    np.testing.assert_array_equal(ds.y_test.numpy(), raw.target[te])
    assert (ds.num_classes, ds.name, ds.x.dtype) == (10, "digits", torch.float32)
    assert float(ds.x.max()) == 1.0 and float(ds.x.min()) == 0.0
    other = data.digits(test_fraction=0.1, seed=6, device="cpu")
    assert not torch.equal(other.y_test, ds.y_test) and other.n == ds.n


@pytest.mark.reference
def test_digits_refuses_bad_seeds():
    for bad in (-1, 2**64, 1.5):
        with pytest.raises((ValueError, TypeError), match="seed"):
            data.digits(seed=bad)


@pytest.mark.reference
def test_digits_rounds_the_test_size():
    assert len(data.digits(test_fraction=0.3, device="cpu").y_test) == 539  # 539.1
    assert (
        len(data.digits(test_fraction=0.0003, device="cpu").y_test) == 1
    )  # 0.54 rounds up
    with pytest.raises(ValueError, match="test_fraction"):
        data.digits(test_fraction=0.0)


# =================================================================================================
# data.corrupt_labels
# =================================================================================================
def test_corrupt_labels_fraction_and_nesting():
    y = torch.arange(1000) % 10
    assert torch.equal(data.corrupt_labels(y, 0.0, 10), y)
    half = data.corrupt_labels(y, 0.5, 10, seed=1)
    changed = (half != y).float().mean().item()
    assert (
        abs(changed - 0.5 * 0.9) < 0.05
    )  # a random label equals the true one 1 time in 10
    full = data.corrupt_labels(y, 1.0, 10, seed=1)
    assert torch.equal(
        full[half != y], half[half != y]
    )  # smaller corruption is nested in larger
    assert torch.equal(data.corrupt_labels(y, 0.5, 10, seed=1), half)


@pytest.mark.parametrize(
    "args,err,match",
    [
        ((1.5, 10), ValueError, "fraction"),
        ((-0.1, 10), ValueError, "fraction"),
        (("a", 10), TypeError, "fraction"),
        ((0.5, 1), ValueError, "num_classes"),
    ],
)
def test_corrupt_labels_bad_input(args, err, match):
    with pytest.raises(err, match=match):
        data.corrupt_labels(torch.zeros(5, dtype=torch.int64), *args)
    with pytest.raises(TypeError, match="y"):
        data.corrupt_labels(torch.zeros(5), 0.5, 10)


def test_corrupt_labels_resamples_exactly_the_fraction():
    # with a million classes a resampled label almost never equals the old one (p = 1e-6 each)
    y = torch.zeros(1000, dtype=torch.int64)
    for frac, k in ((0.3, 300), (0.05, 50), (1.0, 1000)):
        changed = int((data.corrupt_labels(y, frac, 10**6, seed=4) != y).sum())
        assert (
            changed == k
        )  # (deterministic for this seed; a coincidence would cost at most 1)


@pytest.mark.reference
@pytest.mark.parametrize(
    "fraction,classes,seed", [(0.35, 4, 3), (0.8, 7, 0), (1.0, 3, 12), (0.02, 5, 1)]
)
def test_corrupt_labels_is_the_loop_reference(fraction, classes, seed):
    y = torch.arange(50) % classes
    y = y[torch.randperm(50, generator=torch.Generator().manual_seed(99))]
    got = data.corrupt_labels(y, fraction, classes, seed=seed)
    assert got.tolist() == _corrupt_reference(y, fraction, classes, seed)
    assert (
        got.dtype == torch.int64
        and y.tolist()
        == (torch.arange(50) % classes)[
            torch.randperm(50, generator=torch.Generator().manual_seed(99))
        ].tolist()
    )  # y unchanged


@pytest.mark.reference
def test_corrupt_labels_rounds_the_count_and_seeds_matter():
    y = torch.zeros(10, dtype=torch.int64)
    # with 10**6 classes a redrawn label is (all but surely) new: count the redrawn points
    for frac, k in ((0.35, 4), (0.34, 3), (0.96, 10), (0.04, 0), (0.06, 1)):
        assert int((data.corrupt_labels(y, frac, 10**6, seed=2) != y).sum()) == k, (
            frac
        )
    a = data.corrupt_labels(torch.arange(40) % 4, 0.5, 4, seed=1)
    b = data.corrupt_labels(torch.arange(40) % 4, 0.5, 4, seed=2)
    assert not torch.equal(a, b)
    assert int(data.corrupt_labels(torch.arange(40) % 4, 0.5, 4).max()) <= 3


@pytest.mark.reference
def test_corrupt_labels_keeps_dtype_and_refuses_labels_out_of_range():
    y = torch.tensor([0, 2, 1, 2], dtype=torch.int32)
    out = data.corrupt_labels(y, 1.0, 3, seed=0)
    assert out.dtype == torch.int32 and out.device == y.device
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        data.corrupt_labels(torch.tensor([0, 3]), 0.5, 3)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        data.corrupt_labels(torch.tensor([-1, 2]), 0.5, 3)
    assert (
        data.corrupt_labels(torch.tensor([0, 2]), 0.5, 3).tolist() is not None
    )  # 2 is valid
    with pytest.raises(ValueError, match="at least one"):
        data.corrupt_labels(torch.zeros(0, dtype=torch.int64), 0.5, 3)
    with pytest.raises(TypeError, match="y"):
        data.corrupt_labels(torch.zeros(2, 2, dtype=torch.int64), 0.5, 3)


@pytest.mark.boundary
def test_dataset_boundaries():
    ds = _toy()
    with pytest.raises(ValueError, match="idx"):
        ds.subset([])
    with pytest.raises(ValueError, match="y"):
        data.corrupt_labels(ds.y[:0], 0.5, 3)
    with pytest.raises(TypeError, match="ds"):
        data.long_tailed(None, 2.0)


@pytest.mark.mutation
def test_fully_corrupted_labels_are_uniform_over_every_class():
    """At fraction 1 the labels are uniform on all C classes: each of 10 classes gets about
    300 of 3000 (binomial sd about 16; 200 is more than 6 sd away)."""
    out = corrupt_labels(torch.zeros(3000, dtype=torch.int64), 1.0, 10, seed=0)
    counts = torch.bincount(out, minlength=10)
    assert len(counts) == 10 and int(counts.min()) > 200


# =================================================================================================
# data.long_tail_indices
# =================================================================================================
def test_long_tail_profile():
    y = torch.arange(1000) % 10  # 100 per class
    idx = data.long_tail_indices(y, 10.0, 10)
    counts = torch.bincount(y[idx], minlength=10)
    assert counts[0] == 100 and counts[-1] == 10
    assert all(counts[i] >= counts[i + 1] for i in range(9))
    assert torch.equal(
        torch.bincount(y[data.long_tail_indices(y, 1, 10)]), torch.full((10,), 100)
    )


def test_long_tail_bad_ratio():
    y = torch.arange(100) % 10
    with pytest.raises(ValueError, match="imbalance_ratio"):
        data.long_tail_indices(y, 0.5, 10)
    with pytest.raises(ValueError, match="every class"):
        data.long_tail_indices(torch.zeros(10, dtype=torch.int64), 2, 10)


@pytest.mark.parametrize(
    "ratio,err",
    [
        (float("inf"), ValueError),
        (float("nan"), ValueError),
        (0.5, ValueError),
        ("2", TypeError),
        (True, TypeError),
    ],
)
def test_long_tail_refuses_non_finite_ratios(ratio, err):
    with pytest.raises(err, match="imbalance_ratio"):
        data.long_tail_indices(torch.arange(30) % 3, ratio, 3)


def test_transforms_refuse_bad_labels_and_seeds():
    with pytest.raises(ValueError, match="y must hold labels"):
        data.long_tail_indices(torch.arange(30) % 4, 2.0, 3)
    with pytest.raises(ValueError, match="seed"):
        data.corrupt_labels(torch.arange(30) % 3, 0.5, 3, seed=2**70)
    with pytest.raises(ValueError, match="seed"):
        data.long_tail_indices(torch.arange(30) % 3, 2.0, 3, seed=-1)


@pytest.mark.reference
def test_long_tail_counts_by_hand_on_unbalanced_classes():
    # class sizes 50, 40, 30: n_max is the SMALLEST count (30); ratio 9 over C - 1 = 2 steps:
    # class 0 keeps 30, class 1 keeps 30 / 3 = 10, class 2 keeps 30 / 9 = 3.33 -> 3
    y = torch.cat([torch.zeros(50), torch.ones(40), torch.full((30,), 2)]).long()
    y = y[torch.randperm(120, generator=torch.Generator().manual_seed(0))]
    idx = data.long_tail_indices(y, 9.0, 3, seed=4)
    assert torch.bincount(y[idx], minlength=3).tolist() == [30, 10, 3]
    assert idx.tolist() == _long_tail_reference(y, 9.0, 3, 4)
    assert idx.tolist() == sorted(set(idx.tolist())) and idx.dtype == torch.int64


@pytest.mark.reference
def test_long_tail_tail_keeps_at_least_one_point_and_reference_at_other_settings():
    y = torch.arange(20) % 2
    idx = data.long_tail_indices(
        y, 1000.0, 2, seed=0
    )  # 10 / 1000 rounds to 0: keep 1
    assert torch.bincount(y[idx], minlength=2).tolist() == [10, 1]
    y5 = (torch.arange(100) * 7) % 5
    for ratio, seed in ((2.5, 1), (100.0, 7)):
        assert data.long_tail_indices(
            y5, ratio, 5, seed=seed
        ).tolist() == _long_tail_reference(y5, ratio, 5, seed)
    # 20 per class, ratio 2.5 over 4 steps: 20 * 2.5 ** (-k / 4) = 20, 15.9, 12.6, 10.06, 8
    counts = torch.bincount(
        y5[data.long_tail_indices(y5, 2.5, 5, seed=1)], minlength=5
    )
    assert counts.tolist() == [20, 16, 13, 10, 8]


@pytest.mark.reference
def test_long_tail_seeds_and_class_order():
    y = torch.arange(60) % 3
    a = data.long_tail_indices(y, 4.0, 3, seed=0)
    assert torch.equal(a, data.long_tail_indices(y, 4.0, 3, seed=0))
    assert not torch.equal(a, data.long_tail_indices(y, 4.0, 3, seed=1))
    assert torch.bincount(y[a], minlength=3).tolist() == [
        20,
        10,
        5,
    ]  # the head is class 0


@pytest.mark.mutation
def test_long_tail_subsample_is_random_within_each_class():
    """Different seeds keep different points of a class (not always its first n_k)."""
    y = torch.arange(400) % 4
    a, b = (
        long_tail_indices(y, 10.0, 4, seed=0),
        long_tail_indices(y, 10.0, 4, seed=1),
    )
    assert len(a) == len(b) and not torch.equal(a, b)
    first = torch.nonzero(y == 3).flatten()[: int((y[a] == 3).sum())]
    assert not torch.equal(a[y[a] == 3], first)


# =================================================================================================
# data.long_tailed
# =================================================================================================
def test_dataset_helpers(ds):
    sub = data.long_tailed(ds, 5.0)
    assert sub.n < ds.n and torch.equal(sub.x_test, ds.x_test)
    with pytest.raises(ValueError, match="y must be"):
        ds.with_labels(torch.zeros(3, dtype=torch.int64))


@pytest.mark.reference
def test_long_tailed_is_the_subset_at_those_indices():
    ds = _blobs(n=60, n_test=7)
    for seed in (0, 3):
        sub = data.long_tailed(ds, 3.0, seed=seed)
        idx = data.long_tail_indices(ds.y, 3.0, 3, seed=seed)
        assert torch.equal(sub.x, ds.x[idx]) and torch.equal(sub.y, ds.y[idx])
        assert torch.equal(sub.x_test, ds.x_test) and torch.equal(
            sub.y_test, ds.y_test
        )
    assert not torch.equal(
        data.long_tailed(ds, 3.0, seed=0).x, data.long_tailed(ds, 3.0, seed=3).x
    )
    with pytest.raises(TypeError, match="ds"):
        data.long_tailed((ds.x, ds.y), 2.0)


# =================================================================================================
# data._digest
# =================================================================================================
@pytest.mark.reference
def test_digest_is_sha256_of_key_then_each_arrays_dtype_shape_and_bytes():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([2, 0], dtype=np.int64)
    h = hashlib.sha256(b"the-key")
    h.update(str(("<f4", (2, 3))).encode())
    h.update(x.tobytes())
    h.update(str(("<i8", (2,))).encode())
    h.update(y.tobytes())
    got = data._digest(x, y, "the-key")
    assert got.dtype == np.uint8 and got.tobytes() == h.digest()
    assert not np.array_equal(got, data._digest(x, y, "the-kez"))
    assert not np.array_equal(got, data._digest(x.reshape(3, 2), y, "the-key"))
    assert not np.array_equal(
        got,
        data._digest(
            y.astype(np.float32).reshape(1, 2), x.ravel().astype(np.int64), "the-key"
        ),
    )
    # a non-contiguous view hashes as its contiguous copy
    xt = np.ascontiguousarray(x.T)
    assert np.array_equal(data._digest(x.T, y, "k"), data._digest(xt, y, "k"))


# =================================================================================================
# data._validate_arrays
# =================================================================================================
@pytest.mark.reference
def test_validate_arrays_accepts_exact_data_and_names_each_fault():
    x, y = _valid()
    key = "k"
    ok = data._digest(x, y, key)
    assert data._validate_arrays(x, y, ok, 20, key) is None

    def reason(x2, y2, n=20):
        return data._validate_arrays(x2, y2, data._digest(x2, y2, key), n, key)

    assert "float32" in reason(x.astype(np.float64), y)
    assert "float32" in reason(x[0], y)
    assert "shape" in reason(x[:, :39], y)
    assert "shape" in reason(x[:10], y[:10])
    bad = x.copy()
    bad[19, 39] = np.inf
    assert "NaN or inf" in reason(bad, y)
    assert "int64" in reason(x, y.astype(np.int32))
    assert "int64" in reason(x, y[:19])
    hi = y.copy()
    hi[hi == 9] = 10  # exactly the first label out of range
    assert "labels outside" in reason(x, hi)
    lo = y.copy()
    lo[lo == 0] = -1
    assert "labels outside" in reason(x, lo)
    skew = y.copy()
    skew[skew == 3] = 4  # in range, but class 3 empty and class 4 doubled
    assert "class counts" in reason(x, skew)
    near = y.copy()
    near[int(np.flatnonzero(near == 3)[0])] = (
        4  # counts 1 and 3 instead of 2 and 2: off by one
    )
    assert "class counts" in reason(x, near)
    assert "checksum" in data._validate_arrays(x, y, ok, 20, "other")
    y2 = y.copy()
    i, j = int(np.flatnonzero(y2 == 1)[0]), int(np.flatnonzero(y2 == 2)[0])
    y2[i], y2[j] = 2, 1  # same counts, other order
    assert "checksum" in data._validate_arrays(x, y2, ok, 20, key)


# =================================================================================================
# gtlib.data as a whole
# =================================================================================================
def test_mnist1d_shapes_and_balance(ds):
    assert ds.x.shape == (200, 40) and ds.x_test.shape == (100, 40)
    assert ds.x.dtype == torch.float32 and ds.y.dtype == torch.int64
    counts = torch.bincount(torch.cat([ds.y, ds.y_test]), minlength=10)
    assert counts.min() >= 25 and counts.max() <= 35


@pytest.mark.parametrize("damage", ["truncated", "empty", "zeroed", "object_array"])
def test_unreadable_cache_files_are_regenerated(monkeypatch, tmp_path, damage):
    ds, path = _fresh(monkeypatch, tmp_path)
    raw = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "zeroed":
        path.write_bytes(bytes(len(raw)))
    else:
        with open(path, "wb") as fh:
            np.savez(
                fh,
                x=np.array([_Payload(tmp_path / "pwned")], dtype=object),
                y=np.zeros(3),
                digest=np.zeros(32, np.uint8),
            )
    again = _reload_warns(path)
    assert torch.equal(again.x, ds.x) and torch.equal(again.y, ds.y)
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    "damage",
    [
        "nan_rows",
        "reversed_labels",
        "too_few_rows",
        "float_labels",
        "labels_out_of_range",
        "no_digest",
    ],
)
def test_well_formed_files_with_wrong_data_are_regenerated(
    monkeypatch, tmp_path, damage
):
    ds, path = _fresh(monkeypatch, tmp_path)
    with np.load(path) as z:
        x, y, digest = z["x"].copy(), z["y"].copy(), z["digest"].copy()
    entries = {"x": x, "y": y, "digest": digest}
    if damage == "nan_rows":
        x[:5] = np.nan
    elif damage == "reversed_labels":
        entries["y"] = y[::-1].copy()
    elif damage == "too_few_rows":
        entries["x"], entries["y"] = x[:40], y[:40]
    elif damage == "float_labels":
        entries["y"] = y.astype(np.float32)
    elif damage == "labels_out_of_range":
        entries["y"] = y + 1
    else:
        del entries["digest"]
    with open(path, "wb") as fh:
        np.savez(fh, **entries)
    again = _reload_warns(path)
    assert torch.equal(again.x, ds.x) and torch.equal(again.y, ds.y)
