"""gtlib.contamination against references that cannot share its bugs (issue 19, section 6).

Every public function, class and method of the module is checked on tiny, asymmetric inputs
(odd sample sizes, unbalanced labels, k_c != k_b, h != d, E > 1 with mixed members, alpha-free
but never symmetric magnitudes) against a hand computation, numpy / sklearn, torch.optim run
member by member, or a loop written out here, and every parameter is shown to matter.
"""
import math

import numpy as np
import pytest
import torch

from gtlib import contamination as fc


# ---------------------------------------------------------------------------------------------
# helpers: an embedding whose bases are columns of the identity, so every number is exact
# ---------------------------------------------------------------------------------------------
def axis_embedding(dtype=torch.float32):
    """R^6 with core = (e4, e0) and background = (e1, e5, e2); e3 lies outside both."""
    eye = torch.eye(6, dtype=dtype)
    return fc.Embedding(core=eye[:, [4, 0]].contiguous(), background=eye[:, [1, 5, 2]].contiguous())


def np_acts(name, z):
    z = np.asarray(z, dtype=np.float64)
    if name == "relu":
        return np.maximum(z, 0)
    if name == "identity":
        return z
    if name == "tanh":
        return np.tanh(z)
    if name == "sigmoid":
        return 1 / (1 + np.exp(-z))
    raise KeyError(name)


def np_loss(name, f, y):
    m = np.asarray(y, dtype=np.float64) * np.asarray(f, dtype=np.float64)
    per = np.maximum(0.0, 1.0 - m) if name == "hinge" else np.log1p(np.exp(-m))
    return per.mean(-1)


# ---------------------------------------------------------------------------------------------
# the data model
# ---------------------------------------------------------------------------------------------
def test_random_embedding_is_the_qr_of_a_seeded_gaussian_split_core_first():
    emb = fc.random_embedding(2, 3, 7, seed=5)
    g = torch.Generator().manual_seed(5)
    q = np.linalg.qr(torch.randn(7, 5, generator=g, dtype=torch.float64).numpy())[0]
    assert emb.core.shape == (7, 2) and emb.background.shape == (7, 3)
    assert emb.core.dtype == torch.float32 and emb.dim == 7
    np.testing.assert_allclose(np.abs(emb.core.numpy()), np.abs(q[:, :2]), atol=1e-6)
    np.testing.assert_allclose(np.abs(emb.background.numpy()), np.abs(q[:, 2:]), atol=1e-6)
    P = torch.cat([emb.core, emb.background], 1).double()
    np.testing.assert_allclose((P.T @ P).numpy(), np.eye(5), atol=1e-6)
    # the seed and every size matter; the default seed is 0
    assert not torch.allclose(fc.random_embedding(2, 3, 7, seed=6).core, emb.core)
    assert torch.equal(fc.random_embedding(2, 3, 7).core, fc.random_embedding(2, 3, 7, seed=0).core)
    d = fc.random_embedding()
    assert (d.core.shape, d.background.shape) == ((256, 32), (256, 32))
    # d_core + d_background == dim is allowed (the subspaces fill R^d)
    full = fc.random_embedding(2, 2, 4, seed=1)
    assert full.dim == 4
    with pytest.raises(ValueError, match="d_core"):
        fc.random_embedding(3, 2, 4)


def test_embed_is_core_plus_background_exactly():
    emb = axis_embedding()
    zc = torch.tensor([[1.5, -2.0], [0.25, 3.0]])
    zb = torch.tensor([[7.0, 11.0, 13.0], [-1.0, 0.5, 2.0]])
    x = emb.embed(zc, zb)
    want = torch.tensor([[-2.0, 7.0, 13.0, 0.0, 1.5, 11.0],
                         [3.0, -1.0, 2.0, 0.0, 0.25, 0.5]])
    assert torch.equal(x, want)
    assert emb.dim == 6
    moved = emb.to("cpu")
    assert torch.equal(moved.core, emb.core) and torch.equal(moved.background, emb.background)


def test_embedding_refuses_bases_that_are_not_orthonormal():
    eye = torch.eye(4)
    fc.Embedding(eye[:, :2], eye[:, 2:])
    with pytest.raises(ValueError, match="orthonormal"):
        fc.Embedding(eye[:, :2], eye[:, 1:3])          # overlapping columns
    with pytest.raises(ValueError, match="orthonormal"):
        fc.Embedding(eye[:, :2] * 1.001, eye[:, 2:])   # gap 2e-3 > 1e-4
    fc.Embedding(eye[:, :2] * (1 + 2e-5), eye[:, 2:])  # gap 4e-5 < 1e-4 passes
    with pytest.raises(ValueError, match="at most 4"):
        fc.Embedding(torch.eye(4), eye[:, :1])


@pytest.mark.parametrize("n", [5, 6])
def test_sample_core_theory_replays_the_generator(n):
    g = torch.Generator().manual_seed(3)
    z, y = fc.sample_core(n, "theory", 3, g)
    ref = torch.Generator().manual_seed(3)
    u = torch.rand(n, 3, generator=ref)
    want_y = torch.tensor([1.0] * (n // 2) + [-1.0] * (n - n // 2))
    assert torch.equal(y, want_y)
    assert torch.equal(z, u * want_y[:, None])


def test_sample_core_default_lies_on_spheres_of_radius_one_and_two():
    g = torch.Generator().manual_seed(4)
    z, y = fc.sample_core(7, "default", 3, g)
    ref = torch.Generator().manual_seed(4)
    r = torch.randn(7, 3, generator=ref).double().numpy()
    r = r / np.linalg.norm(r, axis=1, keepdims=True)
    radius = np.array([1, 1, 1, 2, 2, 2, 2], dtype=float)
    np.testing.assert_allclose(z.numpy(), r * radius[:, None], rtol=1e-6, atol=1e-7)
    assert y.tolist() == [1, 1, 1, -1, -1, -1, -1]


def test_sample_toy_draws_core_then_background_from_one_seeded_stream():
    emb = axis_embedding()
    d = fc.sample_toy(5, emb, seed=7)          # kind "theory" by default
    g = torch.Generator().manual_seed(7)
    u = torch.rand(5, 2, generator=g)
    zb = torch.rand(5, 3, generator=g)
    y = torch.tensor([1.0, 1.0, -1.0, -1.0, -1.0])
    assert torch.equal(d.y, y)
    assert torch.equal(d.core, u * y[:, None])
    assert torch.equal(d.background, zb)
    assert torch.equal(d.x, emb.embed(u * y[:, None], zb))
    c = fc.sample_toy(5, emb, seed=7, centred=True)
    assert torch.equal(c.background, zb - 0.5) and torch.equal(c.core, d.core)
    df = fc.sample_toy(5, emb, "default", seed=7)
    assert torch.allclose(df.core.norm(dim=1), torch.tensor([1.0, 1.0, 2.0, 2.0, 2.0]))
    # the default seed is 0; different seeds give different samples
    assert torch.equal(fc.sample_toy(5, emb).x, fc.sample_toy(5, emb, seed=0).x)
    assert not torch.equal(fc.sample_toy(5, emb, seed=8).x, d.x)


def test_toy_data_checks_rows():
    x = torch.zeros(3, 6)
    fc.ToyData(x, torch.tensor([1.0, -1.0, 1.0]), torch.zeros(3, 2), torch.zeros(3, 3))
    with pytest.raises(ValueError, match="background"):
        fc.ToyData(x, torch.tensor([1.0, -1.0, 1.0]), torch.zeros(3, 2), torch.zeros(2, 3))
    with pytest.raises(ValueError, match="y"):
        fc.ToyData(x, torch.tensor([1.0, 0.0, 1.0]), torch.zeros(3, 2), torch.zeros(3, 3))


def test_shift_background_subtracts_the_magnitude_from_background_coordinates_only():
    emb = axis_embedding()
    x = torch.arange(12, dtype=torch.float32).reshape(2, 6)
    s = fc.shift_background(x, emb, 0.75)
    want = x.clone()
    want[:, [1, 5, 2]] -= 0.75
    assert torch.equal(s, want)
    assert torch.equal(fc.shift_background(x, emb), x - torch.tensor([0, 1, 1, 0, 0, 1.0]))
    # a stack (E, n, d) is shifted alike, member by member
    s3 = fc.shift_background(torch.stack([x, 2 * x]), emb, -0.5)
    assert torch.equal(s3[1], fc.shift_background(2 * x, emb, -0.5))


def test_off_subspace_direction_is_the_seeded_gaussian_projected_out_of_both_subspaces():
    emb = axis_embedding()
    v = fc.off_subspace_direction(emb, seed=2)
    g = torch.Generator().manual_seed(2)
    r = torch.randn(6, generator=g)
    # only coordinate 3 is outside both subspaces: the direction is sign(r_3) e_3
    want = torch.zeros(6)
    want[3] = float(torch.sign(r[3]))
    assert torch.allclose(v, want, atol=1e-7)
    emb2 = fc.random_embedding(2, 1, 6, seed=0)
    a, b = fc.off_subspace_direction(emb2, seed=1), fc.off_subspace_direction(emb2, seed=4)
    P = torch.cat([emb2.core, emb2.background], 1).double().numpy()
    g = torch.Generator().manual_seed(1)
    r = torch.randn(6, generator=g).double().numpy()
    r = r - P @ (P.T @ r)
    np.testing.assert_allclose(a.numpy(), r / np.linalg.norm(r), atol=1e-6)
    assert not torch.allclose(a, b)
    assert torch.equal(fc.off_subspace_direction(emb2), fc.off_subspace_direction(emb2, seed=0))


def test_label_correlations_are_pearsons_r():
    rng = np.random.default_rng(0)
    y = np.array([1, 1, 1, 1, -1, -1, 1, -1, 1], dtype=np.float64)   # 6 vs 3: unbalanced
    feats = rng.normal(size=(9, 4)) + np.array([0.0, 3.0, -1.0, 0.5]) * y[:, None]
    feats[:, 2] *= 10.0
    c = fc.label_correlations(torch.tensor(feats, dtype=torch.float32),
                              torch.tensor(y, dtype=torch.float32))
    want = [np.corrcoef(feats[:, j], y)[0, 1] for j in range(4)]
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-5, atol=1e-6)
    assert c.dtype == torch.float32
    const = fc.label_correlations(torch.full((3, 2), 2.5), torch.tensor([1.0, -1.0, -1.0]))
    assert torch.equal(const, torch.zeros(2))
    with pytest.raises(ValueError, match="rows"):
        fc.label_correlations(torch.zeros(3, 2), torch.tensor([1.0, -1.0]))


# ---------------------------------------------------------------------------------------------
# specs and networks
# ---------------------------------------------------------------------------------------------
def test_net_spec_defaults_and_name():
    s = fc.NetSpec()
    assert (s.act, s.loss, s.optimizer, s.lr, s.momentum, s.weight_decay, s.label) == (
        "relu", "hinge", "sgd", 1e-3, 0.9, 1e-3, "")
    assert s.name == "relu/sgd/hinge"
    assert fc.NetSpec(act="tanh", optimizer="adamw", loss="logistic").name == "tanh/adamw/logistic"
    assert fc.NetSpec(label="mine").name == "mine"
    fc.NetSpec(momentum=0.0, weight_decay=0.0)          # both ends that are allowed
    with pytest.raises(ValueError, match="momentum"):
        fc.NetSpec(momentum=1.0)
    with pytest.raises(ValueError, match="weight_decay"):
        fc.NetSpec(weight_decay=-1e-9)


def _np_forward(W, acts, a, b=None, c=None, x=None):
    W, a = np.asarray(W, float), np.asarray(a, float)
    out, hid, pre = [], [], []
    for e, name in enumerate(acts):
        xe = np.asarray(x[e] if x.ndim == 3 else x, float)
        p = xe @ W[e].T + (0.0 if b is None else np.asarray(b[e], float))
        h = np_acts(name, p)
        pre.append(p)
        hid.append(h)
        out.append(h @ a[e] + (0.0 if c is None else float(c[e])))
    return np.stack(pre), np.stack(hid), np.stack(out)


def test_two_layer_nets_match_a_member_by_member_loop():
    torch.manual_seed(0)
    E, h, d, n = 5, 3, 4, 7
    # interleaved so that the grouping's permutation (0, 3, 1, 2, 4) is not its own inverse
    acts = ["tanh", "relu", "relu", "tanh", "identity"]
    W, a, b, c = (torch.randn(E, h, d, dtype=torch.float64), torch.randn(E, h, dtype=torch.float64),
                  torch.randn(E, h, dtype=torch.float64), torch.randn(E, dtype=torch.float64))
    x = torch.randn(n, d, dtype=torch.float64)
    net = fc.TwoLayerNets(W, acts, a, b=b, c=c)
    assert (net.size, net.width) == (E, h)
    pre, hid, out = _np_forward(W, acts, a, b, c, x)
    np.testing.assert_allclose(net.preactivations(x).detach().numpy(), pre, rtol=1e-12)
    np.testing.assert_allclose(net.hidden(x).detach().numpy(), hid, rtol=1e-12)
    np.testing.assert_allclose(net(x).detach().numpy(), out, rtol=1e-12, atol=1e-14)
    # one sample per member (E, n, d)
    xs = torch.randn(E, n, d, dtype=torch.float64)
    np.testing.assert_allclose(net(xs).detach().numpy(), _np_forward(W, acts, a, b, c, xs)[2],
                               rtol=1e-12, atol=1e-14)
    # without biases, and a single activation group
    plain = fc.TwoLayerNets(W[:2], ["sigmoid", "sigmoid"], a[:2])
    np.testing.assert_allclose(plain(x).detach().numpy(),
                               _np_forward(W[:2], ["sigmoid"] * 2, a[:2], x=x)[2], rtol=1e-12)
    # frozen output by default: a and c are buffers; train_output makes them parameters
    assert [k for k, _ in net.named_parameters()] == ["W", "b"]
    trained = fc.TwoLayerNets(W, acts, a, b=b, c=c, train_output=True)
    assert sorted(k for k, _ in trained.named_parameters()) == ["W", "a", "b", "c"]
    # the constructor copies: changing the argument later does not change the net
    W2 = W.clone()
    net2 = fc.TwoLayerNets(W2, acts, a)
    W2.zero_()
    assert torch.equal(net2.W.detach(), W)


def _np_init(acts, dim, width, seeds, frozen_output, bias):
    Ws, bs, as_, cs = [], [], [], []
    for s in seeds:
        g = torch.Generator().manual_seed(s)
        W = torch.rand(width, dim, generator=g).double().numpy()
        bb = torch.rand(width, generator=g).double().numpy()
        lim = 1 / math.sqrt(dim)
        Ws.append((2 * W - 1) * lim)
        bs.append((2 * bb - 1) * lim)
        if frozen_output:
            as_.append(np.array([1 / width] * (width // 2) + [-1 / width] * (width // 2)))
        else:
            aa = torch.rand(width, generator=g).double().numpy()
            cc = float(torch.rand((), generator=g))
            as_.append((2 * aa - 1) / math.sqrt(width))
            cs.append((2 * cc - 1) / math.sqrt(width))
    return np.stack(Ws), np.stack(bs), np.stack(as_), (np.array(cs) if cs else None)


@pytest.mark.parametrize("frozen_output,bias", [(True, False), (True, True), (False, True),
                                                (False, False)])
def test_init_two_layer_is_nn_linear_uniform_per_seed(frozen_output, bias):
    acts, seeds = ["relu", "tanh", "identity"], [3, 11, 4]
    net = fc.init_two_layer(acts, 5, 4, seeds, frozen_output=frozen_output, bias=bias)
    W, b, a, c = _np_init(acts, 5, 4, seeds, frozen_output, bias)
    np.testing.assert_allclose(net.W.detach().numpy(), W, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(net.a.detach().numpy(), a, rtol=1e-6, atol=1e-7)
    assert net.acts == acts
    if bias:
        np.testing.assert_allclose(net.b.detach().numpy(), b, rtol=1e-6, atol=1e-7)
    else:
        assert net.b is None
    if bias and not frozen_output:
        np.testing.assert_allclose(net.c.detach().numpy(), c, rtol=1e-6, atol=1e-7)
    else:
        assert net.c is None
    assert net.a.requires_grad == (not frozen_output)


def test_init_two_layer_defaults_are_frozen_output_without_bias():
    net = fc.init_two_layer(["relu"], 3, 6, [0])
    assert net.b is None and net.c is None and not net.a.requires_grad
    assert net.a[0].tolist() == pytest.approx([1 / 6] * 3 + [-1 / 6] * 3)


# ---------------------------------------------------------------------------------------------
# losses and metrics
# ---------------------------------------------------------------------------------------------
def test_binary_losses_and_accuracy_against_numpy_over_the_last_axis():
    f = torch.tensor([[2.0, 1.0, 0.0, -0.5, 0.3], [-1.0, -2.5, 0.7, 1.0, 0.0]],
                     dtype=torch.float64)
    y = torch.tensor([1.0, 1.0, -1.0, -1.0, 1.0], dtype=torch.float64)
    for name in ("hinge", "logistic"):
        got = fc.binary_loss(name, f, y)
        assert got.shape == (2,)
        np.testing.assert_allclose(got.numpy(), np_loss(name, f.numpy(), y.numpy()), rtol=1e-12)
    # hand numbers: margins y f of row 0 are 2, 1, 0, 0.5, 0.3 -> hinge 0, 0, 1, 0.5, 0.7
    assert float(fc.binary_loss("hinge", f, y)[0]) == pytest.approx(2.2 / 5)
    # accuracy: margins > 0 count, a zero output is an error (row 0: 2, 1, 0, 0.5, 0.3 -> 4/5;
    # row 1: -1, -2.5, -0.7, -1, 0 -> 0)
    assert fc.binary_accuracy(f, y).tolist() == pytest.approx([0.8, 0.0])
    # labels with the shape of f pair element by element
    y2 = torch.tensor([[1.0, -1.0, -1.0, -1.0, 1.0], [-1.0, -1.0, 1.0, 1.0, -1.0]],
                      dtype=torch.float64)
    assert fc.binary_accuracy(f, y2).tolist() == pytest.approx([0.6, 0.8])
    np.testing.assert_allclose(fc.binary_loss("logistic", f, y2).numpy(),
                               np_loss("logistic", f.numpy(), y2.numpy()), rtol=1e-12)
    with pytest.raises(ValueError, match="y must have the shape"):
        fc.binary_accuracy(f, torch.ones(4, dtype=torch.float64))


def test_projection_norms_and_mean_direction_components_against_numpy():
    emb = fc.random_embedding(2, 3, 7, seed=3)
    rng = np.random.default_rng(1)
    W = torch.tensor(rng.normal(size=(2, 4, 7)), dtype=torch.float32)
    core, bg = fc.projection_norms(W, emb)
    Wn, C, B = W.double().numpy(), emb.core.double().numpy(), emb.background.double().numpy()
    np.testing.assert_allclose(core.numpy(), np.linalg.norm(Wn @ C, axis=-1), rtol=1e-5)
    np.testing.assert_allclose(bg.numpy(), np.linalg.norm(Wn @ B, axis=-1), rtol=1e-5)
    along, orth = fc.mean_direction_components(W, emb)
    u = np.ones(3) / np.sqrt(3)
    v = Wn @ B
    a_ref = v @ u
    np.testing.assert_allclose(along.numpy(), a_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(orth.numpy(), np.linalg.norm(v - a_ref[..., None] * u, axis=-1),
                               rtol=1e-5, atol=1e-6)
    # exact on the axis embedding: a neuron with background weights (1, 2, 6) on (e1, e5, e2)
    ax = axis_embedding()
    w = torch.tensor([[3.0, 1.0, 6.0, 9.0, 4.0, 2.0]])
    c1, b1 = fc.projection_norms(w, ax)
    assert float(c1) == pytest.approx(5.0) and float(b1) == pytest.approx(math.sqrt(41))
    a1, o1 = fc.mean_direction_components(w, ax)
    assert float(a1) == pytest.approx(9 / math.sqrt(3))
    assert float(o1) == pytest.approx(math.sqrt((1 - 3) ** 2 + (2 - 3) ** 2 + (6 - 3) ** 2),
                                      rel=1e-6)


def test_activation_asymmetry_on_unbalanced_classes_with_zero_inactive():
    y = torch.tensor([1.0, 1.0, 1.0, -1.0, -1.0])
    pre = torch.tensor([[1.0, 0.0, -1.0],
                        [2.0, 0.5, 0.0],
                        [-1.0, 0.5, 0.0],
                        [0.0, 1.0, 0.0],
                        [3.0, -1.0, 2.0]])
    # neuron 0: P(+) = 2/3, P(-) = 1/2 -> 1/6; neuron 1: 2/3 vs 1/2 -> 1/6; neuron 2: 0 vs 1/2
    got = fc.activation_asymmetry(pre, y)
    assert got.tolist() == pytest.approx([1 / 6, 1 / 6, 1 / 2])
    stack = torch.stack([pre, -pre])
    g3 = fc.activation_asymmetry(stack, y)
    # -pre: neuron 0 actives (-, -, +) on + -> 1/3, on - (+, -) -> 0... computed by a loop
    for e in range(2):
        for j in range(3):
            p = stack[e, :, j]
            want = abs(float((p[y > 0] > 0).float().mean() - (p[y < 0] > 0).float().mean()))
            assert float(g3[e, j]) == pytest.approx(want)


def test_signed_asymmetry_is_the_signed_gate_difference():
    y = torch.tensor([1.0, -1.0, 1.0, -1.0, -1.0], dtype=torch.float64)
    pre = torch.tensor([[0.5, -0.2, 0.0],
                        [0.0, 1.0, 2.0],
                        [1.5, 0.3, -1.0],
                        [-2.0, 0.1, 0.4],
                        [0.2, -0.3, 0.0]], dtype=torch.float64)
    a = torch.tensor([0.3, -2.0, 0.0], dtype=torch.float64)
    # relu gates (pre > 0): neuron 0: + (1, 1) -> 1, - (0, 0, 1) -> 1/3; sign(a)=+ -> 2/3
    # neuron 1: + (0, 1) -> 1/2, - (1, 1, 0) -> 2/3; sign - -> 1/6; neuron 2: sign(0) = 0
    got = fc.signed_asymmetry(pre, y, a)
    assert got.tolist() == pytest.approx([2 / 3, 1 / 6, 0.0])
    for act, deriv in (("tanh", lambda z: 1 - np.tanh(z) ** 2),
                       ("sigmoid", lambda z: np_acts("sigmoid", z) * (1 - np_acts("sigmoid", z)))):
        g = deriv(pre.numpy())
        yn = y.numpy()
        want = np.sign(a.numpy()) * (g[yn > 0].mean(0) - g[yn < 0].mean(0))
        np.testing.assert_allclose(fc.signed_asymmetry(pre, y, a, act=act).numpy(), want,
                                   rtol=1e-10, atol=1e-12)
    # stacked members each with their own output weights
    st = fc.signed_asymmetry(torch.stack([pre, pre]), y, torch.stack([a, -a]))
    assert st[1].tolist() == pytest.approx([-2 / 3, -1 / 6, 0.0])


def test_relative_error_is_normalised_by_the_target():
    h = torch.tensor([[1.0, 2.0, 0.0], [0.0, 0.0, 3.0]])
    t = torch.tensor([[1.0, 0.0, 0.0], [2.0, 0.0, 1.0]])
    # ||h - t||^2 = 0 + 4 + 0 + 4 + 0 + 4 = 12; ||t||^2 = 1 + 4 + 1 = 6
    assert fc.relative_error(h, t) == pytest.approx(2.0)
    assert fc.relative_error(t, h) == pytest.approx(12 / 14)
    assert fc.relative_error(torch.stack([h, t]), torch.stack([t, t])) == pytest.approx(12 / 12)
    with pytest.raises(ValueError, match="same shape"):
        fc.relative_error(h, t[:, :2])


# ---------------------------------------------------------------------------------------------
# training: torch.optim run member by member, curves computed here with numpy
# ---------------------------------------------------------------------------------------------
def _np_curves(W, b, a, c, acts, specs, emb, x, y, xt, yt, shift):
    """The ToyHistory row of one record, computed from the weights with numpy (float64)."""
    C, B = emb.core.double().numpy(), emb.background.double().numpy()
    W = np.asarray(W, float)
    k = B.shape[1]
    v = W @ B
    along = v.sum(-1) / np.sqrt(k)
    orth = np.linalg.norm(v - along[..., None] / np.sqrt(k), axis=-1)
    row = {"core_norm": np.linalg.norm(W @ C, axis=-1).mean(-1),
           "background_norm": np.linalg.norm(v, axis=-1).mean(-1),
           "background_mean": np.abs(along).mean(-1), "background_orth": orth.mean(-1)}
    losses = [s.loss for s in specs]

    def member_losses(f, yy):
        yy = np.broadcast_to(np.asarray(yy, float), f.shape)
        return np.array([np_loss(losses[e], f[e], yy[e]) for e in range(len(specs))])

    f = _np_forward(W, acts, a, b, c, np.asarray(x))[2]
    row["train_loss"] = member_losses(f, y)
    xo = np.asarray(xt, float) - shift * B.sum(1)
    f_id = _np_forward(W, acts, a, b, c, np.asarray(xt))[2]
    f_ood = _np_forward(W, acts, a, b, c, xo)[2]
    yb = np.broadcast_to(np.asarray(yt, float), f_id.shape)
    row["id_loss"], row["ood_loss"] = member_losses(f_id, yt), member_losses(f_ood, yt)
    row["id_acc"], row["ood_acc"] = (f_id * yb > 0).mean(-1), (f_ood * yb > 0).mean(-1)
    return row


def _reference_training(net, specs, x, y, xt, yt, emb, steps, records, shift):
    """Each member alone with torch.optim and a forward pass written out; curves by numpy."""
    params = []
    for e, s in enumerate(specs):
        p = {k: getattr(net, k)[e].detach().clone() for k in ("W", "b", "a", "c")
             if getattr(net, k) is not None}
        train_out = net.a.requires_grad
        leaves = [p[k].requires_grad_() for k in p if k in ("W", "b") or train_out]
        opt = (torch.optim.SGD(leaves, lr=s.lr, momentum=s.momentum, weight_decay=s.weight_decay)
               if s.optimizer == "sgd" else
               torch.optim.AdamW(leaves, lr=s.lr, weight_decay=s.weight_decay))
        params.append((p, opt))
    acts = net.acts
    act_fn = {"relu": torch.relu, "identity": lambda z: z, "tanh": torch.tanh,
              "sigmoid": torch.sigmoid}
    rows = {}

    def snapshot():
        st = {k: np.stack([p[k].detach().numpy() for p, _ in params]) if k in params[0][0]
              else None for k in ("W", "b", "a", "c")}
        return _np_curves(st["W"], st["b"], st["a"], st["c"], acts, specs, emb, x, y, xt, yt,
                          shift)

    for step in range(steps + 1):
        if step in records:
            rows[step] = snapshot()
        if step == steps:
            break
        for e, (s, (p, opt)) in enumerate(zip(specs, params)):
            xe, ye = (x[e], y[e]) if x.ndim == 3 else (x, y)
            hid = act_fn[acts[e]](xe @ p["W"].T + (p["b"] if "b" in p else 0.0))
            f = hid @ p["a"] + (p["c"] if "c" in p else 0.0)
            m = ye * f
            loss = (torch.relu(1 - m) if s.loss == "hinge" else torch.nn.functional.softplus(-m))
            opt.zero_grad()
            loss.mean().backward()
            opt.step()
    final = {k: np.stack([p[k].detach().numpy() for p, _ in params]) for k in params[0][0]}
    return rows, final


def _double_emb(emb):
    return fc.Embedding(emb.core.double(), emb.background.double())


@pytest.mark.parametrize("frozen_output", [True, False])
def test_train_two_layer_is_torch_optim_per_member_and_records_numpy_curves(frozen_output):
    emb32 = fc.random_embedding(2, 3, 7, seed=1)
    tr, te = fc.sample_toy(9, emb32, seed=1), fc.sample_toy(7, emb32, seed=2)
    emb = _double_emb(emb32)
    x, y, xt = tr.x.double(), tr.y.double(), te.x.double()
    y = y[torch.tensor([0, 2, 1, 3, 4, 5, 6, 7, 8])]      # shuffled, unbalanced (4 vs 5)
    yt = te.y.double()
    specs = [fc.NetSpec(act="relu", lr=0.3, momentum=0.9, weight_decay=0.05),
             fc.NetSpec(act="identity", lr=0.1, momentum=0.0, weight_decay=0.2),
             fc.NetSpec(act="tanh", loss="logistic", lr=0.2, momentum=0.5, weight_decay=0.0),
             fc.NetSpec(act="relu", optimizer="adamw", loss="logistic", lr=0.05,
                        weight_decay=0.3)]
    net = fc.init_two_layer([s.act for s in specs], 7, 4, [2, 5, 1, 9],
                            frozen_output=frozen_output, bias=True).double()
    start = {k: getattr(net, k).detach().clone() for k in ("W", "b", "a")}
    rows, final = _reference_training(net, specs, x, y, xt, yt, emb, 7, {0, 3, 6, 7}, 0.6)
    hist = fc.train_two_layer(net, specs, x, y, 7, emb, xt, yt, shift=0.6, record_every=3)
    assert hist.step == [0, 3, 6, 7]
    for k in final:
        np.testing.assert_allclose(getattr(net, k).detach().numpy(), final[k], rtol=1e-10,
                                   atol=1e-12, err_msg=k)
    assert not torch.allclose(net.W.detach(), start["W"])
    for i, step in enumerate(hist.step):
        for name, want in rows[step].items():
            tol = 1e-6 if name.endswith("acc") else 1e-12      # accuracies are float32
            np.testing.assert_allclose(hist.array(name)[i], want, rtol=1e-9, atol=tol,
                                       err_msg=f"{name} at step {step}")
    assert hist.array("core_norm").shape == (4, 4)


def test_train_two_layer_on_one_sample_per_member_and_without_a_test_set():
    emb32 = fc.random_embedding(2, 2, 5, seed=0)
    parts = [fc.sample_toy(7, emb32, "default", seed=s) for s in (3, 8)]
    emb = _double_emb(emb32)
    x = torch.stack([p.x for p in parts]).double()
    y = torch.stack([p.y for p in parts]).double()
    y[1] = -y[1]
    specs = [fc.NetSpec(act="tanh", loss="logistic", optimizer="adamw", lr=0.05,
                        weight_decay=0.01),
             fc.NetSpec(act="tanh", loss="hinge", optimizer="sgd", lr=0.2, weight_decay=0.1)]
    net = fc.init_two_layer(["tanh", "tanh"], 5, 6, [1, 2], frozen_output=False,
                            bias=True).double()
    rows, final = _reference_training(net, specs, x, y, x, y, emb, 6, {0, 6}, 1.0)
    hist = fc.train_two_layer(net, specs, x, y, 6, emb)        # record_every 25 by default
    assert hist.step == [0, 6]
    assert hist.id_loss == [] and hist.ood_acc == []
    for k in final:
        np.testing.assert_allclose(getattr(net, k).detach().numpy(), final[k], rtol=1e-10,
                                   atol=1e-12)
    for i, step in enumerate(hist.step):
        for name in ("core_norm", "background_norm", "background_mean", "background_orth",
                     "train_loss"):
            np.testing.assert_allclose(hist.array(name)[i], rows[step][name], rtol=1e-9,
                                       atol=1e-12, err_msg=name)
    with pytest.raises(ValueError, match="not recorded"):
        hist.array("id_acc")
    with pytest.raises(ValueError, match="name"):
        hist.array("step")


def test_train_two_layer_records_every_k_steps_and_the_last():
    emb = fc.random_embedding(2, 2, 5, seed=0)
    d = fc.sample_toy(6, emb, seed=0)
    for steps, every, want in ((6, 3, [0, 3, 6]), (5, 2, [0, 2, 4, 5]), (3, 5, [0, 3]),
                               (4, 1, [0, 1, 2, 3, 4])):
        net = fc.init_two_layer(["relu"], 5, 2, [0])
        assert fc.train_two_layer(net, [fc.NetSpec()], d.x, d.y, steps, emb,
                                  record_every=every).step == want
    net = fc.init_two_layer(["relu"], 5, 2, [0])
    assert fc.train_two_layer(net, [fc.NetSpec()], d.x, d.y, 60, emb).step == [0, 25, 50, 60]


def test_the_optimizer_leaves_frozen_tensors_out_and_sets_each_member():
    specs = [fc.NetSpec(optimizer="adamw", lr=0.02, weight_decay=0.3),
             fc.NetSpec(lr=0.4, momentum=0.25, weight_decay=0.0)]
    W = torch.nn.Parameter(torch.ones(2, 3, dtype=torch.float64))
    frozen = torch.zeros(2, 3, dtype=torch.float64)
    opt = fc._optimizer([W, frozen], specs)
    assert opt.params == [W]
    g = torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]], dtype=torch.float64)
    opt.step([g])
    # member 1: SGD, first step buf = g, p = 1 - 0.4 g; member 0: AdamW, first step
    # p = (1 - lr wd) - lr sign(g) (|m_hat / sqrt(v_hat)| = 1)
    np.testing.assert_allclose(W[1].detach().numpy(), 1 - 0.4 * g[1].numpy(), rtol=1e-12)
    want0 = (1 - 0.02 * 0.3) - 0.02 * np.sign(g[0].numpy()) * np.abs(g[0].numpy()) / (
        np.abs(g[0].numpy()) + 1e-8)
    np.testing.assert_allclose(W[0].detach().numpy(), want0, rtol=1e-9)


def test_shift_sweep_against_numpy():
    emb32 = fc.random_embedding(2, 3, 6, seed=4)
    d = fc.sample_toy(7, emb32, seed=5)
    emb = _double_emb(emb32)
    x, y = d.x.double(), d.y.double()
    specs = [fc.NetSpec(act="relu", loss="logistic"), fc.NetSpec(act="tanh", loss="hinge"),
             fc.NetSpec(act="relu", loss="hinge")]
    net = fc.init_two_layer([s.act for s in specs], 6, 4, [3, 1, 7], frozen_output=False,
                            bias=True).double()
    mags = np.array([-0.5, 0.0, 1.25])
    out = fc.shift_sweep(net, specs, x, y, emb, mags)
    assert out["loss"].shape == (3, 3) and out["margins"].shape == (3, 3, 7)
    np.testing.assert_array_equal(out["magnitude"], mags)
    W, b, a, c = (getattr(net, k).detach().numpy() for k in ("W", "b", "a", "c"))
    B = emb.background.double().numpy()
    for i, m in enumerate(mags):
        f = _np_forward(W, net.acts, a, b, c, x.numpy() - m * B.sum(1))[2]
        yn = y.numpy()
        np.testing.assert_allclose(out["margins"][i], yn * f, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(out["acc"][i], (yn * f > 0).mean(-1))
        np.testing.assert_allclose(out["loss"][i], [np_loss(s.loss, f[e], yn)
                                                    for e, s in enumerate(specs)], rtol=1e-10)
    assert fc.shift_sweep(net, specs, x, y, emb, [0.3])["acc"].shape == (1, 3)
    with pytest.raises(ValueError, match="magnitudes"):
        fc.shift_sweep(net, specs, x, y, emb, [])


def _sk_probe(h_train, y_train, evals, max_iter):
    from sklearn.linear_model import LogisticRegression

    H = h_train.double().numpy()
    mu, sd = H.mean(0), H.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    clf = LogisticRegression(max_iter=max_iter).fit((H - mu) / sd, y_train.numpy())
    return [float(np.mean(clf.predict((h.double().numpy() - mu) / sd) == y.numpy()))
            for h, y in evals]


def test_linear_probe_is_standardized_logistic_regression():
    import warnings

    rng = np.random.default_rng(3)
    n = 31
    y = np.where(rng.random(n) < 0.35, -1.0, 1.0)
    # one informative feature on a tiny scale and two large noise features: standardization matters
    H = np.stack([1e-3 * (y + 0.8 * rng.normal(size=n)), 50 * rng.normal(size=n),
                  200 + 30 * rng.normal(size=n)], 1)
    yt = np.where(rng.random(40) < 0.6, -1.0, 1.0)
    Ht = np.stack([1e-3 * (yt + 0.8 * rng.normal(size=40)), 50 * rng.normal(size=40),
                   200 + 30 * rng.normal(size=40)], 1)
    T = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
    evals = [(T(Ht), T(yt)), (T(H), T(y))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fc.linear_probe(T(H), T(y), evals)
        want = _sk_probe(T(H), T(y), evals, 3000)
        assert got == pytest.approx(want, abs=1e-12)
        assert got[1] > 0.8
        short = fc.linear_probe(T(H), T(y), evals, max_iter=1)
        assert short == pytest.approx(_sk_probe(T(H), T(y), evals, 1), abs=1e-12)



def test_linear_probe_max_iter_is_passed_on():
    from unittest import mock

    import sklearn.linear_model as lm

    seen = []
    real = lm.LogisticRegression

    def spy(*args, **kwargs):
        seen.append(kwargs.get("max_iter"))
        return real(*args, **kwargs)

    h = torch.tensor([[0.0, 1.0], [1.0, 0.5], [2.0, -1.0], [3.0, 0.0]])
    y = torch.tensor([-1.0, -1.0, 1.0, 1.0])
    with mock.patch.object(lm, "LogisticRegression", spy):
        assert fc.linear_probe(h, y, [(h, y)], max_iter=17) == [1.0]
        fc.linear_probe(h, y, [(h, y)])
    assert seen == [17, 3000]


# ---------------------------------------------------------------------------------------------
# configurations and the experiments' specs
# ---------------------------------------------------------------------------------------------
def test_constants_and_config_defaults_are_the_documented_ones():
    assert fc.KINDS == ("theory", "default") and fc.BINARY_LOSSES == ("hinge", "logistic")
    assert fc.OPTIMIZERS == ("sgd", "adamw")
    assert fc.VARIANTS == ("GELU", "SiLU", "leaky ReLU", "tanh", "sigmoid", "AdamW",
                           "logistic loss")
    assert fc.ACT_LABELS["relu"] == "ReLU" and fc.ACT_LABELS["identity"] == "linear"
    toy = dict(n=1000, d_core=32, d_background=32, dim=256, width=256, weight_decay=1e-3,
               centred=False)
    want = {
        fc.ToyConfig: toy,
        fc.TheoryConfig: dict(toy, n_test=1000, steps=400, lr=0.05, adamw_lr=2.5e-3, momentum=0.9,
                              bias=True, seeds_per_variant=1, record_every=10,
                              variants=fc.VARIANTS),
        fc.DefaultConfig: dict(toy, steps=1000, lr=1e-3, replicates=8, record_every=20,
                               activations=("relu",)),
        fc.DistillConfig: dict(toy, n_test=1000, teacher_steps=1000, student_steps=1000, lr=1e-3,
                               record_every=25, target="hidden"),
        fc.Mnist1dConfig: dict(n_train=4000, n_test=2000, n_background=40, width=256, depth=2,
                               epochs=30, batch_size=128, lr=1e-3, weight_decay=1e-2,
                               magnitudes=(0.0, 0.25, 0.5, 0.75, 1.0), centred_mlp=False,
                               centred_linear=False, constant=False),
    }
    for cls, values in want.items():
        cfg = cls()
        got = {k: getattr(cfg, k) for k in values}
        assert got == values, cls.__name__
    full = {fc.TheoryConfig: dict(steps=20_000, lr=1e-3, adamw_lr=1e-3, seeds_per_variant=3,
                                  record_every=200),
            fc.DefaultConfig: dict(steps=20_000, replicates=16, record_every=250),
            fc.DistillConfig: dict(teacher_steps=5000, student_steps=5000, record_every=100),
            fc.Mnist1dConfig: dict(width=1024, epochs=100)}
    for cls, values in full.items():
        cfg = cls.full()
        assert {k: getattr(cfg, k) for k in values} == values, cls.__name__
        assert cfg.n == 1000 if hasattr(cfg, "n") else cfg.n_train == 4000


def test_theory_specs_follow_the_config_and_the_variant_order():
    cfg = fc.TheoryConfig(lr=0.07, adamw_lr=0.004, momentum=0.3, weight_decay=0.02,
                          variants=("logistic loss", "AdamW", "sigmoid", "leaky ReLU", "SiLU",
                                    "tanh", "GELU"))
    specs = fc.theory_specs(cfg)
    got = [(s.name, s.act, s.loss, s.optimizer, s.lr, s.momentum, s.weight_decay) for s in specs]
    sgd = (0.07, 0.3, 0.02)
    assert got == [("ReLU", "relu", "hinge", "sgd") + sgd,
                   ("linear", "identity", "hinge", "sgd") + sgd,
                   ("logistic loss", "relu", "logistic", "sgd") + sgd,
                   ("AdamW", "relu", "hinge", "adamw", 0.004, 0.3, 0.02),
                   ("sigmoid", "sigmoid", "hinge", "sgd") + sgd,
                   ("leaky ReLU", "leaky_relu", "hinge", "sgd") + sgd,
                   ("SiLU", "silu", "hinge", "sgd") + sgd,
                   ("tanh", "tanh", "hinge", "sgd") + sgd,
                   ("GELU", "gelu", "hinge", "sgd") + sgd]
    assert [s.name for s in fc.theory_specs(fc.TheoryConfig(variants=()))] == ["ReLU", "linear"]
    with pytest.raises(ValueError, match="variants"):
        fc.theory_specs(fc.TheoryConfig(variants=("linear",)))


# ---------------------------------------------------------------------------------------------
# the experiment runners, rebuilt here from the pieces tested above
# ---------------------------------------------------------------------------------------------
def _same_history(h1, h2):
    assert h1.step == h2.step
    for name in fc._CURVES:
        a, b = getattr(h1, name), getattr(h2, name)
        assert len(a) == len(b), name
        for u, v in zip(a, b):
            torch.testing.assert_close(u, v, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("seed,centred,bias", [(1, False, True), (2, True, False)])
def test_run_theory_is_its_recipe(seed, centred, bias):
    cfg = fc.TheoryConfig(n=9, n_test=7, d_core=2, d_background=3, dim=7, width=4, steps=5,
                          lr=0.2, adamw_lr=0.03, momentum=0.6, weight_decay=0.05, bias=bias,
                          seeds_per_variant=2, record_every=2, centred=centred,
                          variants=("tanh", "AdamW"))
    res = fc.run_theory(cfg, seed=seed, device="cpu")
    emb = fc.random_embedding(2, 3, 7, seed=seed)
    train = fc.sample_toy(9, emb, "theory", seed=1000 * seed + 1, centred=centred)
    test = fc.sample_toy(7, emb, "theory", seed=1000 * seed + 2, centred=centred)
    specs = [s for s in fc.theory_specs(cfg) for _ in range(2)]
    seeds = [1000 * seed + 10 + i for i in range(8)]
    net = fc.init_two_layer([s.act for s in specs], 7, 4, seeds, frozen_output=True, bias=bias)
    assert torch.equal(res.W_init, net.W.detach())
    assert (res.b_init is None) == (not bias)
    if bias:
        assert torch.equal(res.b_init, net.b.detach())
    hist = fc.train_two_layer(net, specs, train.x, train.y, 5, emb, test.x, test.y,
                              record_every=2)
    assert torch.equal(res.emb.core, emb.core)
    for a, b in ((res.train, train), (res.test, test)):
        assert all(torch.equal(getattr(a, k), getattr(b, k))
                   for k in ("x", "y", "core", "background"))
    assert res.specs == specs and res.cfg is cfg
    torch.testing.assert_close(res.net.W.detach(), net.W.detach(), rtol=1e-6, atol=1e-7)
    assert not res.net.a.requires_grad
    _same_history(res.history, hist)
    assert res.history.step == [0, 2, 4, 5]

    # the result's helpers against the history and weights read directly
    assert res.members("AdamW") == [6, 7] and res.members("linear") == [2, 3]
    bg = hist.array("background_norm")
    assert res.background_ratio("tanh") == pytest.approx(float(np.mean(bg[-1, 4:6] / bg[0, 4:6])),
                                                         rel=1e-6)
    assert res.final("ood_loss", "ReLU") == pytest.approx(
        float(hist.array("ood_loss")[-1, :2].mean()), rel=1e-6)
    assert res.final("id_acc", "AdamW") == pytest.approx(float(hist.array("id_acc")[-1, 6:].mean()))
    x = test.x[:3]
    W0, W1 = res.W_init[4], res.net.W.detach()[4]
    b0 = res.b_init[4] if bias else 0.0
    b1 = res.net.b.detach()[4] if bias else 0.0
    torch.testing.assert_close(res.preactivations(x, "tanh", initial=True), x @ W0.T + b0)
    torch.testing.assert_close(res.preactivations(x, "tanh"), x @ W1.T + b1)
    torch.testing.assert_close(res.preactivations(x, "linear", initial=True),
                               x @ res.W_init[2].T + (res.b_init[2] if bias else 0.0))
    with pytest.raises(ValueError, match="label"):
        res.members("GELU")


def test_run_theory_seed_and_device_defaults():
    cfg = fc.TheoryConfig(n=6, n_test=4, d_core=2, d_background=2, dim=5, width=2, steps=1,
                          variants=(), record_every=1)
    a, b = fc.run_theory(cfg), fc.run_theory(cfg, seed=0, device="cpu")
    assert torch.equal(a.net.W, b.net.W) and torch.equal(a.train.x, b.train.x)
    c = fc.run_theory(cfg, seed=3, device="cpu")
    assert not torch.equal(c.train.x, b.train.x) and not torch.equal(c.W_init, b.W_init)


@pytest.mark.parametrize("seed,centred", [(2, False), (1, True)])
def test_run_default_is_its_recipe(seed, centred):
    cfg = fc.DefaultConfig(n=7, d_core=2, d_background=3, dim=6, width=4, steps=4, lr=0.02,
                           weight_decay=0.03, replicates=2, record_every=3, centred=centred,
                           activations=("tanh", "relu"))
    res = fc.run_default(cfg, seed=seed, device="cpu")
    emb = fc.random_embedding(2, 3, 6, seed=seed)

    def stacked(offset):
        parts = [fc.sample_toy(7, emb, "default", seed=1000 * seed + 100 * r + offset,
                               centred=centred) for r in range(2)] * 2
        return fc.ToyData(*(torch.stack([getattr(p, k) for p in parts])
                            for k in ("x", "y", "core", "background")))

    train, test = stacked(3), stacked(4)
    specs = [fc.NetSpec(act=a, loss="logistic", optimizer="adamw", lr=0.02, weight_decay=0.03,
                        label=f"{lab} (default)")
             for a, lab in (("tanh", "tanh"), ("relu", "ReLU")) for _ in range(2)]
    assert res.specs == specs
    seeds = [1000 * seed + 50 + r for _ in range(2) for r in range(2)]
    net = fc.init_two_layer(["tanh", "tanh", "relu", "relu"], 6, 4, seeds, frozen_output=False,
                            bias=True)
    assert torch.equal(res.W_init, net.W.detach()) and torch.equal(res.b_init, net.b.detach())
    hist = fc.train_two_layer(net, specs, train.x, train.y, 4, emb, train.x, train.y,
                              record_every=3)
    for a, b in ((res.train, train), (res.test, test)):
        assert all(torch.equal(getattr(a, k), getattr(b, k))
                   for k in ("x", "y", "core", "background"))
    for k in ("W", "b", "a", "c"):
        torch.testing.assert_close(getattr(res.net, k).detach(), getattr(net, k).detach(),
                                   rtol=1e-6, atol=1e-7)
    assert res.net.a.requires_grad
    _same_history(res.history, hist)
    assert res.members("ReLU (default)") == [2, 3]
    with pytest.raises(ValueError, match="activations"):
        fc.run_default(fc.DefaultConfig(n=4, d_core=1, d_background=1, dim=3, width=2, steps=1,
                                        activations=()))


@pytest.mark.parametrize("seed,centred", [(1, True), (2, False)])
def test_run_distillation_matches_the_old_loops_at_other_seeds_and_centred(seed, centred):
    from tests import reference_loops_contamination as ref

    cfg = fc.DistillConfig(n=11, n_test=9, d_core=2, d_background=3, dim=7, width=4,
                           teacher_steps=6, student_steps=5, record_every=2, lr=0.02,
                           weight_decay=0.05, centred=centred)
    old = ref.old_run_distillation(cfg, seed=seed, device="cpu").to_dict()
    new = fc.run_distillation(cfg, seed=seed, device="cpu").to_dict()
    assert new["curve_step"] == [0, 2, 4, 5]
    assert set(new) == set(old)
    for key in old:
        if isinstance(old[key], dict):
            assert new[key] == old[key], key
        else:
            torch.testing.assert_close(torch.tensor(new[key], dtype=torch.float64),
                                       torch.tensor(old[key], dtype=torch.float64),
                                       rtol=1e-5, atol=1e-6)
    # the recorded curve ends at the reported errors, and the metrics at step 0 are the student's
    # initial weights measured here
    assert new["error_id"] == new["curve_id"][-1] and new["error_ood"] == new["curve_ood"][-1]
    emb = fc.random_embedding(2, 3, 7, seed=seed)
    W0 = fc.init_two_layer(["relu"], 7, 4, [1000 * seed + 71], frozen_output=False,
                           bias=True).W.detach()
    assert new["student_background_norm"][0] == pytest.approx(
        float(fc.projection_norms(W0, emb)[1].mean()), rel=1e-6)
    assert new["student_background_mean"][0] == pytest.approx(
        float(fc.mean_direction_components(W0, emb)[0].abs().mean()), rel=1e-6)


# ---------------------------------------------------------------------------------------------
# MNIST-1D
# ---------------------------------------------------------------------------------------------
def test_append_background_and_shift_last():
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    g = torch.Generator().manual_seed(9)
    out = fc.append_background(x, 2, g)
    u = torch.rand(2, 2, generator=torch.Generator().manual_seed(9))
    assert torch.equal(out, torch.cat([x, u], 1))
    s = fc.shift_last(out, 2, 0.3)
    assert torch.equal(s[:, :3], x) and torch.equal(s[:, 3:], u - 0.3)
    assert torch.equal(out[:, 3:], u)                     # the input is not changed in place
    whole = fc.shift_last(x, 3, -2.0)
    assert torch.equal(whole, x + 2.0)
    assert torch.equal(fc.shift_last(x, 1, 1.5)[:, :2], x[:, :2])


@pytest.mark.parametrize("centred_mlp", [False, True])
def test_run_mnist1d_is_its_recipe(centred_mlp):
    from gtlib.data import mnist1d
    from gtlib.models import MLP
    from gtlib.train import TrainConfig, accuracy, train

    seed = 2
    # a large weight decay (AdamW: x0.85 per step) so that it changes the accuracies measurably
    cfg = fc.Mnist1dConfig(n_train=60, n_test=30, n_background=5, width=8, depth=1, epochs=3,
                           batch_size=16, lr=0.05, weight_decay=3.0,
                           magnitudes=(1.0, -0.5, 0.0), centred_mlp=centred_mlp,
                           centred_linear=centred_mlp, constant=centred_mlp)
    out = fc.run_mnist1d(cfg, seed=seed, device="cpu")
    ds = mnist1d(60, 30, device="cpu")
    g = torch.Generator().manual_seed(1000 * seed + 8)
    x_tr = fc.append_background(ds.x, 5, g)
    x_te = fc.append_background(ds.x_test, 5, g)
    models = [("ReLU MLP", 1, 8, slice(None), 0, 0.0), ("linear", 0, 1, slice(None), 1, 0.0),
              ("background only", 0, 1, slice(40, None), 2, 0.0)]
    if centred_mlp:
        models.append(("ReLU MLP, centred", 1, 8, slice(None), 0, 0.5))
        models.append(("linear, centred", 0, 1, slice(None), 1, 0.5))
        models.append(("ReLU MLP, constant", 1, 8, slice(None), 0, None))  # background = 1/2
        models.append(("linear, constant", 0, 1, slice(None), 1, None))
    assert set(out) == {"magnitudes", "chance"} | {m[0] for m in models}
    assert out["magnitudes"] == [1.0, -0.5, 0.0] and out["chance"] == pytest.approx(0.1)
    for name, depth, width, cols, i, offset in models:
        xtr = x_tr.clone()
        xte = x_te.clone()
        if offset is None:
            xtr[:, -5:] = 0.5
            xte[:, -5:] = 0.5
        else:
            xtr[:, -5:] -= offset
            xte[:, -5:] -= offset
        torch.manual_seed(1000 * seed + 80 + i)
        model = MLP(xtr[:, cols].shape[1], width, depth, 10)
        train(model, xtr[:, cols], ds.y, TrainConfig(
            optimizer="adamw", lr=0.05, weight_decay=3.0, batch_size=16, epochs=3,
            seed=1000 * seed + 90 + i, check_every=10 ** 9))
        with torch.no_grad():
            shift = []
            for m in (1.0, -0.5, 0.0):
                xs = xte.clone()
                xs[:, -5:] -= m
                shift.append(accuracy(model(xs[:, cols]), ds.y_test))
            assert out[name]["train"] == pytest.approx(accuracy(model(xtr[:, cols]), ds.y))
        assert out[name]["shift"] == pytest.approx(shift), name
        assert out[name]["ID"] == out[name]["shift"][2] and out[name]["OOD"] == out[name]["shift"][0]


# ---------------------------------------------------------------------------------------------
# edges: the smallest valid inputs are accepted, the first invalid ones refused
# ---------------------------------------------------------------------------------------------
def test_edges_of_the_valid_inputs():
    emb = axis_embedding()
    two = fc.sample_toy(2, emb, seed=1)
    assert two.y.tolist() == [1.0, -1.0]
    with pytest.raises(ValueError, match="n"):
        fc.sample_toy(1, emb)
    # the subspaces filling R^d leave no off-subspace direction; one spare dimension does
    with pytest.raises(ValueError, match="fill"):
        fc.off_subspace_direction(fc.random_embedding(2, 3, 5, seed=0))
    v = fc.off_subspace_direction(fc.random_embedding(2, 3, 6, seed=0), seed=1)
    assert float(v.norm()) == pytest.approx(1.0, rel=1e-6)
    # a probe needs both classes
    h = torch.tensor([[0.0, 1.0], [1.0, 0.5], [2.0, -1.0]])
    with pytest.raises(ValueError, match="both classes"):
        fc.linear_probe(h, torch.ones(3), [(h, torch.ones(3))])
    with pytest.raises(ValueError, match="both classes"):
        fc.linear_probe(h, -torch.ones(3), [(h, torch.ones(3))])
    # odd widths are fine with a trainable output layer, not with the frozen +-1/h one
    assert fc.init_two_layer(["relu"], 3, 3, [0], frozen_output=False).width == 3
    with pytest.raises(ValueError, match="width"):
        fc.init_two_layer(["relu"], 3, 3, [0])
    # train_two_layer: zero steps allowed, record_every 0 refused, test sets come in pairs
    d = fc.sample_toy(4, emb, seed=0)
    net = fc.init_two_layer(["relu"], 6, 2, [0])
    W0 = net.W.detach().clone()
    assert fc.train_two_layer(net, [fc.NetSpec()], d.x, d.y, 0, emb).step == [0]
    assert torch.equal(net.W.detach(), W0)
    with pytest.raises(ValueError, match="record_every"):
        fc.train_two_layer(net, [fc.NetSpec()], d.x, d.y, 1, emb, record_every=0)
    with pytest.raises(ValueError, match="together"):
        fc.train_two_layer(net, [fc.NetSpec()], d.x, d.y, 1, emb, x_test=d.x)
    # shift_sweep takes a 1-D array of magnitudes, not a matrix
    out = fc.shift_sweep(net, [fc.NetSpec()], d.x, d.y, emb, np.array([0.5, 2.0]))
    assert out["acc"].shape == (2, 1)
    with pytest.raises(ValueError, match="magnitudes"):
        fc.shift_sweep(net, [fc.NetSpec()], d.x, d.y, emb, np.zeros((2, 2)))
    # activation_asymmetry needs both classes; relative_error refuses an all-zero target
    with pytest.raises(ValueError, match="both classes"):
        fc.activation_asymmetry(torch.ones(3, 2), -torch.ones(3))
    with pytest.raises(ValueError, match="target"):
        fc.relative_error(torch.ones(1, 2), torch.zeros(1, 2))


def test_remaining_defaults_shift_one_and_seed_zero():
    emb = fc.random_embedding(2, 2, 5, seed=0)
    d, t = fc.sample_toy(5, emb, seed=0), fc.sample_toy(5, emb, seed=1)
    runs = []
    for kw in ({}, {"shift": 1.0}, {"shift": 0.5}):
        net = fc.init_two_layer(["relu", "tanh"], 5, 2, [0, 1], frozen_output=False, bias=True)
        h = fc.train_two_layer(net, [fc.NetSpec(), fc.NetSpec(act="tanh", loss="logistic")],
                               d.x, d.y, 2, emb, t.x, t.y, record_every=1, **kw)
        runs.append(h.array("ood_loss"))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.allclose(runs[0], runs[2])
    dcfg = fc.DefaultConfig(n=4, d_core=1, d_background=2, dim=4, width=2, steps=1,
                            replicates=1, record_every=1)
    a, b = fc.run_default(dcfg, device="cpu"), fc.run_default(dcfg, seed=0, device="cpu")
    assert torch.equal(a.train.x, b.train.x) and torch.equal(a.net.W, b.net.W)
    assert not torch.equal(fc.run_default(dcfg, seed=1, device="cpu").train.x, a.train.x)
    scfg = fc.DistillConfig(n=6, n_test=4, d_core=1, d_background=2, dim=4, width=2,
                            teacher_steps=1, student_steps=1, record_every=1)
    assert (fc.run_distillation(scfg, device="cpu").to_dict()
            == fc.run_distillation(scfg, seed=0, device="cpu").to_dict())
