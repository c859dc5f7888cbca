"""gtlib.preliminaries and gtlib.data against references they cannot share a bug with (issue 19,
section 6): the ``mnist1d`` package called directly, scikit-learn's digits, hashlib, loop-based
re-implementations written here, and hand counts on tiny, deliberately unbalanced inputs. Every
parameter is set to a non-default value somewhere and must change the result."""
import hashlib
import random
import warnings

import numpy as np
import pytest
import torch

from gtlib import data
from gtlib import preliminaries as prelim
from gtlib.data import Dataset
from gtlib.train import TrainConfig, train_sequentially


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _blobs(n=30, d=5, n_test=11, classes=3, seed=0, dtype=torch.float32):
    """Unbalanced, learnable labels and a test split of another size than the training split."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=dtype)
    xt = torch.randn(n_test, d, generator=g, dtype=dtype)
    w = torch.randn(d, classes, generator=g, dtype=dtype)
    return Dataset(x=x, y=(x @ w).argmax(1), x_test=xt, y_test=(xt @ w).argmax(1),
                   num_classes=classes, name="blobs")


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


# ---------------------------------------------------------------------------------------------
# preliminaries: PrelimConfig
# ---------------------------------------------------------------------------------------------
def test_prelim_config_defaults_are_the_mnist1d_readme_settings():
    c = prelim.PrelimConfig()
    assert (c.n_train, c.n_test, c.width, c.depth, c.seeds, c.epochs, c.batch_size) == \
        (4000, 1000, 100, 2, 3, 60, 100)
    assert c.lr == 1e-2 and c.weight_decay == 0.0
    assert (c.ensemble_members, c.ensemble_steps) == (8, 250)
    f = prelim.PrelimConfig.full()
    assert (f.seeds, f.epochs, f.ensemble_members, f.ensemble_steps) == (10, 200, 32, 1000)
    assert (f.n_train, f.n_test, f.width, f.depth, f.batch_size, f.lr) == \
        (4000, 1000, 100, 2, 100, 1e-2)


@pytest.mark.parametrize("field,bad", [("n_train", 0), ("width", 0), ("seeds", 0), ("epochs", 0),
                                       ("batch_size", 0), ("lr", 0.0), ("lr", -1e-3),
                                       ("weight_decay", -1e-3), ("ensemble_members", 0),
                                       ("ensemble_steps", 0), ("depth", -1)])
def test_prelim_config_refuses_values_outside_its_ranges(field, bad):
    with pytest.raises((ValueError, TypeError), match=field):
        prelim.PrelimConfig(**{field: bad})


def test_prelim_config_accepts_its_edge_values():
    c = prelim.PrelimConfig(depth=0, weight_decay=0.0, n_train=1, seeds=1)
    assert (c.depth, c.weight_decay, c.n_train, c.seeds) == (0, 0.0, 1, 1)


# ---------------------------------------------------------------------------------------------
# preliminaries: train_models
# ---------------------------------------------------------------------------------------------
def _spy(monkeypatch, name):
    calls = []
    real = getattr(prelim, name)

    def spy(*a, **kw):
        calls.append((a, kw))
        return real(*a, **kw)

    monkeypatch.setattr(prelim, name, spy)
    return calls


def test_train_models_passes_every_setting_of_the_config_to_training(monkeypatch):
    ds = _blobs()
    calls = _spy(monkeypatch, "train_ensemble")
    cfg = prelim.PrelimConfig(width=7, depth=3, seeds=3, epochs=2, batch_size=9, lr=0.037,
                              weight_decay=0.21)
    model, _ = prelim.train_models(ds, cfg, depth=1, seed=2)
    (args, kw), = calls
    tc = args[3]
    assert (tc.optimizer, tc.lr, tc.weight_decay, tc.batch_size, tc.epochs, tc.steps) == \
        ("adamw", 0.037, 0.21, 9, 2, None)
    assert tc.target_train_acc is None and tc.margin_gamma is None and tc.loss == "cross_entropy"
    assert list(kw["seeds"]) == [2000, 2001, 2002]
    assert args[0] is model and args[1] is ds.x and args[2] is ds.y


def test_train_models_is_each_member_trained_alone_with_its_seed():
    """Reference: train_sequentially (torch.optim.AdamW, one model after another), seeds
    seed * 1000 + i; the ``depth`` argument (not cfg.depth) and cfg.width set the architecture."""
    ds = _blobs()
    cfg = prelim.PrelimConfig(width=6, depth=3, seeds=3, epochs=2, batch_size=7, lr=0.05,
                              weight_decay=0.3)
    model, out = prelim.train_models(ds, cfg, depth=1, seed=3)
    assert len(model.weights) == 2 and tuple(model.weights[0].shape) == (3, 6, 5)  # (E, out, in)
    assert tuple(model.weights[1].shape) == (3, 3, 6)
    ref = train_sequentially([3000, 3001, 3002], ds.x, ds.y,
                             TrainConfig(optimizer="adamw", lr=0.05, weight_decay=0.3,
                                         batch_size=7, epochs=2, check_every=10**9),
                             5, 6, 1, 3)
    with torch.no_grad():
        for e, m in enumerate(ref):
            torch.testing.assert_close(model(ds.x_test)[e], m(ds.x_test), atol=2e-5, rtol=1e-4)
    # 30 points in batches of 7: ceil(30 / 7) = 5 steps per epoch, 2 epochs
    assert out["history"].probes["stop_step"] == [10, 10, 10]


def test_train_models_depth_zero_is_a_linear_classifier():
    ds = _blobs()
    cfg = prelim.PrelimConfig(width=4, depth=2, seeds=2, epochs=1, batch_size=10)
    model, _ = prelim.train_models(ds, cfg, depth=0, seed=0)
    assert len(model.weights) == 1 and tuple(model.weights[0].shape) == (2, 3, 5)


def test_train_models_accuracies_by_hand_on_each_split():
    ds = _blobs(n=40, n_test=31)
    cfg = prelim.PrelimConfig(width=5, seeds=2, epochs=12, batch_size=16, lr=0.05)
    model, out = prelim.train_models(ds, cfg, depth=1, seed=1)
    with torch.no_grad():
        lt, le = model(ds.x), model(ds.x_test)
    # a trained model predicts every class, so a misaligned label vector would change the count
    assert all(len(set(le[e].argmax(-1).tolist())) == 3 for e in range(2))
    for e in range(2):
        tr = sum(int(lt[e, i].argmax()) == int(ds.y[i]) for i in range(40)) / 40
        te = sum(int(le[e, i].argmax()) == int(ds.y_test[i]) for i in range(31)) / 31
        assert out["train_acc"][e] == pytest.approx(tr, abs=1e-6)
        assert out["test_acc"][e] == pytest.approx(te, abs=1e-6)
    assert out["train_acc"].shape == (2,) and out["test_acc"].shape == (2,)
    assert isinstance(out["train_acc"], np.ndarray)


def test_train_models_seeds_differ_between_runs_and_repeat_within_one():
    ds = _blobs()
    cfg = prelim.PrelimConfig(width=5, seeds=2, epochs=1, batch_size=10)
    a, _ = prelim.train_models(ds, cfg, depth=1, seed=1)
    b, _ = prelim.train_models(ds, cfg, depth=1, seed=1)
    c, _ = prelim.train_models(ds, cfg, depth=1, seed=4)
    for p, q in zip(a.weights, b.weights):
        assert torch.equal(p, q)
    assert not torch.allclose(a.weights[0], c.weights[0])
    assert not torch.allclose(a.weights[0][0], a.weights[0][1])  # members differ too


def test_train_models_seed_range_and_types():
    ds, cfg = _blobs(), prelim.PrelimConfig(width=3, seeds=1, epochs=1, batch_size=30)
    prelim.train_models(ds, cfg, depth=0, seed=4_294_967)  # the largest with seed*1000+i < 2**32
    for bad in (-1, 2**32):
        with pytest.raises(ValueError, match="seed"):
            prelim.train_models(ds, cfg, depth=0, seed=bad)
    with pytest.raises(TypeError, match="ds"):
        prelim.train_models((ds.x, ds.y), cfg, depth=0)
    with pytest.raises(TypeError, match="cfg"):
        prelim.train_models(ds, TrainConfig(), depth=0)
    with pytest.raises((TypeError, ValueError), match="depth"):
        prelim.train_models(ds, cfg, depth=1.5)


# ---------------------------------------------------------------------------------------------
# preliminaries: ensemble_vs_loop
# ---------------------------------------------------------------------------------------------
def test_ensemble_vs_loop_trains_both_ways_with_the_configs_settings(monkeypatch):
    ds = _blobs(n=24, n_test=9)
    batched, loop = _spy(monkeypatch, "train_ensemble"), _spy(monkeypatch, "train_sequentially")
    cfg = prelim.PrelimConfig(width=4, depth=1, ensemble_members=3, ensemble_steps=7,
                              batch_size=6, lr=0.02)
    r = prelim.ensemble_vs_loop(ds, cfg, seed=2)
    assert len(batched) == 2  # the one-off warm-up, then the timed run
    (wa, wkw), (ba, bkw) = batched
    assert list(wkw["seeds"]) == [2000] and wa[3].steps == 2
    tc = ba[3]
    assert list(bkw["seeds"]) == [2000, 2001, 2002]
    assert (tc.optimizer, tc.lr, tc.batch_size, tc.steps) == ("adamw", 0.02, 6, 7)
    assert ba[0].size == 3 and len(ba[0].weights) == 2
    assert tuple(ba[0].weights[0].shape) == (3, 4, 5) and ba[0].weights[0].dtype == torch.float64
    assert ba[1].dtype == torch.float64
    (la, lkw), = loop
    assert list(la[0]) == [2000, 2001, 2002] and la[3] == tc
    assert la[1].dtype == torch.float64 and la[4:8] == (5, 4, 1, 3)
    assert (r["members"], r["steps"], r["dtype"]) == (3, 7, "float64")
    assert len(r["per_member"]) == 3 and r["max_abs_diff"] == max(r["per_member"])
    assert r["max_abs_diff"] < 1e-9
    assert r["speedup"] == pytest.approx(r["t_loop"] / r["t_batched"])
    assert r["t_batched"] > 0 and r["t_loop"] > 0


def test_ensemble_vs_loop_in_float32_and_refuses_other_dtypes():
    ds = _blobs(n=24, n_test=9)
    cfg = prelim.PrelimConfig(width=5, depth=1, ensemble_members=2, ensemble_steps=3,
                              batch_size=8)
    r = prelim.ensemble_vs_loop(ds, cfg, dtype=torch.float32)
    assert r["dtype"] == "float32" and r["members"] == 2 and r["max_abs_diff"] < 1e-3
    with pytest.raises(ValueError, match="dtype"):
        prelim.ensemble_vs_loop(ds, cfg, dtype=torch.float16)
    for bad in (-1, 2**32):
        with pytest.raises(ValueError, match="seed"):
            prelim.ensemble_vs_loop(ds, cfg, seed=bad)
    with pytest.raises(TypeError, match="cfg"):
        prelim.ensemble_vs_loop(ds, TrainConfig())
    with pytest.raises(TypeError, match="ds"):
        prelim.ensemble_vs_loop(None, cfg)


def test_ensemble_vs_loop_reports_the_largest_member_difference(monkeypatch):
    """per_member is each member's largest |batched - loop| logit on the TEST inputs, and
    max_abs_diff their max. A loop whose models 1 and 2 are perturbed by known, input-dependent
    amounts makes the expected numbers computable: batched equals the unperturbed loop."""
    import copy

    ds = _blobs(n=24, n_test=9)
    real, kept = prelim.train_sequentially, {}

    def perturbed(*a, **kw):
        models = real(*a, **kw)
        kept["orig"] = [copy.deepcopy(m) for m in models]
        with torch.no_grad():
            models[1].layers[0].weight[:, 0] += 0.25
            models[2].layers[0].weight[:, 2] -= 0.125
        kept["new"] = models
        return models

    monkeypatch.setattr(prelim, "train_sequentially", perturbed)
    cfg = prelim.PrelimConfig(width=4, depth=1, ensemble_members=3, ensemble_steps=2,
                              batch_size=8)
    r = prelim.ensemble_vs_loop(ds, cfg)
    xt = ds.x_test.double()
    with torch.no_grad():
        want = [float((o(xt) - m(xt)).abs().max()) for o, m in zip(kept["orig"], kept["new"])]
        on_train = [float((o(ds.x.double()) - m(ds.x.double())).abs().max())
                    for o, m in zip(kept["orig"], kept["new"])]
    assert want[0] == 0.0 and want[1] > 1e-3 and want[2] > 1e-3 and want[1] != want[2]
    assert on_train[1:] != pytest.approx(want[1:], abs=1e-6)  # the test inputs matter
    assert r["per_member"] == pytest.approx(want, abs=1e-9)
    assert r["max_abs_diff"] == pytest.approx(max(want), abs=1e-9)


# ---------------------------------------------------------------------------------------------
# preliminaries: sample_signals
# ---------------------------------------------------------------------------------------------
def _transform_reference(seed, **settings):
    from mnist1d.data import get_dataset_args, get_templates
    from mnist1d.transform import transform

    args = get_dataset_args()
    for k, v in settings.items():
        setattr(args, k, v)
    t = get_templates()
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        return np.stack([transform(t["x"][k], t["t"], args)[0] for k in range(10)]), t["y"]
    finally:
        np.random.set_state(state)


def test_sample_signals_matches_mnist1d_transform_at_non_default_settings():
    got, labels = prelim.sample_signals(corr_noise_scale=0.6, iid_noise_scale=0.07,
                                        max_translation=9, seed=11)
    ref, ref_y = _transform_reference(11, corr_noise_scale=0.6, iid_noise_scale=0.07,
                                      max_translation=9)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    assert got.shape == (10, 40) and list(labels) == list(ref_y) == list(range(10))


def test_sample_signals_defaults_are_mnist1ds():
    got, _ = prelim.sample_signals(seed=2)
    ref, _ = _transform_reference(2)  # get_dataset_args' own defaults: 0.25, 0.02, 48
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kw", [{"corr_noise_scale": 0.9}, {"iid_noise_scale": 0.3},
                                {"max_translation": 20}, {"seed": 1}])
def test_every_sample_signals_argument_changes_the_signals(kw):
    base = dict(corr_noise_scale=0.25, iid_noise_scale=0.02, max_translation=48, seed=0)
    a, _ = prelim.sample_signals(**base)
    b, _ = prelim.sample_signals(**{**base, **kw})
    assert not np.allclose(a, b)
    again, _ = prelim.sample_signals(**{**base, **kw})
    np.testing.assert_array_equal(b, again)


def test_sample_signals_translation_limits():
    longest = 12 + 60  # template length + the largest padding of mnist1d's defaults
    got, _ = prelim.sample_signals(max_translation=longest, seed=4)
    ref, _ = _transform_reference(4, max_translation=longest)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="max_translation"):
        prelim.sample_signals(max_translation=longest + 1)
    zero, _ = prelim.sample_signals(max_translation=0, seed=4)
    ref1, _ = _transform_reference(4, max_translation=1)
    np.testing.assert_allclose(zero, ref1, rtol=0, atol=1e-12)


def test_sample_signals_noise_edges_and_seed_range():
    quiet, _ = prelim.sample_signals(corr_noise_scale=0, iid_noise_scale=0.0, seed=2**32 - 1)
    assert np.isfinite(quiet).all()
    for name in ("corr_noise_scale", "iid_noise_scale"):
        for bad in (-1e-9, float("nan"), float("inf"), True, "0.1"):
            with pytest.raises(ValueError, match=name):
                prelim.sample_signals(**{name: bad})
    for bad in (-1, 2**32):
        with pytest.raises(ValueError, match="seed"):
            prelim.sample_signals(seed=bad)


def test_sample_signals_takes_numpy_scalars_and_ints():
    a, _ = prelim.sample_signals(corr_noise_scale=np.float64(0.6), iid_noise_scale=np.float32(0.5),
                                 max_translation=np.int64(9), seed=np.int64(11))
    b, _ = prelim.sample_signals(corr_noise_scale=0.6, iid_noise_scale=float(np.float32(0.5)),
                                 max_translation=9, seed=11)
    np.testing.assert_array_equal(a, b)
    c, _ = prelim.sample_signals(corr_noise_scale=1, iid_noise_scale=0, seed=3)
    ref, _ = _transform_reference(3, corr_noise_scale=1, iid_noise_scale=0)
    np.testing.assert_allclose(c, ref, rtol=0, atol=1e-12)


def test_sample_signals_returns_a_copy_of_the_labels():
    _, y = prelim.sample_signals(seed=0)
    y[:] = 7
    _, y2 = prelim.sample_signals(seed=0)
    assert list(y2) == list(range(10))


# ---------------------------------------------------------------------------------------------
# data.mnist1d against the mnist1d package
# ---------------------------------------------------------------------------------------------
def test_mnist1d_is_the_packages_own_train_test_split(cache):
    """mnist1d(40, 10) is make_dataset(num_samples=50, train_split=0.8): same rows, same order."""
    ref = _mnist1d_reference(50, 9, train_split=0.8)
    ds = data.mnist1d(40, 10, data_seed=9, device="cpu")
    np.testing.assert_array_equal(ds.x.numpy(), ref["x"].astype(np.float32))
    np.testing.assert_array_equal(ds.x_test.numpy(), ref["x_test"].astype(np.float32))
    np.testing.assert_array_equal(ds.y.numpy(), ref["y"])
    np.testing.assert_array_equal(ds.y_test.numpy(), ref["y_test"])
    assert (ds.num_classes, ds.name, ds.x.dtype, ds.y.dtype) == \
        (10, "MNIST-1D", torch.float32, torch.int64)


def test_mnist1d_rounds_the_generated_set_up_and_slices_it(cache):
    """47 signals asked: 50 generated (5 per class), standardized together, first 31 train,
    next 16 test; the last 3 are dropped."""
    ref = _mnist1d_reference(50, 5)
    ds = data.mnist1d(31, 16, data_seed=5, device="cpu")
    np.testing.assert_array_equal(ds.x.numpy(), ref["x"][:31].astype(np.float32))
    np.testing.assert_array_equal(ds.x_test.numpy(), ref["x"][31:47].astype(np.float32))
    np.testing.assert_array_equal(ds.y_test.numpy(), ref["y"][31:47])
    (path,) = cache.glob("*.npz")
    assert path.name.startswith("mnist1d_50_5_")


def test_mnist1d_is_standardized_over_the_generated_set(cache):
    ds = data.mnist1d(60, 40, data_seed=3, device="cpu")
    allx = torch.cat([ds.x, ds.x_test]).double()
    assert abs(float(allx.mean())) < 1e-5 and float(allx.std(unbiased=False)) == \
        pytest.approx(1.0, abs=1e-5)
    counts = torch.bincount(torch.cat([ds.y, ds.y_test]), minlength=10)
    assert counts.tolist() == [10] * 10


def test_mnist1d_data_seed_and_cache_keys_keep_requests_apart(cache):
    a = data.mnist1d(30, 10, data_seed=1, device="cpu")
    b = data.mnist1d(30, 10, data_seed=2, device="cpu")
    c = data.mnist1d(50, 10, data_seed=1, device="cpu")  # another size, same seed
    assert not torch.equal(a.x, b.x)
    for ds, (n, s) in ((a, (40, 1)), (b, (40, 2)), (c, (60, 1))):
        ref = _mnist1d_reference(n, s)
        np.testing.assert_array_equal(torch.cat([ds.x, ds.x_test]).numpy(),
                                      ref["x"].astype(np.float32))
    assert len(list(cache.glob("*.npz"))) == 3
    # read back from the cache: identical, without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = data.mnist1d(30, 10, data_seed=2, device="cpu")
    assert torch.equal(again.x, b.x) and torch.equal(again.y_test, b.y_test)


def test_mnist1d_leaves_pythons_random_alone(cache):
    random.seed(5)
    want = random.random()
    random.seed(5)
    data.mnist1d(20, 10, data_seed=8, device="cpu")
    assert random.random() == want


def test_mnist1d_size_limits(cache, monkeypatch):
    monkeypatch.setattr(data, "MNIST1D_MAX_SAMPLES", 30)
    assert data.mnist1d(20, 10, device="cpu").n == 20  # exactly at the limit
    with pytest.raises(ValueError, match="n_train"):
        data.mnist1d(20, 11, device="cpu")
    assert data.MNIST1D_LENGTH == 40 and data.MNIST1D_CLASSES == 10


@pytest.mark.parametrize("kw,match", [({"n_test": 0}, "n_test"), ({"n_train": 0}, "n_train"),
                                      ({"n_train": True}, "n_train"),
                                      ({"data_seed": 2**32}, "data_seed")])
def test_mnist1d_refuses_empty_splits_and_seeds_past_the_range(cache, kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        data.mnist1d(**{"n_train": 10, "n_test": 10, "device": "cpu", **kw})
    assert not list(cache.iterdir())  # refused before anything is generated


def test_mnist1d_accepts_the_largest_data_seed(cache):
    ds = data.mnist1d(10, 10, data_seed=2**32 - 1, device="cpu")
    assert ds.n == 10 and len(ds.y_test) == 10


# ---------------------------------------------------------------------------------------------
# data: the cache's checksum, validation and loading
# ---------------------------------------------------------------------------------------------
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
    assert not np.array_equal(got, data._digest(y.astype(np.float32).reshape(1, 2), x.ravel()
                                                .astype(np.int64), "the-key"))
    # a non-contiguous view hashes as its contiguous copy
    xt = np.ascontiguousarray(x.T)
    assert np.array_equal(data._digest(x.T, y, "k"), data._digest(xt, y, "k"))


def _valid(n=20, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 40)).astype(np.float32)
    y = (np.arange(n) % 10).astype(np.int64)
    rng.shuffle(y)
    return x, y


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
    near[int(np.flatnonzero(near == 3)[0])] = 4  # counts 1 and 3 instead of 2 and 2: off by one
    assert "class counts" in reason(x, near)
    assert "checksum" in data._validate_arrays(x, y, ok, 20, "other")
    y2 = y.copy()
    i, j = int(np.flatnonzero(y2 == 1)[0]), int(np.flatnonzero(y2 == 2)[0])
    y2[i], y2[j] = 2, 1  # same counts, other order
    assert "checksum" in data._validate_arrays(x, y2, ok, 20, key)


def test_load_cached_reads_good_files_and_reports_bad_ones(tmp_path):
    x, y = _valid(30, seed=1)
    key = "k30"
    path = tmp_path / "c.npz"
    data._write_cache(path, x, y, key)
    assert [p.name for p in tmp_path.iterdir()] == ["c.npz"]  # no temporary file left behind
    gx, gy = data._load_cached(path, 30, key)
    np.testing.assert_array_equal(gx, x)
    np.testing.assert_array_equal(gy, y)
    with pytest.warns(data.CacheWarning, match="checksum"):
        assert data._load_cached(path, 30, "another key") is None
    with open(path, "wb") as fh:  # an extra entry
        np.savez(fh, x=x, y=y, digest=data._digest(x, y, key), extra=np.zeros(1))
    with pytest.warns(data.CacheWarning, match="unexpected entries"):
        assert data._load_cached(path, 30, key) is None


def test_a_bad_cache_file_is_replaced_by_the_reference_data(cache):
    good = data.mnist1d(20, 10, data_seed=6, device="cpu")
    (path,) = cache.glob("*.npz")
    x, y = _valid(30, seed=2)
    with open(path, "wb") as fh:  # consistent in itself, but someone else's data under this name
        np.savez(fh, x=x, y=y, digest=data._digest(x, y, "mnist1d-v2-30-7"))
    with pytest.warns(data.CacheWarning, match=path.name):
        again = data.mnist1d(20, 10, data_seed=6, device="cpu")
    assert torch.equal(again.x, good.x)
    with np.load(path) as z:  # the file now holds the regenerated data
        np.testing.assert_array_equal(z["x"][:20], good.x.numpy())


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


# ---------------------------------------------------------------------------------------------
# data: digits
# ---------------------------------------------------------------------------------------------
def test_digits_split_is_a_seeded_permutation_of_sklearns_digits():
    from sklearn.datasets import load_digits

    raw = load_digits()
    ds = data.digits(test_fraction=0.1, seed=5, device="cpu")
    perm = torch.randperm(1797, generator=torch.Generator().manual_seed(5))
    n_test = 180  # round(179.7)
    te, tr = perm[:n_test].numpy(), perm[n_test:].numpy()
    np.testing.assert_allclose(ds.x_test.numpy(), raw.data[te] / 16.0, rtol=0, atol=1e-7)
    np.testing.assert_allclose(ds.x.numpy(), raw.data[tr] / 16.0, rtol=0, atol=1e-7)
    np.testing.assert_array_equal(ds.y.numpy(), raw.target[tr])
    np.testing.assert_array_equal(ds.y_test.numpy(), raw.target[te])
    assert (ds.num_classes, ds.name, ds.x.dtype) == (10, "digits", torch.float32)
    assert float(ds.x.max()) == 1.0 and float(ds.x.min()) == 0.0
    other = data.digits(test_fraction=0.1, seed=6, device="cpu")
    assert not torch.equal(other.y_test, ds.y_test) and other.n == ds.n


def test_digits_refuses_bad_seeds():
    for bad in (-1, 2**64, 1.5):
        with pytest.raises((ValueError, TypeError), match="seed"):
            data.digits(seed=bad)


def test_digits_rounds_the_test_size():
    assert len(data.digits(test_fraction=0.3, device="cpu").y_test) == 539   # 539.1
    assert len(data.digits(test_fraction=0.0003, device="cpu").y_test) == 1  # 0.54 rounds up
    with pytest.raises(ValueError, match="test_fraction"):
        data.digits(test_fraction=0.0)


# ---------------------------------------------------------------------------------------------
# data: corrupt_labels, long_tail_indices, long_tailed
# ---------------------------------------------------------------------------------------------
def _corrupt_reference(y, fraction, num_classes, seed):
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(y), generator=g).tolist()
    random_labels = torch.randint(num_classes, (len(y),), generator=g).tolist()
    out = y.tolist()
    k = int(round(fraction * len(y)))
    for i in order[:k]:
        out[i] = random_labels[i]
    return out


@pytest.mark.parametrize("fraction,classes,seed", [(0.35, 4, 3), (0.8, 7, 0), (1.0, 3, 12),
                                                    (0.02, 5, 1)])
def test_corrupt_labels_is_the_loop_reference(fraction, classes, seed):
    y = torch.arange(50) % classes
    y = y[torch.randperm(50, generator=torch.Generator().manual_seed(99))]
    got = data.corrupt_labels(y, fraction, classes, seed=seed)
    assert got.tolist() == _corrupt_reference(y, fraction, classes, seed)
    assert got.dtype == torch.int64 and y.tolist() == (torch.arange(50) % classes)[
        torch.randperm(50, generator=torch.Generator().manual_seed(99))].tolist()  # y unchanged


def test_corrupt_labels_rounds_the_count_and_seeds_matter():
    y = torch.zeros(10, dtype=torch.int64)
    # with 10**6 classes a redrawn label is (all but surely) new: count the redrawn points
    for frac, k in ((0.35, 4), (0.34, 3), (0.96, 10), (0.04, 0), (0.06, 1)):
        assert int((data.corrupt_labels(y, frac, 10**6, seed=2) != y).sum()) == k, frac
    a = data.corrupt_labels(torch.arange(40) % 4, 0.5, 4, seed=1)
    b = data.corrupt_labels(torch.arange(40) % 4, 0.5, 4, seed=2)
    assert not torch.equal(a, b)
    assert int(data.corrupt_labels(torch.arange(40) % 4, 0.5, 4).max()) <= 3


def test_corrupt_labels_keeps_dtype_and_refuses_labels_out_of_range():
    y = torch.tensor([0, 2, 1, 2], dtype=torch.int32)
    out = data.corrupt_labels(y, 1.0, 3, seed=0)
    assert out.dtype == torch.int32 and out.device == y.device
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        data.corrupt_labels(torch.tensor([0, 3]), 0.5, 3)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        data.corrupt_labels(torch.tensor([-1, 2]), 0.5, 3)
    assert data.corrupt_labels(torch.tensor([0, 2]), 0.5, 3).tolist() is not None  # 2 is valid
    with pytest.raises(ValueError, match="at least one"):
        data.corrupt_labels(torch.zeros(0, dtype=torch.int64), 0.5, 3)
    with pytest.raises(TypeError, match="y"):
        data.corrupt_labels(torch.zeros(2, 2, dtype=torch.int64), 0.5, 3)


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


def test_long_tail_counts_by_hand_on_unbalanced_classes():
    # class sizes 50, 40, 30: n_max is the SMALLEST count (30); ratio 9 over C - 1 = 2 steps:
    # class 0 keeps 30, class 1 keeps 30 / 3 = 10, class 2 keeps 30 / 9 = 3.33 -> 3
    y = torch.cat([torch.zeros(50), torch.ones(40), torch.full((30,), 2)]).long()
    y = y[torch.randperm(120, generator=torch.Generator().manual_seed(0))]
    idx = data.long_tail_indices(y, 9.0, 3, seed=4)
    assert torch.bincount(y[idx], minlength=3).tolist() == [30, 10, 3]
    assert idx.tolist() == _long_tail_reference(y, 9.0, 3, 4)
    assert idx.tolist() == sorted(set(idx.tolist())) and idx.dtype == torch.int64


def test_long_tail_tail_keeps_at_least_one_point_and_reference_at_other_settings():
    y = torch.arange(20) % 2
    idx = data.long_tail_indices(y, 1000.0, 2, seed=0)  # 10 / 1000 rounds to 0: keep 1
    assert torch.bincount(y[idx], minlength=2).tolist() == [10, 1]
    y5 = (torch.arange(100) * 7) % 5
    for ratio, seed in ((2.5, 1), (100.0, 7)):
        assert data.long_tail_indices(y5, ratio, 5, seed=seed).tolist() == \
            _long_tail_reference(y5, ratio, 5, seed)
    # 20 per class, ratio 2.5 over 4 steps: 20 * 2.5 ** (-k / 4) = 20, 15.9, 12.6, 10.06, 8
    counts = torch.bincount(y5[data.long_tail_indices(y5, 2.5, 5, seed=1)], minlength=5)
    assert counts.tolist() == [20, 16, 13, 10, 8]


def test_long_tail_seeds_and_class_order():
    y = torch.arange(60) % 3
    a = data.long_tail_indices(y, 4.0, 3, seed=0)
    assert torch.equal(a, data.long_tail_indices(y, 4.0, 3, seed=0))
    assert not torch.equal(a, data.long_tail_indices(y, 4.0, 3, seed=1))
    assert torch.bincount(y[a], minlength=3).tolist() == [20, 10, 5]  # the head is class 0


def test_long_tailed_is_the_subset_at_those_indices():
    ds = _blobs(n=60, n_test=7)
    for seed in (0, 3):
        sub = data.long_tailed(ds, 3.0, seed=seed)
        idx = data.long_tail_indices(ds.y, 3.0, 3, seed=seed)
        assert torch.equal(sub.x, ds.x[idx]) and torch.equal(sub.y, ds.y[idx])
        assert torch.equal(sub.x_test, ds.x_test) and torch.equal(sub.y_test, ds.y_test)
    assert not torch.equal(data.long_tailed(ds, 3.0, seed=0).x, data.long_tailed(ds, 3.0, seed=3).x)
    with pytest.raises(TypeError, match="ds"):
        data.long_tailed((ds.x, ds.y), 2.0)


# ---------------------------------------------------------------------------------------------
# data: Dataset
# ---------------------------------------------------------------------------------------------
def test_dataset_properties_subset_and_with_labels():
    ds = _blobs(n=12, d=4, n_test=5)
    assert (ds.n, ds.dim) == (12, 4)
    sub = ds.subset([11, 0, 0, 5])  # order kept, repeats allowed, last row reachable
    assert torch.equal(sub.x, ds.x[[11, 0, 0, 5]]) and sub.y.tolist() == ds.y[[11, 0, 0, 5]].tolist()
    assert torch.equal(sub.x_test, ds.x_test) and sub.num_classes == 3 and sub.name == "blobs"
    assert (sub.n, sub.dim) == (4, 4)
    with pytest.raises(ValueError, match="at least one index"):
        ds.subset([])
    new = torch.tensor([2, 1, 0] * 4, dtype=torch.int32)
    lab = ds.with_labels(new)
    assert lab.y.dtype == torch.int64 and lab.y.tolist() == new.tolist()
    assert torch.equal(lab.x, ds.x) and torch.equal(lab.y_test, ds.y_test)
    assert lab.name == "blobs" and ds.y.tolist() != new.tolist()  # the original is unchanged
    moved = ds.to("cpu")
    assert torch.equal(moved.x, ds.x) and moved.name == "blobs" and moved.x.device.type == "cpu"
    with pytest.raises(TypeError, match="integer"):
        ds.with_labels(torch.zeros(12, dtype=torch.bool))


def test_dataset_checks_the_test_split_and_allows_an_empty_one():
    ds = _blobs(n=8, n_test=3)
    empty = Dataset(ds.x, ds.y, ds.x[:0], ds.y[:0], num_classes=3)
    assert len(empty.y_test) == 0 and empty.n == 8
    with pytest.raises(ValueError, match="y_test"):
        Dataset(ds.x, ds.y, ds.x_test, torch.tensor([0, 1, 3]), num_classes=3)
    with pytest.raises(ValueError, match="x_test and y_test"):
        Dataset(ds.x, ds.y, ds.x_test, ds.y_test[:2], num_classes=3)
    with pytest.raises(ValueError, match="x_test must hold finite"):
        Dataset(ds.x, ds.y, ds.x_test.masked_fill(ds.x_test > 0, float("inf")), ds.y_test, 3)
    with pytest.raises(TypeError, match="y_test"):
        Dataset(ds.x, ds.y, ds.x_test, ds.y_test.int(), num_classes=3)
    with pytest.raises(TypeError, match="name"):
        Dataset(ds.x, ds.y, ds.x_test, ds.y_test, num_classes=3, name=None)
    with pytest.raises(ValueError, match="x_test must match x in features"):
        Dataset(ds.x, ds.y, ds.x_test[:, :4], ds.y_test, num_classes=3)
    with pytest.raises(ValueError, match="x_test must match x in features"):
        Dataset(ds.x, ds.y, ds.x_test.double(), ds.y_test, num_classes=3)
    # labels up to num_classes - 1 pass, and two classes are enough
    two = Dataset(ds.x, ds.y.clamp(max=1), ds.x_test, ds.y_test.clamp(max=1), num_classes=2)
    assert two.num_classes == 2
    assert Dataset(ds.x.double(), ds.y, ds.x_test.double(), ds.y_test, num_classes=3).dim == 5
