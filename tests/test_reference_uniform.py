"""gtlib.uniform against references that cannot share its bugs (issue 19, section 6).

Every public function of the module is checked here against a hand computation on a tiny
asymmetric input, numpy / scipy / torch, a loop-based re-implementation written in this file, or a
Monte-Carlo estimate; every parameter is moved off its default at least once and must change the
result. The experiment drivers (corruption_experiment, cnn_randomization, margin_sweep,
spheres_sweep) run at toy sizes and every field they report is recomputed from the trained weights
and the documented seed scheme. Tiny sizes and float64 where exactness helps: the file runs in a
few seconds on one thread.
"""
import inspect
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy import stats

from gtlib import uniform as U
from gtlib.data import corrupt_labels, mnist1d
from gtlib.models import BatchedMLP
from gtlib.train import TrainConfig


def _np(t):
    return t.detach().double().cpu().numpy()


def _spec_np(w):
    return float(np.linalg.norm(_np(w), ord=2))


def _hand_margins(logits, y):
    """f_y - max_{j != y} f_j, by a loop over the rows."""
    out = []
    for row, label in zip(logits.tolist(), y.tolist()):
        others = [v for j, v in enumerate(row) if j != label]
        out.append(row[label] - max(others))
    return np.array(out)


# =============================================================================================
# documented defaults (the paper's settings and the chapter's quick scale)
# =============================================================================================
def _defaults(fn):
    return {k: p.default for k, p in inspect.signature(fn).parameters.items()
            if p.default is not inspect.Parameter.empty}


def test_function_defaults_are_the_documented_ones():
    assert _defaults(U.sphere_data) == {"radii": (1.0, 1.2), "generator": None}
    assert _defaults(U.sphere_sprime) == {"radii": (1.0, 1.2), "atol": 1e-4}
    assert _defaults(U.boundary_slice) == {"radii": (1.0, 1.2), "half_width": 0.6,
                                           "resolution": 161, "seed": 0}
    assert _defaults(U.bulge_width) == {"radii": (1.0, 1.2), "seed": 0, "resolution": 721}
    assert _defaults(U.slice_points) == {"radii": (1.0, 1.2), "seed": 0, "candidates": 200}
    assert _defaults(U.train_on_subsets) == {"seeds": None, "check_every_epochs": 1.0,
                                             "max_epochs": 1000.0}
    assert _defaults(U.linear_nn_errors) == {"seed": 0, "n_test": 200}
    assert _defaults(U.nearest_neighbour_predict) == {"chunk": 2048}
    assert _defaults(U.margin_sweep) == {"seed": 0, "device": None, "fixed_size": False}
    assert _defaults(U.linear_sweep) == {"K": 1, "noise_var": 32.0}
    assert _defaults(U.linear_errors) == {"seed": 0}
    assert _defaults(U.linear_data) == {"seed": 0}
    assert _defaults(U.log_ticks) == {"axis": "x"}
    assert _defaults(U.plot_slice) == {"colors": ("#56B4E9", "#E69F00")}
    assert _defaults(U.corruption_experiment) == {"seed": 0, "device": None, "replicate": True}
    assert _defaults(U.BatchedCNN1d.__init__) == {"channels": 32, "hidden": 256, "classes": 10,
                                                  "length": 40}


def test_config_defaults_and_paper_presets():
    c = U.LinearConstruction()
    assert (c.K, c.D, c.m, c.noise_var, c.signal) == (1, 20_000, 64, 32.0, 2.0)
    s = U.SpheresConfig()
    assert (s.d, s.radii, s.sizes, s.n_test, s.width, s.lr, s.batch_size, s.gamma,
            s.margin_fraction, s.max_epochs) == (200, (1.0, 1.2), (256, 512, 1024, 2048), 4000,
                                                 2000, 0.5, 64, 4.0, 0.99, 3000.0)
    full = U.SpheresConfig.full()      # Nagarajan and Kolter 2019, Sec. 3.2
    assert (full.d, full.radii, full.width, full.gamma, full.lr, full.margin_fraction) == \
        (1000, (1.0, 1.1), 100_000, 10.0, 0.5, 0.99)
    m = U.MarginSweepConfig()
    assert (m.sizes, m.n_test, m.width, m.depth, m.lr, m.batch_size, m.gamma, m.margin_fraction,
            m.check_every_epochs, m.max_epochs) == ((500, 1000, 2000, 4000, 8000), 4000, 256, 2,
                                                    0.1, 64, 4.0, 0.99, 1.0, 2000.0)
    mf = U.MarginSweepConfig.full()
    assert (mf.width, mf.depth, mf.gamma, mf.sizes[0], mf.sizes[-1]) == (1024, 5, 10.0, 1000, 32000)
    k = U.CorruptionConfig()
    assert (k.n_train, k.n_test, k.levels, k.width, k.depth, k.lr, k.batch_size,
            k.target_train_acc, k.max_steps, k.check_every) == (
        4000, 4000, (0.0, 0.5, 1.0), 512, 1, 0.1, 64, 0.99, 40_000, 50)
    kf = U.CorruptionConfig.full()
    assert len(kf.levels) == 11 and kf.levels[0] == 0.0 and kf.levels[-1] == 1.0
    assert kf.levels[3] == pytest.approx(0.3) and kf.depth == 3
    n = U.CNNRandomizationConfig()
    assert (n.n_train, n.n_test, n.channels, n.hidden, n.lr, n.batch_size, n.target_train_acc,
            n.max_steps, n.check_every, n.true_runs, n.random_runs) == (
        4000, 4000, 32, 256, 0.1, 64, 0.99, 40_000, 50, 4, 2)


# =============================================================================================
# norms
# =============================================================================================
def test_spectral_norm_on_stacks_against_numpy_and_keeps_the_dtype():
    g = torch.Generator().manual_seed(11)
    w = torch.randn(2, 3, 4, 7, generator=g, dtype=torch.float64)   # (..., out, in), out != in
    got = U.spectral_norm(w)
    assert got.shape == (2, 3) and got.dtype == torch.float64
    ref = np.linalg.norm(_np(w), ord=2, axis=(-2, -1))
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-13)
    w32 = w[0, 0].float().requires_grad_()
    out = U.spectral_norm(w32)
    assert out.dtype == torch.float32 and not out.requires_grad
    assert out.item() == pytest.approx(_spec_np(w32), rel=1e-6)
    # transposing leaves the largest singular value unchanged; the smallest one differs here
    assert U.spectral_norm(w[1, 2].T).item() == pytest.approx(ref[1, 2], rel=1e-13)
    assert np.linalg.svd(_np(w[1, 2]), compute_uv=False)[-1] < 0.9 * ref[1, 2]


def test_norm_21_sums_row_norms_on_stacks():
    g = torch.Generator().manual_seed(12)
    w = torch.randn(3, 5, 2, generator=g, dtype=torch.float64)      # 5 units with 2 inputs each
    got = U.norm_21(w)
    ref = [sum(math.sqrt(sum(v * v for v in row)) for row in w[e].tolist()) for e in range(3)]
    assert got.shape == (3,)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-13)
    # (W^T)'s (2,1)-norm is not W's: the columns give a different number
    assert U.norm_21(w[0].T).item() != pytest.approx(ref[0], rel=1e-3)


def test_distance_from_init_is_per_member_on_stacks():
    g = torch.Generator().manual_seed(13)
    ws = [torch.randn(3, 4, 2, generator=g, dtype=torch.float64),
          torch.randn(3, 1, 4, generator=g, dtype=torch.float64)]
    w0s = [torch.randn(3, 4, 2, generator=g, dtype=torch.float64),
           torch.randn(3, 1, 4, generator=g, dtype=torch.float64)]
    got = U.distance_from_init(ws, w0s)
    assert got.shape == (3,)
    for e in range(3):
        ref = math.sqrt(sum(float(((_np(w[e]) - _np(w0[e])) ** 2).sum()) for w, w0 in zip(ws, w0s)))
        assert got[e].item() == pytest.approx(ref, rel=1e-13)
    # the order of the arguments does not matter; the second layer contributes
    assert torch.allclose(U.distance_from_init(w0s, ws), got)
    one = U.distance_from_init(ws[:1], w0s[:1])
    assert bool((one < got).all())
    with pytest.raises(ValueError):
        U.distance_from_init([], [])
    with pytest.raises(ValueError):
        U.distance_from_init(ws, w0s[:1])


def _layers(seed=14):
    """Three non-square layers 3 -> 5 -> 4 -> 11 and their initializations (float64)."""
    g = torch.Generator().manual_seed(seed)
    shapes = [(5, 3), (4, 5), (11, 4)]
    ws = [torch.randn(*s, generator=g, dtype=torch.float64) for s in shapes]
    w0s = [torch.randn(*s, generator=g, dtype=torch.float64) * 0.5 for s in shapes]
    return ws, w0s


def _bartlett_np(ws, w0s, data_norm, gamma, n, spec=None):
    spec = spec or [_spec_np(w) for w in ws]
    s = 0.0
    for w, w0, sl in zip(ws, w0s, spec):
        d = _np(w) - _np(w0)
        s += (np.sqrt((d ** 2).sum(axis=1)).sum() / sl) ** (2 / 3)
    return data_norm / (gamma * n) * np.prod(spec) * s ** 1.5


def _neyshabur_np(ws, w0s, B, gamma, n, spec=None, h=None):
    spec = spec or [_spec_np(w) for w in ws]
    L = len(ws)
    s = sum(((_np(w) - _np(w0)) ** 2).sum() / sl ** 2 for w, w0, sl in zip(ws, w0s, spec))
    return math.sqrt(B ** 2 * L ** 2 * h * math.log(L * h) * np.prod(spec) ** 2 * s
                     / (gamma ** 2 * n))


def test_bartlett_bound_against_numpy_with_and_without_given_spectral_norms():
    ws, w0s = _layers()
    got = U.bartlett_bound(ws, w0s, data_norm=2.5, gamma=0.7, n=13)
    assert got == pytest.approx(_bartlett_np(ws, w0s, 2.5, 0.7, 13), rel=1e-12)
    # spectral norms passed in are used as given (here deliberately not the true ones)
    spec = [1.5, 2.0, 3.5]
    got2 = U.bartlett_bound(ws, w0s, 2.5, 0.7, 13, spectral=spec)
    assert got2 == pytest.approx(_bartlett_np(ws, w0s, 2.5, 0.7, 13, spec), rel=1e-12)
    assert got2 != pytest.approx(got, rel=1e-3)
    # the reference matrices are the initialization: from W0 = W the term vanishes
    assert U.bartlett_bound(ws, ws, 2.5, 0.7, 13) == 0.0
    with pytest.raises(ValueError):
        U.bartlett_bound(ws, w0s, 2.5, 0.7, 13, spectral=spec[:2])
    with pytest.raises(ValueError):
        U.bartlett_bound(ws, w0s, 0.0, 0.7, 13)


def test_neyshabur_bound_against_numpy_and_its_width_is_the_largest_layer_size():
    ws, w0s = _layers()
    # h = 11, which only the last layer's *output* size reaches (inputs: 3, 5, 4)
    got = U.neyshabur_bound(ws, w0s, input_norm=1.7, gamma=0.3, n=21)
    assert got == pytest.approx(_neyshabur_np(ws, w0s, 1.7, 0.3, 21, h=11), rel=1e-12)
    # the same network read backwards: h = 11 is now only the first layer's *input* size
    rws = [w.T.contiguous() for w in reversed(ws)]
    rw0s = [w.T.contiguous() for w in reversed(w0s)]
    got_r = U.neyshabur_bound(rws, rw0s, 1.7, 0.3, 21)
    assert got_r == pytest.approx(_neyshabur_np(rws, rw0s, 1.7, 0.3, 21, h=11), rel=1e-12)
    spec = [2.0, 0.5, 3.0]
    got2 = U.neyshabur_bound(ws, w0s, 1.7, 0.3, 21, spectral=spec)
    assert got2 == pytest.approx(_neyshabur_np(ws, w0s, 1.7, 0.3, 21, spec, h=11), rel=1e-12)
    # depth enters as L^2 ln(L h): one layer alone, h = 5 there
    one = U.neyshabur_bound(ws[:1], w0s[:1], 1.7, 0.3, 21)
    assert one == pytest.approx(_neyshabur_np(ws[:1], w0s[:1], 1.7, 0.3, 21, h=5), rel=1e-12)
    assert U.neyshabur_bound(ws, ws, 1.7, 0.3, 21) == 0.0
    with pytest.raises(ValueError):
        U.neyshabur_bound(ws, w0s, 1.7, 0.3, 21, spectral=[1.0, 0.0, 1.0])
    with pytest.raises(ValueError):
        U.neyshabur_bound([torch.ones(2, 3, 4)], [torch.ones(2, 3, 4)], 1.0, 1.0, 3)


def test_network_measures_against_numpy():
    ws, w0s = _layers(15)
    g = torch.Generator().manual_seed(16)
    x = torch.randn(9, 3, generator=g, dtype=torch.float64)
    x[4] *= 3.0                                   # one long input: max norm != rms norm
    m = U.network_measures(ws, w0s, x, gamma=0.4)
    spec = [_spec_np(w) for w in ws]
    np.testing.assert_allclose(m.spectral, spec, rtol=1e-13)
    assert m.spectral_product == pytest.approx(np.prod(spec), rel=1e-13)
    dist = math.sqrt(sum(((_np(w) - _np(w0)) ** 2).sum() for w, w0 in zip(ws, w0s)))
    assert m.distance == pytest.approx(dist, rel=1e-13)
    xf = float(np.sqrt((_np(x) ** 2).sum()))
    B = float(np.sqrt((_np(x) ** 2).sum(1)).max())
    assert m.bartlett == pytest.approx(_bartlett_np(ws, w0s, xf, 0.4, 9), rel=1e-12)
    assert m.neyshabur == pytest.approx(_neyshabur_np(ws, w0s, B, 0.4, 9, h=11), rel=1e-12)
    # gamma enters both terms as 1/gamma
    m2 = U.network_measures(ws, w0s, x, gamma=0.8)
    assert (m2.bartlett, m2.neyshabur) == (pytest.approx(m.bartlett / 2, rel=1e-12),
                                           pytest.approx(m.neyshabur / 2, rel=1e-12))
    with pytest.raises(ValueError):
        U.network_measures(ws, w0s, x[:0], 0.4)


# =============================================================================================
# power-law fits
# =============================================================================================
def test_power_law_fit_against_linregress_and_its_prediction():
    x = np.array([3.0, 7.0, 20.0, 45.0, 150.0, 400.0])
    y = np.array([2.1, 1.2, 0.95, 0.51, 0.33, 0.12])
    fit = U.power_law_fit(list(x), tuple(y))
    ref = stats.linregress(np.log(x), np.log(y))
    assert fit.slope == pytest.approx(ref.slope, rel=1e-12)
    assert fit.intercept == pytest.approx(ref.intercept, rel=1e-12)
    assert fit.slope_se == pytest.approx(ref.stderr, rel=1e-10)
    pred = fit(np.array([5.0, 100.0]))
    np.testing.assert_allclose(pred, np.exp(ref.intercept) * np.array([5.0, 100.0]) ** ref.slope,
                               rtol=1e-12)
    # two points: the line through them, no standard error; the intercept is the natural log of C
    two = U.power_law_fit([2.0, 8.0], [5.0 * 2.0 ** 1.5, 5.0 * 8.0 ** 1.5])
    assert two.slope == pytest.approx(1.5, rel=1e-12)
    assert two.intercept == pytest.approx(math.log(5.0), rel=1e-12)
    assert math.isnan(two.slope_se)
    assert two(4.0) == pytest.approx(5.0 * 4.0 ** 1.5, rel=1e-12)
    # three points: k - 2 = 1 degree of freedom
    three = U.power_law_fit(x[:3], y[:3])
    assert three.slope_se == pytest.approx(stats.linregress(np.log(x[:3]), np.log(y[:3])).stderr,
                                           rel=1e-10)
    for bad in ([1.0, -2.0, 3.0], [1.0, float("inf"), 3.0]):
        with pytest.raises(ValueError):
            U.power_law_fit(bad, [1.0, 2.0, 3.0])
        with pytest.raises(ValueError):
            U.power_law_fit([1.0, 2.0, 3.0], bad)
    with pytest.raises(ValueError):
        U.power_law_fit(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(TypeError):
        U.power_law_fit("abc", [1, 2, 3])


# =============================================================================================
# the overparameterized linear construction
# =============================================================================================
def test_linear_construction_u_and_sample_by_hand_and_by_statistics():
    cfg = U.LinearConstruction(K=3, D=500, m=5, noise_var=7.0, signal=1.5)
    u = cfg.u
    assert u.dtype == torch.float64 and u.shape == (3,)
    assert u.tolist() == pytest.approx([1 / math.sqrt(15)] * 3, rel=1e-15)   # ||u|| = 1/sqrt(m)
    x1, x2, y = cfg.sample(400, torch.Generator().manual_seed(4))
    assert (x1.shape, x2.shape, y.shape) == ((400, 3), (400, 500), (400,))
    assert x1.dtype == x2.dtype == y.dtype == torch.float64
    assert set(y.tolist()) == {-1.0, 1.0} and abs(float(y.mean())) < 0.2   # fair +-1 labels
    # x1 = signal * y * u exactly
    assert torch.equal(x1, 1.5 * y[:, None] * torch.full((1, 3), 1 / math.sqrt(15),
                                                         dtype=torch.float64))
    # x2 ~ N(0, noise_var / D): 200 000 draws, relative s.e. of the variance 0.3%
    assert float(x2.var()) == pytest.approx(7.0 / 500, rel=0.02)
    assert abs(float(x2.mean())) < 5 * math.sqrt(7.0 / 500 / x2.numel())
    # x2 is independent of the label
    assert abs(float((x2 * y[:, None]).mean())) < 5 * math.sqrt(7.0 / 500 / x2.numel())
    # the same generator state gives the same sample, another seed another one
    again = cfg.sample(400, torch.Generator().manual_seed(4))
    assert all(torch.equal(a, b) for a, b in zip((x1, x2, y), again))
    other = cfg.sample(400, torch.Generator().manual_seed(5))
    assert not torch.equal(other[1], x2) and not torch.equal(other[2], y)


def test_linear_data_is_cfg_m_draws_from_the_seed():
    cfg = U.LinearConstruction(K=2, D=7, m=9)
    x1, x2, y = U.linear_data(cfg, seed=6)
    r1, r2, ry = cfg.sample(9, torch.Generator().manual_seed(6))
    assert torch.equal(x1, r1) and torch.equal(x2, r2) and torch.equal(y, ry)
    assert not torch.equal(U.linear_data(cfg, seed=7)[1], x2)
    assert torch.equal(U.linear_data(cfg)[1], cfg.sample(9, torch.Generator().manual_seed(0))[1])
    # m, K and D set the shapes
    assert [t.shape for t in U.linear_data(U.LinearConstruction(K=4, D=3, m=2))] == \
        [(2, 4), (2, 3), (2,)]


def test_one_step_gd_and_sprime_and_predict_against_loops():
    g = torch.Generator().manual_seed(17)
    x1 = torch.randn(5, 2, generator=g, dtype=torch.float64)
    x2 = torch.randn(5, 3, generator=g, dtype=torch.float64)
    y = torch.tensor([1.0, -1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    w1, w2 = U.one_step_gd(x1, x2, y)
    ref1 = [sum(y[i].item() * x1[i, k].item() for i in range(5)) for k in range(2)]
    ref2 = [sum(y[i].item() * x2[i, k].item() for i in range(5)) for k in range(3)]
    assert w1.tolist() == pytest.approx(ref1, rel=1e-14)
    assert w2.tolist() == pytest.approx(ref2, rel=1e-14)
    s1, s2, sy = U.linear_sprime(x1, x2, y)
    assert torch.equal(s1, x1) and torch.equal(s2, -x2) and torch.equal(sy, y)
    pred = U.linear_predict(w1, w2, x1, x2)
    score = [sum(w1[k].item() * x1[i, k].item() for k in range(2))
             + sum(w2[k].item() * x2[i, k].item() for k in range(3)) for i in range(5)]
    assert pred.tolist() == [math.copysign(1.0, s) for s in score]
    # a zero score predicts 0, an error for either label
    z = U.linear_predict(torch.tensor([1.0]), torch.tensor([2.0, 0.0]),
                         torch.tensor([[2.0], [1.0], [-1.0]]),
                         torch.tensor([[-1.0, 5.0], [1.0, 0.0], [0.0, 9.0]]))
    assert z.tolist() == [0.0, 1.0, -1.0]
    with pytest.raises(ValueError):
        U.linear_predict(w1, w2, x1, x2[:4])
    with pytest.raises(ValueError):
        U.linear_predict(w1[:1], w2, x1, x2)
    with pytest.raises(ValueError):
        U.linear_predict(w1, w2[:2], x1, x2)


def _linear_errors_ref(cfg, seed):
    """Training, exact test, S' and fresh errors written out from the construction's definition."""
    x1, x2, y = cfg.sample(cfg.m, torch.Generator().manual_seed(seed))
    w1 = (y[:, None] * x1).sum(0)
    w2 = (y[:, None] * x2).sum(0)

    def err(a, b, lab):
        return float(np.mean(np.sign(_np(a) @ _np(w1) + _np(b) @ _np(w2)) != _np(lab)))

    mean = cfg.signal * float(w1 @ torch.full((cfg.K,), 1 / math.sqrt(cfg.K * cfg.m),
                                              dtype=torch.float64))
    sd = float(w2.norm()) * math.sqrt(cfg.noise_var / cfg.D)
    test = float(stats.norm.cdf(-mean / sd))
    f1, f2, fy = cfg.sample(cfg.m, torch.Generator().manual_seed(10 ** 6 + seed))
    sprime = err(x1, -x2, y)
    return dict(train=err(x1, x2, y), test=test, sprime=sprime,
                uc_lower_bound=max(0.0, sprime - test), fresh=err(f1, f2, fy))


@pytest.mark.parametrize("cfg,seed", [
    (U.LinearConstruction(K=2, D=40, m=30, noise_var=5.0, signal=1.5), 3),
    (U.LinearConstruction(K=2, D=1, m=30, noise_var=5.0, signal=1.0), 12),  # S' below test
])
def test_linear_errors_against_a_written_out_reference(cfg, seed):
    got = U.linear_errors(cfg, seed=seed)
    ref = _linear_errors_ref(cfg, seed)
    for k, v in ref.items():
        assert getattr(got, k) == pytest.approx(v, rel=1e-10, abs=1e-15), k
    # the errors are neither 0 nor 1 here, so a sign or a mask slip shows
    assert 0 < got.train < got.sprime < 1 or got.uc_lower_bound == 0.0
    assert 0 < got.test < 0.5 and 0 < got.fresh < 1


def test_linear_errors_parameters_each_change_the_result():
    base = dict(K=2, D=40, m=30, noise_var=5.0, signal=1.5)
    ref = U.linear_errors(U.LinearConstruction(**base), seed=3)
    for k, v in (("noise_var", 9.0), ("signal", 2.5), ("D", 60), ("m", 31)):
        other = U.linear_errors(U.LinearConstruction(**{**base, k: v}), seed=3)
        assert other.test != pytest.approx(ref.test, rel=1e-6), k
    # K alone changes nothing: w1.u = signal m ||u||^2 = signal whatever K, and the noise draws
    # do not depend on K
    k3 = U.linear_errors(U.LinearConstruction(**{**base, "K": 3}), seed=3)
    assert (k3.train, k3.sprime, k3.fresh) == (ref.train, ref.sprime, ref.fresh)
    assert k3.test == pytest.approx(ref.test, rel=1e-12)
    assert U.linear_errors(U.LinearConstruction(**base), seed=4).test != \
        pytest.approx(ref.test, rel=1e-6)


def test_linear_sweep_is_the_mean_of_linear_errors():
    Ds, seeds = [3, 40, 9], [0, 5, 11]
    out = U.linear_sweep(17, Ds, seeds, K=2, noise_var=6.0)
    assert out["D"].tolist() == Ds
    for j, D in enumerate(Ds):
        errs = [_linear_errors_ref(U.LinearConstruction(K=2, D=D, m=17, noise_var=6.0), s)
                for s in seeds]
        for k in ("train", "test", "sprime", "uc_lower_bound", "fresh"):
            assert out[k][j] == pytest.approx(np.mean([e[k] for e in errs]), rel=1e-10,
                                              abs=1e-15), (k, D)
    # noise_var reaches the construction (default 32; K leaves the errors unchanged, above)
    default = U.linear_sweep(17, Ds, seeds, K=2)
    assert default["test"].tolist() != pytest.approx(out["test"].tolist(), rel=1e-6)
    assert U.linear_sweep(17, Ds, seeds, noise_var=32.0)["test"].tolist() == \
        pytest.approx(default["test"].tolist(), rel=1e-12)
    with pytest.raises(ValueError):
        U.linear_sweep(17, [], seeds)
    with pytest.raises(ValueError):
        U.linear_sweep(17, Ds, [])


def test_sphere_data_reproduces_its_generator_and_uses_its_radii():
    n, d, radii = 300, 7, (0.6, 2.5)
    x, y = U.sphere_data(n, d, radii, torch.Generator().manual_seed(8))
    g = torch.Generator().manual_seed(8)
    yr = torch.randint(0, 2, (n,), generator=g)
    z = torch.randn(n, d, generator=g)
    z = z / z.norm(dim=1, keepdim=True)
    assert torch.equal(y, yr)
    assert torch.allclose(x, z * torch.where(yr == 1, 2.5, 0.6)[:, None], rtol=1e-6, atol=1e-7)
    assert x.shape == (n, d) and y.dtype == torch.int64
    r = x.norm(dim=1)
    assert torch.allclose(r[y == 0], torch.tensor(0.6)) and torch.allclose(r[y == 1],
                                                                           torch.tensor(2.5))
    # directions uniform on the sphere: every coordinate has mean 0 and E[z_k^2] = 1/d
    dirs = x / r[:, None]
    assert float(dirs.mean(0).abs().max()) < 5 / math.sqrt(n * d)
    np.testing.assert_allclose(_np((dirs ** 2).mean(0)), 1 / d, rtol=0.35)
    # no generator: the fixed seed 0
    x0, y0 = U.sphere_data(5, 3)
    xr, yr0 = U.sphere_data(5, 3, (1.0, 1.2), torch.Generator().manual_seed(0))
    assert torch.equal(x0, xr) and torch.equal(y0, yr0)
    assert not torch.equal(U.sphere_data(5, 3, generator=torch.Generator().manual_seed(1))[0], x0)
    # the size cap is n * d <= 1e9 values (refused before anything is drawn)
    with pytest.raises(ValueError):
        U.sphere_data(500_000_001, 2)
    assert U.sphere_data(600_000, 2)[0].shape == (600_000, 2)


def test_sphere_sprime_by_hand_with_its_radii_and_tolerance():
    radii = (2.0, 3.0)
    x = torch.tensor([[2.0, 0.0], [0.0, -3.0], [1.2, 1.6], [1.8, -2.4]], dtype=torch.float64)
    y = torch.tensor([0, 1, 0, 1])
    xs, ys = U.sphere_sprime(x, y, radii)
    assert ys.tolist() == [1, 0, 1, 0]
    assert xs.dtype == torch.float64
    assert xs.tolist() == [pytest.approx([3.0, 0.0]), pytest.approx([0.0, -2.0]),
                           pytest.approx([1.8, 2.4]), pytest.approx([1.2, -1.6])]
    # atol: a point 5e-4 off its sphere is refused at the default 1e-4 and accepted at 1e-3
    off = x.clone()
    off[0, 0] = 2.0005
    with pytest.raises(ValueError):
        U.sphere_sprime(off, y, radii)
    assert U.sphere_sprime(off, y, radii, atol=1e-3)[0][0, 0].item() == pytest.approx(3.00075)
    with pytest.raises(ValueError):          # the right radii, but for the other label
        U.sphere_sprime(x, 1 - y, radii)
    with pytest.raises(ValueError):
        U.sphere_sprime(x, y[:3], radii)


def _plane(point, seed):
    """The slice's orthonormal basis: the point's direction and a seeded Gaussian direction
    orthogonalized against it (the construction both references below rebuild)."""
    e1 = point / point.norm()
    v = torch.randn(point.shape[0], generator=torch.Generator().manual_seed(seed),
                    dtype=point.dtype)
    v = v - (v @ e1) * e1
    return e1, v / v.norm()


def _slice_ref(model, member, point, radii, half_width, resolution, seed):
    e1, e2 = _plane(point, seed)
    a = np.linspace(radii[0] - 0.3, radii[1] + 0.3, resolution)
    b = np.linspace(-half_width, half_width, resolution)
    f = np.zeros((resolution, resolution))
    ws = [w[member].detach().double() for w in model.weights]
    bs = [p[member].detach().double() for p in model.biases]
    for j, bj in enumerate(b):
        for k, ak in enumerate(a):
            h = (ak * e1 + bj * e2).double()
            for l, (w, c) in enumerate(zip(ws, bs)):
                h = w @ h + c
                if l < len(ws) - 1:
                    h = torch.relu(h)
            f[j, k] = float(h[1] - h[0])
    return a, b, f


def test_boundary_slice_against_a_pointwise_reference():
    model = BatchedMLP.init([21, 22], 4, 12, 1, 2).double()
    point = torch.tensor([0.3, -1.1, 0.5, 0.2], dtype=torch.float64)
    radii = (0.8, 1.5)
    for resolution, seed, hw in ((7, 3, 0.45), (6, 0, 0.6)):
        a, b, f = U.boundary_slice(model, 1, point, radii, half_width=hw, resolution=resolution,
                                   seed=seed)
        ra, rb, rf = _slice_ref(model, 1, point, radii, hw, resolution, seed)
        np.testing.assert_allclose(a, ra, rtol=1e-12)
        np.testing.assert_allclose(b, rb, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(f, rf, rtol=1e-9, atol=1e-12)
        assert (a[0], a[-1], b[0], b[-1]) == (pytest.approx(0.5), pytest.approx(1.8),
                                              pytest.approx(-hw), pytest.approx(hw))
    # the seed picks the direction e2 (rows away from b = 0 change), the member the network
    f3 = U.boundary_slice(model, 1, point, radii, 0.45, 7, seed=3)[2]
    f4 = U.boundary_slice(model, 1, point, radii, 0.45, 7, seed=4)[2]
    assert not np.allclose(f3[0], f4[0]) and np.allclose(f3[3], f4[3])
    f0 = U.boundary_slice(model, 0, point, radii, 0.45, 7, seed=3)[2]
    assert not np.allclose(f0, f3)
    # defaults: resolution 161, half width 0.6, radii (1, 1.2)
    a, b, f = U.boundary_slice(model, 0, point)
    assert f.shape == (161, 161) and b[-1] == pytest.approx(0.6) and a[-1] == pytest.approx(1.5)


def _one_unit_model(direction, logit_for_dot: int, threshold: float):
    """A 1-hidden-unit ReLU net: logit ``logit_for_dot`` is relu(direction . x), the other logit
    is the constant ``threshold``; it predicts ``logit_for_dot`` where direction . x > threshold."""
    d = len(direction)
    w1 = torch.tensor(direction, dtype=torch.float64).reshape(1, 1, d)
    w2 = torch.zeros(1, 2, 1, dtype=torch.float64)
    w2[0, logit_for_dot, 0] = 1.0
    b2 = torch.zeros(1, 2, dtype=torch.float64)
    b2[0, 1 - logit_for_dot] = threshold
    return BatchedMLP([w1, w2], [torch.zeros(1, 1, dtype=torch.float64), b2])


def test_bulge_width_by_hand():
    e1 = [0.6, 0.8, 0.0]
    # label-0 point on the inner sphere (r0 = 1): the member predicts 0 on the outer circle
    # (r1 = 1.2) where 1.2 cos(phi) > 1.2 cos(35.1 deg): |phi| <= 35 deg on the 0.25-deg grid
    m0 = _one_unit_model(e1, 0, 1.2 * math.cos(math.radians(35.1)))
    p0 = torch.tensor(e1, dtype=torch.float64)
    assert U.bulge_width(m0, 0, p0, 0) == pytest.approx(70.0, abs=1e-9)
    # another resolution: 181 angles, one per degree: |phi| <= 35 again
    assert U.bulge_width(m0, 0, p0, 0, resolution=181) == pytest.approx(70.0, abs=1e-9)
    # 13 angles, 15 degrees apart: |phi| <= 30
    assert U.bulge_width(m0, 0, p0, 0, resolution=13) == pytest.approx(60.0, abs=1e-9)
    # label-1 point on the outer sphere, other circle r0 = 1: predicts 1 where cos(phi) > cos 20.1
    m1 = _one_unit_model(e1, 1, math.cos(math.radians(20.1)))
    assert U.bulge_width(m1, 0, 1.2 * p0, 1) == pytest.approx(40.0, abs=1e-9)
    # radii: with (1, 2) the label-0 point walks the circle of radius 2, where 2 cos(phi) > 1.2
    # cos(35.1 deg) for |phi| < 60.6 deg: 60.5 on the grid
    assert U.bulge_width(m0, 0, p0, 0, radii=(1.0, 2.0)) == pytest.approx(121.0, abs=1e-9)
    # the label everywhere on the walked half circle: both ends reached, 180 degrees
    everywhere = _one_unit_model(e1, 0, -1.0)
    assert U.bulge_width(everywhere, 0, p0, 0) == pytest.approx(180.0, abs=1e-9)
    # the projection itself classified correctly (as the other label): no bulge at all
    assert U.bulge_width(m1, 0, p0, 0) == 0.0
    with pytest.raises(ValueError):
        U.bulge_width(m0, 0, p0, 2)
    with pytest.raises(ValueError):
        U.bulge_width(m0, 1, p0, 0)


def _bulge_ref(model, member, point, label, radii, seed, resolution):
    e1, e2 = _plane(point, seed)
    r = radii[1] if label == 0 else radii[0]
    phis = np.linspace(-90.0, 90.0, resolution)
    m = model.member(member).double()
    same = []
    for p in phis:
        q = r * (math.cos(math.radians(p)) * e1 + math.sin(math.radians(p)) * e2)
        with torch.no_grad():
            same.append(int(m(q.double()[None]).argmax(1)) == label)
    c = resolution // 2
    if not same[c]:
        return 0.0
    lo = c
    while lo - 1 >= 0 and same[lo - 1]:
        lo -= 1
    hi = c
    while hi + 1 < resolution and same[hi + 1]:
        hi += 1
    return phis[hi] - phis[lo]


def test_bulge_width_against_a_reference_walk_on_a_random_member():
    model = BatchedMLP.init([31, 32], 3, 24, 1, 2).double()
    with torch.no_grad():           # tilt member 1 towards class 0: a bulge of class 1 remains
        model.biases[-1][1] += torch.tensor([0.6, 0.0], dtype=torch.float64)
    point = torch.tensor([0.2, -0.9, 0.4], dtype=torch.float64)
    point = 1.3 * point / point.norm()         # a label-1 point on the outer sphere
    widths = {}
    for seed in (0, 1):
        got = U.bulge_width(model, 1, point, 1, radii=(1.0, 1.3), seed=seed, resolution=91)
        ref = _bulge_ref(model, 1, point, 1, (1.0, 1.3), seed, 91)
        assert got == pytest.approx(ref, abs=1e-9)
        widths[seed] = got
    # neither end of the walk is reached, and the seed (the direction e2) matters
    assert 20 < widths[1] < widths[0] < 170


def test_cap_fraction_closed_forms_scipy_and_monte_carlo():
    # d = 2: an arc of 2 theta out of 2 pi; d = 3: (1 - cos theta)/2; d = 4: (theta - sin cos)/pi
    for t in (0.0, 12.5, 37.0, 71.0, 90.0):
        th = math.radians(t)
        assert U.cap_fraction(2, t) == pytest.approx(th / math.pi, abs=1e-14)
        assert U.cap_fraction(3, t) == pytest.approx((1 - math.cos(th)) / 2, abs=1e-14)
        assert U.cap_fraction(4, t) == pytest.approx((th - math.sin(th) * math.cos(th)) / math.pi,
                                                     abs=1e-14)
    for d in (5, 10, 40):                       # a hemisphere is half of every sphere
        assert U.cap_fraction(d, 90) == pytest.approx(0.5, abs=1e-14)
        assert U.cap_fraction(d, 0) == 0.0
        assert U.cap_fraction(d, 35.0) == pytest.approx(
            0.5 * stats.beta.cdf(math.sin(math.radians(35.0)) ** 2, (d - 1) / 2, 0.5), rel=1e-10)
    # Monte Carlo in R^7 at 50 degrees: 400 000 directions, s.e. about 6e-4
    z = np.random.default_rng(3).standard_normal((400_000, 7))
    mc = np.mean(z[:, 0] / np.linalg.norm(z, axis=1) >= math.cos(math.radians(50)))
    assert U.cap_fraction(7, 50.0) == pytest.approx(mc, abs=3e-3)
    assert U.cap_fraction(7, 50.0) != pytest.approx(U.cap_fraction(8, 50.0), rel=1e-2)
    with pytest.raises(ValueError):
        U.cap_fraction(3, -1.0)
    with pytest.raises(ValueError):
        U.cap_fraction(3, 90.5)
    with pytest.raises((TypeError, ValueError)):
        U.cap_fraction(1, 30.0)


def test_slice_points_against_a_reference_search():
    d, radii = 4, (1.0, 1.4)
    x, y = U.sphere_data(12, d, radii, torch.Generator().manual_seed(2))     # float32
    # a member that says "outer sphere" everywhere: the S' image of a label-1 point (moved to the
    # inner sphere, label 0) is misclassified, that of a label-0 point is not; no fresh point has
    # both itself and its projection right
    const = BatchedMLP.init([0, 1], d, 3, 1, 2)
    with torch.no_grad():
        for w in const.weights:
            w.zero_()
        for b in const.biases:
            b.zero_()
        const.biases[-1][1] = torch.tensor([0.0, 1.0])
    res = U.SpheresResult(sizes=[6, 12], test_error=[0.5, 0.5], sprime_error=[0.5, 0.5],
                          train_error=[0.5, 0.5], met_margin=[False, False], epochs=[1.0, 1.0],
                          model=const, x_train=x, y_train=y)
    first1 = int((y == 1).nonzero()[0])
    tp, fp = U.slice_points(res, 1, radii)
    assert torch.equal(tp, x[first1]) and fp is None
    # candidates: only the first `candidates` training points are searched
    tp, _ = U.slice_points(res, 1, radii, candidates=first1)
    assert tp is None
    # a random member, against the search written out
    model = BatchedMLP.init([4, 5], d, 16, 1, 2)
    res.model = model
    for member, seed, cand in ((0, 0, 200), (1, 3, 9)):
        k = min(cand, res.sizes[member])
        xs, ys = U.sphere_sprime(x[:k], y[:k], radii)
        m = model.member(member)
        with torch.no_grad():
            bad = [j for j in range(k) if int(m(xs[j:j + 1]).argmax()) != int(ys[j])]
            xf, yf = U.sphere_data(cand, d, radii, torch.Generator().manual_seed(seed + 4242))
            xp, yp = U.sphere_sprime(xf, yf, radii)
            good = [j for j in range(cand) if int(m(xf[j:j + 1]).argmax()) == int(yf[j])
                    and int(m(xp[j:j + 1]).argmax()) == int(yp[j])]
        tp, fp = U.slice_points(res, member, radii, seed=seed, candidates=cand)
        assert (tp is None) == (not bad) and (fp is None) == (not good)
        if bad:
            assert torch.equal(tp, x[bad[0]])
        if good:
            assert torch.allclose(fp, xf[good[0]])
    with pytest.raises(ValueError):
        U.slice_points(res, 2, radii)


# =============================================================================================
# member logits and the subset trainer
# =============================================================================================
@pytest.mark.parametrize("bias,act", [(True, "tanh"), (False, "relu")])
def test_member_logits_against_a_loop(bias, act):
    model = BatchedMLP.init([1, 2, 3], 4, 6, 2, 3, bias=bias, act=act).double()
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    fn = torch.tanh if act == "tanh" else torch.relu
    for i in (0, 2):
        h = x
        for l, w in enumerate(model.weights):
            h = h @ w[i].T + (model.biases[l][i] if bias else 0)
            if l < 2:
                h = fn(h)
        got = U.member_logits(model, i, x)
        assert got.shape == (5, 3) and torch.allclose(got, h, rtol=1e-12, atol=1e-14)
        assert torch.allclose(got, model(x)[i], rtol=1e-12, atol=1e-14)
    assert bool((got < 0).any())                  # no activation on the output layer
    with pytest.raises(ValueError):
        U.member_logits(model, 3, x)
    with pytest.raises(ValueError):
        U.member_logits(model, 0, x[:, :3])


def _pool(n=40, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long() + (x[:, 2] > 0.8).long()    # 3 unbalanced classes
    return x, y


def _solo(model, i):
    bs = [b[i:i + 1] for b in model.biases] if model.has_bias else None
    return BatchedMLP([w[i:i + 1] for w in model.weights], bs, act=model.act_name)


def test_train_on_subsets_batched_equals_each_member_trained_alone():
    x, y = _pool()
    model = BatchedMLP.init([5, 6, 7], 5, 10, 1, 3, bias=True).double()
    solos = [_solo(model, i) for i in range(3)]
    # sizes out of order: the middle member stops first, so for a while the members still
    # training (0 and 2) are not a contiguous block of the ensemble
    sizes, seeds = [40, 8, 20], [40, 41, 42]
    cfg = TrainConfig(lr=0.3, batch_size=5, margin_gamma=1.5, margin_fraction=0.75)
    kw = dict(check_every_epochs=0.5, max_epochs=30)
    run = U.train_on_subsets(model, x, y, sizes, cfg, seeds=seeds, **kw)
    assert run.stop_step[1] < run.stop_step[2] < run.stop_step[0]
    for i in range(3):
        one = U.train_on_subsets(solos[i], x, y, [sizes[i]], cfg, seeds=[seeds[i]], **kw)
        assert (one.stop_step[0], one.met_rule[0], one.epochs[0]) == \
            (run.stop_step[i], run.met_rule[i], run.epochs[i])
        for p, q in zip(model.parameters(), solos[i].parameters()):
            assert torch.allclose(p[i], q[0], rtol=1e-10, atol=1e-12)
    for s, n, e in zip(run.stop_step, sizes, run.epochs):
        assert e == pytest.approx(s * 5 / n, rel=1e-15)


def test_train_on_subsets_seeds_default_to_cfg_seed_plus_index():
    x, y = _pool()
    cfg = TrainConfig(lr=0.25, batch_size=4, margin_gamma=1e6, seed=7)   # never met
    runs = {}
    for key, seeds in (("none", None), ("explicit", [7, 8]), ("other", [7, 9])):
        model = BatchedMLP.init([1, 2], 5, 6, 1, 3).double()
        U.train_on_subsets(model, x, y, [12, 20], cfg, seeds=seeds, max_epochs=2)
        runs[key] = [w.detach().clone() for w in model.weights]
    assert all(torch.equal(a, b) for a, b in zip(runs["none"], runs["explicit"]))
    # member 0 has seed 7 in both, member 1 draws its batches from another stream
    assert all(torch.equal(a[0], b[0]) for a, b in zip(runs["explicit"], runs["other"]))
    assert not torch.equal(runs["explicit"][0][1], runs["other"][0][1])


def test_train_on_subsets_max_epochs_by_hand():
    x, y = _pool()
    cfg = TrainConfig(lr=0.1, batch_size=4, margin_gamma=1e6)           # never met
    model = BatchedMLP.init([1, 2], 5, 3, 1, 3).double()
    run = U.train_on_subsets(model, x, y, [10, 30], cfg, max_epochs=2.5)
    # ceil(2.5 * 10 / 4) = 7 and ceil(2.5 * 30 / 4) = 19 steps
    assert run.stop_step == [7, 19] and run.met_rule == [False, False]
    assert run.epochs == [pytest.approx(7 * 4 / 10), pytest.approx(19 * 4 / 30)]
    # at least one step, however small max_epochs
    assert U.train_on_subsets(model, x, y, [10, 30], cfg, max_epochs=0.01).stop_step == [1, 1]


def _rule_met(model, i, x, y, gamma, fraction):
    with torch.no_grad():
        mg = _hand_margins(U.member_logits(model, i, x), y)
    return np.mean(mg >= gamma) >= fraction


def test_train_on_subsets_stops_at_the_first_due_check_meeting_the_rule():
    x, y = _pool()
    y = y.clone()
    y[12:] = (y[12:] + 1) % 3          # member 0 never sees these: on all of x it could not stop
    gamma, frac, b, lr = 1.0, 0.9, 6, 0.8
    cfg = TrainConfig(lr=lr, batch_size=b, margin_gamma=gamma, margin_fraction=frac)
    sizes, seeds = [12, 30], [3, 4]
    stops = {}
    for cee, periods in ((1.4, [3, 7]), (1.0, [2, 5]), (0.2, [1, 1])):  # round(cee n / b)
        model = BatchedMLP.init([8, 9], 5, 24, 1, 3).double()
        init = [w.detach().clone() for w in model.weights] + [p.detach().clone()
                                                              for p in model.biases]
        run = U.train_on_subsets(model, x, y, sizes, cfg, seeds=seeds, check_every_epochs=cee,
                                 max_epochs=60)
        assert run.met_rule == [True, True]
        stops[cee] = run.stop_step
        for i, (n, per, s) in enumerate(zip(sizes, periods, run.stop_step)):
            assert s > 0 and s % per == 0, (cee, i, s, per)
            assert _rule_met(model, i, x[:n], y[:n], gamma, frac)
            if cee == 1.0 or (cee == 0.2 and i == 1):
                continue
            # replay the member alone to the check before: the rule was not met there
            replay = _solo(BatchedMLP(init[:2], init[2:]), i)
            U.train_on_subsets(replay, x, y, [n], TrainConfig(lr=lr, batch_size=b,
                               margin_gamma=1e6), seeds=[seeds[i]],
                               max_epochs=(s - per - 0.5) * b / n)
            assert not _rule_met(replay, 0, x[:n], y[:n], gamma, frac), (cee, i)
    assert stops[1.4][0] != stops[1.0][0] and stops[1.4][1] != stops[1.0][1]
    assert stops[0.2][0] % 2 == 1          # checked after every step: an odd step is possible


def test_train_on_subsets_accuracy_rule_and_full_batch_mse_gradient_descent():
    x, y = _pool()
    model = BatchedMLP.init([2, 3], 5, 16, 1, 3).double()
    cfg = TrainConfig(lr=0.5, batch_size=4, target_train_acc=0.95)
    run = U.train_on_subsets(model, x, y, [15, 40], cfg, max_epochs=300)
    assert run.met_rule == [True, True]
    for i, n in enumerate([15, 40]):
        with torch.no_grad():
            acc = (U.member_logits(model, i, x[:n]).argmax(1) == y[:n]).double().mean()
        assert float(acc) >= 0.95
    # the loss and the learning rate of cfg: a member whose batch is its whole prefix takes
    # full-batch gradient steps on the summed-over-classes squared error to one-hot targets
    one = BatchedMLP.init([6], 5, 7, 2, 3, bias=True, act="tanh").double()
    ws = [p[0].detach().clone().requires_grad_() for p in one.parameters()]
    names = [n for n, _ in one.named_parameters()]
    n, lr = 18, 0.2
    cfg = TrainConfig(lr=lr, batch_size=n, margin_gamma=1e6, loss="mse")
    U.train_on_subsets(one, x, y, [n], cfg, max_epochs=3)
    W = {k: v for k, v in zip(names, ws)}
    for _ in range(3):
        h = torch.tanh(x[:n] @ W["weights.0"].T + W["biases.0"])
        h = torch.tanh(h @ W["weights.1"].T + W["biases.1"])
        out = h @ W["weights.2"].T + W["biases.2"]
        loss = ((out - F.one_hot(y[:n], 3).double()) ** 2).sum(1).mean()
        grads = torch.autograd.grad(loss, list(W.values()))
        W = {k: (v - lr * g).detach().requires_grad_() for (k, v), g in zip(W.items(), grads)}
    for k, p in one.named_parameters():
        assert torch.allclose(p[0], W[k], rtol=1e-10, atol=1e-12), k


# =============================================================================================
# the batched CNN
# =============================================================================================
def test_batched_cnn_initialization_per_member_and_its_scale():
    C, H = 6, 9
    model = U.BatchedCNN1d([3, 4, 3], channels=C, hidden=H, classes=4)
    shapes = [(3, C, 1, 5), (3, C, C, 3), (3, C, C, 3)]
    assert [tuple(w.shape) for w in model.convs] == shapes
    assert [tuple(w.shape) for w in model.fcs] == [(3, 5 * C, H), (3, H, 4)]
    solo = U.BatchedCNN1d([4], channels=C, hidden=H, classes=4)
    params, solo_params = list(model.parameters()), list(solo.parameters())
    for p, q in zip(params, solo_params):
        assert torch.equal(p[1], q[0])                 # member e is seeded by seeds[e] alone
        assert torch.equal(p[0], p[2]) and not torch.equal(p[0], p[1])
    # uniform in +-1/sqrt(fan_in): bounded by it, reaching close to it, centred
    for p, fan in zip(params, [5, 3 * C, 3 * C, 5 * C, H]):
        p = p.detach()
        bound = 1 / math.sqrt(fan)
        assert float(p.abs().max()) <= bound
        assert float(p.abs().max()) >= 0.8 * bound
        assert abs(float(p.mean())) < 0.25 * bound
    with pytest.raises(ValueError):
        U.BatchedCNN1d([0], length=41)
    with pytest.raises((TypeError, ValueError)):
        U.BatchedCNN1d([0], classes=1)


def test_batched_cnn_forward_against_torch_modules_per_member():
    C, H = 5, 7
    model = U.BatchedCNN1d([10, 11, 12], channels=C, hidden=H, classes=3).double()
    x = torch.randn(4, 40, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    xs = torch.randn(3, 4, 40, generator=torch.Generator().manual_seed(2), dtype=torch.float64)

    def member(e):
        convs = [torch.nn.Conv1d(1, C, 5, stride=2, padding=2, bias=False),
                 torch.nn.Conv1d(C, C, 3, stride=2, padding=1, bias=False),
                 torch.nn.Conv1d(C, C, 3, stride=2, padding=1, bias=False)]
        fc1, fc2 = torch.nn.Linear(5 * C, H, bias=False), torch.nn.Linear(H, 3, bias=False)
        net = torch.nn.Sequential(convs[0], torch.nn.ReLU(), convs[1], torch.nn.ReLU(),
                                  convs[2], torch.nn.ReLU(), torch.nn.Flatten(), fc1,
                                  torch.nn.ReLU(), fc2).double()
        with torch.no_grad():
            for c, w in zip(convs, model.convs):
                c.weight.copy_(w[e])
            fc1.weight.copy_(model.fcs[0][e].T)
            fc2.weight.copy_(model.fcs[1][e].T)
        return lambda t: net(t[:, None, :])

    with torch.no_grad():
        full = model(x)
        per = model(xs)
        assert full.shape == (3, 4, 3)
        for e in range(3):
            assert torch.allclose(full[e], member(e)(x), rtol=1e-12, atol=1e-14)
            assert torch.allclose(per[e], member(e)(xs[e]), rtol=1e-12, atol=1e-14)
        # a subset of members, out of order, on a shared and on a per-member input
        rows = torch.tensor([2, 0])
        sub = model(x, rows)
        assert torch.allclose(sub[0], member(2)(x), rtol=1e-12, atol=1e-14)
        assert torch.allclose(sub[1], member(0)(x), rtol=1e-12, atol=1e-14)
        sub = model(xs[rows], rows)
        assert torch.allclose(sub[0], member(2)(xs[2]), rtol=1e-12, atol=1e-14)
        assert torch.allclose(sub[1], member(0)(xs[0]), rtol=1e-12, atol=1e-14)
        for bad in ([3], [-1], [0, 3]):
            with pytest.raises(ValueError):
                model(x, torch.tensor(bad))
        with pytest.raises(ValueError):
            model(xs[:2])


# =============================================================================================
# the experiment drivers at toy sizes: every reported number recomputed from the weights
# =============================================================================================
def _acc(logits, y):
    return (logits.argmax(-1) == y).float().mean(-1)


def test_cnn_randomization_reports_what_its_members_do(monkeypatch):
    kept = []

    class Keeping(U.BatchedCNN1d):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            kept.append((self, [p.detach().clone() for p in self.parameters()]))

    monkeypatch.setattr(U, "BatchedCNN1d", Keeping)
    # target 1.0: one member reaches it exactly (a '>' for '>=' would miss it), two do not
    cfg = U.CNNRandomizationConfig(n_train=60, n_test=50, channels=8, hidden=32, lr=0.25,
                                   batch_size=20, max_steps=260, check_every=20,
                                   target_train_acc=1.0, true_runs=2, random_runs=1)
    seed = 2
    r = U.cnn_randomization(cfg, seed=seed)
    (model, init), = kept
    ds = mnist1d(60, 50)
    ys = [ds.y, ds.y, corrupt_labels(ds.y, 1.0, 10, seed=seed + 1000)]
    assert r.names == ["true labels, run 1", "true labels, run 2", "random labels, run 1"]
    assert r.labels == ["true", "true", "random"]
    assert r.of("stop_step", "true") == r.stop_step[:2]
    assert r.of("test_error", "random") == r.test_error[2:]
    with pytest.raises(ValueError, match="labels"):
        r.of("stop_step", "shuffled")
    fresh = U.BatchedCNN1d.__mro__[1]([seed * 100 + 40 + e for e in range(3)], 8, 32, 10)
    for p, q in zip(init, fresh.parameters()):
        assert torch.equal(p, q.detach())
    with torch.no_grad():
        init_err = 1 - _acc(fresh(ds.x_test), ds.y_test)
        test_err = 1 - _acc(model(ds.x_test), ds.y_test)
        train_acc = [float(_acc(model(ds.x)[e], ys[e])) for e in range(3)]
    assert r.init_test_error == pytest.approx(init_err.tolist(), abs=1e-7)
    assert r.test_error == pytest.approx(test_err.tolist(), abs=1e-7)
    assert r.train_acc == pytest.approx(train_acc, abs=1e-7)
    assert r.reached_target == [a >= 1.0 for a in train_acc]
    assert True in r.reached_target and False in r.reached_target
    assert all(s % 20 == 0 or s == 260 for s in r.stop_step)
    assert r.test_error[2] > r.test_error[0]          # random labels: no generalization
    # a target nobody reaches in 10 steps: every member runs to max_steps
    short = U.cnn_randomization(U.CNNRandomizationConfig(
        n_train=60, n_test=50, channels=8, hidden=32, lr=0.25, batch_size=20, max_steps=10,
        check_every=4, target_train_acc=1.0, true_runs=2, random_runs=1), seed=seed)
    assert short.stop_step == [10, 10, 10] and short.reached_target == [False] * 3
    # a target every member meets at initialization: all stop at the check before step 1
    low = U.cnn_randomization(U.CNNRandomizationConfig(
        n_train=60, n_test=50, channels=8, hidden=32, lr=0.25, batch_size=20, max_steps=10,
        check_every=4, target_train_acc=0.02, true_runs=2, random_runs=1), seed=seed)
    assert low.stop_step == [0, 0, 0] and low.reached_target == [True] * 3
    assert low.test_error == low.init_test_error
    assert short.init_test_error == r.init_test_error    # the same seed, the same initialization


def _run_corruption(monkeypatch, cfg, seed, replicate):
    kept = []
    real = U.train_ensemble

    def keeping(model, x, y, tcfg, seeds=None, **kw):
        kept.append(dict(model=model, init=[w.detach().clone() for w in model.weights], y=y,
                         seeds=list(seeds), tcfg=tcfg))
        return real(model, x, y, tcfg, seeds=seeds, **kw)

    monkeypatch.setattr(U, "train_ensemble", keeping)
    r = U.corruption_experiment(cfg, seed=seed, replicate=replicate)
    return r, kept[0]


def test_corruption_experiment_reports_what_its_members_do(monkeypatch):
    cfg = U.CorruptionConfig(n_train=60, n_test=50, levels=(0.3, 0.6, 1.0), width=16, depth=1,
                             lr=0.2, batch_size=20, max_steps=160, check_every=20,
                             target_train_acc=1.0)     # reached exactly by two members
    seed, E = 1, 3
    r, k = _run_corruption(monkeypatch, cfg, seed, True)
    ds = mnist1d(60, 50)
    ys = [corrupt_labels(ds.y, f, 10, seed=seed + 1000) for f in (0.3, 0.6, 1.0)] + [ds.y]
    assert all(torch.equal(a, b) for a, b in zip(k["y"], ys))
    assert k["seeds"] == [100, 101, 102, 103] and k["tcfg"].lr == 0.2
    assert (k["tcfg"].batch_size, k["tcfg"].steps, k["tcfg"].check_every,
            k["tcfg"].target_train_acc) == (20, 160, 20, 1.0)
    fresh = BatchedMLP.init([100, 101, 102, 103], 40, 16, 1, 10, bias=False)
    assert all(torch.equal(a, b.detach()) for a, b in zip(k["init"], fresh.weights))
    full = k["model"]
    with torch.no_grad():
        train_acc = [float(_acc(full(ds.x)[e], ys[e])) for e in range(4)]
        test_err = (1 - _acc(full(ds.x_test), ds.y_test)).tolist()
        init_err = (1 - _acc(fresh(ds.x_test), ds.y_test)).tolist()
    assert r.levels == [0.3, 0.6, 1.0]
    assert r.final_train_acc == pytest.approx(train_acc[:E], abs=1e-7)
    assert r.test_error == pytest.approx(test_err[:E], abs=1e-7)
    assert r.init_test_error == pytest.approx(init_err[:E], abs=1e-7)
    assert r.reached_target == [a >= 1.0 for a in train_acc[:E]]
    assert True in r.reached_target and False in r.reached_target
    assert r.replicate_test_error == pytest.approx(test_err[E], abs=1e-7)
    assert r.replicate_test_error != pytest.approx(r.test_error[0], abs=1e-3)   # tells them apart
    assert r.replicate_train_acc == pytest.approx(train_acc[E], abs=1e-7)
    # the returned model and init are the first E members (the replicate removed)
    assert r.model.size == E and all(torch.equal(a, b.detach()[:E])
                                     for a, b in zip(r.model.weights, full.weights))
    assert all(torch.equal(a, b[:E]) for a, b in zip(r.init, k["init"]))
    assert torch.equal(r.x_train, ds.x)
    # the curve: one row per check, frozen (NaN) strictly after each member's stop step
    assert r.curve_train_acc.shape == (len(r.curve_steps), E)
    assert r.curve_steps[0] == 0 and all(s % 20 == 0 or s == 160 for s in r.curve_steps)
    steps = np.asarray(r.curve_steps)
    for i, s in enumerate(r.stop_step):
        assert np.all(np.isnan(r.curve_train_acc[steps > s, i]))
        assert not np.any(np.isnan(r.curve_train_acc[steps <= s, i]))
    assert len(set(r.stop_step + [r.replicate_stop_step])) > 1
    # without the replicate: the same first E members, the replicate fields empty
    r2, k2 = _run_corruption(monkeypatch, cfg, seed, False)
    assert k2["seeds"] == [100, 101, 102] and len(k2["y"]) == E
    assert math.isnan(r2.replicate_test_error) and math.isnan(r2.replicate_train_acc)
    assert r2.replicate_stop_step == -1
    assert r2.stop_step == r.stop_step and r2.final_train_acc == r.final_train_acc
    for a, b in zip(r2.model.weights, r.model.weights):
        assert torch.allclose(a, b, atol=1e-6)


def test_margin_sweep_reports_what_its_members_do(monkeypatch):
    kept = []
    real = U.train_on_subsets

    def keeping(model, x, y, sizes, tcfg, **kw):
        kept.append(dict(model=model, init=[w.detach().clone() for w in model.weights],
                         tcfg=tcfg, kw=kw))
        return real(model, x, y, sizes, tcfg, **kw)

    monkeypatch.setattr(U, "train_on_subsets", keeping)
    cfg = U.MarginSweepConfig(sizes=(20, 35, 50), n_test=40, width=12, depth=1, lr=0.2,
                              batch_size=10, gamma=1.5, margin_fraction=0.8,
                              check_every_epochs=2.0, max_epochs=40)
    seed = 1
    r = U.margin_sweep(cfg, seed=seed)
    k = kept[0]
    assert k["kw"] == dict(seeds=[150, 151, 152], check_every_epochs=2.0, max_epochs=40)
    assert (k["tcfg"].lr, k["tcfg"].batch_size, k["tcfg"].margin_gamma,
            k["tcfg"].margin_fraction) == (0.2, 10, 1.5, 0.8)
    ds = mnist1d(50, 40)
    fresh = BatchedMLP.init([150, 151, 152], 40, 12, 1, 10, bias=False)
    assert all(torch.equal(a, b.detach()) for a, b in zip(k["init"], fresh.weights))
    model = k["model"]
    with torch.no_grad():
        assert r.test_error == pytest.approx((1 - _acc(model(ds.x_test), ds.y_test)).tolist(),
                                             abs=1e-7)
        assert r.init_test_error == pytest.approx(
            (1 - _acc(fresh(ds.x_test), ds.y_test)).tolist(), abs=1e-7)
    for i, n in enumerate(cfg.sizes):
        ws = [w[i].detach() for w in model.weights]
        w0s = [w0[i] for w0 in k["init"]]
        assert r.init_spectral_product[i] == pytest.approx(np.prod([_spec_np(w) for w in w0s]),
                                                           rel=1e-6)
        m = r.measures[i]
        xi = ds.x[:n]
        assert m.spectral == pytest.approx([_spec_np(w) for w in ws], rel=1e-6)
        assert m.distance == pytest.approx(math.sqrt(sum(((_np(a) - _np(b)) ** 2).sum()
                                                         for a, b in zip(ws, w0s))), rel=1e-5)
        xf = float(np.sqrt((_np(xi) ** 2).sum()))
        B = float(np.sqrt((_np(xi) ** 2).sum(1)).max())
        assert m.bartlett == pytest.approx(_bartlett_np(ws, w0s, xf, 1.5, n), rel=1e-5)
        assert m.neyshabur == pytest.approx(_neyshabur_np(ws, w0s, B, 1.5, n, h=40), rel=1e-5)
        if r.met_margin[i]:
            with torch.no_grad():
                mg = _hand_margins(U.member_logits(model, i, xi), ds.y[:n])
            assert np.mean(mg >= 1.5) >= 0.8
        assert r.epochs[i] * n / 10 == pytest.approx(round(r.epochs[i] * n / 10))
    series = r.series()
    assert list(series) == ["test error", "distance from init", "product of spectral norms",
                            "Bartlett et al. bound", "Neyshabur et al. bound"]
    assert series["distance from init"].tolist() == [m.distance for m in r.measures]
    assert series["Neyshabur et al. bound"].tolist() == [m.neyshabur for m in r.measures]
    for name, v in series.items():
        ref = stats.linregress(np.log(cfg.sizes), np.log(v))
        assert r.fits[name].slope == pytest.approx(ref.slope, rel=1e-9, abs=1e-12), name
        assert r.fits[name].intercept == pytest.approx(ref.intercept, rel=1e-9), name


def test_spheres_sweep_reports_what_its_members_do():
    cfg = U.SpheresConfig(d=5, radii=(0.9, 1.3), sizes=(16, 32), n_test=50, width=16, lr=0.5,
                          batch_size=8, gamma=0.5, margin_fraction=0.9, max_epochs=60)
    seed = 3
    r = U.spheres_sweep(cfg, seed=seed)
    g = torch.Generator().manual_seed(seed * 7919 + 13)
    x, y = U.sphere_data(32, 5, (0.9, 1.3), g)
    xt, yt = U.sphere_data(50, 5, (0.9, 1.3), g)
    assert torch.equal(r.x_train, x) and torch.equal(r.y_train, y)
    fresh = BatchedMLP.init([370, 371], 5, 16, 1, 2, bias=True)
    model = r.model
    with torch.no_grad():
        assert r.init_test_error == pytest.approx((1 - _acc(fresh(xt), yt)).tolist(), abs=1e-7)
        assert r.test_error == pytest.approx((1 - _acc(model(xt), yt)).tolist(), abs=1e-7)
        xp, yp = U.sphere_sprime(xt, yt, (0.9, 1.3))
        assert r.projected_test_error == pytest.approx((1 - _acc(model(xp), yp)).tolist(),
                                                       abs=1e-7)
        for i, n in enumerate(cfg.sizes):
            logits = U.member_logits(model, i, x[:n])
            assert r.train_error[i] == pytest.approx(1 - float(_acc(logits, y[:n])), abs=1e-7)
            xs = x[:n] * torch.where(y[:n] == 1, 0.9 / 1.3, 1.3 / 0.9)[:, None]
            assert r.sprime_error[i] == pytest.approx(
                1 - float(_acc(U.member_logits(model, i, xs), 1 - y[:n])), abs=1e-7)
            if r.met_margin[i]:
                assert np.mean(_hand_margins(logits, y[:n]) >= 0.5) >= 0.9
            assert r.epochs[i] * n / 8 == pytest.approx(round(r.epochs[i] * n / 8))
    assert r.sizes == [16, 32] and any(r.met_margin)
    # another seed: other data, other initialization
    r4 = U.spheres_sweep(U.SpheresConfig(d=5, radii=(0.9, 1.3), sizes=(16, 32), n_test=50,
                                         width=16, batch_size=8, max_epochs=1), seed=4)
    assert not torch.equal(r4.x_train, r.x_train) and r4.init_test_error != r.init_test_error
    # max_epochs = 1 cuts training at one epoch of each member (the default margin 4 is far)
    assert r4.epochs == [1.0, 1.0] and r4.met_margin == [False, False]


# =============================================================================================
# plotting helpers
# =============================================================================================
class _RecordingAxes:
    """Stands in for a matplotlib Axes and records what is drawn."""

    def __init__(self):
        self.calls = []
        self.xaxis = self.yaxis = None

    def __getattr__(self, name):
        if name in ("contourf", "contour", "plot"):
            return lambda *a, **k: self.calls.append((name, a, k))
        raise AttributeError(name)


def test_plot_slice_draws_the_regions_boundary_spheres_point_and_projection():
    a = np.linspace(0.5, 1.8, 6)
    b = np.linspace(-0.9, 0.9, 5)             # reaches past the inner radius: arcs clipped
    f = np.outer(b, np.ones(6)) + (a - 1.1)[None, :]
    ax = _RecordingAxes()
    U.plot_slice(ax, a, b, f, (0.8, 1.5), 0.8, colors=("#000001", "#000002"))
    kinds = [c[0] for c in ax.calls]
    assert kinds == ["contourf", "contour", "plot", "plot", "plot", "plot"]
    _, args, kw = ax.calls[0]
    assert np.array_equal(args[2], f > 0) and kw["levels"] == [-0.5, 0.5, 1.5]
    assert kw["colors"] == ["#000001", "#000002"]
    _, args, kw = ax.calls[1]
    assert np.array_equal(args[2], f) and kw["levels"] == [0]
    for call, r in zip(ax.calls[2:4], (0.8, 1.5)):
        xs, ys = call[1][0], call[1][1]
        assert np.allclose(xs, np.sqrt(np.clip(r ** 2 - b ** 2, 0, None))) and np.array_equal(ys, b)
    assert ax.calls[2][1][0][0] == 0.0 and ax.calls[3][1][0][0] > 0
    assert ax.calls[4][1][:2] == ([0.8], [0]) and ax.calls[4][1][2] == "ko"
    assert ax.calls[5][1][:2] == ([pytest.approx(1.5)], [0])         # r0 + r1 - 0.8
    assert ax.calls[5][1][2] == "kx"
    ax2 = _RecordingAxes()
    U.plot_slice(ax2, a, b, f, (0.8, 1.5), 1.5)
    assert ax2.calls[5][1][0] == [pytest.approx(0.8)]
    assert ax2.calls[0][2]["colors"] == ["#56B4E9", "#E69F00"]
    with pytest.raises(ValueError):
        U.plot_slice(_RecordingAxes(), a, b, f.T, (0.8, 1.5), 0.8)


def test_log_ticks_on_either_axis():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        ax.set_xscale("log")
        U.log_ticks(ax, [250, 1000, 4000])
        assert list(ax.xaxis.get_major_locator().tick_values(1, 1e4)) == [250, 1000, 4000]
        assert ax.xaxis.get_major_formatter().seq == ["250", "1000", "4000"]
        assert list(ax.xaxis.get_minor_locator()()) == []
        assert ax.yaxis.get_major_formatter()(0.3, 0) == "0.3"
        assert ax.yaxis.get_major_formatter()(0.1234, 0) == "0.12"
        assert ax.yaxis.get_minor_formatter()(0.0456, 0) == "0.046"
        fig2, ay = plt.subplots()
        U.log_ticks(ay, [0.5, 2.5], axis="y")
        assert ay.yaxis.get_major_formatter().seq == ["0.5", "2.5"]
        assert ay.xaxis.get_major_formatter()(1234.0, 0) == "1.2e+03"
        plt.close(fig2)
        for bad in ([], [1.0, -2.0], [[1.0, 2.0]], [1.0, float("nan")]):
            with pytest.raises(ValueError):
                U.log_ticks(ax, bad)
    finally:
        plt.close(fig)
