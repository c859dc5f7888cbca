"""Tests of gtlib.connectivity.features, one section per public function."""

from __future__ import annotations
import numpy as np
import pytest
import torch
from gtlib import connectivity as C
from gtlib.connectivity import llfc_dissimilarity, cosine_dissimilarity
from gtlib.models import make_mlp
from tests.chapters.connectivity.helpers import (
    _blobs,
    ACT,
    data,
    net,
    net_ref,
    np_features,
    np_forward,
    npw,
    X,
    X_ref,
    Y,
)


def np_cos_dis(u, v):
    nu, nv = np.linalg.norm(u, axis=1), np.linalg.norm(v, axis=1)
    out = []
    for i in range(len(u)):
        if nu[i] < 1e-12 and nv[i] < 1e-12:
            out.append(0.0)
        else:
            out.append(1 - float(u[i] @ v[i]) / max(nu[i] * nv[i], 1e-12))
    return float(np.mean(out))


# =================================================================================================
# connectivity.cosine_dissimilarity
# =================================================================================================
def test_llfc_of_identical_features_is_zero_and_scale_invariant():
    m = net()
    assert max(C.llfc_dissimilarity(m, m, X, 0.3)) < 1e-6
    u = torch.rand(10, 5)
    assert C.cosine_dissimilarity(u, 3 * u) < 1e-6
    assert C.cosine_dissimilarity(torch.zeros(3, 4), torch.zeros(3, 4)) == 0.0
    assert C.cosine_dissimilarity(
        torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])
    ) == pytest.approx(1.0)


@pytest.mark.reference
def test_cosine_dissimilarity_by_hand():
    u = torch.tensor([[3.0, 4.0], [1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    v = torch.tensor([[4.0, 3.0], [-2.0, 0.0], [0.0, 0.0], [1.0, 2.0]])
    # rows: 1 - 24/25, 1 - (-1), identical zeros 0, zero vs non-zero 1
    assert C.cosine_dissimilarity(u, v) == pytest.approx((0.04 + 2 + 0 + 1) / 4)
    assert C.cosine_dissimilarity(v, u) == pytest.approx((0.04 + 2 + 0 + 1) / 4)
    with pytest.raises(ValueError):
        C.cosine_dissimilarity(u, v[:3])


@pytest.mark.mutation
def test_cosine_dissimilarity_of_a_zero_and_a_nonzero_row_is_one():
    """Only two zero rows count as identical; a zero row against a non-zero one has cos 0."""
    u = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    v = torch.tensor([[1.0, 2.0], [1.0, 0.0]])
    assert cosine_dissimilarity(u, v) == pytest.approx(0.5)


# =================================================================================================
# connectivity.llfc_dissimilarity
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize("alpha", [0.3, 0.85])
def test_llfc_dissimilarity_against_numpy(alpha):
    a, b = net_ref(50, depth=2), net_ref(51, depth=2)
    fa, fb = np_features(a, X_ref), np_features(b, X_ref)
    fm = np_features(C.lerp(a, b, alpha), X_ref)
    want = [
        np_cos_dis(m, (1 - alpha) * u + alpha * v) for u, v, m in zip(fa, fb, fm)
    ]
    got = C.llfc_dissimilarity(a, b, X_ref, alpha)
    assert len(got) == 3
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    wrong = [
        np_cos_dis(m, alpha * u + (1 - alpha) * v) for u, v, m in zip(fa, fb, fm)
    ]
    assert not np.allclose(got, wrong, rtol=1e-3)
    np.testing.assert_allclose(
        C.llfc_dissimilarity(b, a, X_ref, 1 - alpha), got, rtol=1e-4, atol=1e-6
    )


@pytest.mark.reference
def test_llfc_default_alpha_is_one_half_and_profile_stacks_hidden_layers():
    a, b = net_ref(52, depth=3), net_ref(53, depth=3)
    assert C.llfc_dissimilarity(a, b, X_ref) == C.llfc_dissimilarity(
        a, b, X_ref, 0.5
    )
    prof = C.llfc_profile(a, b, X_ref, [0.2, 0.5, 0.9])
    assert prof.shape == (3, 3)
    for i, al in enumerate([0.2, 0.5, 0.9]):
        np.testing.assert_allclose(
            prof[i], C.llfc_dissimilarity(a, b, X_ref, al)[:-1], rtol=1e-12
        )
    assert not np.allclose(prof[0], prof[2])


@pytest.mark.reference
def test_llfc_is_symmetric_under_swapping_the_endpoints():
    a, b = make_mlp(0, 5, 16, 2, 3), make_mlp(1, 5, 16, 2, 3)
    x = _blobs()[0].float()
    for alpha in (0.2, 0.7):
        ab = C.llfc_dissimilarity(a, b, x, alpha)
        ba = C.llfc_dissimilarity(b, a, x, 1 - alpha)
        assert ab == pytest.approx(ba, abs=1e-5)
    # at alpha = 0 the interpolated net is `a` itself and so are its target features
    assert max(C.llfc_dissimilarity(a, b, x, 0.0)) == pytest.approx(0.0, abs=1e-5)
    assert (
        max(C.llfc_dissimilarity(a, b, x, 0.3)) > 1e-4
    )  # distinct nets: not trivially zero


@pytest.mark.mutation
def test_llfc_weights_alpha_on_b_and_one_minus_alpha_on_a():
    """At alpha = 0 (1) the interpolated net is a (b), so its features are a's (b's) exactly and
    every layer's LLFC dissimilarity is 0; with identity activations the first hidden layer is
    linear in the weights, so it is 0 at every alpha."""
    x = torch.randn(30, 4, generator=torch.Generator().manual_seed(0))
    a, b = make_mlp(0, 4, 6, 2, 3), make_mlp(1, 4, 6, 2, 3)
    for alpha in (0.0, 1.0):
        assert max(llfc_dissimilarity(a, b, x, alpha)) < 1e-6
    a, b = (
        make_mlp(0, 4, 6, 2, 3, act="identity"),
        make_mlp(1, 4, 6, 2, 3, act="identity"),
    )
    for alpha in (0.1, 0.3, 0.8):
        assert llfc_dissimilarity(a, b, x, alpha)[0] < 1e-6


# =================================================================================================
# connectivity.commutativity_residual
# =================================================================================================
def test_commutativity_residual_closed_form():
    m = net()
    assert max(C.commutativity_residual(m, m, X)) < 1e-7
    a, b = net(0), net(1)
    ha, hb = a.features(X)[0], b.features(X)[0]
    wa, wb = a.layers[1].weight, b.layers[1].weight
    want = (ha @ wa.T + hb @ wb.T - hb @ wa.T - ha @ wb.T).norm() / (
        ha @ wa.T + hb @ wb.T
    ).norm()
    assert C.commutativity_residual(a, b, X)[0] == pytest.approx(
        float(want), rel=1e-4
    )


@pytest.mark.reference
def test_commutativity_residual_every_layer_against_numpy_and_symmetric():
    a, b = net_ref(54, depth=3), net_ref(55, depth=3)
    fa, fb = np_features(a, X_ref)[:-1], np_features(b, X_ref)[:-1]
    wa, wb = npw(a)[0], npw(b)[0]
    want = []
    for l in range(3):
        A, B = wa[l + 1], wb[l + 1]
        same = fa[l] @ A.T + fb[l] @ B.T
        cross = fb[l] @ A.T + fa[l] @ B.T
        want.append(np.linalg.norm(same - cross) / np.linalg.norm(same))
    got = C.commutativity_residual(a, b, X_ref)
    np.testing.assert_allclose(got, want, rtol=1e-4)
    np.testing.assert_allclose(C.commutativity_residual(b, a, X_ref), got, rtol=1e-5)


# =================================================================================================
# connectivity.commutativity_bound_ratio
# =================================================================================================
def test_commutativity_bound_ratio_known_answers():
    a, b = net(0), net(1)
    r = C.commutativity_bound_ratio(a, b, X)
    assert len(r) == 3 and all(0.0 <= v <= 1.0 + 1e-6 for v in r)
    assert C.commutativity_bound_ratio(a, a, X) == [
        0.0,
        0.0,
        0.0,
    ]  # no difference: 0/0 -> 0
    # residual / bound reproduces the residual of commutativity_residual up to the norms
    res = C.commutativity_residual(a, b, X)
    with torch.no_grad():
        fa, fb = a.features(X)[:-1], b.features(X)[:-1]
    for l in range(3):
        dw = (a.layers[l + 1].weight - b.layers[l + 1].weight).detach()
        same = (
            fa[l] @ a.layers[l + 1].weight.detach().T
            + fb[l] @ b.layers[l + 1].weight.detach().T
        )
        bound = torch.linalg.matrix_norm(dw, ord=2) * (fa[l] - fb[l]).norm()
        assert r[l] == pytest.approx(float(res[l] * same.norm() / bound), rel=1e-4)
    # permuting both networks the same way changes nothing
    p = C.random_perms(a, seed=3)
    assert C.commutativity_bound_ratio(
        C.permute(a, p), C.permute(b, p), X
    ) == pytest.approx(r, rel=1e-4)


def test_commutativity_bound_ratio_is_one_for_a_rank_one_case():
    # one hidden layer; the two nets differ in one output weight of one unit only, and the
    # feature difference lies in that unit: the residual equals its bound
    a = make_mlp(0, 6, 4, 1, 3)
    b = make_mlp(0, 6, 4, 1, 3)
    with torch.no_grad():
        b.layers[0].weight[1] += 1.0
        b.layers[1].weight[:, 1] += 1.0
    assert C.commutativity_bound_ratio(a, b, X)[0] == pytest.approx(1.0, abs=1e-5)


# =================================================================================================
# connectivity.logit_interpolation
# =================================================================================================
def test_logit_interpolation_obeys_its_bound():
    for s in range(3):
        a, b = net(s), net(s + 10)
        r = C.logit_interpolation(a, b, X, Y, 7)
        assert r["lerp_error"] <= r["bound"] + 1e-9
        assert r["bound"] == pytest.approx(r["err_a"] + r["err_b"])
    a = net(0)
    r = C.logit_interpolation(
        a, a, X, Y, 5
    )  # a pair of copies: the path is one network
    assert r["path_error"] == r["lerp_error"] == pytest.approx(r["err_a"])
    assert r["bound"] == pytest.approx(2 * r["err_a"])


# =================================================================================================
# connectivity.endpoint_dissimilarity
# =================================================================================================
@pytest.mark.reference
def test_endpoint_dissimilarity_against_numpy():
    a, b = net_ref(56, depth=2, act="tanh"), net_ref(57, depth=2, act="tanh")
    want = [
        np_cos_dis(u, v)
        for u, v in zip(np_features(a, X_ref), np_features(b, X_ref))
    ]
    np.testing.assert_allclose(
        C.endpoint_dissimilarity(a, b, X_ref), want, rtol=1e-4, atol=1e-6
    )


# =================================================================================================
# connectivity.preactivations
# =================================================================================================
def test_repair_keeps_endpoints_and_matches_target_statistics():
    a, b = net(0), net(1)
    stk = C.repair_stack(a, b, [0.0, 0.5, 1.0], X)
    out = stk(X)
    assert torch.allclose(out[0], a(X), atol=1e-4) and torch.allclose(
        out[2], b(X), atol=1e-4
    )
    mid = stk.member(1)
    z = C.preactivations(mid, X)
    za, zb = C.preactivations(a, X), C.preactivations(b, X)
    for l in range(3):
        live = (za[l].std(0) + zb[l].std(0)) > 1e-3
        assert torch.allclose(
            z[l].mean(0), (za[l].mean(0) + zb[l].mean(0)) / 2, atol=1e-4
        )
        assert torch.allclose(
            z[l].std(0)[live],
            ((za[l].std(0) + zb[l].std(0)) / 2)[live],
            rtol=1e-3,
            atol=1e-4,
        )
    with pytest.raises(ValueError, match="biases"):
        C.repair_stack(net(bias=False), net(1, bias=False), [0.5], X)


@pytest.mark.reference
@pytest.mark.parametrize("act", ["relu", "tanh"])
def test_preactivations_against_numpy(act):
    m = net_ref(58, depth=3, act=act)
    ws, bs = npw(m)
    pre, _, _ = np_forward(ws, bs, X_ref.double().numpy(), act)
    got = C.preactivations(m, X_ref)
    assert len(got) == 3
    for g, w in zip(got, pre):
        np.testing.assert_allclose(g.double().numpy(), w, rtol=1e-5, atol=1e-5)


# =================================================================================================
# connectivity.weak_additivity
# =================================================================================================
def test_endpoint_dissimilarity_and_weak_additivity():
    m = net()
    assert max(C.endpoint_dissimilarity(m, m, X)) < 1e-6
    assert max(C.weak_additivity(m, m, X)) < 1e-6  # relu(2z) = 2 relu(z)
    a, b = net(0), net(1)
    za, zb = C.preactivations(a, X)[0], C.preactivations(b, X)[0]
    want = C.cosine_dissimilarity(
        torch.relu(za) + torch.relu(zb), torch.relu(za + zb)
    )
    assert C.weak_additivity(a, b, X)[0] == pytest.approx(want)
    assert C.weak_additivity(a, b, X)[0] > 0.01


@pytest.mark.reference
@pytest.mark.parametrize("act", ["relu", "leaky_relu"])
def test_weak_additivity_against_numpy(act):
    a, b = net_ref(60, depth=2, act=act), net_ref(61, depth=2, act=act)
    za = np_forward(*npw(a), X_ref.double().numpy(), act)[0]
    zb = np_forward(*npw(b), X_ref.double().numpy(), act)[0]
    s = ACT[act]
    want = [np_cos_dis(s(u) + s(v), s(u + v)) for u, v in zip(za, zb)]
    got = C.weak_additivity(a, b, X_ref)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert min(got) > 1e-3
    np.testing.assert_allclose(C.weak_additivity(b, a, X_ref), got, rtol=1e-5)


def test_logit_interpolation_exact_bound():
    a, b = net_ref(78, depth=2), net_ref(79, depth=2)
    x, y = data(n=60, seed=7)
    r = C.logit_interpolation(a, b, x, y, 11)
    wa, wb = a(x).argmax(-1) != y, b(x).argmax(-1) != y
    assert r["either_wrong"] == pytest.approx(float((wa | wb).float().mean()))
    assert max(r["err_a"], r["err_b"]) <= r["either_wrong"] <= r["bound"] + 1e-12
    assert r["lerp_error"] <= r["either_wrong"] + 1e-12
