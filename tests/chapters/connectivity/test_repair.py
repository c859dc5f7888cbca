"""Tests of gtlib.connectivity.repair, one section per public function."""

from __future__ import annotations
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from gtlib import connectivity as C
from tests.chapters.connectivity.helpers import (
    D,
    data,
    net,
    net_ref,
    np_forward,
    npw,
    ref_factor,
    ref_path,
    same_params,
    X,
    X_ref,
    Y_ref,
)


def ref_fit_bezier(a, b, x, y, r, seed, samples):
    """The control point by hand: torch.optim.SGD on the curve's loss, draws from one generator."""
    (wa, ba), (wb, bb) = npw(a), npw(b)
    pa = [torch.tensor(v) for v in wa], [torch.tensor(v) for v in ba]
    pb = [torch.tensor(v) for v in wb], [torch.tensor(v) for v in bb]
    pm = (
        [((u + v) / 2).clone().requires_grad_(True) for u, v in zip(pa[0], pb[0])],
        [((u + v) / 2).clone().requires_grad_(True) for u, v in zip(pa[1], pb[1])],
    )
    opt = torch.optim.SGD(
        pm[0] + pm[1], lr=r.lr, momentum=r.momentum, weight_decay=r.weight_decay
    )
    g = torch.Generator().manual_seed(seed)
    n = x.shape[0]
    total, per_epoch = r.steps(n), -(-n // r.batch_size)
    xd = x.double()
    for step in range(total):
        pos = step % per_epoch
        if pos == 0:
            order = torch.randperm(n, generator=g)
        idx = order[pos * r.batch_size : (pos + 1) * r.batch_size]
        ts = torch.rand(samples, generator=g).double()
        loss = 0.0
        for t in ts:
            h = xd[idx]
            for l in range(len(pa[0])):
                w = (
                    (1 - t) ** 2 * pa[0][l]
                    + 2 * t * (1 - t) * pm[0][l]
                    + t**2 * pb[0][l]
                )
                c = (
                    (1 - t) ** 2 * pa[1][l]
                    + 2 * t * (1 - t) * pm[1][l]
                    + t**2 * pb[1][l]
                )
                h = h @ w.T + c
                if l < len(pa[0]) - 1:
                    h = torch.relu(h)
            loss = loss + F.cross_entropy(h, y[idx])
        for gr in opt.param_groups:
            gr["lr"] = r.lr * ref_factor(r, step, total)
        opt.zero_grad()
        (loss / samples).backward()
        opt.step()
    return [w.detach().numpy() for w in pm[0]], [v.detach().numpy() for v in pm[1]]


# =================================================================================================
# connectivity.repair_stack
# =================================================================================================
def test_repair_stats_b_default_and_null():
    a, b = net(0), net(1)
    al = [0.0, 0.5, 1.0]
    plain = C.repair_stack(a, b, al, X)
    same = C.repair_stack(a, b, al, X, stats_b=b)
    assert all(torch.equal(u, v) for u, v in zip(plain.weights, same.weights))
    # a permuted copy of b as stats_b: b's statistics go to the wrong units, a's stay
    shuffled = C.repair_stack(
        a, b, al, X, stats_b=C.permute(b, C.random_perms(b, seed=4))
    )
    assert torch.allclose(
        shuffled.weights[0][0], plain.weights[0][0]
    )  # alpha = 0: a alone
    assert not torch.allclose(shuffled.weights[0][1], plain.weights[0][1])
    with pytest.raises(ValueError, match="stats_b"):
        C.repair_stack(a, b, al, X, stats_b=net(2, width=8))


def test_repair_path_reuses_its_statistics_pass():
    # statistics on the evaluation inputs: the repair's own forward pass gives the path,
    # the same as evaluating the repaired stack afresh (and with other statistics inputs)
    a, b = net(0), net(1)
    y = torch.arange(len(X)) % a.layers[-1].weight.shape[0]
    for mode in ("full", "mean", "layer"):
        for xs in (X, X.clone(), X[: len(X) // 2]):
            got = C.repair_path(a, b, xs, X, y, [0.0, 0.3, 1.0], mode=mode)
            ref = C.evaluate_stack(
                C.repair_stack(a, b, [0.0, 0.3, 1.0], xs, mode=mode),
                [0.0, 0.3, 1.0],
                X,
                y,
            )
            assert np.allclose(got.loss, ref.loss, atol=1e-5)
            assert np.allclose(got.acc, ref.acc)


def _repair_case(seed_a, seed_b, data_seed):
    """Two depth-2 reference networks, 40 inputs and each network's pre-activations on them."""
    a, b = net_ref(seed_a, depth=2), net_ref(seed_b, depth=2)
    x, _ = data(n=40, seed=data_seed)
    za = np_forward(*npw(a), x.double().numpy())[0]
    zb = np_forward(*npw(b), x.double().numpy())[0]
    return a, b, x, za, zb


@pytest.mark.reference
def test_repair_modes_mean_only_and_per_layer():
    a, b, x, za, zb = _repair_case(74, 75, data_seed=5)
    al = [0.0, 0.4, 1.0]
    full = C.repair_stack(a, b, al, x)
    for mode in ("mean", "layer"):
        s = C.repair_stack(a, b, al, x, mode=mode)
        for i, t in enumerate(al):
            m, lin = s.member(i), npw(C.lerp(a, b, t))[0]
            zm = np_forward(*npw(m), x.double().numpy())[0]
            mu_t = (1 - t) * za[0].mean(0) + t * zb[0].mean(0)
            np.testing.assert_allclose(zm[0].mean(0), mu_t, atol=2e-5)  # means reset
            ratio = (
                npw(m)[0][0] / lin[0]
            )  # first layer: one factor (mean) or one per layer
            np.testing.assert_allclose(
                ratio, ratio[0, 0] * np.ones_like(ratio), rtol=1e-4
            )
            if mode == "mean":
                np.testing.assert_allclose(ratio, 1.0, rtol=1e-5)
            else:  # the layer's mean deviation is the mean target deviation
                sd_t = (1 - t) * za[0].std(0, ddof=1) + t * zb[0].std(0, ddof=1)
                assert zm[0].std(0, ddof=1).mean() == pytest.approx(
                    sd_t.mean(), rel=1e-4
                )
    assert not torch.allclose(full.weights[0][1], s.weights[0][1])
    with pytest.raises(ValueError, match="mode"):
        C.repair_stack(a, b, al, x, mode="unit")


@pytest.mark.reference
def test_repair_stack_statistics_and_folding():
    a, b, x, za, zb = _repair_case(70, 71, data_seed=3)
    al = [0.0, 0.3, 1.0]
    s = C.repair_stack(a, b, al, x)
    for i, t in enumerate(al):
        m = s.member(i)
        zm = np_forward(*npw(m), x.double().numpy())[0]
        lin = npw(C.lerp(a, b, t))[0]
        for l in range(2):
            mu_t = (1 - t) * za[l].mean(0) + t * zb[l].mean(0)
            sd_t = (1 - t) * za[l].std(0, ddof=1) + t * zb[l].std(0, ddof=1)
            np.testing.assert_allclose(zm[l].mean(0), mu_t, atol=2e-5)
            np.testing.assert_allclose(
                zm[l].std(0, ddof=1), sd_t, rtol=2e-4, atol=1e-5
            )
            if (
                l == 0
            ):  # the first layer's rows are the interpolated rows times sd_t / sd
                ratio = npw(m)[0][0] / lin[0]
                np.testing.assert_allclose(
                    ratio, ratio[:, :1] * np.ones((1, D)), rtol=1e-4
                )
                assert (ratio > 0).all()
        np.testing.assert_allclose(
            npw(m)[0][-1], lin[-1], rtol=1e-6, atol=1e-7
        )  # head as is
    # the endpoints are the networks themselves
    torch.testing.assert_close(s(x)[0], a(x), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(s(x)[2], b(x), atol=1e-4, rtol=1e-4)


@pytest.mark.reference
def test_repair_eps_leaves_flat_units_unscaled_but_shifted():
    a, b = net_ref(72, depth=1), net_ref(73, depth=1)
    with (
        torch.no_grad()
    ):  # unit 2 of both networks ignores the input: constant pre-activation
        a.layers[0].weight[2] = 0
        b.layers[0].weight[2] = 0
    x, _ = data(n=30, seed=4)
    m = C.repair_stack(a, b, [0.3], x).member(0)
    lin = C.lerp(a, b, 0.3)
    (wm, bm), (wl, bl), (_, ba), (_, bb) = npw(m), npw(lin), npw(a), npw(b)
    assert np.all(wm[0][2] == 0)
    assert bm[0][2] == pytest.approx(0.7 * ba[0][2] + 0.3 * bb[0][2], abs=1e-6)
    # with a huge eps no unit is rescaled: weights are the interpolated ones, biases shifted
    big = C.repair_stack(a, b, [0.3], x, eps=1e6).member(0)
    np.testing.assert_allclose(npw(big)[0][0], wl[0], rtol=1e-6, atol=1e-7)
    za = np_forward(*npw(a), x.double().numpy())[0][0]
    zb = np_forward(*npw(b), x.double().numpy())[0][0]
    zl = np_forward(wl, bl, x.double().numpy())[0][0]
    want_b = bl[0] - zl.mean(0) + 0.7 * za.mean(0) + 0.3 * zb.mean(0)
    np.testing.assert_allclose(npw(big)[1][0], want_b, atol=2e-5)
    assert not np.allclose(
        npw(C.repair_stack(a, b, [0.3], x).member(0))[0][0], wl[0]
    )


# =================================================================================================
# connectivity.repair_path
# =================================================================================================
@pytest.mark.reference
def test_repair_path_takes_statistics_on_x_stats_and_evaluates_on_x():
    a, b = net_ref(74, depth=2), net_ref(75, depth=2)
    xs, _ = data(n=40, seed=6, shift=0.5)
    al = [0.0, 0.4, 1.0]
    p = C.repair_path(a, b, xs, X_ref, Y_ref, al)
    want = C.evaluate_stack(C.repair_stack(a, b, al, xs), al, X_ref, Y_ref)
    np.testing.assert_allclose(p.loss, want.loss, rtol=1e-6)
    np.testing.assert_allclose(p.acc, want.acc)
    other = C.repair_path(a, b, X_ref, X_ref, Y_ref, al)
    assert not np.allclose(other.loss[1], p.loss[1], rtol=1e-4)
    assert len(C.repair_path(a, b, xs, X_ref, Y_ref).alphas) == 25


# =================================================================================================
# connectivity.bezier_stack
# =================================================================================================
@pytest.mark.reference
def test_bezier_stack_by_hand_and_reversal():
    a, m, b = net_ref(80), net_ref(81), net_ref(82)
    s = C.bezier_stack(a, m, b, [0.0, 0.3, 1.0])
    (wa, ba), (wm, bm), (wb, bb) = npw(a), npw(m), npw(b)
    got = npw(s.member(1))
    for l in range(3):  # (1 - t)^2, 2 t (1 - t), t^2 = 0.49, 0.42, 0.09
        np.testing.assert_allclose(
            got[0][l],
            0.49 * wa[l] + 0.42 * wm[l] + 0.09 * wb[l],
            rtol=1e-5,
            atol=1e-6,
        )
        np.testing.assert_allclose(
            got[1][l],
            0.49 * ba[l] + 0.42 * bm[l] + 0.09 * bb[l],
            rtol=1e-5,
            atol=1e-6,
        )
    same_params(s.member(0), a, atol=1e-7)
    same_params(s.member(2), b, atol=1e-7)
    same_params(C.bezier_stack(b, m, a, [0.7]).member(0), s.member(1), atol=1e-6)
    nb = C.bezier_stack(
        net_ref(0, bias=False), net_ref(1, bias=False), net_ref(2, bias=False), [0.6]
    )
    want = (
        0.16 * npw(net_ref(0, bias=False))[0][0]
        + 0.48 * npw(net_ref(1, bias=False))[0][0]
        + 0.36 * npw(net_ref(2, bias=False))[0][0]
    )
    np.testing.assert_allclose(npw(nb.member(0))[0][0], want, rtol=1e-5, atol=1e-6)


# =================================================================================================
# connectivity.fit_bezier
# =================================================================================================
@pytest.mark.reference
def test_fit_bezier_against_a_hand_written_sgd_loop():
    a, b = net_ref(90, depth=1), net_ref(91, depth=1)
    x, y = data(n=13, seed=7)
    r = C.Recipe(
        lr=0.3,
        momentum=0.6,
        batch_size=5,
        epochs=2,
        warmup=0.35,
        start_factor=0.25,
        weight_decay=0.03,
    )
    m = C.fit_bezier(a, b, x, y, r, seed=4, samples=3)
    ws, bs = ref_fit_bezier(a, b, x, y, r, 4, 3)
    for l in range(2):
        np.testing.assert_allclose(npw(m)[0][l], ws[l], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(npw(m)[1][l], bs[l], rtol=1e-4, atol=1e-5)
    mid = npw(C.lerp(a, b, 0.5))[0][0]
    assert np.abs(npw(m)[0][0] - mid).max() > 1e-3
    # the default draws 4 values of t per step
    same_params(
        C.fit_bezier(a, b, x, y, r, seed=4),
        C.fit_bezier(a, b, x, y, r, seed=4, samples=4),
    )
    assert not torch.equal(
        C.fit_bezier(a, b, x, y, r, seed=5, samples=3).layers[0].weight,
        m.layers[0].weight,
    )


# =================================================================================================
# connectivity.evaluate_bezier
# =================================================================================================
@pytest.mark.reference
def test_evaluate_bezier_is_the_path_of_the_curve():
    a, m, b = net_ref(80), net_ref(81), net_ref(82)
    p = C.evaluate_bezier(a, m, b, X_ref, Y_ref, [0.0, 0.3, 1.0])
    loss, acc = ref_path(
        [C.bezier_stack(a, m, b, [t]).member(0) for t in (0.0, 0.3, 1.0)],
        X_ref,
        Y_ref,
    )
    np.testing.assert_allclose(p.loss, loss, rtol=1e-5)
    np.testing.assert_allclose(p.acc, acc)
    assert len(C.evaluate_bezier(a, m, b, X_ref, Y_ref).alphas) == 25


def test_repair_norm_mode_is_data_free_and_sets_row_norms():
    def rows(w, v):
        return torch.cat([w, v.unsqueeze(-1)], -1).norm(dim=-1)

    a, b, x, _, _ = _repair_case(76, 77, data_seed=6)
    al = [0.0, 0.5, 1.0]
    s = C.repair_stack(a, b, al, x, mode="norm")
    other = C.repair_stack(
        a, b, al, 3 * x + 1, mode="norm"
    )  # no statistics read from x
    for u, v in zip([*s.weights, *s.biases], [*other.weights, *other.biases]):
        torch.testing.assert_close(u, v)
    (wa, ba), (wb, bb) = C.params(a), C.params(b)
    lin = C.path_stack(a, b, al)
    for l in range(
        len(wa) - 1
    ):  # hidden layers: norms interpolated, directions kept
        for i, t in enumerate(al):
            want = (1 - t) * rows(wa[l], ba[l]) + t * rows(wb[l], bb[l])
            torch.testing.assert_close(rows(s.weights[l][i], s.biases[l][i]), want)
            k = s.weights[l][i][:, 0] / lin.weights[l][i][:, 0]
            torch.testing.assert_close(
                s.weights[l][i], k[:, None] * lin.weights[l][i]
            )
    torch.testing.assert_close(
        s.weights[-1], lin.weights[-1]
    )  # logits layer untouched
    for i, t in ((0, 0.0), (2, 1.0)):  # the endpoints stay as they are
        end = a if t == 0.0 else b
        torch.testing.assert_close(s.member(i)(x), end(x), atol=1e-5, rtol=1e-5)
    p = C.repair_path(
        a, b, x, x, torch.zeros(len(x), dtype=torch.long), al, mode="norm"
    )
    q = C.evaluate_stack(s, al, x, torch.zeros(len(x), dtype=torch.long))
    np.testing.assert_allclose(p.loss, q.loss, rtol=1e-5)
