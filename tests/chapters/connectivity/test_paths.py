"""Tests of gtlib.connectivity.paths, one section per public function."""

from __future__ import annotations
import numpy as np
import pytest
import torch
from gtlib import connectivity as C
from gtlib.models import BatchedMLP
from tests.chapters.connectivity.helpers import (
    net,
    net_ref,
    npw,
    ref_path,
    same_params,
    X,
    X_ref,
    Y,
    Y_ref,
)


# =================================================================================================
# connectivity.lerp
# =================================================================================================
def test_path_endpoints_are_the_networks():
    a, b = net(0), net(1)
    stack = C.path_stack(a, b, [0.0, 0.25, 1.0])
    out = stack(X)
    assert torch.allclose(out[0], a(X), atol=1e-5) and torch.allclose(
        out[2], b(X), atol=1e-5
    )
    assert torch.allclose(out[1], C.lerp(a, b, 0.25)(X), atol=1e-5)


def test_bad_inputs_raise():
    a = net()
    with pytest.raises(TypeError, match="a must be"):
        C.lerp("net", a, 0.5)
    with pytest.raises(ValueError, match="same layer shapes"):
        C.weight_matching(a, net(width=8))
    with pytest.raises(ValueError, match="perms"):
        C.permute(a, [np.arange(16)])
    with pytest.raises(ValueError, match=r"perms\[0\]"):
        C.permute(a, [np.zeros(16, int)] * 3)
    with pytest.raises(ValueError, match="max_iter"):
        C.weight_matching(a, a, max_iter=0)
    with pytest.raises(ValueError, match="alphas"):
        C.barrier([0.2, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="alphas"):
        C.evaluate_path(a, a, X, Y, 1)
    with pytest.raises(ValueError, match="alpha"):
        C.lerp(a, a, float("nan"))
    with pytest.raises(ValueError, match="u and v"):
        C.cosine_dissimilarity(torch.zeros(2, 3), torch.zeros(3, 2))
    with pytest.raises(ValueError, match="lr"):
        C.Recipe(lr=0).validate()
    with pytest.raises(ValueError, match="widths"):
        C.ConnectivityConfig(widths=(64, 32)).validate()
    with pytest.raises(ValueError, match="seeds"):
        C.fit(BatchedMLP.init([0], 6, 4, 1, 2), X, Y % 2, C.Recipe(), seeds=[1, 2])
    with pytest.raises(ValueError, match="task"):
        C.task_labels(Y, 2)
    with pytest.raises(TypeError, match="y must be"):
        C.task_labels(X[:, 0], 0)
    with pytest.raises(TypeError, match="model must be a BatchedMLP"):
        C.fit(a, X, Y, C.Recipe(), seeds=[0])


def test_bezier_curve_endpoints_and_straight_line_case():
    a, b = net(0), net(1)
    mid = C.lerp(a, b, 0.5)
    ts = [0.0, 0.3, 1.0]
    out = C.bezier_stack(a, mid, b, ts)(X)
    assert torch.allclose(out[0], a(X), atol=1e-5) and torch.allclose(
        out[2], b(X), atol=1e-5
    )
    assert torch.allclose(
        out[1], C.lerp(a, b, 0.3)(X), atol=1e-5
    )  # midpoint control = line
    x = torch.randn(64, 6)
    y = (x[:, 0] > 0).long()
    a2, b2 = C.train_nets(
        [0, 1], x, y, 8, 1, 2, C.Recipe(lr=0.1, epochs=3, batch_size=16)
    )
    m = C.fit_bezier(
        a2, b2, x, y, C.Recipe(lr=0.05, epochs=2, batch_size=16), seed=0
    )
    assert not torch.equal(m.layers[0].weight, C.lerp(a2, b2, 0.5).layers[0].weight)
    p = C.evaluate_bezier(a2, m, b2, x, y, 5)
    assert len(p.loss) == 5 and np.all(np.isfinite(p.loss))
    with pytest.raises(ValueError, match="samples"):
        C.fit_bezier(a2, b2, x, y, C.Recipe(), samples=0)


@pytest.mark.reference
def test_lerp_weights_by_hand_and_symmetry():
    a, b = net_ref(0, act="tanh"), net_ref(1, act="tanh")
    m = C.lerp(a, b, 0.3)
    (wa, ba), (wb, bb), (wm, bm) = npw(a), npw(b), npw(m)
    for l in range(3):
        np.testing.assert_allclose(
            wm[l], 0.7 * wa[l] + 0.3 * wb[l], rtol=1e-6, atol=1e-7
        )
        np.testing.assert_allclose(
            bm[l], 0.7 * ba[l] + 0.3 * bb[l], rtol=1e-6, atol=1e-7
        )
    assert m.act_name == "tanh"
    same_params(C.lerp(b, a, 0.7), m, atol=1e-7)
    same_params(C.lerp(a, b, 0.0), a)
    nb = C.lerp(net_ref(0, bias=False), net_ref(1, bias=False), 0.8)
    np.testing.assert_allclose(
        npw(nb)[0][1],
        0.2 * npw(net_ref(0, bias=False))[0][1]
        + 0.8 * npw(net_ref(1, bias=False))[0][1],
        rtol=1e-6,
        atol=1e-7,
    )


# =================================================================================================
# connectivity.path_stack
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize("bias", [True, False])
def test_path_stack_members_are_the_lerps(bias):
    a, b = net_ref(0, bias=bias), net_ref(1, bias=bias)
    al = [0.0, 0.2, 0.7, 1.0]
    s = C.path_stack(a, b, al)
    for i, alpha in enumerate(al):
        same_params(s.member(i), C.lerp(a, b, alpha), atol=1e-6)


# =================================================================================================
# connectivity.Path
# =================================================================================================
@pytest.mark.reference
def test_path_properties_by_hand():
    p = C.Path(
        np.array([0.0, 0.1, 0.3, 0.55, 1.0]),
        np.array([1.0, 2.0, 3.0, 1.5, 2.0]),
        np.array([0.9, 0.5, 0.4, 0.6, 0.7]),
    )
    assert p.loss_barrier == pytest.approx(3.0 - (0.7 * 1 + 0.3 * 2))
    # error 0.1, 0.5, 0.6, 0.4, 0.3; chord 0.1 + 0.2 alpha = 0.1, 0.12, 0.16, 0.21, 0.3
    assert p.error_barrier == pytest.approx(0.6 - 0.16)
    assert p.error_barrier_mean == pytest.approx(0.6 - 0.2)
    assert p.mid_acc == pytest.approx(
        0.6
    )  # alpha 0.55 is closest to 0.5 (not the middle)
    assert p.end_acc == pytest.approx(0.8)
    with pytest.raises(ValueError):
        C.Path(np.zeros(3), np.zeros(3), np.zeros(2))


# =================================================================================================
# connectivity.barrier
# =================================================================================================
def test_barrier_closed_forms():
    a = np.linspace(0, 1, 5)
    assert C.barrier(a, 1 + a) == 0.0  # a line has no barrier
    assert C.barrier(a, a * (1 - a)) == pytest.approx(0.25)  # a bump of height 1/4
    assert C.barrier(a, (a - 0.5) ** 2) == pytest.approx(
        0.0
    )  # convex: at most the chord
    assert C.barrier(a, -a * (1 - a)) == pytest.approx(0.0)


@pytest.mark.reference
def test_barrier_and_barrier_mean_by_hand_on_a_nonuniform_grid():
    al = [0.0, 0.25, 0.5, 1.0]
    v = [1.0, 1.2, 2.9, 3.0]  # chord 1, 1.5, 2, 3: rises 0, -0.3, 0.9, 0
    assert C.barrier(al, v) == pytest.approx(0.9)
    assert C.barrier_mean(al, v) == pytest.approx(1.0)  # 3 - (1 + 3) / 2
    v = [1.0, 4.0, 2.0, 3.0]  # chord 1, 1.5, 2, 3
    assert C.barrier(al, v) == pytest.approx(2.5)
    assert C.barrier_mean(al, v) == pytest.approx(2.0)
    # reversing the curve: the same barrier
    assert C.barrier([0, 0.5, 0.75, 1.0], v[::-1]) == pytest.approx(2.5)
    # a curve strictly under its chord: the endpoints give 0
    assert C.barrier([0, 0.4, 1], [2.0, 0.0, 1.0]) == pytest.approx(0.0)
    assert C.barrier_mean([0, 0.4, 1], [2.0, 0.0, 1.0]) == pytest.approx(0.5)
    for bad in (
        [0.1, 0.5, 1.0],
        [0.0, 0.5, 0.9],
        [0.0, 0.6, 0.6, 1.0],
        [0.0, 0.7, 0.3, 1.0],
    ):
        with pytest.raises(ValueError):
            C.barrier(bad, [1.0] * len(bad))
        with pytest.raises(ValueError):
            C.barrier_mean(bad, [1.0] * len(bad))
    with pytest.raises(ValueError):
        C.barrier([0.0], [1.0])
    assert (
        C.barrier([0.0, 1.0], [1.0, 5.0]) == 0.0
    )  # two points: nothing above the chord


# =================================================================================================
# connectivity.barrier_mean
# =================================================================================================
def test_barrier_mean_closed_forms():
    a = np.linspace(0, 1, 5)
    assert C.barrier_mean(a, 1 + a) == pytest.approx(0.5)  # max 2 minus mean 1.5
    assert C.barrier_mean(a, a * (1 - a)) == pytest.approx(0.25)
    v = 0.3 + a * (1 - a)  # equal endpoints: both forms agree
    assert C.barrier_mean(a, v) == pytest.approx(C.barrier(a, v))
    with pytest.raises(ValueError, match="alphas"):
        C.barrier_mean([0.0, 0.5], [1.0, 2.0])


# =================================================================================================
# connectivity.evaluate_path
# =================================================================================================
def test_barrier_of_a_net_with_itself_is_zero():
    m = net()
    p = C.evaluate_path(m, m, X, Y, 9)
    assert abs(p.loss_barrier) < 1e-6 and abs(p.error_barrier) < 1e-9
    assert np.allclose(p.loss, p.loss[0], atol=1e-6)


@pytest.mark.reference
def test_evaluate_path_against_a_numpy_cross_entropy():
    a, b = net_ref(0), net_ref(1)
    al = [0.0, 0.3, 0.55, 1.0]
    p = C.evaluate_path(a, b, X_ref, Y_ref, al)
    loss, acc = ref_path([C.lerp(a, b, t) for t in al], X_ref, Y_ref)
    np.testing.assert_allclose(p.loss, loss, rtol=1e-5)
    np.testing.assert_allclose(p.acc, acc, atol=1e-7)
    np.testing.assert_allclose(p.alphas, al)
    p5 = C.evaluate_path(a, b, X_ref, Y_ref, 5)
    np.testing.assert_allclose(p5.alphas, [0, 0.25, 0.5, 0.75, 1])
    loss, _ = ref_path([C.lerp(a, b, t) for t in p5.alphas], X_ref, Y_ref)
    np.testing.assert_allclose(p5.loss, loss, rtol=1e-5)
    assert (
        len(C.evaluate_path(a, b, X_ref, Y_ref).alphas) == 25
    )  # Git Re-Basin's 25 points


@pytest.mark.reference
def test_barrier_vs_epoch_labels_order_and_paths():
    nets = {6: [net_ref(110), net_ref(111)], 0: [net_ref(112), net_ref(113)]}
    pts = C.barrier_vs_epoch(nets, 4, X_ref, Y_ref, alphas=5, max_iter=3, seed=1)
    assert [p.label for p in pts] == [0.0, 1.5]
    a, b = nets[6]
    bm = C.permute(b, C.weight_matching(a, b, max_iter=3, seed=1))
    np.testing.assert_allclose(
        pts[1].naive.loss, C.evaluate_path(a, b, X_ref, Y_ref, 5).loss, rtol=1e-6
    )
    np.testing.assert_allclose(
        pts[1].matched.loss, C.evaluate_path(a, bm, X_ref, Y_ref, 5).loss, rtol=1e-6
    )


# =================================================================================================
# connectivity.evaluate_stack
# =================================================================================================
@pytest.mark.reference
def test_evaluate_stack_reads_member_i_at_alpha_i():
    nets = [net_ref(s) for s in (3, 4, 5)]
    p = C.evaluate_stack(C.stack(nets), [0.0, 0.6, 1.0], X_ref, Y_ref)
    loss, acc = ref_path(nets, X_ref, Y_ref)
    np.testing.assert_allclose(p.loss, loss, rtol=1e-5)
    np.testing.assert_allclose(p.acc, acc, atol=1e-7)
    with pytest.raises(ValueError):
        C.evaluate_stack(C.stack(nets), [0.0, 1.0], X_ref, Y_ref)
