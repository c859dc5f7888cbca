"""Tests of gtlib.soft.width_sweep, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import math
import numpy as np
import pytest
import statistics
import torch
import torch.nn.functional as F

from gtlib import soft
from gtlib.data import corrupt_labels

from tests.chapters.soft.helpers import _close, _dataset, _raises


def _cut(full, width):
    """A stand-alone MLP of ``width`` units from the first ``width`` units of ``full``."""
    from gtlib.models import MLP

    m = MLP(
        full.layers[0].in_features, width, full.depth, full.layers[-1].out_features
    )
    with torch.no_grad():
        for l, (src, dst) in enumerate(zip(full.layers, m.layers)):
            w = src.weight
            if l < full.depth:
                w = w[:width]
            if l > 0:
                w = w[:, :width]
            dst.weight.copy_(w)
            dst.bias.copy_(src.bias[:width] if l < full.depth else src.bias)
    return m


SWEEP = dict(
    n_train=30,
    label_noise=0.3,
    width_groups=((2, 3), (4,)),
    epochs=2,
    lr=0.05,
    momentum=0.5,
    batch_size=10,
    replicates=2,
    check_epochs=0,
)


# =================================================================================================
# soft.MLPSweepConfig
# =================================================================================================
@pytest.mark.reference
def test_mlp_sweep_config_defaults_and_widths_order():
    c = soft.MLPSweepConfig()
    assert (
        c.n_train,
        c.label_noise,
        c.epochs,
        c.lr,
        c.momentum,
        c.batch_size,
        c.replicates,
    ) == (2000, 0.15, 300, 0.01, 0.9, 100, 8)
    assert c.widths == [8, 16, 24, 32, 40, 48, 128] and c.check_epochs == 10
    assert soft.MLPSweepConfig.quick(width_groups=((9, 3), (1,))).widths == [9, 3, 1]


@pytest.mark.boundary
def test_run_mlp_sweep_refuses_a_bad_check_period():
    for bad in (-1, 1.5, "10", None):
        _raises(
            (TypeError, ValueError),
            "check_epochs",
            soft.MLPSweepConfig.quick,
            check_epochs=bad,
        )


# =================================================================================================
# soft.masked_ensemble
# =================================================================================================
def test_member_at_width_matches_masked_member():
    from gtlib.models import BatchedMLP  # noqa: F401

    ens = soft.masked_ensemble([3, 5], [0, 1], 4, 2)
    x = torch.randn(7, 4)
    m = soft.member_at_width(ens, 0, 3)
    assert (
        sum(p.numel() for p in m.parameters()) == 4 * 3 + 3 + 3 * 3 + 3 + 3 * 2 + 2
    )
    with torch.no_grad():
        assert torch.allclose(m(x), ens(x)[0], atol=1e-6)


@pytest.mark.reference
def test_masked_ensemble_members_are_make_mlp_with_units_switched_off():
    from gtlib.models import make_mlp

    widths, seeds = [2, 5, 3], [11, 4, 9]
    ens = soft.masked_ensemble(widths, seeds, 4, 3, depth=3)
    assert ens.size == 3 and len(ens.weights) == 4  # depth 3: four weight matrices
    np.testing.assert_array_equal(
        ens.hidden_mask.numpy(), [[1, 1, 0, 0, 0], [1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]
    )
    x = torch.randn(6, 4, generator=torch.Generator().manual_seed(30))
    with torch.no_grad():
        out = ens(x)
        for i, (w, s) in enumerate(zip(widths, seeds)):
            ref = make_mlp(s, 4, 5, 3, 3)
            _close(out[i], _cut(ref, w)(x), rtol=1e-5, atol=1e-6)
            cut = soft.member_at_width(ens, i, w)
            assert cut.layers[0].out_features == w and cut.depth == 3
            _close(cut(x), out[i], rtol=1e-5, atol=1e-6)
            n_params = 4 * w + w + 2 * (w * w + w) + w * 3 + 3
            assert sum(p.numel() for p in cut.parameters()) == n_params
    assert (
        len(soft.masked_ensemble([2, 3], [0, 1], 4, 3).weights) == 3
    )  # default depth 2
    with pytest.raises(ValueError, match="seeds"):
        soft.masked_ensemble([2, 3], [0], 4, 3)
    with pytest.raises(ValueError, match="i"):
        soft.member_at_width(ens, 3, 2)
    with pytest.raises(ValueError, match="width"):
        soft.member_at_width(ens, 0, 3)  # member 0 has only 2 units


# =================================================================================================
# soft.member_at_width
# =================================================================================================
@pytest.mark.boundary
def test_member_at_width_refuses_a_width_beyond_the_members():
    model = soft.masked_ensemble([4, 8], [0, 1], 5, 3)
    _raises(ValueError, "width", soft.member_at_width, model, 0, 8)
    _raises(ValueError, "i", soft.member_at_width, model, 2, 4)
    assert soft.member_at_width(model, 1, 8).layers[0].out_features == 8


# =================================================================================================
# soft.run_mlp_sweep
# =================================================================================================
@pytest.mark.reference
def test_run_mlp_sweep_against_members_trained_alone():
    """Each (replicate, width) member equals the first ``width`` units of make_mlp(tag) trained
    alone by gtlib.train.train (torch.optim.SGD) with minibatch seed 7919 + tag."""
    from dataclasses import replace

    from gtlib.models import make_mlp
    from gtlib.train import TrainConfig, train

    ds = _dataset(n=36, n_test=20, seed=31, classes=3, length=5)
    cfg = soft.MLPSweepConfig.quick(**SWEEP)
    seed = 2
    res = soft.run_mlp_sweep(cfg, ds, seed=seed)
    x = ds.x[:30]
    y = corrupt_labels(ds.y[:30], 0.3, 3, seed=seed)
    assert torch.equal(res.y_noisy, y) and res.n_train == 30
    tcfg = TrainConfig(
        lr=0.05, momentum=0.5, batch_size=10, epochs=2, check_every=10**9
    )
    R, widths = 2, [2, 3, 4]
    np.testing.assert_array_equal(res.widths, widths)
    assert res.train_err_reps.shape == res.test_err_reps.shape == (R, 3)
    nets = []
    for g in cfg.width_groups:
        for r in range(R):
            for j, w in enumerate(g):
                tag = 1000 * (seed * R + r) + w
                m = _cut(make_mlp(tag, 5, max(g), 2, 3), w)
                train(m, x, y, replace(tcfg, seed=7919 + tag))
                col = widths.index(w)
                with torch.no_grad():
                    tr = float((m(x).argmax(1) != y).float().mean())
                    te = float((m(ds.x_test).argmax(1) != ds.y_test).float().mean())
                assert res.train_err_reps[r, col] == pytest.approx(tr, abs=1e-6), (
                    r,
                    w,
                )
                assert res.test_err_reps[r, col] == pytest.approx(te, abs=1e-6), (
                    r,
                    w,
                )
                if r == 0:
                    nets.append(m)
    for got, want in zip(res.nets, nets):
        for p, q in zip(got.parameters(), want.parameters()):
            _close(p, q, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(res.train_err, res.train_err_reps.mean(0), rtol=1e-6)
    np.testing.assert_allclose(res.test_err, res.test_err_reps.mean(0), rtol=1e-6)
    np.testing.assert_array_equal(
        res.params, [5 * w + w + w * w + w + 3 * w + 3 for w in widths]
    )
    # the errors are against the noisy training labels and the clean test labels
    assert not torch.equal(y, ds.y[:30])


@pytest.mark.reference
def test_run_mlp_sweep_uses_every_setting_and_the_seed():
    ds = _dataset(n=36, n_test=20, seed=32, classes=3, length=5)

    def run(seed=0, **kw):
        res = soft.run_mlp_sweep(
            soft.MLPSweepConfig.quick(**{**SWEEP, **kw}), ds, seed=seed
        )
        return [p.detach().clone() for m in res.nets for p in m.parameters()], res

    base, res0 = run()
    changes = dict(
        n_train=29,
        label_noise=0.5,
        width_groups=((2, 3), (5,)),
        epochs=3,
        lr=0.1,
        momentum=0.0,
        batch_size=15,
        replicates=3,
    )
    for key, value in changes.items():
        params, res = run(**{key: value})
        differs = len(params) != len(base) or any(
            not torch.equal(p, q) for p, q in zip(params, base)
        )
        if key == "replicates":  # the first replicate's nets are the same networks
            differs = res.test_err_reps.shape != res0.test_err_reps.shape
        if key == "label_noise":
            differs = differs and not torch.equal(res.y_noisy, res0.y_noisy)
        assert differs, key
    params, res1 = run(seed=1)
    assert any(not torch.equal(p, q) for p, q in zip(params, base))
    # no stream is shared between seeds: seed 1 replicate 0 is not seed 0 replicate 1
    clean = dict(label_noise=0.0)
    _, a = run(seed=0, **clean)
    _, b = run(seed=1, **clean)
    assert not (
        np.array_equal(a.test_err_reps[1], b.test_err_reps[0])
        and np.array_equal(a.train_err_reps[1], b.train_err_reps[0])
    )


@pytest.mark.reference
def test_run_mlp_sweep_history_does_not_change_the_training():
    ds = _dataset(n=36, n_test=20, seed=33, classes=3, length=5)
    base = soft.run_mlp_sweep(soft.MLPSweepConfig.quick(**SWEEP), ds, seed=1)
    res = soft.run_mlp_sweep(
        soft.MLPSweepConfig.quick(**{**SWEEP, "epochs": 3, "check_epochs": 1}),
        ds,
        seed=1,
    )
    again = soft.run_mlp_sweep(
        soft.MLPSweepConfig.quick(**{**SWEEP, "epochs": 3}), ds, seed=1
    )
    np.testing.assert_array_equal(res.hist_epochs, [0, 1, 2, 3])
    assert (
        res.test_err_hist.shape
        == res.train_err_hist.shape
        == res.train_loss_hist.shape
        == (4, 2, 3)
    )
    # the last record is the end of training, identical to a run that records nothing
    np.testing.assert_array_equal(res.test_err_hist[-1], again.test_err_reps)
    np.testing.assert_array_equal(res.train_err_hist[-1], again.train_err_reps)
    for got, want in zip(res.nets_hist[-1], again.nets):
        assert all(
            torch.equal(p, q) for p, q in zip(got.parameters(), want.parameters())
        )
    # the record at epoch 2 is the end of a 2-epoch run (the check is not a side effect)
    np.testing.assert_array_equal(res.test_err_hist[2], base.test_err_reps)
    # the loss record is the mean cross-entropy of the first replicate's nets on the noisy labels
    x, y = ds.x[:30], res.y_noisy
    for t in (0, 3):
        for col, net in enumerate(res.nets_hist[t]):
            with torch.no_grad():
                want = float(F.cross_entropy(net(x), y))
            assert res.train_loss_hist[t, 0, col] == pytest.approx(want, rel=1e-5)
    assert again.nets_hist == [] and again.hist_epochs.size == 0


# =================================================================================================
# soft.width_peak_summary
# =================================================================================================
def test_width_peak_summary_by_hand():
    w = np.array([4, 8, 16, 32, 64])
    reps = np.array([[0.5, 0.4, 0.6, 0.45, 0.42], [0.5, 0.42, 0.62, 0.47, 0.4]])
    d = soft.width_peak_summary(w, reps, threshold=16)
    assert (d["peak_width"], d["left_width"]) == (16, 8)
    assert d["peak"] == pytest.approx(0.61) and d["left"] == pytest.approx(0.41)
    assert d["right"] == pytest.approx(0.41)
    assert set(soft.width_peak_summary(w, reps, keys_only=True)) == {
        "peak",
        "left",
        "right",
        "se_diff",
    }


@pytest.mark.reference
def test_width_peak_summary_edges_and_standard_error_by_hand():
    w = np.array([4, 8, 16, 32, 64, 128])
    reps = np.array(
        [
            [0.9, 0.30, 0.20, 0.50, 0.70, 0.95],
            [0.8, 0.34, 0.22, 0.52, 0.74, 0.97],
            [0.7, 0.32, 0.27, 0.57, 0.72, 0.99],
        ]
    )
    m = reps.mean(0)
    # threshold 16: widths 8..32 qualify (both ends included); 64 has a larger error but is out
    d = soft.width_peak_summary(w, reps, threshold=16)
    assert d["peak_width"] == 32 and d["peak"] == pytest.approx(m[3])
    assert d["left_width"] == 16 and d["left"] == pytest.approx(m[2])
    assert d["right"] == pytest.approx(m[-1])
    sds = [statistics.stdev(reps[:, j]) for j in range(6)]
    assert d["se_diff"] == pytest.approx(
        math.sqrt(2) * statistics.median(sds) / math.sqrt(3)
    )
    # threshold 64: widths 32..128 qualify but the last is not inner; peak at 64
    d = soft.width_peak_summary(w, reps, threshold=64)
    assert d["peak_width"] == 64 and d["left_width"] == 16
    # no threshold: every width but the first (0.8) and the last (0.97) can peak
    d = soft.width_peak_summary([4, 8, 16, 64, 128], reps[:, [0, 1, 2, 4, 5]])
    assert d["peak_width"] == 64 and d["left_width"] == 16
    # a threshold with no inner width near it falls back to all inner widths
    assert soft.width_peak_summary(w, reps, threshold=1000)["peak_width"] == 64
    # threshold / 2 is included: threshold 64 -> 32 qualifies, 16 does not
    reps2 = reps.copy()
    reps2[:, 3] = 0.8  # width 32 now the largest inner error below 64's 0.72
    reps2[:, 4] = 0.6
    assert soft.width_peak_summary(w, reps2, threshold=64)["peak_width"] == 32


# =================================================================================================
# soft.split_peak_test
# =================================================================================================
@pytest.mark.reference
def test_split_peak_test_selects_on_one_half_and_measures_on_the_other():
    w = np.array([4, 8, 16, 32, 64])
    sel = np.array([[0.5, 0.30, 0.40, 0.35, 0.2], [0.5, 0.32, 0.42, 0.33, 0.2]])
    # the held-out half reverses 16 and 32: the peak stays where the first half put it
    mea = np.array(
        [
            [0.6, 0.20, 0.25, 0.45, 0.10],
            [0.4, 0.24, 0.31, 0.41, 0.14],
            [0.5, 0.22, 0.28, 0.43, 0.12],
        ]
    )
    d = soft.split_peak_test(w, np.vstack([sel, mea]), threshold=16)
    assert d["peak_width"] == 16 and d["left_width"] == 8 and d["measured"] == 3
    m = mea.mean(0)
    assert d["gap_left"] == pytest.approx(m[2] - m[1])
    assert d["gap_right"] == pytest.approx(m[2] - m[4])
    v = [statistics.variance(mea[:, j]) for j in range(5)]
    assert d["se_left"] == pytest.approx(math.sqrt(v[2] / 3 + v[1] / 3))
    assert d["se_right"] == pytest.approx(math.sqrt(v[2] / 3 + v[4] / 3))
    # an odd number of replicates: the extra one measures
    assert soft.split_peak_test(w, np.vstack([sel, mea[:2]]))["measured"] == 2
    # invariance: reordering the measuring replicates changes nothing
    d2 = soft.split_peak_test(w, np.vstack([sel, mea[::-1]]), threshold=16)
    assert all(d2[k] == pytest.approx(d[k]) for k in d)
    # at_threshold: the peak is the threshold width itself, not chosen; left is still chosen
    d3 = soft.split_peak_test(
        w, np.vstack([sel, mea]), threshold=32, at_threshold=True
    )
    assert d3["peak_width"] == 32 and d3["left_width"] == 8
    assert d3["gap_left"] == pytest.approx(m[3] - m[1])
    assert d3["gap_right"] == pytest.approx(m[3] - m[4])
    assert d3["se_right"] == pytest.approx(math.sqrt(v[3] / 3 + v[4] / 3))
    with pytest.raises(ValueError, match="threshold"):
        soft.split_peak_test(
            w, np.vstack([sel, mea]), threshold=24, at_threshold=True
        )
    with pytest.raises(ValueError, match="threshold"):
        soft.split_peak_test(
            w, np.vstack([sel, mea]), threshold=64, at_threshold=True
        )
    # no bump anywhere: the held-out gaps of a flat sweep average zero (bias removed)
    rng = np.random.default_rng(0)
    gaps = [
        soft.split_peak_test(np.arange(1, 12), rng.normal(size=(8, 11)))["gap_left"]
        for _ in range(400)
    ]
    assert abs(np.mean(gaps)) < 0.1 and np.mean(gaps) > -0.1
    with pytest.raises(ValueError, match="err_reps"):
        soft.split_peak_test(w, sel)
    with pytest.raises(ValueError, match="widths"):
        soft.split_peak_test([4, 8], np.zeros((4, 2)))


@pytest.mark.boundary
@pytest.mark.parametrize(
    "args, name",
    [
        (([4, 8, 16], np.zeros((3, 3))), "err_reps"),  # fewer than 4 replicates
        (([4, 8, 16], np.zeros((4, 2))), "err_reps"),  # one column short
        (([4, 8, 16], [[0.1, math.nan, 0.2]] * 4), "err_reps"),
        (([4, 8], np.zeros((4, 2))), "widths"),
        ((None, np.zeros((4, 3))), "widths"),
        (([4, 8, 16], np.zeros((4, 3)), -1.0), "threshold"),
        (([4, 8, 16], np.zeros((4, 3)), "16"), "threshold"),
        (([4, 8, 16], np.zeros((4, 3)), 8, "yes"), "at_threshold"),
        (([4, 8, 16], np.zeros((4, 3)), None, True), "threshold"),
    ],
)
def test_split_peak_test_refuses_bad_input(args, name):
    _raises((TypeError, ValueError), name, soft.split_peak_test, *args)


# =================================================================================================
# soft.interpolation_threshold
# =================================================================================================
@pytest.mark.reference
def test_interpolation_threshold_edges():
    w = [4, 8, 16, 32]
    assert (
        soft.interpolation_threshold(w, [0.3, 0.01, 0.0, 0.02]) == 8
    )  # exactly at tol 0.01
    assert soft.interpolation_threshold(w, [0.3, 0.01, 0.0, 0.02], tol=0.005) == 16
    assert soft.interpolation_threshold(w, [0.3, 0.2, 0.1, 0.0], tol=0.0) == 32
    assert soft.interpolation_threshold(w, [0.0, 0.2, 0.1, 0.0], tol=0.0) == 4
    assert soft.interpolation_threshold(w, [0.3, 0.2, 0.1, 0.05]) is None


@pytest.mark.boundary
@pytest.mark.parametrize("tol", [-0.5, math.nan, math.inf, True, None])
def test_interpolation_threshold_refuses_a_bad_tolerance(tol):
    _raises(
        (TypeError, ValueError),
        "tol",
        soft.interpolation_threshold,
        [4, 8],
        [0.3, 0.0],
        tol,
    )


@pytest.mark.boundary
def test_interpolation_threshold_refuses_empty_or_mismatched_errors():
    _raises(ValueError, "train_err", soft.interpolation_threshold, [4, 8], [])
    _raises(ValueError, "train_err", soft.interpolation_threshold, [4, 8], [0.1])


@pytest.mark.boundary
def test_meaningful_edge_inputs_stay_accepted(subnet):
    # no symbols to decode, no penalty, no refit steps, lists for arrays
    assert soft.arithmetic_decode(soft.arithmetic_encode([], 3), 0, 3) == []
    assert np.all(soft.order_penalty(3, 1.5, 0.0) == 0)
    model, x, y = subnet
    c = soft.tune_centres(
        model, x, y, [-0.1, 0.0, 0.1], [0, 1, 2, 1, 0, 2, 1, 0], steps=0
    )
    assert np.allclose(c, [-0.1, 0.0, 0.1])
    assert soft.effective_dimensionality([1.0, 1.0, 0.0], 1.0) == pytest.approx(1.0)
    assert soft.interpolation_threshold([4, 8, 16], [0.3, 0.0, 0.0]) == 8
    assert soft.interpolation_threshold([4, 8], [0.3, 0.2]) is None
    assert soft.kl_inverse(0.3, 0.0) == pytest.approx(0.3)
