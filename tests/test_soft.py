"""Unit tests of gtlib.soft: closed forms, brute-force cross-checks, round trips and bad inputs."""
import math

import numpy as np
import pytest
import torch

from gtlib import soft

torch.set_num_threads(1)


# -- polynomials ---------------------------------------------------------------------------------
def test_legendre_features_orthonormal():
    x, w = np.polynomial.legendre.leggauss(40)
    phi = soft.legendre_features(x, 10)
    gram = (phi * w[:, None]).T @ phi / 2  # E_uniform[phi_i phi_j]
    assert np.allclose(gram, np.eye(11), atol=1e-10)


def test_fit_polynomial_equals_direct_ridge_solve():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-1, 1, 7), rng.normal(size=7)
    pen = soft.order_penalty(9, 1.5, 0.01)
    w = soft.fit_polynomial(x, y, 9, pen)
    # direct: least squares on the augmented system [Phi; sqrt(diag pen)] w = [y; 0]
    phi = soft.legendre_features(x, 9)
    aug = np.vstack([phi, np.diag(np.sqrt(pen))])
    w_direct = np.linalg.lstsq(aug, np.concatenate([y, np.zeros(10)]), rcond=None)[0]
    assert np.allclose(w, w_direct, atol=1e-9)


def test_unregularized_fit_recovers_polynomial_and_min_norm_interpolates():
    x = np.linspace(-1, 1, 20)
    y = 3 * x ** 3 - x + 0.5
    w = soft.fit_polynomial(x, y, 5)
    assert np.allclose(soft.predict_polynomial(w, x), y, atol=1e-10)
    assert np.allclose(w[4:], 0, atol=1e-10)
    w_mn = soft.fit_polynomial(x, np.sin(9 * x), 40)  # more coefficients than points
    assert np.allclose(soft.predict_polynomial(w_mn, x), np.sin(9 * x), atol=1e-8)
    assert np.allclose(w_mn, np.linalg.pinv(soft.legendre_features(x, 40)) @ np.sin(9 * x), atol=1e-8)


def test_poly_log_evidence_matches_gaussian_density():
    from scipy.stats import multivariate_normal
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-1, 1, 6), rng.normal(size=6)
    ev = soft.poly_log_evidence(x, y, 8, 1.3, [0.1, 0.5], [2.0])
    phi = soft.legendre_features(x, 8)
    for i, s2 in enumerate([0.1, 0.5]):
        cov = 2.0 * (phi * 1.3 ** -np.arange(9.0)) @ phi.T + s2 * np.eye(6)
        assert ev[i, 0] == pytest.approx(multivariate_normal(np.zeros(6), cov).logpdf(y), abs=1e-8)


def test_polynomial_bad_inputs():
    with pytest.raises(ValueError, match="x"):
        soft.legendre_features([0.5, 2.0], 3)
    with pytest.raises(TypeError, match="degree"):
        soft.legendre_features([0.1], 2.5)
    with pytest.raises(ValueError, match="gamma"):
        soft.order_penalty(3, 0.5)
    with pytest.raises(ValueError, match="same length"):
        soft.fit_polynomial([0.1, 0.2], [1.0], 2)
    with pytest.raises(ValueError, match="penalty"):
        soft.fit_polynomial([0.1, 0.2], [1.0, 2.0], 2, penalty=[1.0, -1.0, 1.0])


# -- GP --------------------------------------------------------------------------------------------
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
    direct = sum(float(torch.distributions.MultivariateNormal(torch.zeros(12, dtype=torch.float64), K)
                       .log_prob(t[:, c])) for c in range(3))
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


# -- effective dimensionality and random features --------------------------------------------
def test_effective_dimensionality_closed_forms():
    assert soft.effective_dimensionality([1.0, 1.0, 0.0], 1.0) == pytest.approx(1.0)
    assert soft.effective_dimensionality([1e9, 1e9, 1e-9], 1.0) == pytest.approx(2.0, abs=1e-6)
    assert soft.poorly_determined([4.0, 1.0, 0.0], 1.0, 2) == pytest.approx(2 - 0.8 - 0.5)
    with pytest.raises(ValueError, match="alpha"):
        soft.effective_dimensionality([1.0], 0.0)
    with pytest.raises(ValueError, match="k"):
        soft.poorly_determined([1.0], 1.0, 2)


def test_min_norm_lstsq_is_the_pseudoinverse_solution():
    rng = np.random.default_rng(2)
    phi, y = rng.normal(size=(5, 12)), rng.normal(size=5)
    beta = soft.min_norm_lstsq(phi, y)
    assert np.allclose(phi @ beta, y)
    assert np.allclose(beta, np.linalg.pinv(phi) @ y)
    with pytest.raises(ValueError, match="phi"):
        soft.min_norm_lstsq(phi, y[:3])


# -- Lanczos vs dense Hessian ----------------------------------------------------------------
def test_lanczos_matches_dense_hessian_eigenvalues():
    torch.manual_seed(0)
    model = soft.MLP(4, 6, 1, 3)
    x = torch.randn(20, 4)
    y = torch.randint(3, (20,))
    H = soft.dense_hessian(model, x, y)
    assert np.allclose(H, H.T, atol=1e-10)
    exact = np.sort(np.linalg.eigvalsh(H))[::-1]
    top = soft.lanczos_top_eigs(model, x, y, 8)
    assert np.allclose(top, exact[:8], atol=1e-7)
    matvec, P = soft.hessian_matvec(model, x, y)
    v = np.random.default_rng(0).normal(size=P)
    assert np.allclose(matvec(v), H @ v, atol=1e-10)
    res = soft.effective_parameters(model, x, y, alpha=1e-2, k=4, max_k=P - 1)
    assert res["covered"] and res["k"] >= 4
    full = soft.effective_dimensionality(exact, 1e-2)
    assert res["neff"] <= full + 1e-9 and full - res["neff"] <= 0.05 * (P - res["k"])


def test_member_at_width_matches_masked_member():
    from gtlib.models import BatchedMLP  # noqa: F401
    ens = soft.masked_ensemble([3, 5], [0, 1], 4, 2)
    x = torch.randn(7, 4)
    m = soft.member_at_width(ens, 0, 3)
    assert sum(p.numel() for p in m.parameters()) == 4 * 3 + 3 + 3 * 3 + 3 + 3 * 2 + 2
    with torch.no_grad():
        assert torch.allclose(m(x), ens(x)[0], atol=1e-6)


# -- coding and bounds -----------------------------------------------------------------------
def test_elias_gamma_round_trip():
    assert soft.elias_gamma(1) == [1]
    assert soft.elias_gamma(5) == [0, 0, 1, 0, 1]
    bits = soft.elias_gamma(9) + soft.elias_gamma(1) + soft.elias_gamma(300)
    a, p = soft.elias_gamma_decode(bits, 0)
    b, p = soft.elias_gamma_decode(bits, p)
    c, p = soft.elias_gamma_decode(bits, p)
    assert (a, b, c, p) == (9, 1, 300, len(bits))
    with pytest.raises(ValueError):
        soft.elias_gamma(0)


def test_arithmetic_code_round_trip_and_length():
    rng = np.random.default_rng(3)
    sym = rng.choice(4, size=500, p=[0.7, 0.1, 0.1, 0.1]).tolist()
    bits = soft.arithmetic_encode(sym, 4)
    assert soft.arithmetic_decode(bits, 500, 4) == sym
    # adaptive Laplace code length = -log2 of the sequential probabilities, plus a few bits
    counts, total, ideal = [1] * 4, 4, 0.0
    for s in sym:
        ideal -= math.log2(counts[s] / total)
        counts[s] += 1
        total += 1
    assert ideal <= len(bits) <= ideal + 4
    assert soft.arithmetic_decode(soft.arithmetic_encode([], 3), 0, 3) == []
    with pytest.raises(ValueError, match="symbols"):
        soft.arithmetic_encode([0, 5], 3)


def test_quantized_weights_decode_back():
    z = np.random.default_rng(4).normal(size=200)
    centres, sym = soft.quantize(z, 6)
    bits = soft.encode_quantized(centres, sym)
    c2, s2 = soft.decode_quantized(bits)
    assert np.array_equal(c2, centres) and np.array_equal(s2, sym)
    assert np.abs(centres[sym] - z).max() < np.abs(z).max()
    with pytest.raises(ValueError, match="levels"):
        soft.quantize(z, 0)


def test_countable_bound_hand_computation():
    got = soft.countable_bound(0.1, 1000, 5000, delta=0.05)
    assert got == pytest.approx(0.1 + math.sqrt((1000 * math.log(2) + math.log(20)) / 10000))
    assert soft.counting_bound(0.1, 10, 5000, 32, 0.05) == pytest.approx(soft.countable_bound(0.1, 320, 5000))
    with pytest.raises(ValueError, match="train_error"):
        soft.countable_bound(1.5, 10, 10)
    with pytest.raises(ValueError, match="delta"):
        soft.countable_bound(0.1, 10, 10, delta=1.0)
    with pytest.raises(TypeError, match="n"):
        soft.countable_bound(0.1, 10, 10.5)


def test_subspace_net_starts_at_init_and_configs_construct():
    net = soft.SubspaceNet(40, 10, 8, seed=3)
    x = torch.randn(5, 40)
    with torch.no_grad():
        assert torch.allclose(net(x), net.base(x), atol=1e-6)
    for cls in (soft.PolyConfig, soft.GPConfig, soft.RFConfig, soft.MLPSweepConfig,
                soft.CompressionConfig):
        cls.quick(), cls.full()
    assert soft.MLPSweepConfig.full().widths[-1] == 300
    with pytest.raises(ValueError, match="labels"):
        soft.run_compression(soft.CompressionConfig.quick(), _tiny_dataset(), "noisy")
    with pytest.raises(TypeError, match="ds"):
        soft.run_compression(soft.CompressionConfig.quick(), None, "true")


# -- fidelity pass: ridge path, double-descent summary, taxonomy, evidence split, PAC-Bayes ------
def test_ridge_path_matches_direct_solves_and_min_norm():
    rng = np.random.default_rng(5)
    phi, y = rng.normal(size=(6, 9)), rng.normal(size=6)
    lams = [1e-3, 0.5, 10.0]
    betas, beta0 = soft.ridge_path(phi, y, lams)
    for lam, b in zip(lams, betas):
        assert np.allclose(b, np.linalg.solve(phi.T @ phi + lam * np.eye(9), phi.T @ y))
    assert np.allclose(beta0, np.linalg.pinv(phi) @ y)
    with pytest.raises(ValueError, match="ridges"):
        soft.ridge_path(phi, y, [0.0])


def test_double_descent_summary_by_hand():
    ps = np.array([2, 4, 8, 10, 16, 40])
    mse = np.array([1.0, 0.5, 0.8, 9.0, 0.6, 0.3])
    d = soft.double_descent_summary(ps, mse, 10)
    assert (d["first"], d["best_under"], d["best_under_p"]) == (1.0, 0.5, 4)
    assert (d["best_over"], d["best_over_p"], d["peak"]) == (0.3, 40, 9.0)
    assert d["max_rise"] == pytest.approx(9.0 / 0.8 - 1)
    with pytest.raises(ValueError, match="below and above"):
        soft.double_descent_summary(ps[:3], mse[:3], 10)


def test_overfitting_taxonomy_interpolates_and_orders_excess_risk():
    tx = soft.overfitting_taxonomy(n=40, noise=0.5, tail_dim=4000, tail_var=1e-3, seed=1)
    sp = tx.spectra
    for k in ("benign", "tempered", "catastrophic"):
        assert sp[k].train_mse < 1e-12
    assert sp["benign"].excess < sp["tempered"].excess < sp["catastrophic"].excess
    assert sp["tempered"].d == 80 and sp["catastrophic"].d == 43
    assert tx.to_dict()["spectra"]["benign"]["tail_rank"] == pytest.approx(4000)


def test_evidence_decomposition_sums_to_the_log_evidence():
    rng = np.random.default_rng(6)
    x, y = rng.uniform(-1, 1, 15), rng.normal(size=15)
    d = soft.evidence_decomposition(x, y, 20, 1.2, 0.3, 2.0)
    assert d["log_evidence"] == pytest.approx(
        soft.poly_log_evidence(x, y, 20, 1.2, [0.3], [2.0])[0, 0], abs=1e-8)
    assert np.allclose(d["w"], soft.fit_polynomial(x, y, 20, soft.order_penalty(20, 1.2, 0.15)))


def test_pac_bayes_kl_bound_inverts_kl_and_beats_the_square_root_form():
    q, c = 0.1, 0.05
    p = soft.kl_inverse(q, c)
    assert p > q and soft.kl_bernoulli(q, p) == pytest.approx(c, abs=1e-9)
    assert soft.kl_inverse(0.3, 0.0) == pytest.approx(0.3)
    n, K = 8000, 3000
    kl = soft.pac_bayes_kl_bound(0.1, K * math.log(2), n)
    assert kl == pytest.approx(soft.kl_inverse(0.1, (K * math.log(2) + math.log(2 * math.sqrt(n)
                                                                                 / 0.05)) / n))
    assert 0.1 < kl < soft.countable_bound(0.1, K, n)
    with pytest.raises(ValueError, match="q"):
        soft.kl_bernoulli(1.5, 0.2)


def test_tail_trace_certifies_neff_against_the_dense_hessian():
    torch.manual_seed(1)
    model = soft.MLP(3, 5, 1, 2)
    x, y = torch.randn(30, 3), torch.randint(2, (30,))
    H = soft.dense_hessian(model, x, y)
    exact = np.linalg.eigvalsh(H)
    res = soft.effective_parameters(model, x, y, alpha=0.05, k=4, max_k=4, probes=200)
    tail_exact = exact.sum() - res["eigs"].sum()
    assert res["tail"] == pytest.approx(tail_exact, abs=4 * res["tail_se"] + 1e-9)
    assert res["neff"] <= soft.effective_dimensionality(exact, 0.05) + 1e-9
    assert res["train_loss"] > 0


def test_width_peak_summary_by_hand():
    w = np.array([4, 8, 16, 32, 64])
    reps = np.array([[0.5, 0.4, 0.6, 0.45, 0.42], [0.5, 0.42, 0.62, 0.47, 0.4]])
    d = soft.width_peak_summary(w, reps, threshold=16)
    assert (d["peak_width"], d["left_width"]) == (16, 8)
    assert d["peak"] == pytest.approx(0.61) and d["left"] == pytest.approx(0.41)
    assert d["right"] == pytest.approx(0.41)
    assert set(soft.width_peak_summary(w, reps, keys_only=True)) == {"peak", "left", "right",
                                                                      "se_diff"}


# -- results are dataclasses with one to_dict (issue 19) -----------------------------------------
def _tiny_dataset(n=80, n_test=40, seed=0):
    from gtlib.data import Dataset

    g = torch.Generator().manual_seed(seed)
    return Dataset(torch.randn(n, 40, generator=g), torch.randint(0, 10, (n,), generator=g),
                   torch.randn(n_test, 40, generator=g),
                   torch.randint(0, 10, (n_test,), generator=g), 10)


def _json_ready(res, leave_out=()):
    import json

    from gtlib.config import Result

    assert isinstance(res, Result)
    d = res.to_dict()
    json.dumps({k: v for k, v in d.items() if k not in leave_out})
    return d


def test_run_functions_return_results():
    poly = soft.run_polynomial(soft.PolyConfig.quick(n=20, degree=30, n_test=50,
                                                     restricted_degree=5), seed=1)
    assert isinstance(poly, soft.PolyResult)
    assert set(poly.targets) == {"simple", "complex", "noise"}
    fits = poly.targets["complex"].fits
    assert set(fits) == {"interpolant", "evidence", "minnorm", "best_ls", "restricted"}
    assert fits["restricted"].degree == 5 and fits["evidence"].gamma in soft.PolyConfig().gammas
    assert fits["interpolant"].gamma is None and fits["minnorm"].excess >= 0
    d = _json_ready(poly)
    best = poly.targets["noise"].fits["best_ls"]
    assert d["targets"]["noise"]["fits"]["best_ls"]["degree"] == best.degree
    assert d["targets"]["noise"]["fits"]["best_ls"]["curve"] == best.curve.tolist()

    ds = _tiny_dataset()
    gp = soft.run_gp_corruption(soft.GPConfig.quick(n_train=60, n_test=30,
                                                    corruptions=(0.0, 1.0)), ds)
    assert isinstance(gp, soft.GPCorruptionResult) and gp.corruption == [0.0, 1.0]
    assert len(gp.train_acc) == len(gp.test_acc) == len(gp.log_ml) == 2 and gp.chance == 0.1
    _json_ready(gp)

    rf = soft.run_random_features(soft.RFConfig.quick(n=20, n_test=30, n_val=20, ps=(5, 40),
                                                      n_draws=2))
    assert isinstance(rf, soft.RandomFeaturesResult) and rf.test_mse_draws.shape == (2, 2)
    _json_ready(rf)

    sweep = soft.run_mlp_sweep(soft.MLPSweepConfig.quick(n_train=60, width_groups=((4, 8),),
                                                         epochs=2, batch_size=20,
                                                         replicates=2), ds)
    assert isinstance(sweep, soft.MLPSweepResult) and sweep.test_err_reps.shape == (2, 2)
    assert [m.layers[0].out_features for m in sweep.nets] == [4, 8]
    _json_ready(sweep, leave_out=("nets", "nets_hist"))

    comp = soft.run_compression(soft.CompressionConfig.quick(n_train=64, dim=16, levels=(3,),
                                                             steps=4, batch_size=16,
                                                             tune_steps=2), ds, "true",
                                channels=2)
    assert isinstance(comp, soft.CompressionResult) and comp.roundtrip and comp.levels == 3
    assert comp.train_err_q <= comp.bound and _json_ready(comp)["bits"] == comp.bits


def test_soft_validates_integers_with_the_core_checks():
    # one integer check for every chapter (issue 19): soft's own _int helper is gone
    assert not hasattr(soft, "_int")
    with pytest.raises(ValueError, match="degree"):
        soft.legendre_features([0.0], -1)
    with pytest.raises(ValueError, match="steps"):
        soft.train_subspace(soft.SubspaceNet(40, 10, 4), torch.zeros(3, 40),
                            torch.zeros(3, dtype=torch.int64), steps=0, lr=0.1)
