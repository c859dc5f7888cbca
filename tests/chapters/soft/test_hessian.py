"""Tests of gtlib.soft.hessian, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import math
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from gtlib import soft
from gtlib.models import MLP

from tests.chapters.soft.helpers import _raises


def _fd_hessian(model, x, y, h=1e-5):
    """Central differences of autograd gradients of F.cross_entropy(model(x), y), float64."""
    import copy

    m = copy.deepcopy(model).double()
    params = list(m.parameters())
    theta = torch.nn.utils.parameters_to_vector(params).detach()

    def grad(t):
        torch.nn.utils.vector_to_parameters(t, params)
        m.zero_grad()
        F.cross_entropy(m(x.double()), y).backward()
        return torch.cat([p.grad.reshape(-1) for p in params]).detach().clone()

    P = theta.numel()
    H = np.zeros((P, P))
    for i in range(P):
        e = torch.zeros(P, dtype=torch.float64)
        e[i] = h
        H[:, i] = ((grad(theta + e) - grad(theta - e)) / (2 * h)).numpy()
    return (H + H.T) / 2


@pytest.fixture(scope="module")
def small_net():
    from gtlib.models import MLP

    torch.manual_seed(40)
    model = MLP(3, 4, 1, 3)  # 3*4 + 4 + 4*3 + 3 = 31 parameters
    g = torch.Generator().manual_seed(41)
    x = torch.randn(14, 3, generator=g)
    y = torch.tensor([0, 1, 2, 0, 0, 1, 2, 2, 0, 1, 0, 0, 2, 1])
    H = _fd_hessian(model, x, y)
    return model, x, y, H


def _expected_k(exact, k, max_k, P, alpha, weight_tol):
    while True:
        k_eff = min(k, P - 1)
        last = max(exact[k_eff - 1], 0.0)
        covered = last / (last + alpha) <= weight_tol
        if covered or k_eff >= min(max_k, P - 1):
            return k_eff, covered
        k *= 2


@pytest.fixture(scope="module")
def tiny():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(30, 5, generator=g)
    y = torch.arange(30) % 3
    return MLP(5, 4, 1, 3), x, y


# =================================================================================================
# soft.hessian_matvec
# =================================================================================================
@pytest.mark.boundary
def test_hessian_tools_refuse_labels_outside_the_models_classes(tiny):
    model, x, y = tiny
    for fn in (soft.hessian_matvec, soft.dense_hessian):
        _raises(ValueError, "y", fn, model, x, torch.full_like(y, 99))
        _raises(ValueError, "y", fn, model, x, y - 1)
        _raises(TypeError, "y", fn, model, x, y.float())
        _raises(ValueError, "y", fn, model, x, y[:-1])
        _raises(TypeError, "x", fn, model, x.long(), y)
        _raises(ValueError, "x", fn, model, x[:, :3], y)
        _raises(TypeError, "model", fn, None, x, y)


# =================================================================================================
# soft.dense_hessian
# =================================================================================================
def test_lanczos_matches_dense_hessian_eigenvalues():
    torch.manual_seed(0)
    model = MLP(4, 6, 1, 3)
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


def test_tail_trace_bounds_neff_against_the_dense_hessian():
    torch.manual_seed(1)
    model = MLP(3, 5, 1, 2)
    x, y = torch.randn(30, 3), torch.randint(2, (30,))
    H = soft.dense_hessian(model, x, y)
    exact = np.linalg.eigvalsh(H)
    res = soft.effective_parameters(
        model, x, y, alpha=0.05, k=4, max_k=4, probes=200
    )
    tail_exact = exact.sum() - res["eigs"].sum()
    assert res["tail"] == pytest.approx(tail_exact, abs=4 * res["tail_se"] + 1e-9)
    assert res["neff"] <= soft.effective_dimensionality(exact, 0.05) + 1e-9
    assert res["train_loss"] > 0


@pytest.mark.reference
def test_dense_hessian_and_matvec_against_finite_differences(small_net):
    model, x, y, H = small_net
    dense = soft.dense_hessian(model, x, y)
    assert dense.shape == (31, 31)
    np.testing.assert_allclose(dense, H, atol=2e-7)
    matvec, P = soft.hessian_matvec(model, x, y)
    assert P == 31
    v = np.random.default_rng(42).normal(size=31)
    np.testing.assert_allclose(matvec(v), H @ v, atol=2e-6)
    assert (
        next(model.parameters()).dtype == torch.float32
    )  # the caller's model is untouched


# =================================================================================================
# soft.lanczos_top_eigs
# =================================================================================================
@pytest.mark.reference
def test_lanczos_top_eigs_vectors_and_order(small_net):
    model, x, y, H = small_net
    exact = np.sort(np.linalg.eigvalsh(H))[::-1]
    vals, vecs = soft.lanczos_top_eigs(model, x, y, 5, vectors=True, seed=3)
    assert vecs.shape == (31, 5)
    np.testing.assert_allclose(vals, exact[:5], atol=1e-6)
    assert np.all(np.diff(vals) <= 0)
    np.testing.assert_allclose(H @ vecs, vecs * vals, atol=1e-5)
    np.testing.assert_allclose(
        soft.lanczos_top_eigs(model, x, y, 5, seed=9), exact[:5], atol=1e-6
    )
    assert len(soft.lanczos_top_eigs(model, x, y, 30)) == 30  # k = P - 1 is allowed
    with pytest.raises(ValueError, match="k"):
        soft.lanczos_top_eigs(model, x, y, 31)


@pytest.mark.boundary
@pytest.mark.parametrize("tol", [math.nan, 0.0, -1.0, math.inf, True, None, "x"])
def test_lanczos_refuses_a_bad_tolerance_before_eigsh(tiny, tol):
    model, x, y = tiny
    _raises(
        (TypeError, ValueError),
        "tol",
        soft.lanczos_top_eigs,
        model,
        x,
        y,
        3,
        tol=tol,
    )


# =================================================================================================
# soft.tail_trace
# =================================================================================================
@pytest.mark.reference
def test_tail_trace_exact_on_a_diagonal_and_against_a_loop():
    H = np.diag([5.0, 1.0, 2.0, 3.0])
    q = np.eye(4)[:, :1]
    # a Rademacher z with z_0 projected out gives z^T H z = 1 + 2 + 3 exactly, every probe
    t, se = soft.tail_trace(lambda v: H @ v, q, probes=3, seed=0)
    assert (t, se) == (6.0, 0.0)
    rng = np.random.default_rng(43)
    a = rng.normal(size=(6, 6))
    A = a @ a.T
    q = np.linalg.qr(rng.normal(size=(6, 2)))[0]
    t, se = soft.tail_trace(lambda v: A @ v, q, probes=5, seed=7)
    r = np.random.default_rng(7)
    vals = []
    for _ in range(5):
        z = r.choice([-1.0, 1.0], size=6)
        z = z - q @ (q.T @ z)
        vals.append(z @ A @ z)
    assert t == pytest.approx(np.mean(vals), rel=1e-12)
    assert se == pytest.approx(np.std(vals, ddof=1) / math.sqrt(5), rel=1e-12)
    assert soft.tail_trace(lambda v: A @ v, q, probes=5, seed=8)[0] != t


# =================================================================================================
# soft.effective_parameters
# =================================================================================================
@pytest.mark.reference
def test_effective_parameters_doubles_k_until_covered_or_capped(small_net):
    model, x, y, H = small_net
    exact = np.sort(np.linalg.eigvalsh(H))[::-1]
    alpha = 0.01
    # the weight of the 2nd, 4th, 8th... eigenvalue, to pick tolerances between them
    weights = {
        k: max(exact[k - 1], 0) / (max(exact[k - 1], 0) + alpha) for k in (2, 4, 8)
    }
    tol = 0.5 * (weights[4] + weights[8])  # k = 2 and 4 are not covered, 8 is
    assert weights[4] > tol > weights[8]
    res = soft.effective_parameters(
        model, x, y, alpha, k=2, max_k=30, weight_tol=tol
    )
    assert (
        (res["k"], res["covered"])
        == (8, True)
        == _expected_k(exact, 2, 30, 31, alpha, tol)
    )
    assert res["neff"] == pytest.approx(
        np.sum(exact[:8] / (exact[:8] + alpha)), rel=1e-6
    )
    np.testing.assert_allclose(res["eigs"], exact[:8], atol=1e-6)
    assert res["n_params"] == 31
    with torch.no_grad():
        assert res["train_loss"] == pytest.approx(
            float(F.cross_entropy(model(x), y)), rel=1e-6
        )
    # capped at max_k, not covered
    res = soft.effective_parameters(model, x, y, alpha, k=2, max_k=4, weight_tol=tol)
    assert (res["k"], res["covered"]) == (4, False)
    # k is cut to P - 1 = 30 (its eigenvalue is negative: covered)
    res = soft.effective_parameters(
        model, x, y, alpha, k=40, max_k=64, weight_tol=0.01
    )
    assert (res["k"], res["covered"]) == (30, True)
    top = np.clip(exact[:30], 0, None)
    assert res["neff"] == pytest.approx(np.sum(top / (top + alpha)), rel=1e-6)
    # probes: the upper bound adds the (positive part of the) tail trace over alpha
    res = soft.effective_parameters(
        model, x, y, alpha, k=4, max_k=4, probes=6, seed=2
    )
    assert res["neff_upper"] == pytest.approx(
        res["neff"] + max(res["tail"] + 2 * res["tail_se"], 0) / alpha, rel=1e-12
    )
    matvec, _ = soft.hessian_matvec(model, x, y)
    _, vecs = soft.lanczos_top_eigs(model, x, y, 4, seed=2, vectors=True)
    assert res["tail"] == pytest.approx(
        soft.tail_trace(matvec, vecs, 6, 2)[0], rel=1e-6
    )
    assert "tail" not in soft.effective_parameters(model, x, y, alpha, k=4, max_k=4)


@pytest.mark.boundary
@pytest.mark.parametrize(
    "kw,name",
    [
        (dict(max_k=0), "max_k"),
        (dict(max_k=2), "max_k"),
        (dict(max_k=True), "max_k"),
        (dict(weight_tol=1.5), "weight_tol"),
        (dict(weight_tol=-0.1), "weight_tol"),
        (dict(weight_tol=math.nan), "weight_tol"),
        (dict(seed=2**64), "seed"),
        (dict(probes=None), "probes"),
        (dict(probes=1), "probes"),
    ],
)
def test_effective_parameters_refuses_bad_settings(tiny, kw, name):
    model, x, y = tiny
    _raises(
        (TypeError, ValueError),
        name,
        soft.effective_parameters,
        model,
        x,
        y,
        1.0,
        k=3,
        **kw,
    )
