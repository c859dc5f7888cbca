"""Tests of gtlib.soft.random_features, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import math
import numpy as np
import pytest

from gtlib import soft
from gtlib.soft import relu_features

from tests.chapters.soft.helpers import _differs, _raises


def _ref_random_features(cfg, seed):
    rng = np.random.default_rng(seed)
    P = max(cfg.ps)
    test, ridge, neff, poor = (
        np.zeros((cfg.n_draws, len(cfg.ps))) for _ in range(4)
    )
    null = []
    for r in range(cfg.n_draws):
        x = rng.normal(size=(cfg.n, cfg.dim))
        xt = rng.normal(size=(cfg.n_test, cfg.dim))
        y = soft.rf_target(x) + cfg.noise * rng.normal(size=cfg.n)
        yt = soft.rf_target(xt) + cfg.noise * rng.normal(size=cfg.n_test)
        xv = rng.normal(size=(cfg.n_val, cfg.dim))
        yv = soft.rf_target(xv) + cfg.noise * rng.normal(size=cfg.n_val)
        w = rng.normal(size=(cfg.dim, P)) / np.sqrt(cfg.dim)
        b = rng.uniform(-1, 1, size=P)
        null.append(np.mean((yt - y.mean()) ** 2))
        for j, p in enumerate(cfg.ps):
            f, ft, fv = (
                np.maximum(z @ w[:, :p] + b[:p], 0) / np.sqrt(p) for z in (x, xt, xv)
            )
            test[r, j] = np.mean((ft @ (np.linalg.pinv(f) @ y) - yt) ** 2)
            sols = [
                np.linalg.solve(f.T @ f + lam * np.eye(p), f.T @ y)
                for lam in cfg.ridges
            ]
            best = min(
                range(len(sols)), key=lambda i: np.mean((fv @ sols[i] - yv) ** 2)
            )
            ridge[r, j] = np.mean((ft @ sols[best] - yt) ** 2)
            eigs = np.clip(np.linalg.eigvalsh(f.T @ f / cfg.n), 0, None)[::-1]
            neff[r, j] = np.sum(eigs / (eigs + cfg.alpha))
            k = min(cfg.n, p)
            poor[r, j] = k - np.sum(eigs[:k] / (eigs[:k] + cfg.alpha))
    return dict(
        test_mse_draws=test,
        test_mse=np.median(test, 0),
        ridge_mse=np.median(ridge, 0),
        null_mse=float(np.median(null)),
        neff=neff.mean(0),
        poor=poor.mean(0),
    )


RF_SMALL = dict(
    n=10,
    dim=3,
    noise=0.2,
    n_test=15,
    n_val=12,
    ps=(4, 7, 25),
    n_draws=3,
    alpha=1e-2,
    ridges=(1e-3, 0.1, 3.0),
)


def _ref_spectrum(cfg, p, seed):
    rng = np.random.default_rng(seed)
    x, y, xt, yt = soft.rf_data(cfg, rng)
    w = rng.normal(size=(cfg.dim, p)) / np.sqrt(cfg.dim)
    b = rng.uniform(-1, 1, size=p)
    f, ft = (np.maximum(z @ w + b, 0) / np.sqrt(p) for z in (x, xt))
    k = min(cfg.n, p)
    eigs = np.sort(
        np.linalg.eigvalsh(f.T @ f / cfg.n if p <= cfg.n else f @ f.T / cfg.n)
    )[::-1]
    eigs = np.clip(eigs[:k], 0, None)
    return dict(
        eigs=eigs,
        test_mse=np.mean((ft @ (np.linalg.pinv(f) @ y) - yt) ** 2),
        neff=np.sum(eigs / (eigs + cfg.alpha)),
        poor=k - np.sum(eigs / (eigs + cfg.alpha)),
    )


# =================================================================================================
# soft.effective_dimensionality
# =================================================================================================
def test_effective_dimensionality_closed_forms():
    assert soft.effective_dimensionality([1.0, 1.0, 0.0], 1.0) == pytest.approx(1.0)
    assert soft.effective_dimensionality([1e9, 1e9, 1e-9], 1.0) == pytest.approx(
        2.0, abs=1e-6
    )
    assert soft.poorly_determined([4.0, 1.0, 0.0], 1.0, 2) == pytest.approx(
        2 - 0.8 - 0.5
    )
    with pytest.raises(ValueError, match="alpha"):
        soft.effective_dimensionality([1.0], 0.0)
    with pytest.raises(ValueError, match="k"):
        soft.poorly_determined([1.0], 1.0, 2)


# =================================================================================================
# soft.poorly_determined
# =================================================================================================
@pytest.mark.reference
def test_effective_dimensionality_and_poorly_determined_by_hand():
    # 3/3.5 + 1/1.5 + 0 (a negative eigenvalue counts as zero)
    assert soft.effective_dimensionality([3.0, 1.0, -2.0], 0.5) == pytest.approx(
        3 / 3.5 + 1 / 1.5, rel=1e-14
    )
    assert soft.effective_dimensionality([0.0, 0.0], 2.0) == 0.0
    assert soft.effective_dimensionality([2.0], 6.0) == pytest.approx(0.25)
    # unsorted input: the k = 2 largest are 4 and 2
    assert soft.poorly_determined([0.5, 4.0, 1.0, 2.0], 1.0, 2) == pytest.approx(
        2 - 4 / 5 - 2 / 3, rel=1e-14
    )
    assert soft.poorly_determined([0.5, 4.0, 1.0, 2.0], 3.0, 4) == pytest.approx(
        4 - (0.5 / 3.5 + 4 / 7 + 1 / 4 + 2 / 5), rel=1e-14
    )
    assert soft.poorly_determined([-1.0, 3.0], 1.0, 2) == pytest.approx(2 - 0.75)
    with pytest.raises(ValueError, match="k"):
        soft.poorly_determined([0.5, 4.0], 1.0, 3)


# =================================================================================================
# soft.relu_features
# =================================================================================================
@pytest.mark.mutation
def test_relu_features_are_scaled_by_the_number_of_features():
    rng = np.random.default_rng(1)
    x, w, b = rng.normal(size=(6, 2)), rng.normal(size=(2, 9)), rng.normal(size=9)
    np.testing.assert_allclose(
        relu_features(x, w, b), np.maximum(x @ w + b, 0) / 3.0
    )


# =================================================================================================
# soft.min_norm_lstsq
# =================================================================================================
def test_min_norm_lstsq_is_the_pseudoinverse_solution():
    rng = np.random.default_rng(2)
    phi, y = rng.normal(size=(5, 12)), rng.normal(size=5)
    beta = soft.min_norm_lstsq(phi, y)
    assert np.allclose(phi @ beta, y)
    assert np.allclose(beta, np.linalg.pinv(phi) @ y)
    with pytest.raises(ValueError, match="phi"):
        soft.min_norm_lstsq(phi, y[:3])


# =================================================================================================
# soft.rf_target
# =================================================================================================
@pytest.mark.reference
def test_relu_features_and_rf_target_by_hand():
    x = np.array([[1.0, -2.0]])
    w = np.array([[1.0, 0.0, 2.0], [1.0, 1.0, 0.0]])  # D = 2, p = 3
    b = np.array([0.5, 3.0, -1.0])
    # x w = [-1, -2, 2]; + b = [-0.5, 1, 1]; relu / sqrt(3)
    np.testing.assert_allclose(
        soft.relu_features(x, w, b),
        [[0.0, 1 / math.sqrt(3), 1 / math.sqrt(3)]],
        rtol=1e-14,
    )
    xs = np.array([[0.3, -0.4, 9.0], [-1.1, 0.7, -3.0]])
    want = [
        math.sin(0.6) + 0.5 * math.cos(-1.2) + 0.3 * 0.3 * -0.4,
        math.sin(-2.2) + 0.5 * math.cos(2.1) + 0.3 * -1.1 * 0.7,
    ]
    np.testing.assert_allclose(soft.rf_target(xs), want, rtol=1e-14)
    xs[:, 2] = 0.0  # only the first two coordinates matter
    np.testing.assert_allclose(soft.rf_target(xs), want, rtol=1e-14)


@pytest.mark.reference
def test_rf_data_draws_in_its_documented_order():
    cfg = soft.RFConfig.quick(n=7, dim=3, noise=0.25, n_test=5)
    x, y, xt, yt = soft.rf_data(cfg, np.random.default_rng(24))
    rng = np.random.default_rng(24)
    ex, ext = rng.normal(size=(7, 3)), rng.normal(size=(5, 3))
    ey = soft.rf_target(ex) + 0.25 * rng.normal(size=7)
    eyt = soft.rf_target(ext) + 0.25 * rng.normal(size=5)
    for a, b in ((x, ex), (y, ey), (xt, ext), (yt, eyt)):
        np.testing.assert_array_equal(a, b)


# =================================================================================================
# soft.ridge_path
# =================================================================================================
def test_ridge_path_matches_direct_solves_and_min_norm():
    rng = np.random.default_rng(5)
    phi, y = rng.normal(size=(6, 9)), rng.normal(size=6)
    lams = [1e-3, 0.5, 10.0]
    betas, beta0 = soft.ridge_path(phi, y, lams)
    for lam, b in zip(lams, betas):
        assert np.allclose(
            b, np.linalg.solve(phi.T @ phi + lam * np.eye(9), phi.T @ y)
        )
    assert np.allclose(beta0, np.linalg.pinv(phi) @ y)
    with pytest.raises(ValueError, match="ridges"):
        soft.ridge_path(phi, y, [0.0])


@pytest.mark.reference
def test_ridge_path_drops_singular_values_below_rcond_times_the_largest():
    rng = np.random.default_rng(25)
    u = np.linalg.qr(rng.normal(size=(5, 2)))[0]
    v = np.linalg.qr(rng.normal(size=(4, 2)))[0]
    s = np.array([50.0, 0.02])
    phi = u @ np.diag(s) @ v.T
    y = rng.normal(size=5)
    c = u.T @ y
    lams = [0.01, 2.0]
    for rcond, kept in ((1e-10, 2), (1e-3, 1)):  # 0.02 / 50 = 4e-4 sits between them
        betas, b0 = soft.ridge_path(phi, y, lams, rcond=rcond)
        k = slice(0, kept)
        np.testing.assert_allclose(
            b0, v[:, k] @ (c[k] / s[k]), rtol=1e-8, atol=1e-12
        )
        for lam, beta in zip(lams, betas):
            np.testing.assert_allclose(
                beta,
                v[:, k] @ (s[k] / (s[k] ** 2 + lam) * c[k]),
                rtol=1e-8,
                atol=1e-12,
            )
    # default rcond keeps both: the min-norm solution is the pseudo-inverse's
    np.testing.assert_allclose(
        soft.ridge_path(phi, y, lams)[1], np.linalg.pinv(phi) @ y, rtol=1e-7
    )


@pytest.mark.boundary
@pytest.mark.parametrize("rcond", [0.0, -1.0, math.nan, math.inf, True, None, "x"])
def test_ridge_path_refuses_a_bad_rcond(rcond):
    rng = np.random.default_rng(0)
    _raises(
        (TypeError, ValueError),
        "rcond",
        soft.ridge_path,
        rng.normal(size=(4, 6)),
        rng.normal(size=4),
        [0.1],
        rcond,
    )


# =================================================================================================
# soft.run_random_features
# =================================================================================================
@pytest.mark.reference
def test_run_random_features_against_a_pinv_and_direct_solve_loop():
    cfg = soft.RFConfig.quick(**RF_SMALL)
    got = soft.run_random_features(cfg, seed=5)
    ref = _ref_random_features(cfg, 5)
    np.testing.assert_array_equal(got.ps, [4, 7, 25])
    assert got.n == 10 and got.noise_var == pytest.approx(0.04)
    for key, want in ref.items():
        np.testing.assert_allclose(
            getattr(got, key), want, rtol=1e-6, atol=1e-10, err_msg=key
        )
    # medians over three draws are not means: the reduction matters
    assert not np.allclose(got.test_mse, got.test_mse_draws.mean(0))


@pytest.mark.reference
def test_run_random_features_uses_every_setting_and_the_seed():
    base = soft.run_random_features(
        soft.RFConfig.quick(**RF_SMALL), seed=0
    ).to_dict()
    changes = dict(
        n=11,
        dim=4,
        noise=0.3,
        n_test=16,
        n_val=13,
        ps=(4, 8, 25),
        n_draws=2,
        alpha=0.1,
        ridges=(1e-3, 0.1, 1.0),
    )
    for key, value in changes.items():
        out = soft.run_random_features(
            soft.RFConfig.quick(**{**RF_SMALL, key: value}), seed=0
        )
        assert _differs(out.to_dict(), base), key
    assert _differs(
        soft.run_random_features(soft.RFConfig.quick(**RF_SMALL), seed=1).to_dict(),
        base,
    )


# =================================================================================================
# soft.double_descent_summary
# =================================================================================================
def test_double_descent_summary_by_hand():
    ps = np.array([2, 4, 8, 10, 16, 40])
    mse = np.array([1.0, 0.5, 0.8, 9.0, 0.6, 0.3])
    d = soft.double_descent_summary(ps, mse, 10)
    assert (d["first"], d["best_under"], d["best_under_p"]) == (1.0, 0.5, 4)
    assert (d["best_over"], d["best_over_p"], d["peak"]) == (0.3, 40, 9.0)
    assert d["max_rise"] == pytest.approx(9.0 / 0.8 - 1)
    with pytest.raises(ValueError, match="below and above"):
        soft.double_descent_summary(ps[:3], mse[:3], 10)


@pytest.mark.reference
def test_double_descent_summary_edges():
    ps = np.array([3, 5, 8, 10, 20, 21])
    # p = n = 10 is neither under- nor over-parameterized; n/2 = 5 is near the threshold
    d = soft.double_descent_summary(ps, [2.0, 1.5, 1.2, 0.1, 0.9, 5.0], 10)
    assert (d["best_under"], d["best_under_p"]) == (1.2, 8)
    assert (d["best_over"], d["best_over_p"]) == (0.9, 20)
    assert d["peak"] == 1.5 and d["first"] == 2.0
    assert d["max_rise"] == pytest.approx(0.9 / 0.1 - 1)
    # 2n = 20 is near the threshold, 21 is not
    d = soft.double_descent_summary(ps, [2.0, 0.5, 1.2, 0.4, 1.8, 9.0], 10)
    assert d["peak"] == 1.8
    assert d["max_rise"] == pytest.approx(9.0 / 1.8 - 1)  # the last pair counts
    d = soft.double_descent_summary([4, 16, 30], [0.3, 3.0, 1.0], 10)
    assert d["max_rise"] == pytest.approx(9.0) and d["first"] == 0.3


# =================================================================================================
# soft.rf_spectrum
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize("p", [6, 15])
def test_rf_spectrum_against_eigvalsh_and_pinv(p):
    cfg = soft.RFConfig.quick(n=10, dim=3, noise=0.2, n_test=12, alpha=0.05)
    got = soft.rf_spectrum(cfg, p, seed=6)
    ref = _ref_spectrum(cfg, p, 6)
    assert len(got["eigs"]) == min(10, p)
    np.testing.assert_allclose(got["eigs"], ref["eigs"], rtol=1e-8, atol=1e-12)
    for key in ("test_mse", "neff", "poor"):
        assert got[key] == pytest.approx(ref[key], rel=1e-6), key
    assert soft.rf_spectrum(cfg, p, seed=7)["test_mse"] != got["test_mse"]
    other = soft.rf_spectrum(
        soft.RFConfig.quick(n=10, dim=3, noise=0.2, n_test=12, alpha=0.5), p, seed=6
    )
    assert other["neff"] < got["neff"]
