"""Tests of gtlib.soft.gp, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import math
import numpy as np
import pytest
import torch
from scipy import stats
from scipy.spatial.distance import pdist

from gtlib import soft
from gtlib.data import corrupt_labels
from gtlib.soft import median_lengthscale, rbf_kernel

from tests.chapters.soft.helpers import _dataset, _differs, _raises


def _gp_reference(x, y, xt, C, ells, r):
    """Type-II ML over ells with numpy/scipy: per class N(t_c; 0, s (K + r I))."""
    x, xt = x.numpy().astype(np.float64), xt.numpy().astype(np.float64)
    n = len(x)
    t = np.eye(C)[y.numpy()] - 1.0 / C

    def k(a, b, ell):
        return np.exp(-((a[:, None] - b[None]) ** 2).sum(-1) / (2 * ell**2))

    best = None
    for ell in ells:
        A = k(x, x, ell) + r * np.eye(n)
        s = float((t * np.linalg.solve(A, t)).sum()) / (n * C)
        ml = sum(
            stats.multivariate_normal(np.zeros(n), s * A).logpdf(t[:, c])
            for c in range(C)
        )
        if best is None or ml > best[0]:
            best = (ml, ell, s, np.linalg.solve(A, t))
    ml, ell, s, alpha = best
    return dict(
        log_ml=ml,
        lengthscale=ell,
        signal_var=s,
        train_pred=(k(x, x, ell) @ alpha).argmax(1),
        test_pred=(k(xt, x, ell) @ alpha).argmax(1),
    )


def _ref_gp_corruption(cfg, ds, seed):
    x, y0 = ds.x[: cfg.n_train], ds.y[: cfg.n_train]
    xt, yt = ds.x_test[: cfg.n_test], ds.y_test[: cfg.n_test]
    d = torch.cdist(x.double(), x.double())
    med = float(d[torch.triu(torch.ones_like(d, dtype=torch.bool), 1)].median())
    ells = [f * med for f in cfg.lengthscale_factors]
    rows = []
    for frac in cfg.corruptions:
        y = corrupt_labels(y0, frac, ds.num_classes, seed=seed)
        r = _gp_reference(x, y, xt, ds.num_classes, ells, cfg.noise_ratio)
        rows.append(
            (
                frac,
                np.mean(r["train_pred"] == y.numpy()),
                np.mean(r["test_pred"] == yt.numpy()),
                r["log_ml"] / cfg.n_train,
                r["lengthscale"],
            )
        )
    return rows


def _cfg_dict(cfg):
    from dataclasses import fields

    return {f.name: getattr(cfg, f.name) for f in fields(cfg)}


# =================================================================================================
# soft.rbf_kernel
# =================================================================================================
@pytest.mark.reference
def test_rbf_kernel_default_variance_orientation_and_diagonal():
    rng = np.random.default_rng(20)
    a, b = rng.normal(size=(3, 2)), rng.normal(size=(5, 2))
    d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    k = soft.rbf_kernel(torch.tensor(a), torch.tensor(b), 0.8).numpy()
    assert k.shape == (3, 5)
    np.testing.assert_allclose(k, np.exp(-d2 / (2 * 0.64)), rtol=1e-12)
    np.testing.assert_allclose(
        soft.rbf_kernel(torch.tensor(b), torch.tensor(a), 0.8).numpy(),
        k.T,
        rtol=1e-12,
    )
    kaa = soft.rbf_kernel(
        torch.tensor(a), torch.tensor(a), 2.5, variance=0.3
    ).numpy()
    np.testing.assert_allclose(np.diag(kaa), 0.3, rtol=1e-12)
    # one pair by hand: distance^2 = 3^2 + 4^2 = 25, lengthscale 5: exp(-1/2)
    one = soft.rbf_kernel(
        torch.tensor([[0.0, 0.0]], dtype=torch.float64),
        torch.tensor([[3.0, 4.0]], dtype=torch.float64),
        5.0,
        2.0,
    )
    assert float(one) == pytest.approx(2.0 * math.exp(-0.5), rel=1e-12)


@pytest.mark.mutation
def test_rbf_kernel_and_median_lengthscale_against_numpy_and_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    got = rbf_kernel(
        torch.tensor(a), torch.tensor(b), lengthscale=1.7, variance=2.0
    ).numpy()
    np.testing.assert_allclose(got, 2.0 * np.exp(-d2 / (2 * 1.7**2)), rtol=1e-10)
    x = rng.normal(size=(7, 3))
    assert median_lengthscale(torch.tensor(x)) == pytest.approx(
        float(np.median(pdist(x)))
    )


# =================================================================================================
# soft.median_lengthscale
# =================================================================================================
@pytest.mark.reference
def test_median_lengthscale_by_hand():
    # points 0, 1 and 3 on a line: pairwise distances 1, 3, 2, median 2
    x = torch.tensor([[0.0, 5.0], [1.0, 5.0], [3.0, 5.0]])
    assert soft.median_lengthscale(x) == pytest.approx(2.0)
    # five points: ten distances, the median of which is the fifth/sixth; a zero diagonal would
    # pull it down
    p = torch.tensor([[0.0], [1.0], [3.0], [7.0], [15.0]])
    d = sorted(abs(float(p[i] - p[j])) for i in range(5) for j in range(i + 1, 5))
    assert soft.median_lengthscale(p) in (d[4], d[5])


# =================================================================================================
# soft.gp_label_regression
# =================================================================================================
def test_gp_log_ml_matches_direct_formula():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(12, 3, generator=g, dtype=torch.float64)
    y = torch.randint(3, (12,), generator=g)
    ell, r = 1.3, 0.05
    out = soft.gp_label_regression(x, y, x[:4], 3, [ell], r)
    t = torch.nn.functional.one_hot(y, 3).double() - 1 / 3
    A = soft.rbf_kernel(x, x, ell) + r * torch.eye(12, dtype=torch.float64)
    s = float((t * torch.linalg.solve(A, t)).sum()) / 36
    K = s * A
    direct = sum(
        float(
            torch.distributions.MultivariateNormal(
                torch.zeros(12, dtype=torch.float64), K
            ).log_prob(t[:, c])
        )
        for c in range(3)
    )
    assert out["log_ml"] == pytest.approx(direct, rel=1e-9)
    assert out["signal_var"] == pytest.approx(s)


def test_gp_interpolates_with_small_noise_and_bad_inputs():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(30, 5, generator=g)
    y = torch.randint(4, (30,), generator=g)
    out = soft.gp_label_regression(x, y, x, 4, [soft.median_lengthscale(x)], 1e-4)
    assert bool((out["train_pred"] == y).all())
    with pytest.raises(ValueError, match="y"):
        soft.gp_label_regression(x, y[:-1], x, 4, [1.0])
    with pytest.raises(ValueError, match="lengthscale"):
        soft.rbf_kernel(x, x, -1.0)


@pytest.mark.reference
def test_gp_label_regression_against_scipy_type_ii_ml():
    g = torch.Generator().manual_seed(21)
    x = torch.randn(16, 3, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 0, 1, 0])  # unbalanced
    xt = torch.randn(9, 3, generator=g, dtype=torch.float64)
    ells = [3.0, 1.3, 0.5]
    for r in (0.02, 0.3):
        got = soft.gp_label_regression(x, y, xt, 3, ells, noise_ratio=r)
        ref = _gp_reference(x, y, xt, 3, ells, r)
        assert got["lengthscale"] == ref["lengthscale"]
        assert got["log_ml"] == pytest.approx(ref["log_ml"], rel=1e-9)
        assert got["signal_var"] == pytest.approx(ref["signal_var"], rel=1e-9)
        np.testing.assert_array_equal(got["train_pred"].numpy(), ref["train_pred"])
        np.testing.assert_array_equal(got["test_pred"].numpy(), ref["test_pred"])
        again = soft.gp_label_regression(x, y, xt, 3, ells[::-1], noise_ratio=r)
        assert again["lengthscale"] == got["lengthscale"]
    # the best lengthscale is not the first candidate, and noise_ratio matters
    assert got["lengthscale"] != ells[0]
    other = soft.gp_label_regression(x, y, xt, 3, ells, noise_ratio=0.05)
    assert other["log_ml"] != got["log_ml"]
    # a class no point carries still gets a column (num_classes, not max(y) + 1)
    four = soft.gp_label_regression(x, y, xt, 4, [1.3], noise_ratio=0.1)
    ref4 = _gp_reference(x, y, xt, 4, [1.3], 0.1)
    assert four["log_ml"] == pytest.approx(ref4["log_ml"], rel=1e-9)


@pytest.mark.boundary
def test_kernels_and_gp_refuse_nan_empty_int_and_float_labels():
    g = torch.Generator().manual_seed(3)
    x, xt = torch.randn(20, 4, generator=g), torch.randn(6, 4, generator=g)
    y = torch.arange(20) % 3
    nan = x.clone()
    nan[0, 0] = math.nan
    _raises(ValueError, "a", soft.rbf_kernel, nan, x, 1.0)
    _raises(ValueError, "b", soft.rbf_kernel, x, x[:0], 1.0)
    _raises(ValueError, "x", soft.median_lengthscale, nan)
    _raises(TypeError, "x", soft.gp_label_regression, x.long(), y, xt, 3, [1.0])
    _raises(TypeError, "y", soft.gp_label_regression, x, y.float(), xt, 3, [1.0])
    _raises(ValueError, "y", soft.gp_label_regression, x, y + 5, xt, 3, [1.0])
    _raises(ValueError, "x_test", soft.gp_label_regression, x, y, nan[:6], 3, [1.0])
    _raises(ValueError, "x_test", soft.gp_label_regression, x, y, xt[:0], 3, [1.0])
    _raises(
        ValueError, "x_test", soft.gp_label_regression, x, y, xt[:, :2], 3, [1.0]
    )
    _raises(ValueError, "num_classes", soft.gp_label_regression, x, y, xt, 0, [1.0])
    _raises(
        ValueError, "lengthscales", soft.gp_label_regression, x, y, xt, 3, [-1.0]
    )


# =================================================================================================
# soft.GPConfig
# =================================================================================================
@pytest.mark.reference
def test_gp_and_rf_config_defaults():
    g = soft.GPConfig()
    assert (g.n_train, g.n_test, g.noise_ratio) == (2000, 1000, 1e-3)
    assert g.corruptions == (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    assert g.lengthscale_factors == (0.35, 0.5, 0.7, 1.0, 1.4)
    r = soft.RFConfig()
    assert (r.n, r.dim, r.noise, r.n_test, r.n_val, r.n_draws, r.alpha) == (
        200,
        3,
        0.1,
        2000,
        1000,
        5,
        1e-5,
    )
    assert r.ps[0] == 5 and r.ps[-1] == 2000 and {100, 200, 400} <= set(r.ps)
    assert list(r.ps) == sorted(set(r.ps))
    np.testing.assert_allclose(r.ridges, np.logspace(-8, 1, 19))


# =================================================================================================
# soft.run_gp_corruption
# =================================================================================================
@pytest.mark.reference
def test_run_gp_corruption_against_a_loop_and_uses_every_setting():
    ds = _dataset(n=30, n_test=14, seed=22, classes=3, length=6)
    cfg = soft.GPConfig.quick(
        n_train=24,
        n_test=11,
        corruptions=(0.0, 0.5, 1.0),
        noise_ratio=0.05,
        lengthscale_factors=(0.5, 1.0, 2.0),
    )
    got = soft.run_gp_corruption(cfg, ds, seed=2)
    ref = _ref_gp_corruption(cfg, ds, 2)
    assert got.chance == pytest.approx(1 / 3)
    for i, (frac, tr, te, ml, ell) in enumerate(ref):
        assert got.corruption[i] == frac
        assert got.train_acc[i] == pytest.approx(tr)
        assert got.test_acc[i] == pytest.approx(te)
        assert got.log_ml[i] == pytest.approx(ml, rel=1e-7)
        assert got.lengthscale[i] == pytest.approx(ell, rel=1e-6)
    base = got.to_dict()
    for key, value in dict(
        n_train=23,
        n_test=10,
        corruptions=(0.0, 0.6, 1.0),
        noise_ratio=0.2,
        lengthscale_factors=(0.4, 1.0, 2.0),
    ).items():
        out = soft.run_gp_corruption(
            soft.GPConfig.quick(**{**_cfg_dict(cfg), key: value}), ds, seed=2
        )
        assert _differs(out.to_dict(), base), key
    assert _differs(soft.run_gp_corruption(cfg, ds, seed=3).to_dict(), base)


@pytest.mark.reference
def test_run_gp_corruption_takes_exactly_the_points_the_dataset_holds():
    ds = _dataset(n=12, n_test=6, seed=23, classes=2, length=4)
    cfg = soft.GPConfig.quick(
        n_train=12, n_test=6, corruptions=(0.0,), lengthscale_factors=(1.0,)
    )
    assert len(soft.run_gp_corruption(cfg, ds).train_acc) == 1
    with pytest.raises(ValueError, match="n_train"):
        soft.run_gp_corruption(
            soft.GPConfig.quick(**{**_cfg_dict(cfg), "n_train": 13}), ds
        )
    with pytest.raises(ValueError, match="n_test"):
        soft.run_gp_corruption(
            soft.GPConfig.quick(**{**_cfg_dict(cfg), "n_test": 7}), ds
        )
