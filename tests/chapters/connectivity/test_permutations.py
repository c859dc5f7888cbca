"""Tests of gtlib.connectivity.permutations, one section per public function."""

from __future__ import annotations
import itertools
import numpy as np
import pytest
import torch
from scipy.optimize import linear_sum_assignment
from gtlib import connectivity as C
from gtlib.models import make_mlp
from gtlib.connectivity.experiments import _seeds
from tests.chapters.connectivity.helpers import (
    data,
    K,
    net,
    net_ref,
    np_features,
    npw,
    tiny_cfg,
    W,
    X,
    X_ref,
    Y_ref,
)


def objective(wa, ba, wb, bb, perms):
    """Git Re-Basin's weight-matching objective of b permuted by ``perms`` (numpy, by hand)."""
    total = 0.0
    L = len(perms)
    for l in range(L + 1):
        w = wb[l]
        if l < L:
            w = w[perms[l]]
        if l > 0:
            w = w[:, perms[l - 1]]
        total += float((wa[l] * w).sum())
        if ba is not None:
            bv = bb[l][perms[l]] if l < L else bb[l]
            total += float(ba[l] @ bv)
    return total


ALL5 = [np.array(p) for p in itertools.permutations(range(W))]


def ref_weight_matching(a, b, max_iter, seed):
    """Coordinate descent with each layer's best permutation found by brute force."""
    (wa, ba), (wb, bb) = npw(a), npw(b)
    L = len(wa) - 1
    perms = [np.arange(W) for _ in range(L)]
    rng = np.random.default_rng(seed)
    for _ in range(max_iter):
        improved = False
        for l in rng.permutation(L):

            def score(p):
                return objective(wa, ba, wb, bb, perms[:l] + [p] + perms[l + 1 :])

            best = max(ALL5, key=score)
            if score(best) > score(perms[l]) + 1e-9:
                perms[l], improved = best, True
        if not improved:
            break
    return perms


# =================================================================================================
# connectivity.permute
# =================================================================================================
@pytest.mark.parametrize("bias", [True, False])
def test_permuted_net_computes_same_function(bias):
    m = net(bias=bias)
    p = C.permute(m, C.random_perms(m, seed=3))
    assert torch.allclose(p(X), m(X), atol=1e-5)
    assert not torch.allclose(p.layers[0].weight, m.layers[0].weight)


def test_permute_with_identity_is_a_copy_and_inverse_undoes():
    m = net()
    ident = [np.arange(16)] * 3
    assert all(
        torch.equal(u.weight, v.weight)
        for u, v in zip(C.permute(m, ident).layers, m.layers)
    )
    perms = C.random_perms(m, seed=5)
    back = C.permute(C.permute(m, perms), [np.argsort(p) for p in perms])
    assert all(
        torch.equal(u.weight, v.weight) for u, v in zip(back.layers, m.layers)
    )


def test_weight_matching_does_not_lower_the_objective():
    a, b = net(0), net(1)

    def score(bb):
        return sum(
            float(((u.weight * v.weight).sum() + (u.bias * v.bias).sum()).detach())
            for u, v in zip(a.layers, bb.layers)
        )

    assert score(C.permute(b, C.weight_matching(a, b))) >= score(b) - 1e-6


@pytest.mark.reference
def test_permute_convention_by_hand():
    m = net_ref(2, depth=2)
    p0, p1 = np.array([2, 0, 4, 1, 3]), np.array([1, 3, 0, 4, 2])
    q = C.permute(m, [p0, p1])
    (w, b), (wq, bq) = npw(m), npw(q)
    np.testing.assert_array_equal(wq[0], w[0][p0])  # unit i is old unit p0[i]
    np.testing.assert_array_equal(bq[0], b[0][p0])
    np.testing.assert_array_equal(wq[1], w[1][p1][:, p0])
    np.testing.assert_array_equal(bq[1], b[1][p1])
    np.testing.assert_array_equal(wq[2], w[2][:, p1])
    np.testing.assert_array_equal(bq[2], b[2])
    torch.testing.assert_close(q(X_ref), m(X_ref))
    nb = net_ref(2, bias=False)
    torch.testing.assert_close(C.permute(nb, [p0, p1])(X_ref), nb(X_ref))


@pytest.mark.reference
@pytest.mark.parametrize("noise", [0.0, 0.4])
def test_planted_permutation_check_is_its_composition(noise):
    m = net_ref(13, depth=3, width=W)
    r = C.planted_permutation_check(m, X_ref, Y_ref, seed=3, max_iter=7, noise=noise)
    planted = C.random_perms(m, 3)
    shuffled = C.permute(m, planted)
    if noise:
        shuffled = C.add_noise(shuffled, noise, 4)
    found = C.weight_matching(m, shuffled, max_iter=7, seed=3)
    if (
        noise
    ):  # with noise the matching's seed (the check's seed) changes what it finds
        other = C.weight_matching(m, shuffled, max_iter=7, seed=0)
        assert not all(np.array_equal(u, v) for u, v in zip(found, other))
    assert r["recovered"] == C.perm_recovery(found, planted)
    assert r["recovered_identity"] == C.perm_recovery([np.arange(W)] * 3, planted)
    path = C.evaluate_path(m, C.permute(shuffled, found), X_ref, Y_ref, 11)
    un = C.evaluate_path(m, shuffled, X_ref, Y_ref, 11)
    np.testing.assert_allclose(r["path"].loss, path.loss, rtol=1e-6)
    np.testing.assert_allclose(r["unaligned_path"].loss, un.loss, rtol=1e-6)
    assert r["barrier"] == pytest.approx(path.loss_barrier, abs=1e-7)
    assert r["unaligned_barrier"] == pytest.approx(un.loss_barrier, abs=1e-7)
    assert 0 <= r["max_logit_diff"] < 1e-12
    if not noise:
        assert r["recovered"] == [1.0, 1.0, 1.0]


# =================================================================================================
# connectivity.random_perms
# =================================================================================================
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weight_matching_recovers_planted_permutation(seed):
    m = net(seed=seed, width=24)
    planted = C.random_perms(m, seed=seed + 10)
    found = C.weight_matching(m, C.permute(m, planted))
    assert C.perm_recovery(found, planted) == [1.0, 1.0, 1.0]


def test_activation_matching_recovers_planted_permutation():
    m = make_mlp(
        0, 6, 12, 3, 4, act="tanh"
    )  # no dead units, so no ties between silent units
    planted = C.random_perms(m, seed=4)
    found = C.activation_matching(m, C.permute(m, planted), X)
    assert C.perm_recovery(found, planted) == [1.0, 1.0, 1.0]


@pytest.mark.reference
def test_random_perms_are_numpy_default_rng_permutations():
    m = net_ref(0, depth=3, width=7)
    rng = np.random.default_rng(12)
    want = [rng.permutation(7) for _ in range(3)]
    got = C.random_perms(m, seed=12)
    assert len(got) == 3
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert not all(
        np.array_equal(u, v) for u, v in zip(got, C.random_perms(m, seed=13))
    )
    np.testing.assert_array_equal(
        C.random_perms(m)[0], np.random.default_rng(0).permutation(7)
    )


# =================================================================================================
# connectivity.weight_matching
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize(
    "depth,bias,seed,max_iter",
    [(1, True, 0, 100), (3, True, 0, 100), (3, False, 7, 100), (3, True, 5, 1)],
)
def test_weight_matching_is_coordinate_descent_with_brute_force_layers(
    depth, bias, seed, max_iter
):
    a, b = net_ref(10, depth=depth, bias=bias), net_ref(11, depth=depth, bias=bias)
    got = C.weight_matching(a, b, max_iter=max_iter, seed=seed)
    want = ref_weight_matching(a, b, max_iter, seed)
    assert len(got) == depth
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    (wa, ba), (wb, bb) = npw(a), npw(b)
    # once converged, every layer is at its own optimum given the others (brute force)
    for l in range(depth if max_iter > 1 else 0):
        best = max(
            objective(wa, ba, wb, bb, got[:l] + [p] + got[l + 1 :]) for p in ALL5
        )
        assert objective(wa, ba, wb, bb, got) == pytest.approx(best, rel=1e-12)
    assert objective(wa, ba, wb, bb, got) > objective(
        wa, ba, wb, bb, [np.arange(W)] * depth
    )


@pytest.mark.reference
def test_weight_matching_one_layer_is_the_assignment_of_scipy():
    a, b = net_ref(20, depth=1), net_ref(21, depth=1)
    (wa, ba), (wb, bb) = npw(a), npw(b)
    cost = np.zeros((W, W))
    for i in range(W):
        for j in range(
            W
        ):  # similarity of a's unit i with b's unit j, in and out weights, bias
            cost[i, j] = (
                wa[0][i] @ wb[0][j] + ba[0][i] * bb[0][j] + wa[1][:, i] @ wb[1][:, j]
            )
    want = linear_sum_assignment(-cost)[1]
    np.testing.assert_array_equal(C.weight_matching(a, b)[0], want)


@pytest.mark.reference
def test_weight_matching_max_iter_and_seed_matter_somewhere():
    found_iter = found_seed = False
    for s in range(12):
        a, b = net_ref(30 + s, depth=3), net_ref(60 + s, depth=3)
        one, many = C.weight_matching(a, b, max_iter=1), C.weight_matching(a, b)
        found_iter |= not all(np.array_equal(u, v) for u, v in zip(one, many))
        other = C.weight_matching(a, b, seed=4)
        found_seed |= not all(np.array_equal(u, v) for u, v in zip(other, many))
        if found_iter and found_seed:
            break
    assert found_iter and found_seed


@pytest.mark.reference
def test_depth_sweep_against_its_composition():
    cfg = tiny_cfg(depths=(1, 3), depth_width=5)
    x, y = data(n=20, seed=12)
    pts = C.depth_sweep(cfg, x, y, seed=1)
    assert [p.label for p in pts] == [1, 3]
    for j, dep in enumerate((1, 3)):
        a, b = C.train_nets(_seeds(1, 50 + j, 2), x, y, 5, dep, K, cfg.recipe)
        perms = C.weight_matching(a, b, max_iter=cfg.max_iter, seed=1)
        if (
            dep == 3
        ):  # here the matching's seed (the experiment's) changes the permutations
            other = C.weight_matching(a, b, max_iter=cfg.max_iter, seed=0)
            assert not all(np.array_equal(u, v) for u, v in zip(perms, other))
        bm = C.permute(b, perms)
        np.testing.assert_allclose(
            pts[j].naive.loss, C.evaluate_path(a, b, x, y, 5).loss, rtol=1e-6
        )
        np.testing.assert_allclose(
            pts[j].matched.loss, C.evaluate_path(a, bm, x, y, 5).loss, rtol=1e-6
        )


# =================================================================================================
# connectivity.activation_matching
# =================================================================================================
def test_activation_matching_methods_and_bad_method():
    m = make_mlp(0, 6, 12, 3, 4, act="tanh")
    planted = C.random_perms(m, seed=4)
    found = C.activation_matching(m, C.permute(m, planted), X, method="pearson")
    assert C.perm_recovery(found, planted) == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="method"):
        C.activation_matching(m, m, X, method="cosine")


@pytest.mark.reference
@pytest.mark.parametrize("method", ["cross", "pearson"])
def test_activation_matching_against_brute_force(method):
    a, b = net_ref(40, depth=2, act="tanh"), net_ref(41, depth=2, act="tanh")
    x, _ = data(n=31, shift=1.5)  # inputs far from 0: centring changes the answer
    fa, fb = np_features(a, x)[:-1], np_features(b, x)[:-1]
    got = C.activation_matching(a, b, x, method=method)
    for l in range(2):
        u, v = fa[l], fb[l]
        if method == "pearson":
            sim = np.corrcoef(u.T, v.T)[:W, W:]
        else:
            sim = u.T @ v / len(x)
        best = max(ALL5, key=lambda p: sim[np.arange(W), p].sum())
        np.testing.assert_array_equal(got[l], best)
    assert len(got) == 2


@pytest.mark.reference
def test_activation_matching_methods_disagree_on_shifted_inputs():
    a, b = net_ref(40, depth=2, act="tanh"), net_ref(41, depth=2, act="tanh")
    x, _ = data(n=31, shift=1.5)
    c, p = (
        C.activation_matching(a, b, x),
        C.activation_matching(a, b, x, method="pearson"),
    )
    assert not all(np.array_equal(u, v) for u, v in zip(c, p))


# =================================================================================================
# connectivity.perm_recovery
# =================================================================================================
@pytest.mark.reference
def test_perm_recovery_by_hand():
    assert C.perm_recovery([np.array([1, 2, 0])], [np.array([2, 0, 1])]) == [1.0]
    assert C.perm_recovery([np.array([1, 2, 0])], [np.array([1, 2, 0])]) == [0.0]
    got = C.perm_recovery(
        [np.array([0, 2, 1, 3]), np.arange(3)], [np.arange(4), np.array([0, 2, 1])]
    )
    assert got == [0.5, pytest.approx(1 / 3)]
