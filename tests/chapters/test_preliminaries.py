"""Tests of gtlib.preliminaries, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import matplotlib
import numpy as np
import pytest
import torch

from gtlib import preliminaries as prelim, data, preliminaries as P
from gtlib.data import Dataset
from gtlib.preliminaries import PrelimConfig, sample_signals, train_models
from gtlib.train import TrainConfig, train_sequentially


def tiny():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 40, generator=g)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    return Dataset(x, y, x[:50], y[:50], num_classes=4)


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


def _spy(monkeypatch, name):
    calls = []
    real = getattr(prelim, name)

    def spy(*a, **kw):
        calls.append((a, kw))
        return real(*a, **kw)

    monkeypatch.setattr(prelim, name, spy)
    return calls


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
        return np.stack(
            [transform(t["x"][k], t["t"], args)[0] for k in range(10)]
        ), t["y"]
    finally:
        np.random.set_state(state)


matplotlib.use("Agg")


BAD = (TypeError, ValueError)


def _toy():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(30, 5, generator=g), torch.arange(30) % 3
    return data.Dataset(x, y, x[:9].clone(), y[:9].clone(), 3, "toy")


def _tiny():
    g = torch.Generator().manual_seed(0)
    x, xt = torch.randn(20, 5, generator=g), torch.randn(15, 5, generator=g)
    y = torch.randint(3, (20,), generator=g)
    yt = torch.arange(15) % 3
    return Dataset(x=x, y=y, x_test=xt, y_test=yt, num_classes=3, name="tiny")


# =================================================================================================
# preliminaries.PrelimConfig
# =================================================================================================
def test_presets():
    assert prelim.PrelimConfig.full().epochs > prelim.PrelimConfig.quick().epochs


@pytest.mark.reference
def test_prelim_config_defaults_are_the_mnist1d_readme_settings():
    c = prelim.PrelimConfig()
    assert (
        c.n_train,
        c.n_test,
        c.width,
        c.depth,
        c.seeds,
        c.epochs,
        c.batch_size,
    ) == (4000, 1000, 100, 2, 3, 60, 100)
    assert c.lr == 1e-2 and c.weight_decay == 0.0
    assert (c.ensemble_members, c.ensemble_steps) == (8, 250)
    f = prelim.PrelimConfig.full()
    assert (f.seeds, f.epochs, f.ensemble_members, f.ensemble_steps) == (
        10,
        200,
        32,
        1000,
    )
    assert (f.n_train, f.n_test, f.width, f.depth, f.batch_size, f.lr) == (
        4000,
        1000,
        100,
        2,
        100,
        1e-2,
    )


@pytest.mark.reference
@pytest.mark.parametrize(
    "field,bad",
    [
        ("n_train", 0),
        ("width", 0),
        ("seeds", 0),
        ("epochs", 0),
        ("batch_size", 0),
        ("lr", 0.0),
        ("lr", -1e-3),
        ("weight_decay", -1e-3),
        ("ensemble_members", 0),
        ("ensemble_steps", 0),
        ("depth", -1),
    ],
)
def test_prelim_config_refuses_values_outside_its_ranges(field, bad):
    with pytest.raises((ValueError, TypeError), match=field):
        prelim.PrelimConfig(**{field: bad})


@pytest.mark.reference
def test_prelim_config_accepts_its_edge_values():
    c = prelim.PrelimConfig(depth=0, weight_decay=0.0, n_train=1, seeds=1)
    assert (c.depth, c.weight_decay, c.n_train, c.seeds) == (0, 0.0, 1, 1)


# =================================================================================================
# preliminaries.train_models
# =================================================================================================
def test_train_models_learns_a_simple_rule():
    cfg = prelim.PrelimConfig(seeds=2, epochs=30, width=32)
    _, out = prelim.train_models(tiny(), cfg, depth=1)
    assert out["train_acc"].shape == (2,) and out["train_acc"].min() > 0.9
    with pytest.raises(ValueError, match="depth"):
        prelim.train_models(tiny(), cfg, depth=-1)


@pytest.mark.reference
def test_train_models_passes_every_setting_of_the_config_to_training(monkeypatch):
    ds = _blobs()
    calls = _spy(monkeypatch, "train_ensemble")
    cfg = prelim.PrelimConfig(
        width=7,
        depth=3,
        seeds=3,
        epochs=2,
        batch_size=9,
        lr=0.037,
        weight_decay=0.21,
    )
    model, _ = prelim.train_models(ds, cfg, depth=1, seed=2)
    ((args, kw),) = calls
    tc = args[3]
    assert (
        tc.optimizer,
        tc.lr,
        tc.weight_decay,
        tc.batch_size,
        tc.epochs,
        tc.steps,
    ) == ("adamw", 0.037, 0.21, 9, 2, None)
    assert (
        tc.target_train_acc is None
        and tc.margin_gamma is None
        and tc.loss == "cross_entropy"
    )
    assert list(kw["seeds"]) == [2000, 2001, 2002]
    assert args[0] is model and args[1] is ds.x and args[2] is ds.y


@pytest.mark.reference
def test_train_models_is_each_member_trained_alone_with_its_seed():
    """Reference: train_sequentially (torch.optim.AdamW, one model after another), seeds
    seed * 1000 + i; the ``depth`` argument (not cfg.depth) and cfg.width set the architecture."""
    ds = _blobs()
    cfg = prelim.PrelimConfig(
        width=6, depth=3, seeds=3, epochs=2, batch_size=7, lr=0.05, weight_decay=0.3
    )
    model, out = prelim.train_models(ds, cfg, depth=1, seed=3)
    assert len(model.weights) == 2 and tuple(model.weights[0].shape) == (
        3,
        6,
        5,
    )  # (E, out, in)
    assert tuple(model.weights[1].shape) == (3, 3, 6)
    ref = train_sequentially(
        [3000, 3001, 3002],
        ds.x,
        ds.y,
        TrainConfig(
            optimizer="adamw",
            lr=0.05,
            weight_decay=0.3,
            batch_size=7,
            epochs=2,
            check_every=10**9,
        ),
        5,
        6,
        1,
        3,
    )
    with torch.no_grad():
        for e, m in enumerate(ref):
            torch.testing.assert_close(
                model(ds.x_test)[e], m(ds.x_test), atol=2e-5, rtol=1e-4
            )
    # 30 points in batches of 7: ceil(30 / 7) = 5 steps per epoch, 2 epochs
    assert out["history"].probes["stop_step"] == [10, 10, 10]


@pytest.mark.reference
def test_train_models_depth_zero_is_a_linear_classifier():
    ds = _blobs()
    cfg = prelim.PrelimConfig(width=4, depth=2, seeds=2, epochs=1, batch_size=10)
    model, _ = prelim.train_models(ds, cfg, depth=0, seed=0)
    assert len(model.weights) == 1 and tuple(model.weights[0].shape) == (2, 3, 5)


@pytest.mark.reference
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


@pytest.mark.reference
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


@pytest.mark.reference
def test_train_models_seed_range_and_types():
    ds, cfg = (
        _blobs(),
        prelim.PrelimConfig(width=3, seeds=1, epochs=1, batch_size=30),
    )
    prelim.train_models(
        ds, cfg, depth=0, seed=4_294_967
    )  # the largest with seed*1000+i < 2**32
    for bad in (-1, 2**32):
        with pytest.raises(ValueError, match="seed"):
            prelim.train_models(ds, cfg, depth=0, seed=bad)
    with pytest.raises(TypeError, match="ds"):
        prelim.train_models((ds.x, ds.y), cfg, depth=0)
    with pytest.raises(TypeError, match="cfg"):
        prelim.train_models(ds, TrainConfig(), depth=0)
    with pytest.raises((TypeError, ValueError), match="depth"):
        prelim.train_models(ds, cfg, depth=1.5)


@pytest.mark.mutation
def test_train_models_steps_test_accuracy_and_seeds():
    ds = _tiny()
    cfg = PrelimConfig.quick(width=8, depth=1, seeds=2, epochs=2, batch_size=8)
    m0, out0 = train_models(ds, cfg, depth=1, seed=0)
    # minibatches of 8 from 20 points: ceil(20 / 8) = 3 steps per epoch, 2 epochs
    assert out0["history"].probes["stop_step"] == [6, 6]
    with torch.no_grad():
        ref = (m0(ds.x_test).argmax(-1) == ds.y_test).double().mean(-1).numpy()
    np.testing.assert_allclose(out0["test_acc"], ref)
    # runs with different seeds share no member: run 1's first member is not run 0's second
    m1, _ = train_models(ds, cfg, depth=1, seed=1)
    with torch.no_grad():
        assert not torch.allclose(m1(ds.x)[0], m0(ds.x)[1])


# =================================================================================================
# preliminaries.ensemble_vs_loop
# =================================================================================================
def test_ensemble_vs_loop_is_exact_in_float64():
    cfg = prelim.PrelimConfig(
        width=16, ensemble_members=3, ensemble_steps=20, batch_size=50
    )
    r = prelim.ensemble_vs_loop(tiny(), cfg)
    assert r["max_abs_diff"] < 1e-9 and len(r["per_member"]) == 3


@pytest.mark.reference
def test_ensemble_vs_loop_trains_both_ways_with_the_configs_settings(monkeypatch):
    ds = _blobs(n=24, n_test=9)
    batched, loop = (
        _spy(monkeypatch, "train_ensemble"),
        _spy(monkeypatch, "train_sequentially"),
    )
    cfg = prelim.PrelimConfig(
        width=4, depth=1, ensemble_members=3, ensemble_steps=7, batch_size=6, lr=0.02
    )
    r = prelim.ensemble_vs_loop(ds, cfg, seed=2)
    assert len(batched) == 2  # the one-off warm-up, then the timed run
    (wa, wkw), (ba, bkw) = batched
    assert list(wkw["seeds"]) == [2000] and wa[3].steps == 2
    tc = ba[3]
    assert list(bkw["seeds"]) == [2000, 2001, 2002]
    assert (tc.optimizer, tc.lr, tc.batch_size, tc.steps) == ("adamw", 0.02, 6, 7)
    assert ba[0].size == 3 and len(ba[0].weights) == 2
    assert (
        tuple(ba[0].weights[0].shape) == (3, 4, 5)
        and ba[0].weights[0].dtype == torch.float64
    )
    assert ba[1].dtype == torch.float64
    ((la, lkw),) = loop
    assert list(la[0]) == [2000, 2001, 2002] and la[3] == tc
    assert la[1].dtype == torch.float64 and la[4:8] == (5, 4, 1, 3)
    assert (r["members"], r["steps"], r["dtype"]) == (3, 7, "float64")
    assert len(r["per_member"]) == 3 and r["max_abs_diff"] == max(r["per_member"])
    assert r["max_abs_diff"] < 1e-9
    assert r["speedup"] == pytest.approx(r["t_loop"] / r["t_batched"])
    assert r["t_batched"] > 0 and r["t_loop"] > 0


@pytest.mark.reference
def test_ensemble_vs_loop_in_float32_and_refuses_other_dtypes():
    ds = _blobs(n=24, n_test=9)
    cfg = prelim.PrelimConfig(
        width=5, depth=1, ensemble_members=2, ensemble_steps=3, batch_size=8
    )
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


@pytest.mark.reference
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
    cfg = prelim.PrelimConfig(
        width=4, depth=1, ensemble_members=3, ensemble_steps=2, batch_size=8
    )
    r = prelim.ensemble_vs_loop(ds, cfg)
    xt = ds.x_test.double()
    with torch.no_grad():
        want = [
            float((o(xt) - m(xt)).abs().max())
            for o, m in zip(kept["orig"], kept["new"])
        ]
        on_train = [
            float((o(ds.x.double()) - m(ds.x.double())).abs().max())
            for o, m in zip(kept["orig"], kept["new"])
        ]
    assert (
        want[0] == 0.0 and want[1] > 1e-3 and want[2] > 1e-3 and want[1] != want[2]
    )
    assert on_train[1:] != pytest.approx(
        want[1:], abs=1e-6
    )  # the test inputs matter
    assert r["per_member"] == pytest.approx(want, abs=1e-9)
    assert r["max_abs_diff"] == pytest.approx(max(want), abs=1e-9)


# =================================================================================================
# preliminaries.sample_signals
# =================================================================================================
def test_sample_signals():
    xs, ys = prelim.sample_signals(seed=1)
    assert xs.shape == (10, 40) and list(ys) == list(range(10))
    xs0, _ = prelim.sample_signals(corr_noise_scale=0.0, iid_noise_scale=0.0, seed=1)
    assert np.isfinite(xs0).all()
    with pytest.raises(ValueError, match="noise"):
        prelim.sample_signals(corr_noise_scale=-1)
    with pytest.raises(ValueError, match="max_translation"):
        prelim.sample_signals(max_translation=-2)


def test_sample_signals_without_shift():
    a, _ = prelim.sample_signals(max_translation=0, seed=3)
    b, _ = prelim.sample_signals(max_translation=1, seed=3)
    assert np.allclose(a, b)


@pytest.mark.reference
def test_sample_signals_matches_mnist1d_transform_at_non_default_settings():
    got, labels = prelim.sample_signals(
        corr_noise_scale=0.6, iid_noise_scale=0.07, max_translation=9, seed=11
    )
    ref, ref_y = _transform_reference(
        11, corr_noise_scale=0.6, iid_noise_scale=0.07, max_translation=9
    )
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    assert got.shape == (10, 40) and list(labels) == list(ref_y) == list(range(10))


@pytest.mark.reference
def test_sample_signals_defaults_are_mnist1ds():
    got, _ = prelim.sample_signals(seed=2)
    ref, _ = _transform_reference(
        2
    )  # get_dataset_args' own defaults: 0.25, 0.02, 48
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)


@pytest.mark.reference
@pytest.mark.parametrize(
    "kw",
    [
        {"corr_noise_scale": 0.9},
        {"iid_noise_scale": 0.3},
        {"max_translation": 20},
        {"seed": 1},
    ],
)
def test_every_sample_signals_argument_changes_the_signals(kw):
    base = dict(
        corr_noise_scale=0.25, iid_noise_scale=0.02, max_translation=48, seed=0
    )
    a, _ = prelim.sample_signals(**base)
    b, _ = prelim.sample_signals(**{**base, **kw})
    assert not np.allclose(a, b)
    again, _ = prelim.sample_signals(**{**base, **kw})
    np.testing.assert_array_equal(b, again)


@pytest.mark.reference
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


@pytest.mark.reference
def test_sample_signals_noise_edges_and_seed_range():
    quiet, _ = prelim.sample_signals(
        corr_noise_scale=0, iid_noise_scale=0.0, seed=2**32 - 1
    )
    assert np.isfinite(quiet).all()
    for name in ("corr_noise_scale", "iid_noise_scale"):
        for bad in (-1e-9, float("nan"), float("inf"), True, "0.1"):
            with pytest.raises(ValueError, match=name):
                prelim.sample_signals(**{name: bad})
    for bad in (-1, 2**32):
        with pytest.raises(ValueError, match="seed"):
            prelim.sample_signals(seed=bad)


@pytest.mark.reference
def test_sample_signals_takes_numpy_scalars_and_ints():
    a, _ = prelim.sample_signals(
        corr_noise_scale=np.float64(0.6),
        iid_noise_scale=np.float32(0.5),
        max_translation=np.int64(9),
        seed=np.int64(11),
    )
    b, _ = prelim.sample_signals(
        corr_noise_scale=0.6,
        iid_noise_scale=float(np.float32(0.5)),
        max_translation=9,
        seed=11,
    )
    np.testing.assert_array_equal(a, b)
    c, _ = prelim.sample_signals(corr_noise_scale=1, iid_noise_scale=0, seed=3)
    ref, _ = _transform_reference(3, corr_noise_scale=1, iid_noise_scale=0)
    np.testing.assert_allclose(c, ref, rtol=0, atol=1e-12)


@pytest.mark.reference
def test_sample_signals_returns_a_copy_of_the_labels():
    _, y = prelim.sample_signals(seed=0)
    y[:] = 7
    _, y2 = prelim.sample_signals(seed=0)
    assert list(y2) == list(range(10))


@pytest.mark.boundary
def test_preliminaries_boundaries():
    ds = _toy()
    cfg = prelim.PrelimConfig(
        n_train=30,
        n_test=9,
        width=4,
        depth=1,
        seeds=1,
        epochs=1,
        batch_size=10,
        ensemble_members=1,
        ensemble_steps=1,
    )
    for call, name in (
        (lambda: prelim.train_models(None, cfg, 1), "ds"),
        (lambda: prelim.train_models(ds, {}, 1), "cfg"),
        (lambda: prelim.train_models(ds, cfg, "1"), "depth"),
        (lambda: prelim.train_models(ds, cfg, 1, seed=True), "seed"),
        (lambda: prelim.train_models(ds, cfg, 1, seed=2**62), "seed"),
        (lambda: prelim.ensemble_vs_loop(ds, cfg, dtype=None), "dtype"),
        (lambda: prelim.ensemble_vs_loop(ds, cfg, dtype=torch.int64), "dtype"),
        (lambda: prelim.sample_signals(max_translation=True), "max_translation"),
        (lambda: prelim.sample_signals(max_translation=10**9), "max_translation"),
        (lambda: prelim.sample_signals(seed=2**32), "seed"),
        (lambda: prelim.sample_signals(seed=1.5), "seed"),
    ):
        with pytest.raises(BAD, match=name):
            call()
    xs, ys = prelim.sample_signals(
        max_translation=72
    )  # the padded length is still accepted
    assert xs.shape == (10, 40) and np.isfinite(xs).all()


@pytest.mark.boundary
@pytest.mark.parametrize(
    "kw,name",
    [
        ({"corr_noise_scale": float("nan")}, "corr_noise_scale"),
        ({"iid_noise_scale": float("inf")}, "iid_noise_scale"),
        ({"corr_noise_scale": -1.0}, "corr_noise_scale"),
    ],
)
def test_sample_signals_refuses_non_finite_scales(kw, name):
    with pytest.raises(ValueError, match=name):
        P.sample_signals(**kw)


@pytest.mark.mutation
def test_sample_signals_is_mnist1d_transform_with_those_scales():
    from mnist1d.data import get_dataset_args, get_templates
    from mnist1d.transform import transform

    args = get_dataset_args()
    args.corr_noise_scale, args.iid_noise_scale, args.max_translation = 0.5, 0.0, 1
    t = get_templates()
    state = np.random.get_state()
    np.random.seed(3)
    ref = np.stack([transform(t["x"][k], t["t"], args)[0] for k in range(10)])
    np.random.set_state(state)
    got, _ = sample_signals(
        corr_noise_scale=0.5, iid_noise_scale=0.0, max_translation=0, seed=3
    )
    np.testing.assert_allclose(got, ref)


@pytest.mark.mutation
def test_sample_signals_leaves_numpys_global_generator_alone():
    np.random.seed(123)
    a = np.random.rand()
    np.random.seed(123)
    sample_signals(seed=5)
    assert np.random.rand() == a
