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
from scipy import special, stats

from gtlib import uniform as U
from gtlib.data import corrupt_labels, mnist1d
from gtlib.ensemble import BatchedMLP
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
    assert _defaults(U.one_sided_escape) == {"n_sets": 20, "seed": 0}
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
        4000, 4000, (0.0, 0.2, 0.4, 0.6, 0.8, 1.0), 512, 1, 0.1, 64, 0.99, 40_000, 50)
    kf = U.CorruptionConfig.full()
    assert len(kf.levels) == 11 and kf.levels[0] == 0.0 and kf.levels[-1] == 1.0
    assert kf.levels[3] == pytest.approx(0.3) and kf.depth == 3
    n = U.CNNRandomizationConfig()
    assert (n.n_train, n.n_test, n.channels, n.hidden, n.lr, n.batch_size, n.target_train_acc,
            n.max_steps, n.check_every) == (4000, 4000, 32, 256, 0.1, 64, 0.99, 40_000, 250)


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
