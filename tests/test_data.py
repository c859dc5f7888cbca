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


# -- the MNIST-1D cache never executes code and repairs bad files ---------------------------------
import pickle  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402


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
        return (open, (str(self.marker), "w"))  # loading this pickle would create the marker file


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
        warnings.simplefilter("error")  # the file was replaced: no warning the next time
        data.mnist1d(200, 100, device="cpu")


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
            np.savez(fh, x=np.array([_Payload(tmp_path / "pwned")], dtype=object),
                     y=np.zeros(3), digest=np.zeros(32, np.uint8))
    again = _reload_warns(path)
    assert torch.equal(again.x, ds.x) and torch.equal(again.y, ds.y)
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("damage", ["nan_rows", "reversed_labels", "too_few_rows", "float_labels",
                                    "labels_out_of_range", "no_digest"])
def test_well_formed_files_with_wrong_data_are_regenerated(monkeypatch, tmp_path, damage):
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


def test_cache_writes_are_atomic_under_parallel_writers(monkeypatch, tmp_path):
    import concurrent.futures as cf

    monkeypatch.setenv("GTLIB_CACHE_DIR", str(tmp_path))
    with cf.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: data.mnist1d(100, 50, data_seed=3, device="cpu"),
                                range(4)))
    assert all(torch.equal(r.x, results[0].x) for r in results)
    assert [p.name for p in tmp_path.iterdir()] == [next(tmp_path.glob("*.npz")).name]
    # many writers of one file: each writes its own temporary file, then renames it
    (path,) = tmp_path.glob("*.npz")
    key = f"{data._CACHE_VERSION}-150-3"
    x, y = data._mnist1d_arrays(150, 3, tmp_path)
    with cf.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: data._write_cache(path, x, y, key), range(32)))
    assert data._load_cached(path, 150, key) is not None and len(list(tmp_path.iterdir())) == 1


def test_an_unwritable_cache_folder_only_warns(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setattr(data, "read_cache_dir", lambda: blocker / "sub")
    with pytest.warns(data.CacheWarning, match="could not write"):
        assert data.mnist1d(20, 10, device="cpu").n == 20


def test_mnist1d_train_and_test_are_disjoint_consecutive_slices(monkeypatch, tmp_path):
    monkeypatch.setenv("GTLIB_CACHE_DIR", str(tmp_path))
    ds = data.mnist1d(200, 100, device="cpu")
    x, y = data._mnist1d_arrays(300, 42, tmp_path)
    assert torch.equal(ds.x, torch.from_numpy(x[:200])) and torch.equal(ds.y, torch.from_numpy(y[:200]))
    assert torch.equal(ds.x_test, torch.from_numpy(x[200:300]))
    # no test signal equals a training signal (a shifted split would share rows)
    d = torch.cdist(ds.x_test.double(), ds.x.double())
    assert float(d.min()) > 1e-3


def test_mnist1d_with_explicit_device_ignores_a_bad_gtlib_device(monkeypatch, tmp_path):
    monkeypatch.setenv("GTLIB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GTLIB_DEVICE", "tpu")
    assert data.mnist1d(20, 10, device="cpu").x.device.type == "cpu"
    with pytest.raises(ValueError, match="GTLIB_DEVICE"):
        data.mnist1d(20, 10)


@pytest.mark.parametrize("kw,err,match", [({"n_train": 10**7}, ValueError, "n_train"),
                                          ({"data_seed": 2**40}, ValueError, "data_seed"),
                                          ({"data_seed": -1}, ValueError, "data_seed")])
def test_mnist1d_bad_request(kw, err, match):
    with pytest.raises(err, match=match):
        data.mnist1d(**{"n_train": 10, "n_test": 10, **kw})


# -- Dataset and transforms refuse bad input, naming it ----------------------------------------------
def _tiny(n=10, d=3, classes=3):
    g = torch.Generator().manual_seed(0)
    return torch.randn(n, d, generator=g), torch.arange(n) % classes


@pytest.mark.parametrize("change,err,match", [
    (lambda x, y: (x, y[:5]), ValueError, "same number of rows"),
    (lambda x, y: (x, y.float()), TypeError, "y must be a 1-D torch.int64"),
    (lambda x, y: (x, y + 5), ValueError, r"y must hold labels in \[0, 3\)"),
    (lambda x, y: (x, y - 1), ValueError, "y must hold labels"),
    (lambda x, y: (x.long(), y), TypeError, "x must be a 2-D floating-point"),
    (lambda x, y: (x[0], y), TypeError, "x must be a 2-D"),
    (lambda x, y: (x.masked_fill(x > 1, float("nan")), y), ValueError, "x must hold finite"),
    (lambda x, y: (x[:0], y[:0]), ValueError, "at least one training row")])
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


@pytest.mark.parametrize("idx,err,match", [([0.5, 1.7], TypeError, "idx must hold integer"),
                                           ([0, 10], ValueError, r"idx must hold indices in \[0, 10\)"),
                                           ([-1], ValueError, "idx"),
                                           ([[0, 1]], ValueError, "one-dimensional"),
                                           (torch.tensor([True, False]), TypeError, "idx"),
                                           (["a"], TypeError, "idx")])
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


@pytest.mark.parametrize("ratio,err", [(float("inf"), ValueError), (float("nan"), ValueError),
                                       (0.5, ValueError), ("2", TypeError), (True, TypeError)])
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


def test_corrupt_labels_resamples_exactly_the_fraction():
    # with a million classes a resampled label almost never equals the old one (p = 1e-6 each)
    y = torch.zeros(1000, dtype=torch.int64)
    for frac, k in ((0.3, 300), (0.05, 50), (1.0, 1000)):
        changed = int((data.corrupt_labels(y, frac, 10**6, seed=4) != y).sum())
        assert changed == k  # (deterministic for this seed; a coincidence would cost at most 1)


def test_digits_split_sizes():
    d = data.digits(test_fraction=0.25, device="cpu")
    assert len(d.y_test) == round(0.25 * 1797) and d.n == 1797 - round(0.25 * 1797)


def test_dataset_to_names_a_bad_device():
    x, y = _tiny()
    with pytest.raises(ValueError, match="device must name a torch device"):
        data.Dataset(x, y, x, y, num_classes=3).to("nonsense")
