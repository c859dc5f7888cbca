"""Tests of gtlib.contamination.metrics, one section per public function."""

import copy
import math
import numpy as np
import pytest
import torch
from gtlib import contamination as fc
from gtlib.contamination import binary_accuracy
from gtlib.contamination.metrics import _binary_loss
from tests.oracles import contamination_loops as ref
from tests.chapters.contamination.helpers import (
    _specs,
    _toy,
    axis_embedding,
    NAN,
    nan_at,
    np_acts,
    np_loss,
    refused,
)


def _weights_with_components(emb, along, rest_scale, seed):
    """Weights (h, d) whose component along the background mean direction is ``along``."""
    g = torch.Generator().manual_seed(seed)
    k = emb.background.shape[1]
    e = torch.ones(k) / math.sqrt(k)
    r = torch.randn(len(along), k, generator=g)
    r = r - (r @ e)[:, None] * e  # orthogonal to e inside the background
    core = torch.randn(len(along), emb.core.shape[1], generator=g)
    return (
        along[:, None] * e + rest_scale * r
    ) @ emb.background.T + core @ emb.core.T


# =================================================================================================
# contamination.metrics._binary_loss
# =================================================================================================
def test_losses_and_accuracy():
    f = torch.tensor([2.0, 0.5, -1.0])
    y = torch.tensor([1.0, 1.0, 1.0])
    assert math.isclose(
        float(_binary_loss("hinge", f, y)), (0 + 0.5 + 2.0) / 3, rel_tol=1e-6
    )
    expect = np.mean(np.log1p(np.exp(-np.array([2.0, 0.5, -1.0]))))
    assert math.isclose(float(_binary_loss("logistic", f, y)), expect, rel_tol=1e-6)
    assert math.isclose(float(fc.binary_accuracy(f, y)), 2 / 3, rel_tol=1e-6)
    assert fc.relative_error(
        torch.ones(2, 2), 2 * torch.ones(2, 2)
    ) == pytest.approx(0.25)


@pytest.mark.boundary
def test_losses_and_accuracy_at_the_boundary(toy):
    f = torch.randn(2, 20)
    for fn in (fc.binary_accuracy,):
        refused(ValueError, "f", fn, nan_at(f), toy.y)
        refused(ValueError, "f", fn, f[:0], toy.y)
        refused(ValueError, "y", fn, f, nan_at(toy.y))
        refused(ValueError, "y", fn, f, toy.y[:0])
        refused(ValueError, "y", fn, f, toy.y[:-1])


@pytest.mark.engine
def test_train_two_layer_in_float64_is_torch_optim_member_by_member():
    # the engine keeps the hyperparameters in the parameters' precision, so in float64 member e is
    # torch.optim.SGD / AdamW run on it alone up to float64 rounding (the stacked matmul sums in
    # another order: measured 2e-16); the old MemberOptimizer, with float32 hyperparameters, was
    # off by far more (lr 0.05 is 0.0500000007 in float32)
    emb, train, _ = _toy()
    emb = fc.Embedding(emb.core.double(), emb.background.double())
    x, y = train.x.double(), train.y.double()
    specs = _specs()
    net = fc.init_two_layer(
        [s.act for s in specs],
        8,
        6,
        list(range(len(specs))),
        frozen_output=False,
        bias=True,
    ).double()
    new, old = copy.deepcopy(net), copy.deepcopy(net)
    fc.train_two_layer(new, specs, x, y, 30, emb, record_every=30)
    ref.old_train_two_layer(old, specs, x, y, 30, emb, record_every=30)
    worst_old = 0.0
    for e, s in enumerate(specs):
        one = fc.TwoLayerNets(
            net.W[e : e + 1],
            [s.act],
            net.a[e : e + 1],
            b=net.b[e : e + 1],
            c=net.c[e : e + 1],
            train_output=True,
        )
        params = list(one.parameters())
        opt = (
            torch.optim.SGD(
                params, lr=s.lr, momentum=s.momentum, weight_decay=s.weight_decay
            )
            if s.optimizer == "sgd"
            else torch.optim.AdamW(params, lr=s.lr, weight_decay=s.weight_decay)
        )
        for _ in range(30):
            opt.zero_grad()
            _binary_loss(s.loss, one(x), y).sum().backward()
            opt.step()
        for name in ("W", "b", "a", "c"):
            want = getattr(one, name).detach()[0]
            torch.testing.assert_close(
                getattr(new, name).detach()[e], want, rtol=1e-12, atol=1e-14
            )
            worst_old = max(
                worst_old, float((getattr(old, name).detach()[e] - want).abs().max())
            )
    assert worst_old > 1e-10


# =================================================================================================
# contamination.binary_accuracy
# =================================================================================================
@pytest.mark.reference
def test_binary_losses_and_accuracy_against_numpy_over_the_last_axis():
    f = torch.tensor(
        [[2.0, 1.0, 0.0, -0.5, 0.3], [-1.0, -2.5, 0.7, 1.0, 0.0]],
        dtype=torch.float64,
    )
    y = torch.tensor([1.0, 1.0, -1.0, -1.0, 1.0], dtype=torch.float64)
    for name in ("hinge", "logistic"):
        got = _binary_loss(name, f, y)
        assert got.shape == (2,)
        np.testing.assert_allclose(
            got.numpy(), np_loss(name, f.numpy(), y.numpy()), rtol=1e-12
        )
    # hand numbers: margins y f of row 0 are 2, 1, 0, 0.5, 0.3 -> hinge 0, 0, 1, 0.5, 0.7
    assert float(_binary_loss("hinge", f, y)[0]) == pytest.approx(2.2 / 5)
    # accuracy: margins > 0 count, a zero output is an error (row 0: 2, 1, 0, 0.5, 0.3 -> 4/5;
    # row 1: -1, -2.5, -0.7, -1, 0 -> 0)
    assert fc.binary_accuracy(f, y).tolist() == pytest.approx([0.8, 0.0])
    # labels with the shape of f pair element by element
    y2 = torch.tensor(
        [[1.0, -1.0, -1.0, -1.0, 1.0], [-1.0, -1.0, 1.0, 1.0, -1.0]],
        dtype=torch.float64,
    )
    assert fc.binary_accuracy(f, y2).tolist() == pytest.approx([0.6, 0.8])
    np.testing.assert_allclose(
        _binary_loss("logistic", f, y2).numpy(),
        np_loss("logistic", f.numpy(), y2.numpy()),
        rtol=1e-12,
    )
    with pytest.raises(ValueError, match="y must have the shape"):
        fc.binary_accuracy(f, torch.ones(4, dtype=torch.float64))


@pytest.mark.mutation
def test_binary_accuracy_counts_a_zero_output_as_an_error():
    f, y = torch.tensor([0.0, 2.0, -1.0, 0.0]), torch.tensor([1.0, 1.0, -1.0, -1.0])
    assert float(binary_accuracy(f, y)) == pytest.approx(0.5)


# =================================================================================================
# contamination.projection_norms
# =================================================================================================
def test_projections_recover_known_components(emb):
    # a weight built from known core / background coordinates plus a part outside both subspaces
    u, v = torch.tensor([3.0, 0.0, 4.0, 0.0]), torch.tensor([0.0, 1.0, 0.0])
    P = torch.cat([emb.core, emb.background], 1)
    outside = torch.randn(12)
    outside = outside - P @ (P.T @ outside)
    w = emb.core @ u + emb.background @ v + outside
    core, bg = fc.projection_norms(torch.stack([w, 2 * w]), emb)
    assert torch.allclose(core, torch.tensor([5.0, 10.0]), atol=1e-4)
    assert torch.allclose(bg, torch.tensor([1.0, 2.0]), atol=1e-4)
    core3, bg3 = fc.projection_norms(torch.stack([w, 2 * w])[None], emb)
    assert core3.shape == (1, 2)


def test_linear_net_background_only_decays_on_symmetric_data():
    # exact symmetry: each training point appears with its background paired to both labels, so
    # the linear net's background gradient is exactly zero and only weight decay acts
    emb = fc.random_embedding(2, 2, 6, seed=0)
    zc = torch.tensor([[1.0, 0.5], [-1.0, -0.5], [0.5, 1.0], [-0.5, -1.0]])
    zb = torch.tensor([[0.2, 0.9], [0.2, 0.9], [0.7, 0.1], [0.7, 0.1]])
    y = torch.tensor([1.0, -1.0, 1.0, -1.0])
    x = emb.embed(zc, zb)
    spec = fc.NetSpec(act="identity", lr=0.1, momentum=0.0, weight_decay=0.01)
    net = fc.init_two_layer(["identity"], 6, 4, [0], bias=False)
    bg0 = fc.projection_norms(net.W.detach(), emb)[1]
    hist = fc.train_two_layer(net, [spec], x, y, 10, emb, record_every=5)
    bg1 = fc.projection_norms(net.W.detach(), emb)[1]
    assert torch.allclose(bg1, bg0 * (1 - 0.1 * 0.01) ** 10, rtol=1e-4)
    assert hist.step == [0, 5, 10]


@pytest.mark.reference
def test_projection_norms_and_mean_direction_components_against_numpy():
    emb = fc.random_embedding(2, 3, 7, seed=3)
    rng = np.random.default_rng(1)
    W = torch.tensor(rng.normal(size=(2, 4, 7)), dtype=torch.float32)
    core, bg = fc.projection_norms(W, emb)
    Wn, C, B = (
        W.double().numpy(),
        emb.core.double().numpy(),
        emb.background.double().numpy(),
    )
    np.testing.assert_allclose(
        core.numpy(), np.linalg.norm(Wn @ C, axis=-1), rtol=1e-5
    )
    np.testing.assert_allclose(
        bg.numpy(), np.linalg.norm(Wn @ B, axis=-1), rtol=1e-5
    )
    along, orth = fc.mean_direction_components(W, emb)
    u = np.ones(3) / np.sqrt(3)
    v = Wn @ B
    a_ref = v @ u
    np.testing.assert_allclose(along.numpy(), a_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        orth.numpy(),
        np.linalg.norm(v - a_ref[..., None] * u, axis=-1),
        rtol=1e-5,
        atol=1e-6,
    )
    # exact on the axis embedding: a neuron with background weights (1, 2, 6) on (e1, e5, e2)
    ax = axis_embedding()
    w = torch.tensor([[3.0, 1.0, 6.0, 9.0, 4.0, 2.0]])
    c1, b1 = fc.projection_norms(w, ax)
    assert float(c1) == pytest.approx(5.0) and float(b1) == pytest.approx(
        math.sqrt(41)
    )
    a1, o1 = fc.mean_direction_components(w, ax)
    assert float(a1) == pytest.approx(9 / math.sqrt(3))
    assert float(o1) == pytest.approx(
        math.sqrt((1 - 3) ** 2 + (2 - 3) ** 2 + (6 - 3) ** 2), rel=1e-6
    )


# =================================================================================================
# contamination.mean_direction_components
# =================================================================================================
def test_mean_direction_components_split_known_weights(emb):
    # background part 2 * (1, 1, 1) / sqrt(3) along the mean direction plus (1, -1, 0) orthogonal
    u = torch.ones(3) / math.sqrt(3)
    v = 2 * u + torch.tensor([1.0, -1.0, 0.0])
    w = emb.core @ torch.tensor([1.0, 2.0, 0.0, 0.0]) + emb.background @ v
    along, orth = fc.mean_direction_components(torch.stack([w, -w]), emb)
    assert torch.allclose(along, torch.tensor([2.0, -2.0]), atol=1e-5)
    assert torch.allclose(orth, torch.full((2,), math.sqrt(2)), atol=1e-5)
    # the two parts make up the background norm, and a shift by m moves w . x by -m sqrt(k) along
    bg = fc.projection_norms(torch.stack([w, -w]), emb)[1]
    assert torch.allclose(bg**2, along**2 + orth**2, atol=1e-4)
    x = torch.randn(5, 12)
    moved = fc.shift_background(x, emb, 0.5) @ w - x @ w
    assert torch.allclose(
        moved, torch.full((5,), -0.5 * math.sqrt(3) * 2.0), atol=1e-4
    )
    assert fc.mean_direction_components(torch.stack([w, w])[None], emb)[0].shape == (
        1,
        2,
    )


@pytest.mark.reference
@pytest.mark.parametrize("seed,centred", [(1, True), (2, False)])
def test_run_distillation_matches_the_old_loops_at_other_seeds_and_centred(
    seed, centred
):
    from tests.oracles import contamination_loops as ref

    cfg = fc.DistillConfig(
        n=11,
        n_test=9,
        d_core=2,
        d_background=3,
        dim=7,
        width=4,
        teacher_steps=6,
        student_steps=5,
        record_every=2,
        lr=0.02,
        weight_decay=0.05,
        centred=centred,
    )
    old = ref.old_run_distillation(cfg, seed=seed, device="cpu").to_dict()
    new = fc.run_distillation(cfg, seed=seed, device="cpu").to_dict()
    assert new["curve_step"] == [0, 2, 4, 5]
    assert set(new) == set(old)
    assert set(new["probe_initial"]) == {
        "ID",
        "OOD",
    }  # the never-distilled student is new
    for key in set(old) - {"probe_initial"}:
        if isinstance(old[key], dict):
            assert new[key] == old[key], key
        else:
            torch.testing.assert_close(
                torch.tensor(new[key], dtype=torch.float64),
                torch.tensor(old[key], dtype=torch.float64),
                rtol=1e-5,
                atol=1e-6,
            )
    # the recorded curve ends at the reported errors, and the metrics at step 0 are the student's
    # initial weights measured here
    assert (
        new["error_id"] == new["curve_id"][-1]
        and new["error_ood"] == new["curve_ood"][-1]
    )
    emb = fc.random_embedding(2, 3, 7, seed=seed)
    W0 = fc.init_two_layer(
        ["relu"], 7, 4, [1000 * seed + 71], frozen_output=False, bias=True
    ).W.detach()
    assert new["student_background_norm"][0] == pytest.approx(
        float(fc.projection_norms(W0, emb)[1].mean()), rel=1e-6
    )
    assert new["student_background_mean"][0] == pytest.approx(
        float(fc.mean_direction_components(W0, emb)[0].abs().mean()), rel=1e-6
    )


# =================================================================================================
# contamination.bias_equivalence
# =================================================================================================
def test_bias_equivalence_known_slope(emb):
    # a change along e that is exactly c times the bias change, after weight decay's factor
    g = torch.Generator().manual_seed(0)
    b0, db = torch.randn(6, generator=g), torch.randn(6, generator=g)
    a0 = torch.randn(6, generator=g)
    rho, c = 0.8, 2.5
    W0 = _weights_with_components(emb, a0, 1.0, 1)
    W1 = _weights_with_components(
        emb, rho * a0 + c * db, 3.0, 2
    )  # the rest may change freely
    b1 = rho * b0 + db
    out = fc.bias_equivalence(W0, W1, b0, b1, emb, decay=rho)
    assert out["slope"] == pytest.approx(c, rel=1e-4)
    assert out["corr"] == pytest.approx(1.0, abs=1e-5)
    assert out["bias_change"] == pytest.approx(
        float((b1 - b0).abs().mean()), rel=1e-6
    )
    assert out["weight_change"] == pytest.approx(
        c * float(db.abs().mean()), rel=1e-4
    )
    assert out["bias_move"] == pytest.approx(float(db.abs().mean()), rel=1e-5)
    # a sign flip of the relation flips slope and correlation; scaling both changes keeps corr
    W1n = _weights_with_components(emb, rho * a0 - c * db, 3.0, 2)
    neg = fc.bias_equivalence(W0, W1n, b0, b1, emb, decay=rho)
    assert neg["slope"] == pytest.approx(-c, rel=1e-4) and neg[
        "corr"
    ] == pytest.approx(-1, abs=1e-5)
    # without the weight-decay correction the same run does not show the identity
    raw = fc.bias_equivalence(W0, W1, b0, b1, emb, decay=1.0)
    assert abs(raw["slope"] - c) > 0.05


def test_bias_equivalence_bad_inputs(emb):
    W = _weights_with_components(emb, torch.arange(4.0), 1.0, 0)
    b = torch.arange(4.0)
    with pytest.raises(ValueError, match="W1"):
        fc.bias_equivalence(W, W[:3], b, b + 1, emb)
    with pytest.raises(ValueError, match="b0"):
        fc.bias_equivalence(W, W, b[:3], b, emb)
    with pytest.raises(ValueError, match="decay"):
        fc.bias_equivalence(W, W, b, b + 1, emb, decay=-0.5)
    with pytest.raises(ValueError, match="b1"):  # nothing moved: no slope
        fc.bias_equivalence(W, W, b, b, emb)
    with pytest.raises(ValueError, match="W0"):
        fc.bias_equivalence(W[:1], W[:1], b[:1], b[:1] + 1, emb)


@pytest.mark.boundary
def test_bias_equivalence_refuses_bad_input(emb_bou):
    W0, W1 = torch.randn(6, 10), torch.randn(6, 10)
    b0, b1 = torch.randn(6), torch.randn(6)
    refused(ValueError, "W0", fc.bias_equivalence, nan_at(W0), W1, b0, b1, emb_bou)
    refused(ValueError, "W1", fc.bias_equivalence, W0, nan_at(W1), b0, b1, emb_bou)
    refused(ValueError, "b1", fc.bias_equivalence, W0, W1, b0, nan_at(b1), emb_bou)
    refused(TypeError, "W0", fc.bias_equivalence, W0.long(), W1, b0, b1, emb_bou)
    refused(ValueError, "W0", fc.bias_equivalence, W0[None], W1, b0, b1, emb_bou)
    refused(TypeError, "emb", fc.bias_equivalence, W0, W1, b0, b1, None)
    refused(
        ValueError, "W", fc.bias_equivalence, W0[:, :8], W1[:, :8], b0, b1, emb_bou
    )
    for bad in (NAN, math.inf, -0.1):
        refused(
            ValueError,
            "decay",
            fc.bias_equivalence,
            W0,
            W1,
            b0,
            b1,
            emb_bou,
            decay=bad,
        )


# =================================================================================================
# contamination.activation_asymmetry
# =================================================================================================
def test_activation_asymmetry_brute_force():
    y = torch.tensor([1.0, 1.0, -1.0, -1.0])
    pre = torch.tensor(
        [
            [1.0, 1.0, -1.0, 2.0],
            [1.0, -1.0, -1.0, 2.0],
            [-1.0, 1.0, 1.0, 2.0],
            [-1.0, -1.0, 1.0, 2.0],
        ]
    )
    a = fc.activation_asymmetry(pre, y)
    assert torch.allclose(a, torch.tensor([1.0, 0.0, 1.0, 0.0]))
    assert fc.activation_asymmetry(pre[None].repeat(3, 1, 1), y).shape == (3, 4)


@pytest.mark.reference
def test_activation_asymmetry_on_unbalanced_classes_with_zero_inactive():
    y = torch.tensor([1.0, 1.0, 1.0, -1.0, -1.0])
    pre = torch.tensor(
        [
            [1.0, 0.0, -1.0],
            [2.0, 0.5, 0.0],
            [-1.0, 0.5, 0.0],
            [0.0, 1.0, 0.0],
            [3.0, -1.0, 2.0],
        ]
    )
    # neuron 0: P(+) = 2/3, P(-) = 1/2 -> 1/6; neuron 1: 2/3 vs 1/2 -> 1/6; neuron 2: 0 vs 1/2
    got = fc.activation_asymmetry(pre, y)
    assert got.tolist() == pytest.approx([1 / 6, 1 / 6, 1 / 2])
    stack = torch.stack([pre, -pre])
    g3 = fc.activation_asymmetry(stack, y)
    # -pre: neuron 0 actives (-, -, +) on + -> 1/3, on - (+, -) -> 0... computed by a loop
    for e in range(2):
        for j in range(3):
            p = stack[e, :, j]
            want = abs(
                float((p[y > 0] > 0).float().mean() - (p[y < 0] > 0).float().mean())
            )
            assert float(g3[e, j]) == pytest.approx(want)


# =================================================================================================
# contamination.signed_asymmetry
# =================================================================================================
def test_signed_asymmetry_uses_output_sign_and_gates():
    y = torch.tensor([1.0, 1.0, -1.0, -1.0])
    pre = torch.tensor(
        [[1.0, 1.0, -1.0], [1.0, 1.0, -1.0], [-1.0, -1.0, 1.0], [-1.0, 1.0, 1.0]]
    )
    a = torch.tensor([1.0, -1.0, 1.0])
    s = fc.signed_asymmetry(pre, y, a)
    assert torch.allclose(s, torch.tensor([1.0, -0.5, -1.0]))
    assert torch.allclose(
        s.abs(), fc.activation_asymmetry(pre, y) * torch.tensor([1, 1, 1.0])
    )
    # tanh' is even: mirror-image pre-activations of the two classes give no asymmetry
    mirror = torch.tensor([[0.3], [2.0], [-0.3], [-2.0]])
    assert torch.allclose(
        fc.signed_asymmetry(mirror, y, torch.ones(1), act="tanh"),
        torch.zeros(1),
        atol=1e-6,
    )
    # ... but different magnitudes do: the small pre-activations have the larger gate
    near_far = torch.tensor([[0.1], [0.1], [3.0], [3.0]])
    assert fc.signed_asymmetry(near_far, y, torch.ones(1), act="tanh") > 0.9
    with pytest.raises(ValueError, match="one entry per neuron"):
        fc.signed_asymmetry(pre, y, torch.ones(2))


@pytest.mark.reference
def test_signed_asymmetry_is_the_signed_gate_difference():
    y = torch.tensor([1.0, -1.0, 1.0, -1.0, -1.0], dtype=torch.float64)
    pre = torch.tensor(
        [
            [0.5, -0.2, 0.0],
            [0.0, 1.0, 2.0],
            [1.5, 0.3, -1.0],
            [-2.0, 0.1, 0.4],
            [0.2, -0.3, 0.0],
        ],
        dtype=torch.float64,
    )
    a = torch.tensor([0.3, -2.0, 0.0], dtype=torch.float64)
    # relu gates (pre > 0): neuron 0: + (1, 1) -> 1, - (0, 0, 1) -> 1/3; sign(a)=+ -> 2/3
    # neuron 1: + (0, 1) -> 1/2, - (1, 1, 0) -> 2/3; sign - -> 1/6; neuron 2: sign(0) = 0
    got = fc.signed_asymmetry(pre, y, a)
    assert got.tolist() == pytest.approx([2 / 3, 1 / 6, 0.0])
    for act, deriv in (
        ("tanh", lambda z: 1 - np.tanh(z) ** 2),
        ("sigmoid", lambda z: np_acts("sigmoid", z) * (1 - np_acts("sigmoid", z))),
    ):
        g = deriv(pre.numpy())
        yn = y.numpy()
        want = np.sign(a.numpy()) * (g[yn > 0].mean(0) - g[yn < 0].mean(0))
        np.testing.assert_allclose(
            fc.signed_asymmetry(pre, y, a, act=act).numpy(),
            want,
            rtol=1e-10,
            atol=1e-12,
        )
    # stacked members each with their own output weights
    st = fc.signed_asymmetry(torch.stack([pre, pre]), y, torch.stack([a, -a]))
    assert st[1].tolist() == pytest.approx([-2 / 3, -1 / 6, 0.0])


# =================================================================================================
# contamination.relative_error
# =================================================================================================
@pytest.mark.reference
def test_relative_error_is_normalised_by_the_target():
    h = torch.tensor([[1.0, 2.0, 0.0], [0.0, 0.0, 3.0]])
    t = torch.tensor([[1.0, 0.0, 0.0], [2.0, 0.0, 1.0]])
    # ||h - t||^2 = 0 + 4 + 0 + 4 + 0 + 4 = 12; ||t||^2 = 1 + 4 + 1 = 6
    assert fc.relative_error(h, t) == pytest.approx(2.0)
    assert fc.relative_error(t, h) == pytest.approx(12 / 14)
    assert fc.relative_error(
        torch.stack([h, t]), torch.stack([t, t])
    ) == pytest.approx(12 / 12)
    with pytest.raises(ValueError, match="same shape"):
        fc.relative_error(h, t[:, :2])


@pytest.mark.boundary
def test_weights_and_asymmetries(emb_bou, toy):
    W, pre, a = torch.randn(2, 6, 10), torch.randn(2, 20, 6), torch.randn(2, 6)
    for fn in (fc.projection_norms, fc.mean_direction_components):
        refused(ValueError, "W", fn, nan_at(W), emb_bou)
        refused(ValueError, "W", fn, W[:0], emb_bou)
        refused(TypeError, "W", fn, W.long(), emb_bou)
        refused(TypeError, "emb", fn, W, None)
    refused(ValueError, "pre", fc.activation_asymmetry, nan_at(pre), toy.y)
    refused(ValueError, "pre", fc.activation_asymmetry, pre[:0], toy.y)
    refused(ValueError, "y", fc.activation_asymmetry, pre, nan_at(toy.y))
    refused(ValueError, "a", fc.signed_asymmetry, pre, toy.y, nan_at(a))
    refused(ValueError, "a", fc.signed_asymmetry, pre, toy.y, a[:0])
    refused(ValueError, "act", fc.signed_asymmetry, pre, toy.y, a, act="bogus")
    h = torch.randn(4, 3)
    refused(ValueError, "h", fc.relative_error, nan_at(h), h)
    refused(TypeError, "h", fc.relative_error, h.long(), h)
    refused(ValueError, "target", fc.relative_error, h, nan_at(h))
    refused(TypeError, "target", fc.relative_error, h, None)
