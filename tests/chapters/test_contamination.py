"""Tests of gtlib.contamination, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""
import copy
import math
import numpy as np
import pytest
import torch
from dataclasses import replace

from gtlib import contamination as fc
from gtlib.contamination import binary_accuracy, label_correlations

from tests.oracles import contamination_loops as ref


@pytest.fixture(scope="module")
def emb():
    return fc.random_embedding(4, 3, 12, seed=1)


def _weights_with_components(emb, along, rest_scale, seed):
    """Weights (h, d) whose component along the background mean direction is ``along``."""
    g = torch.Generator().manual_seed(seed)
    k = emb.background.shape[1]
    e = torch.ones(k) / math.sqrt(k)
    r = torch.randn(len(along), k, generator=g)
    r = r - (r @ e)[:, None] * e                      # orthogonal to e inside the background
    core = torch.randn(len(along), emb.core.shape[1], generator=g)
    return (along[:, None] * e + rest_scale * r) @ emb.background.T + core @ emb.core.T


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


def _sk_probe(h_train, y_train, evals, max_iter):
    from sklearn.linear_model import LogisticRegression

    H = h_train.double().numpy()
    mu, sd = H.mean(0), H.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    clf = LogisticRegression(max_iter=max_iter).fit((H - mu) / sd, y_train.numpy())
    return [float(np.mean(clf.predict((h.double().numpy() - mu) / sd) == y.numpy()))
            for h, y in evals]


def _same_history(h1, h2):
    assert h1.step == h2.step
    for name in fc._CURVES:
        a, b = getattr(h1, name), getattr(h2, name)
        assert len(a) == len(b), name
        for u, v in zip(a, b):
            torch.testing.assert_close(u, v, rtol=1e-6, atol=1e-7)


NAN = float("nan")


@pytest.fixture(scope="module")
def emb_bou():
    return fc.random_embedding(3, 3, 10, seed=0)


@pytest.fixture(scope="module")
def toy(emb_bou):
    return fc.sample_toy(20, emb_bou, "theory", seed=0)


@pytest.fixture(scope="module")
def nets():
    return fc.init_two_layer(["relu", "tanh"], 10, 6, [0, 1])


def nan_at(t):
    t = t.clone()
    t.view(-1)[0] = NAN
    return t


def refused(error, name, fn, *args, **kwargs):
    with pytest.raises(error, match=name) as info:
        fn(*args, **kwargs)
    return str(info.value)


# The old MemberOptimizer held lr, momentum and weight decay as float32 tensors and wrote its own
# arithmetic: SGD as p - lr_t * buf with buf = mom * buf + (g + wd * p), AdamW as
# p - lr * (m_hat / (sqrt(v_hat) + eps) + wd * p) with m = b1 * m + (1 - b1) g. The engine uses
# PyTorch's formulas (p + (-lr) * buf in one fused add, m.lerp_(g, 1 - b1),
# p * (1 - lr wd) - (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps)). In float32 the two round
# differently: measured over 25 steps, weights of size ~0.35 differ by at most 4.5e-7 (a few
# float32 ulps) and the recorded curves by at most 3e-7, hence rtol 1e-5 and atol 1e-6.
# The samples have an odd size, so the classes are unequal: with balanced classes, a unit active
# on every point inside the hinge has the bias gradient -a_j mean(y) = 0 exactly, its float32
# gradient is rounding noise, and AdamW (which divides by the gradient's size) turns that noise
# into steps of size lr, so two loops one ulp apart walk apart by O(lr) (measured 1e-3 in 10
# steps): a property of Adam at a zero gradient, in the old loop as in the new.
RTOL, ATOL = 1e-5, 1e-6


CURVES = ("core_norm", "background_norm", "background_mean", "background_orth", "train_loss",
          "id_loss", "ood_loss", "id_acc", "ood_acc")


def _specs():
    # every case of the chapter in one stack: SGD with momentum and coupled decay at two learning
    # rates, AdamW, hinge and logistic losses, five activations
    return [fc.NetSpec(act="relu", lr=0.05, momentum=0.9, weight_decay=1e-3),
            fc.NetSpec(act="identity", lr=0.05, momentum=0.9, weight_decay=1e-3),
            fc.NetSpec(act="gelu", lr=0.02, momentum=0.5, weight_decay=0.0),
            fc.NetSpec(act="relu", optimizer="adamw", lr=2.5e-3, weight_decay=1e-2),
            fc.NetSpec(act="tanh", loss="logistic", lr=0.05, momentum=0.9, weight_decay=1e-3)]


def _toy(kind="theory", replicates=None):
    emb = fc.random_embedding(3, 2, 8, seed=0)
    if replicates is None:
        return emb, fc.sample_toy(41, emb, kind, seed=1), fc.sample_toy(21, emb, kind, seed=2)
    parts = [[fc.sample_toy(n, emb, kind, seed=10 * r + s) for r in range(replicates)]
             for n, s in ((41, 1), (21, 2))]
    return (emb,) + tuple(fc.ToyData(*(torch.stack([getattr(p, k) for p in ps])
                                       for k in ("x", "y", "core", "background")))
                          for ps in parts)


def _compare(old_net, new_net, old_hist, new_hist, **tol):
    assert new_hist.step == old_hist.step
    for name, p in new_net.named_parameters():
        torch.testing.assert_close(p.detach(), getattr(old_net, name).detach(), **tol)
    for name in CURVES:
        assert len(getattr(new_hist, name)) == len(getattr(old_hist, name))
        for a, b in zip(getattr(new_hist, name), getattr(old_hist, name)):
            torch.testing.assert_close(a, b, **tol)


# =================================================================================================
# contamination.Embedding
# =================================================================================================
@pytest.mark.reference
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


@pytest.mark.boundary
def test_embedding_checks_its_bases(emb_bou):
    refused(ValueError, "core", fc.Embedding, nan_at(emb_bou.core), emb_bou.background)
    refused(ValueError, "core", fc.Embedding, emb_bou.core[:0], emb_bou.background)
    refused(ValueError, "core", fc.Embedding, emb_bou.core[0], emb_bou.background)
    refused(TypeError, "core", fc.Embedding, emb_bou.core.long(), emb_bou.background)
    refused(TypeError, "core", fc.Embedding, None, emb_bou.background)
    refused(TypeError, "background", fc.Embedding, emb_bou.core, emb_bou.background.tolist())
    refused(ValueError, "orthonormal", fc.Embedding, torch.ones(10, 3), torch.ones(10, 3))
    same = fc.Embedding(emb_bou.core.double(), emb_bou.background.double())  # float64 bases are fine
    assert same.dim == 10


# =================================================================================================
# contamination.random_embedding
# =================================================================================================
@pytest.mark.reference
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


# =================================================================================================
# contamination.ToyData
# =================================================================================================
@pytest.mark.reference
def test_toy_data_checks_rows():
    x = torch.zeros(3, 6)
    fc.ToyData(x, torch.tensor([1.0, -1.0, 1.0]), torch.zeros(3, 2), torch.zeros(3, 3))
    with pytest.raises(ValueError, match="background"):
        fc.ToyData(x, torch.tensor([1.0, -1.0, 1.0]), torch.zeros(3, 2), torch.zeros(2, 3))
    with pytest.raises(ValueError, match="y"):
        fc.ToyData(x, torch.tensor([1.0, 0.0, 1.0]), torch.zeros(3, 2), torch.zeros(3, 3))


# =================================================================================================
# contamination.sample_core
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize("n", [5, 6])
def test_sample_core_theory_replays_the_generator(n):
    g = torch.Generator().manual_seed(3)
    z, y = fc.sample_core(n, "theory", 3, g)
    ref = torch.Generator().manual_seed(3)
    u = torch.rand(n, 3, generator=ref)
    want_y = torch.tensor([1.0] * (n // 2) + [-1.0] * (n - n // 2))
    assert torch.equal(y, want_y)
    assert torch.equal(z, u * want_y[:, None])


@pytest.mark.reference
def test_sample_core_default_lies_on_spheres_of_radius_one_and_two():
    g = torch.Generator().manual_seed(4)
    z, y = fc.sample_core(7, "default", 3, g)
    ref = torch.Generator().manual_seed(4)
    r = torch.randn(7, 3, generator=ref).double().numpy()
    r = r / np.linalg.norm(r, axis=1, keepdims=True)
    radius = np.array([1, 1, 1, 2, 2, 2, 2], dtype=float)
    np.testing.assert_allclose(z.numpy(), r * radius[:, None], rtol=1e-6, atol=1e-7)
    assert y.tolist() == [1, 1, 1, -1, -1, -1, -1]


@pytest.mark.boundary
def test_seeds_sizes_and_generators():
    refused(ValueError, "seed", fc.random_embedding, 3, 3, 10, seed=2 ** 64)
    refused(ValueError, "seed", fc.random_embedding, 3, 3, 10, seed=-1)
    refused(ValueError, "d_core", fc.sample_core, 10, "theory", 0, torch.Generator())
    refused(TypeError, "d_core", fc.sample_core, 10, "theory", True, torch.Generator())
    refused(TypeError, "generator", fc.sample_core, 10, "theory", 3, None)
    refused(ValueError, "kind", fc.sample_core, 10, "bogus", 3, torch.Generator())


# =================================================================================================
# contamination.sample_toy
# =================================================================================================
def test_sample_toy_configurations(emb):
    th = fc.sample_toy(100, emb, "theory", seed=3)
    assert th.y.sum() == 0 and th.x.shape == (100, 12)
    assert torch.all(th.core * th.y[:, None] >= 0)  # core sign equals the label
    assert torch.all((th.background >= 0) & (th.background <= 1))
    df = fc.sample_toy(100, emb, "default", seed=3)
    radius = df.core.norm(dim=1)
    assert torch.allclose(radius, torch.where(df.y > 0, 1.0, 2.0), atol=1e-5)
    assert torch.allclose(emb.embed(df.core, df.background), df.x)
    again = fc.sample_toy(100, emb, "default", seed=3)
    assert torch.equal(again.x, df.x)


def test_centred_background_is_the_same_draw_minus_half(emb):
    d = fc.sample_toy(50, emb, "theory", seed=4)
    c = fc.sample_toy(50, emb, "theory", seed=4, centred=True)
    assert torch.allclose(c.background, d.background - 0.5)
    assert torch.equal(c.core, d.core)


@pytest.mark.reference
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


@pytest.mark.reference
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


# =================================================================================================
# contamination.shift_background
# =================================================================================================
def test_shift_leaves_core_and_maps_uniform_to_negative_uniform(emb):
    d = fc.sample_toy(500, emb, "theory", seed=0)
    xs = fc.shift_background(d.x, emb, 1.0)
    assert torch.allclose(xs @ emb.core, d.x @ emb.core, atol=1e-5)
    assert torch.allclose(xs @ emb.background, d.background - 1.0, atol=1e-5)
    zb = xs @ emb.background
    assert zb.max() <= 1e-5 and zb.min() >= -1 - 1e-5
    assert torch.equal(fc.shift_background(d.x, emb, 0.0), d.x)


@pytest.mark.reference
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


@pytest.mark.boundary
def test_sample_toy_flags_and_shift(emb_bou, toy):
    refused(TypeError, "centred", fc.sample_toy, 10, emb_bou, centred="yes")
    refused(TypeError, "centred", fc.sample_toy, 10, emb_bou, centred=None)
    refused(ValueError, "x", fc.shift_background, nan_at(toy.x), emb_bou)
    refused(ValueError, "x", fc.shift_background, toy.x[:0], emb_bou)
    refused(TypeError, "x", fc.shift_background, toy.x.long(), emb_bou)
    refused(ValueError, "magnitude", fc.shift_background, toy.x, emb_bou, math.inf)
    refused(ValueError, "emb", fc.off_subspace_direction, fc.random_embedding(5, 5, 10))


# =================================================================================================
# contamination.off_subspace_direction
# =================================================================================================
def test_off_subspace_direction(emb):
    v = fc.off_subspace_direction(emb, seed=3)
    assert math.isclose(float(v.norm()), 1.0, rel_tol=1e-5)
    assert float((emb.core.T @ v).abs().max()) < 1e-5
    assert float((emb.background.T @ v).abs().max()) < 1e-5
    with pytest.raises(ValueError, match="fill"):
        fc.off_subspace_direction(fc.random_embedding(2, 2, 4))


@pytest.mark.reference
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


# =================================================================================================
# contamination.label_correlations
# =================================================================================================
def test_label_correlations_known_cases():
    y = torch.tensor([1.0, 1.0, -1.0, -1.0])
    feats = torch.stack([y, -2 * y, torch.ones(4), torch.tensor([1.0, -1.0, 1.0, -1.0])], 1)
    c = fc.label_correlations(feats, y)
    assert torch.allclose(c, torch.tensor([1.0, -1.0, 0.0, 0.0]), atol=1e-6)


@pytest.mark.reference
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


@pytest.mark.boundary
def test_labels_are_plus_minus_one_floats(toy):
    refused(ValueError, "y", fc.label_correlations, toy.x, (toy.y > 0).float())
    refused(ValueError, "y", fc.label_correlations, toy.x, nan_at(toy.y))
    refused(TypeError, "features", fc.label_correlations, toy.x.long(), toy.y)
    refused(ValueError, "features", fc.label_correlations, nan_at(toy.x), toy.y)
    refused(TypeError, "y", fc.binary_loss, "hinge", torch.zeros(2, 20), toy.y.long())
    refused(ValueError, "ToyData.y", fc.ToyData, toy.x, 2 * toy.y, toy.core, toy.background)


@pytest.mark.mutation
def test_label_correlations_are_pearsons_on_unbalanced_labels():
    g = torch.Generator().manual_seed(0)
    f = torch.randn(9, 3, generator=g)
    y = torch.tensor([1.0, 1, 1, 1, 1, 1, 1, -1, -1])
    ref = [np.corrcoef(f[:, j].numpy(), y.numpy())[0, 1] for j in range(3)]
    np.testing.assert_allclose(label_correlations(f, y).numpy(), ref, rtol=1e-5, atol=1e-6)


# =================================================================================================
# contamination.NetSpec
# =================================================================================================
@pytest.mark.parametrize("opt", ["sgd", "adamw"])
def test_the_specs_optimizer_matches_torch(opt):
    # the StackedOptimizer built from the members' specs steps each member as torch.optim would
    # alone; in float64 up to rounding (the hyperparameters are no longer held in float32)
    torch.manual_seed(0)
    w0 = torch.randn(2, 3, 4, dtype=torch.float64)
    x = torch.randn(6, 4, dtype=torch.float64)
    specs = [fc.NetSpec(optimizer=opt, lr=0.05, momentum=0.9, weight_decay=0.1),
             fc.NetSpec(optimizer=opt, lr=0.01, momentum=0.5, weight_decay=0.0)]
    W = torch.nn.Parameter(w0.clone())
    so = fc._optimizer([W, torch.zeros(2, requires_grad=False)], specs)
    assert so.params == [W]  # tensors that do not require grad are left out
    refs = [torch.nn.Parameter(w0[i].clone()) for i in range(2)]
    topts = [torch.optim.SGD([refs[i]], lr=s.lr, momentum=s.momentum, weight_decay=s.weight_decay)
             if opt == "sgd" else torch.optim.AdamW([refs[i]], lr=s.lr, weight_decay=s.weight_decay)
             for i, s in enumerate(specs)]
    for _ in range(5):
        so.step(torch.autograd.grad((torch.tanh(x @ W.transpose(1, 2)) ** 2).sum(), [W]))
        for r, o in zip(refs, topts):
            o.zero_grad()
            (torch.tanh(x @ r.T) ** 2).sum().backward()
            o.step()
    for i in range(2):
        torch.testing.assert_close(W[i].detach(), refs[i].detach(), rtol=1e-12, atol=1e-14)


def test_bad_inputs_raise(emb):
    with pytest.raises(ValueError, match="d_core"):
        fc.random_embedding(10, 10, 15)
    with pytest.raises(TypeError, match="d_core"):
        fc.random_embedding(2.5, 1, 8)
    with pytest.raises(ValueError, match="kind"):
        fc.sample_toy(10, emb, "other")
    with pytest.raises(TypeError, match="emb"):
        fc.sample_toy(10, "emb")
    with pytest.raises(ValueError, match="n"):
        fc.sample_toy(1, emb)
    with pytest.raises(ValueError, match="x"):
        fc.shift_background(torch.zeros(3, 5), emb)
    with pytest.raises(TypeError, match="magnitude"):
        fc.shift_background(torch.zeros(3, 12), emb, "1")
    with pytest.raises(ValueError, match="W"):
        fc.projection_norms(torch.zeros(3, 5), emb)
    with pytest.raises(ValueError, match="both classes"):
        fc.activation_asymmetry(torch.zeros(2, 3), torch.ones(2))
    with pytest.raises(ValueError, match="name must be one of"):
        fc.binary_loss("mse", torch.zeros(2), torch.ones(2))
    with pytest.raises(ValueError, match="loss"):
        fc.NetSpec(loss="mse").validate()
    with pytest.raises(ValueError, match="optimizer"):
        fc.NetSpec(optimizer="adam").validate()
    with pytest.raises(ValueError, match="lr"):
        fc.NetSpec(lr=0).validate()
    with pytest.raises(ValueError, match=r"acts\[0\] must be one of \('relu'"):
        fc.init_two_layer(["swish"], 3, 2, [0])
    with pytest.raises(ValueError, match="width"):
        fc.init_two_layer(["relu"], 3, 3, [0])
    with pytest.raises(ValueError, match="acts and seeds"):
        fc.init_two_layer(["relu"], 3, 2, [0, 1])
    net = fc.init_two_layer(["relu"], 12, 2, [0])
    with pytest.raises(ValueError, match="specs"):
        fc.train_two_layer(net, [fc.NetSpec(), fc.NetSpec()], torch.zeros(4, 12), torch.ones(4), 1, emb)
    with pytest.raises(ValueError, match="act"):
        fc.train_two_layer(net, [fc.NetSpec(act="gelu")], torch.zeros(4, 12), torch.ones(4), 1, emb)
    with pytest.raises(ValueError, match="x"):
        fc.train_two_layer(net, [fc.NetSpec()], torch.zeros(4, 12), torch.ones(5), 1, emb)
    with pytest.raises(ValueError, match="target"):
        fc.relative_error(torch.ones(2, 2), torch.zeros(2, 2))
    with pytest.raises(ValueError, match="variants"):
        fc.theory_specs(fc.TheoryConfig(variants=("swish",)))
    with pytest.raises(TypeError, match="cfg"):
        fc.run_theory(fc.DefaultConfig())
    with pytest.raises(ValueError, match="magnitudes"):
        fc.run_mnist1d(fc.Mnist1dConfig(magnitudes=(0.0, 0.5)))
    with pytest.raises(ValueError, match="n_background"):
        fc.shift_last(torch.zeros(2, 3), 4, 1.0)


@pytest.mark.reference
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


@pytest.mark.reference
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


@pytest.mark.reference
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


@pytest.mark.reference
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


@pytest.mark.reference
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


# =================================================================================================
# contamination.TwoLayerNets
# =================================================================================================
@pytest.mark.reference
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


@pytest.mark.boundary
def test_two_layer_nets_constructor():
    W, a = torch.randn(2, 6, 10), torch.randn(2, 6)
    refused(ValueError, "W", fc.TwoLayerNets, nan_at(W), ["relu", "tanh"], a)
    refused(ValueError, "W", fc.TwoLayerNets, W[:0], ["relu", "tanh"], a)
    refused(TypeError, "W", fc.TwoLayerNets, W.long(), ["relu", "tanh"], a)
    refused(TypeError, "acts", fc.TwoLayerNets, W, None, a)
    refused(ValueError, "acts", fc.TwoLayerNets, W, ["relu", "bogus"], a)
    refused(ValueError, "a", fc.TwoLayerNets, W, ["relu", "tanh"], nan_at(a))
    refused(TypeError, "a", fc.TwoLayerNets, W, ["relu", "tanh"], None)
    refused(TypeError, "b", fc.TwoLayerNets, W, ["relu", "tanh"], a, b=[[0.0] * 6] * 2)
    refused(TypeError, "train_output", fc.TwoLayerNets, W, ["relu", "tanh"], a,
            train_output="yes")
    refused(TypeError, "train_output", fc.TwoLayerNets, W, ["relu", "tanh"], a,
            train_output=None)


# =================================================================================================
# contamination.init_two_layer
# =================================================================================================
def test_frozen_output_layer_and_forward():
    net = fc.init_two_layer(["relu", "identity"], 5, 4, [0, 1], frozen_output=True, bias=False)
    assert torch.allclose(net.a[0], torch.tensor([0.25, 0.25, -0.25, -0.25]))
    assert not net.a.requires_grad and [n for n, _ in net.named_parameters()] == ["W"]
    x = torch.randn(7, 5)
    out = net(x)
    W = net.W.detach()
    assert torch.allclose(out[0], torch.relu(x @ W[0].T) @ net.a[0], atol=1e-6)
    assert torch.allclose(out[1], (x @ W[1].T) @ net.a[1], atol=1e-6)


def test_identity_net_is_linear_and_member_order_is_kept():
    net = fc.init_two_layer(["gelu", "identity", "gelu"], 3, 2, [0, 1, 2], bias=True)
    x = torch.randn(5, 3)
    assert torch.allclose(net(2 * x)[1] - net(x)[1], net(x)[1] - net(0 * x)[1], atol=1e-6)
    h = net.hidden(x)
    assert torch.allclose(h[2], torch.nn.functional.gelu(x @ net.W[2].T + net.b[2]), atol=1e-6)


@pytest.mark.reference
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


@pytest.mark.reference
def test_init_two_layer_defaults_are_frozen_output_without_bias():
    net = fc.init_two_layer(["relu"], 3, 6, [0])
    assert net.b is None and net.c is None and not net.a.requires_grad
    assert net.a[0].tolist() == pytest.approx([1 / 6] * 3 + [-1 / 6] * 3)


@pytest.mark.reference
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


@pytest.mark.boundary
def test_init_two_layer():
    refused(TypeError, "acts", fc.init_two_layer, None, 10, 6, [0, 1])
    refused(TypeError, "seeds", fc.init_two_layer, ["relu"], 10, 6, 3)
    refused(ValueError, r"seeds\[0\]", fc.init_two_layer, ["relu"], 10, 6, [-1])
    refused(TypeError, r"seeds\[0\]", fc.init_two_layer, ["relu"], 10, 6, [0.5])
    refused(TypeError, "frozen_output", fc.init_two_layer, ["relu"], 10, 6, [0],
            frozen_output="yes")
    refused(TypeError, "bias", fc.init_two_layer, ["relu"], 10, 6, [0], bias=None)


@pytest.mark.engine
@pytest.mark.parametrize("frozen_output", [True, False])
def test_train_two_layer_matches_the_old_loop(frozen_output):
    emb, train, test = _toy()
    specs = _specs()
    net = fc.init_two_layer([s.act for s in specs], 8, 6, list(range(len(specs))),
                            frozen_output=frozen_output, bias=True)
    old, new = copy.deepcopy(net), copy.deepcopy(net)
    h_old = ref.old_train_two_layer(old, specs, train.x, train.y, 20, emb, test.x, test.y,
                                    record_every=10)
    h_new = fc.train_two_layer(new, specs, train.x, train.y, 20, emb, test.x, test.y,
                               record_every=10)
    assert h_new.step == [0, 10, 20]
    assert not torch.equal(new.W, net.W)  # it trained
    _compare(old, new, h_old, h_new, rtol=RTOL, atol=ATOL)


@pytest.mark.engine
def test_train_two_layer_matches_the_old_loop_on_replicates():
    # run_default's use: each member its own sample (E, n, d), trainable output, AdamW, logistic;
    # 25 steps recorded every 10 also checks the final record at a step that is not a multiple
    emb, train, test = _toy("default", replicates=3)
    specs = [fc.NetSpec(act=a, loss="logistic", optimizer="adamw", lr=1e-2, weight_decay=1e-3)
             for a in ("relu", "relu", "silu")]
    net = fc.init_two_layer([s.act for s in specs], 8, 6, [5, 6, 7], frozen_output=False,
                            bias=True)
    old, new = copy.deepcopy(net), copy.deepcopy(net)
    h_old = ref.old_train_two_layer(old, specs, train.x, train.y, 25, emb, test.x, test.y,
                                    record_every=10)
    h_new = fc.train_two_layer(new, specs, train.x, train.y, 25, emb, test.x, test.y,
                               record_every=10)
    assert h_new.step == [0, 10, 20, 25]
    _compare(old, new, h_old, h_new, rtol=RTOL, atol=ATOL)


@pytest.mark.engine
def test_train_two_layer_with_no_steps_records_the_start_only():
    emb, train, _ = _toy()
    specs = _specs()[:2]
    net = fc.init_two_layer([s.act for s in specs], 8, 6, [0, 1])
    old, new = copy.deepcopy(net), copy.deepcopy(net)
    h_old = ref.old_train_two_layer(old, specs, train.x, train.y, 0, emb)
    h_new = fc.train_two_layer(new, specs, train.x, train.y, 0, emb)
    assert h_new.step == h_old.step == [0]
    assert torch.equal(new.W, net.W)
    for name in ("core_norm", "train_loss"):
        assert torch.equal(getattr(h_new, name)[0], getattr(h_old, name)[0])


# =================================================================================================
# contamination.binary_loss
# =================================================================================================
def test_losses_and_accuracy():
    f = torch.tensor([2.0, 0.5, -1.0])
    y = torch.tensor([1.0, 1.0, 1.0])
    assert math.isclose(float(fc.binary_loss("hinge", f, y)), (0 + 0.5 + 2.0) / 3, rel_tol=1e-6)
    expect = np.mean(np.log1p(np.exp(-np.array([2.0, 0.5, -1.0]))))
    assert math.isclose(float(fc.binary_loss("logistic", f, y)), expect, rel_tol=1e-6)
    assert math.isclose(float(fc.binary_accuracy(f, y)), 2 / 3, rel_tol=1e-6)
    assert fc.relative_error(torch.ones(2, 2), 2 * torch.ones(2, 2)) == pytest.approx(0.25)


@pytest.mark.boundary
def test_losses_and_accuracy_at_the_boundary(toy):
    f = torch.randn(2, 20)
    for fn in (lambda *a: fc.binary_loss("hinge", *a), fc.binary_accuracy):
        refused(ValueError, "f", fn, nan_at(f), toy.y)
        refused(ValueError, "f", fn, f[:0], toy.y)
        refused(ValueError, "y", fn, f, nan_at(toy.y))
        refused(ValueError, "y", fn, f, toy.y[:0])
        refused(ValueError, "y", fn, f, toy.y[:-1])
    refused(ValueError, "name", fc.binary_loss, "bogus", f, toy.y)
    refused(TypeError, "name", fc.binary_loss, None, f, toy.y)


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
    net = fc.init_two_layer([s.act for s in specs], 8, 6, list(range(len(specs))),
                            frozen_output=False, bias=True).double()
    new, old = copy.deepcopy(net), copy.deepcopy(net)
    fc.train_two_layer(new, specs, x, y, 30, emb, record_every=30)
    ref.old_train_two_layer(old, specs, x, y, 30, emb, record_every=30)
    worst_old = 0.0
    for e, s in enumerate(specs):
        one = fc.TwoLayerNets(net.W[e:e + 1], [s.act], net.a[e:e + 1], b=net.b[e:e + 1],
                              c=net.c[e:e + 1], train_output=True)
        params = list(one.parameters())
        opt = (torch.optim.SGD(params, lr=s.lr, momentum=s.momentum, weight_decay=s.weight_decay)
               if s.optimizer == "sgd" else
               torch.optim.AdamW(params, lr=s.lr, weight_decay=s.weight_decay))
        for _ in range(30):
            opt.zero_grad()
            fc.binary_loss(s.loss, one(x), y).sum().backward()
            opt.step()
        for name in ("W", "b", "a", "c"):
            want = getattr(one, name).detach()[0]
            torch.testing.assert_close(getattr(new, name).detach()[e], want, rtol=1e-12,
                                       atol=1e-14)
            worst_old = max(worst_old, float((getattr(old, name).detach()[e] - want).abs().max()))
    assert worst_old > 1e-10


# =================================================================================================
# contamination.binary_accuracy
# =================================================================================================
@pytest.mark.reference
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
    assert torch.allclose(bg ** 2, along ** 2 + orth ** 2, atol=1e-4)
    x = torch.randn(5, 12)
    moved = fc.shift_background(x, emb, 0.5) @ w - x @ w
    assert torch.allclose(moved, torch.full((5,), -0.5 * math.sqrt(3) * 2.0), atol=1e-4)
    assert fc.mean_direction_components(torch.stack([w, w])[None], emb)[0].shape == (1, 2)


@pytest.mark.reference
@pytest.mark.parametrize("seed,centred", [(1, True), (2, False)])
def test_run_distillation_matches_the_old_loops_at_other_seeds_and_centred(seed, centred):
    from tests.oracles import contamination_loops as ref

    cfg = fc.DistillConfig(n=11, n_test=9, d_core=2, d_background=3, dim=7, width=4,
                           teacher_steps=6, student_steps=5, record_every=2, lr=0.02,
                           weight_decay=0.05, centred=centred)
    old = ref.old_run_distillation(cfg, seed=seed, device="cpu").to_dict()
    new = fc.run_distillation(cfg, seed=seed, device="cpu").to_dict()
    assert new["curve_step"] == [0, 2, 4, 5]
    assert set(new) == set(old)
    assert set(new["probe_initial"]) == {"ID", "OOD"}   # the never-distilled student is new
    for key in set(old) - {"probe_initial"}:
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
    W1 = _weights_with_components(emb, rho * a0 + c * db, 3.0, 2)   # the rest may change freely
    b1 = rho * b0 + db
    out = fc.bias_equivalence(W0, W1, b0, b1, emb, decay=rho)
    assert out["slope"] == pytest.approx(c, rel=1e-4)
    assert out["corr"] == pytest.approx(1.0, abs=1e-5)
    assert out["bias_change"] == pytest.approx(float((b1 - b0).abs().mean()), rel=1e-6)
    assert out["weight_change"] == pytest.approx(c * float(db.abs().mean()), rel=1e-4)
    assert out["bias_move"] == pytest.approx(float(db.abs().mean()), rel=1e-5)
    # a sign flip of the relation flips slope and correlation; scaling both changes keeps corr
    W1n = _weights_with_components(emb, rho * a0 - c * db, 3.0, 2)
    neg = fc.bias_equivalence(W0, W1n, b0, b1, emb, decay=rho)
    assert neg["slope"] == pytest.approx(-c, rel=1e-4) and neg["corr"] == pytest.approx(-1, abs=1e-5)
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
    with pytest.raises(ValueError, match="b1"):                 # nothing moved: no slope
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
    refused(ValueError, "W", fc.bias_equivalence, W0[:, :8], W1[:, :8], b0, b1, emb_bou)
    for bad in (NAN, math.inf, -0.1):
        refused(ValueError, "decay", fc.bias_equivalence, W0, W1, b0, b1, emb_bou, decay=bad)


# =================================================================================================
# contamination.activation_asymmetry
# =================================================================================================
def test_activation_asymmetry_brute_force():
    y = torch.tensor([1.0, 1.0, -1.0, -1.0])
    pre = torch.tensor([[1.0, 1.0, -1.0, 2.0],
                        [1.0, -1.0, -1.0, 2.0],
                        [-1.0, 1.0, 1.0, 2.0],
                        [-1.0, -1.0, 1.0, 2.0]])
    a = fc.activation_asymmetry(pre, y)
    assert torch.allclose(a, torch.tensor([1.0, 0.0, 1.0, 0.0]))
    assert fc.activation_asymmetry(pre[None].repeat(3, 1, 1), y).shape == (3, 4)


@pytest.mark.reference
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


# =================================================================================================
# contamination.signed_asymmetry
# =================================================================================================
def test_signed_asymmetry_uses_output_sign_and_gates():
    y = torch.tensor([1.0, 1.0, -1.0, -1.0])
    pre = torch.tensor([[1.0, 1.0, -1.0],
                        [1.0, 1.0, -1.0],
                        [-1.0, -1.0, 1.0],
                        [-1.0, 1.0, 1.0]])
    a = torch.tensor([1.0, -1.0, 1.0])
    s = fc.signed_asymmetry(pre, y, a)
    assert torch.allclose(s, torch.tensor([1.0, -0.5, -1.0]))
    assert torch.allclose(s.abs(), fc.activation_asymmetry(pre, y) * torch.tensor([1, 1, 1.0]))
    # tanh' is even: mirror-image pre-activations of the two classes give no asymmetry
    mirror = torch.tensor([[0.3], [2.0], [-0.3], [-2.0]])
    assert torch.allclose(fc.signed_asymmetry(mirror, y, torch.ones(1), act="tanh"),
                          torch.zeros(1), atol=1e-6)
    # ... but different magnitudes do: the small pre-activations have the larger gate
    near_far = torch.tensor([[0.1], [0.1], [3.0], [3.0]])
    assert fc.signed_asymmetry(near_far, y, torch.ones(1), act="tanh") > 0.9
    with pytest.raises(ValueError, match="one entry per neuron"):
        fc.signed_asymmetry(pre, y, torch.ones(2))


@pytest.mark.reference
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
    assert fc.relative_error(torch.stack([h, t]), torch.stack([t, t])) == pytest.approx(12 / 12)
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


# =================================================================================================
# contamination.train_two_layer
# =================================================================================================
@pytest.mark.boundary
def test_train_two_layer(emb_bou, toy):
    specs = [fc.NetSpec(act="relu"), fc.NetSpec(act="tanh")]
    net = fc.init_two_layer(["relu", "tanh"], 10, 6, [0, 1])
    W0 = net.W.detach().clone()
    refused(ValueError, "x", fc.train_two_layer, net, specs, nan_at(toy.x), toy.y, 2, emb_bou)
    refused(ValueError, "y", fc.train_two_layer, net, specs, toy.x, nan_at(toy.y), 2, emb_bou)
    refused(TypeError, "x", fc.train_two_layer, net, specs, toy.x.long(), toy.y, 2, emb_bou)
    refused(TypeError, "specs", fc.train_two_layer, net, None, toy.x, toy.y, 2, emb_bou)
    refused(TypeError, "specs", fc.train_two_layer, net, "ab", toy.x, toy.y, 2, emb_bou)
    refused(ValueError, "steps", fc.train_two_layer, net, specs, toy.x, toy.y, -1, emb_bou)
    refused(ValueError, "record_every", fc.train_two_layer, net, specs, toy.x, toy.y, 2, emb_bou,
            record_every=0)
    for shift in (NAN, math.inf):
        refused(ValueError, "shift", fc.train_two_layer, net, specs, toy.x, toy.y, 2, emb_bou,
                shift=shift)
    refused(TypeError, "shift", fc.train_two_layer, net, specs, toy.x, toy.y, 2, emb_bou, shift=None)
    refused(ValueError, "x_test", fc.train_two_layer, net, specs, toy.x, toy.y, 2, emb_bou,
            nan_at(toy.x), toy.y)
    refused(ValueError, "y_test", fc.train_two_layer, net, specs, toy.x, toy.y, 2, emb_bou,
            toy.x, toy.y[:0])
    refused(ValueError, "y_test", fc.train_two_layer, net, specs, toy.x, toy.y, 2, emb_bou, toy.x)
    assert torch.equal(net.W, W0)  # nothing trained on bad input
    # steps=0 is valid: the history holds the initial record only
    assert fc.train_two_layer(net, specs, toy.x, toy.y, 0, emb_bou).step == [0]


# =================================================================================================
# contamination.shift_sweep
# =================================================================================================
@pytest.mark.reference
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


@pytest.mark.boundary
def test_shift_sweep_and_linear_probe(emb_bou, toy, nets):
    specs = [fc.NetSpec(act="relu"), fc.NetSpec(act="tanh")]
    sweep = fc.shift_sweep(nets, specs, toy.x, toy.y, emb_bou, np.array([0.0, 1.0]))
    assert sweep["loss"].shape == (2, 2)
    refused(ValueError, "specs", fc.shift_sweep, nets, [], toy.x, toy.y, emb_bou, [0.0])
    refused(ValueError, "specs", fc.shift_sweep, nets, specs[:1], toy.x, toy.y, emb_bou, [0.0])
    refused(TypeError, "net", fc.shift_sweep, "net", specs, toy.x, toy.y, emb_bou, [0.0])
    refused(ValueError, "x", fc.shift_sweep, nets, specs, nan_at(toy.x), toy.y, emb_bou, [0.0])
    refused(TypeError, "x", fc.shift_sweep, nets, specs, toy.x.long(), toy.y, emb_bou, [0.0])
    refused(ValueError, "y", fc.shift_sweep, nets, specs, toy.x, nan_at(toy.y), emb_bou, [0.0])
    refused(ValueError, r"magnitudes\[0\]", fc.shift_sweep, nets, specs, toy.x, toy.y, emb_bou, [NAN])
    refused(ValueError, r"magnitudes\[1\]", fc.shift_sweep, nets, specs, toy.x, toy.y, emb_bou,
            np.array([0.0, np.inf]))
    refused(TypeError, "magnitudes", fc.shift_sweep, nets, specs, toy.x, toy.y, emb_bou, None)
    refused(ValueError, "magnitudes", fc.shift_sweep, nets, specs, toy.x, toy.y, emb_bou, [])
    ev = [(toy.x, toy.y)]
    refused(TypeError, "h_train", fc.linear_probe, toy.x.long(), toy.y, ev)
    refused(ValueError, "h_train", fc.linear_probe, nan_at(toy.x), toy.y, ev)
    refused(ValueError, "y_train", fc.linear_probe, toy.x, nan_at(toy.y), ev)
    refused(ValueError, "evaluations", fc.linear_probe, toy.x, toy.y, [])
    refused(TypeError, "evaluations", fc.linear_probe, toy.x, toy.y, "abc")
    refused(ValueError, "evaluations", fc.linear_probe, toy.x, toy.y, [(toy.x[:, :3], toy.y)])


# =================================================================================================
# contamination.linear_probe
# =================================================================================================
@pytest.mark.reference
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


@pytest.mark.reference
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


# =================================================================================================
# contamination.ToyConfig
# =================================================================================================
@pytest.mark.parametrize("cls", [fc.TheoryConfig, fc.DefaultConfig, fc.DistillConfig])
def test_toy_configs_share_the_data_model_fields(cls):
    import dataclasses

    shared = [f.name for f in dataclasses.fields(fc.ToyConfig)]
    assert {"n", "d_core", "d_background", "dim", "width", "centred"} <= set(shared)
    assert issubclass(cls, fc.ToyConfig)
    own = {k for k, v in vars(cls).get("__annotations__", {}).items()}
    assert not own & set(shared)  # declared once, in the base
    for name in shared:
        assert getattr(cls(), name) == getattr(fc.ToyConfig(), name)
    # the cross-field rule of the base names the config it runs on
    with pytest.raises(ValueError, match=rf"{cls.__name__}\.dim must be >= d_core \+ "
                                         r"d_background = 12"):
        cls(d_core=6, d_background=6, dim=10)
    cfg = cls(dim=64)
    with pytest.raises(ValueError, match=rf"{cls.__name__}\.dim"):
        cfg.dim = 32
    assert cfg.dim == 64


# =================================================================================================
# contamination.VARIANTS
# =================================================================================================
@pytest.mark.reference
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
                               record_every=25, target="hidden", longer_steps=0),
        fc.Mnist1dConfig: dict(n_train=4000, n_test=2000, n_background=40, width=256, depth=2,
                               epochs=30, batch_size=128, lr=1e-3, weight_decay=1e-2,
                               magnitudes=(0.0, 0.25, 0.5, 0.75, 1.0), centred_mlp=False,
                               centred_linear=False, constant=False, null_replicates=0),
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


# =================================================================================================
# contamination.theory_specs
# =================================================================================================
def test_presets_construct():
    for cls in (fc.TheoryConfig, fc.DefaultConfig, fc.DistillConfig, fc.Mnist1dConfig):
        q, f = cls.quick(), cls.full()
        assert type(q) is cls and type(f) is cls
    assert fc.TheoryConfig.full().steps * fc.TheoryConfig.full().lr == pytest.approx(
        fc.TheoryConfig.quick().steps * fc.TheoryConfig.quick().lr)
    assert [s.name for s in fc.theory_specs(fc.TheoryConfig())][:2] == ["ReLU", "linear"]


@pytest.mark.reference
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


# =================================================================================================
# contamination.run_theory
# =================================================================================================
def test_tiny_theory_run():
    cfg = fc.TheoryConfig(n=40, n_test=20, d_core=2, d_background=2, dim=8, width=4, steps=3,
                          variants=("GELU",), record_every=1)
    res = fc.run_theory(cfg, seed=0, device="cpu")
    assert res.net.W.device.type == "cpu"
    assert res.history.array("background_norm").shape == (4, 3)
    assert res.background_ratio("GELU") > 0
    sweep = fc.shift_sweep(res.net, res.specs, res.test.x, res.test.y, res.emb, [0.0, 1.0])
    assert sweep["loss"].shape == (2, 3) and sweep["margins"].shape == (2, 3, 20)


@pytest.mark.reference
def test_run_theory_seed_and_device_defaults():
    cfg = fc.TheoryConfig(n=6, n_test=4, d_core=2, d_background=2, dim=5, width=2, steps=1,
                          variants=(), record_every=1)
    a, b = fc.run_theory(cfg), fc.run_theory(cfg, seed=0, device="cpu")
    assert torch.equal(a.net.W, b.net.W) and torch.equal(a.train.x, b.train.x)
    c = fc.run_theory(cfg, seed=3, device="cpu")
    assert not torch.equal(c.train.x, b.train.x) and not torch.equal(c.W_init, b.W_init)


@pytest.mark.boundary
def test_experiments_check_seed_device_and_config():
    cfg = fc.TheoryConfig(n=20, n_test=10, d_core=2, d_background=2, dim=6, width=4, steps=1,
                          variants=(), record_every=1)
    refused(ValueError, "seed", fc.run_theory, cfg, seed=2 ** 64)
    refused(ValueError, "device", fc.run_theory, cfg, device="gpu9")
    refused(TypeError, "device", fc.run_default, fc.DefaultConfig(), device=3.5)
    refused(TypeError, "cfg", fc.run_distillation, {})
    refused(TypeError, "cfg", fc.run_mnist1d, None)
    refused(TypeError, "cfg", fc.theory_specs, None)
    res = fc.run_theory(cfg, seed=0, device="cpu")
    refused(ValueError, "label", res.members, "bogus")
    refused(TypeError, "label", res.final, "id_acc", 3)
    refused(ValueError, "name", res.final, "bogus", "ReLU")
    refused(ValueError, "name", res.history.array, "bogus")
    refused(TypeError, "initial", res.preactivations, res.train.x, "ReLU", initial="yes")
    refused(ValueError, "x", res.preactivations, nan_at(res.train.x), "ReLU")
    refused(ValueError, "x", res.preactivations, res.train.x[:0], "ReLU")
    assert res.preactivations(res.train.x, "ReLU", initial=True).shape == (20, 4)


# =================================================================================================
# contamination.run_default
# =================================================================================================
def test_tiny_default_and_distillation_runs():
    cfg = fc.DefaultConfig(n=40, d_core=3, d_background=2, dim=8, width=6, steps=3, replicates=2,
                           record_every=1)
    res = fc.run_default(cfg, seed=1, device="cpu")
    assert res.train.x.shape == (2, 40, 8) and res.history.array("ood_acc").shape == (4, 2)
    assert res.members("ReLU (default)") == [0, 1]
    acts = fc.run_default(fc.DefaultConfig(n=40, d_core=3, d_background=2, dim=8, width=6,
                                           steps=2, replicates=2, record_every=1,
                                           activations=("relu", "tanh")), seed=1, device="cpu")
    assert acts.members("tanh (default)") == [2, 3]
    # replicate r of every activation sees the same data and starts from the same weights
    assert torch.equal(acts.train.x[0], acts.train.x[2])
    assert torch.equal(acts.W_init[1], acts.W_init[3])
    assert acts.history.array("background_mean").shape == (3, 4)
    assert np.all(res.history.array("id_acc") <= 1)
    dcfg = fc.DistillConfig(n=40, n_test=20, d_core=3, d_background=2, dim=8, width=6,
                            teacher_steps=2, student_steps=3, record_every=1)
    d = fc.run_distillation(dcfg, seed=0, device="cpu")
    assert d.curve_step == [0, 1, 2, 3] and d.error_id >= 0
    assert len(d.student_background_mean) == 2 and min(d.student_background_mean) >= 0
    assert 0 <= d.probe_teacher["OOD"] <= 1
    # the teacher's representation ignores the background by construction: OOD accuracy = ID
    assert d.teacher_acc["ID"] == d.teacher_acc["OOD"]


@pytest.mark.reference
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


# =================================================================================================
# contamination.run_distillation
# =================================================================================================
def test_gate_free_distillation_student():
    base = fc.DistillConfig(n=40, n_test=20, d_core=3, d_background=2, dim=8, width=6,
                            teacher_steps=3, student_steps=4, record_every=2)
    hid = fc.run_distillation(base, seed=0, device="cpu")
    pre = fc.run_distillation(replace(base, target="preactivation"), seed=0, device="cpu")
    # same teacher (its probe and accuracy), different student fits
    assert pre.probe_teacher == hid.probe_teacher and pre.teacher_acc == hid.teacher_acc
    assert pre.curve_id[0] == pytest.approx(hid.curve_id[0])    # same initialization
    assert pre.probe_initial == hid.probe_initial               # the same never-distilled student
    assert pre.curve_id[-1] != hid.curve_id[-1]
    with pytest.raises((ValueError, TypeError), match="target"):
        replace(base, target="logits")


@pytest.mark.reference
def test_distillation_longer_steps_continue_the_same_run():
    base = fc.DistillConfig(n=40, n_test=20, d_core=3, d_background=2, dim=8, width=6,
                            teacher_steps=3, student_steps=4, record_every=2)
    short = fc.run_distillation(base, seed=1, device="cpu")
    both = fc.run_distillation(replace(base, longer_steps=3), seed=1, device="cpu")
    whole = fc.run_distillation(replace(base, student_steps=7), seed=1, device="cpu")
    assert short.longer == {}
    # the measurements at student_steps are those of the short run, untouched by the extra steps
    for key in ("probe_student", "error_id", "curve_id", "student_background_norm",
                "student_background_mean"):
        assert getattr(both, key) == getattr(short, key), key
    # the continued run is the 7-step run: same optimizer state carried over
    assert both.longer["steps"] == 7
    assert both.longer["probe_ID"] == pytest.approx(whole.probe_student["ID"])
    assert both.longer["probe_OOD"] == pytest.approx(whole.probe_student["OOD"])
    assert both.longer["error_id"] == pytest.approx(whole.error_id, rel=1e-5)
    assert both.longer["background_mean"] == pytest.approx(whole.student_background_mean[1],
                                                          rel=1e-5)
    with pytest.raises(ValueError, match="longer_steps"):
        replace(base, longer_steps=-1)


@pytest.mark.reference
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


@pytest.mark.engine
def test_run_distillation_matches_the_old_loops():
    # the teacher (AdamW on the core coordinates) and the student (AdamW on W and b, MSE to the
    # teacher's representation, recorded every 10 steps); the student's target comes from the
    # teacher, so the float32 difference of the teacher's AdamW carries into every curve
    cfg = fc.DistillConfig(n=41, n_test=21, d_core=3, d_background=2, dim=8, width=6,
                           teacher_steps=30, student_steps=25, record_every=10, lr=1e-2)
    old = ref.old_run_distillation(cfg, seed=0, device="cpu").to_dict()
    new = fc.run_distillation(cfg, seed=0, device="cpu").to_dict()
    assert new["curve_step"] == old["curve_step"] == [0, 10, 20, 25]
    assert new["curve_id"][-1] < new["curve_id"][0]  # the student learned
    assert set(new) == set(old)
    assert set(new["probe_initial"]) == {"ID", "OOD"}   # the never-distilled student is new
    for key in set(old) - {"probe_initial"}:
        if isinstance(old[key], dict):
            assert new[key] == old[key], key  # accuracies on 20 points: no prediction flips
        else:
            torch.testing.assert_close(torch.tensor(new[key], dtype=torch.float64),
                                       torch.tensor(old[key], dtype=torch.float64),
                                       rtol=RTOL, atol=ATOL)


# =================================================================================================
# contamination.append_background
# =================================================================================================
def test_shift_last_and_append_background():
    g = torch.Generator().manual_seed(0)
    x = fc.append_background(torch.zeros(3, 2), 4, g)
    assert x.shape == (3, 6) and torch.all(x[:, 2:] >= 0)
    s = fc.shift_last(x, 4, 1.0)
    assert torch.equal(s[:, :2], x[:, :2]) and torch.allclose(s[:, 2:], x[:, 2:] - 1)


@pytest.mark.reference
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
            neg = xte.clone()
            neg[:, -5:] = -neg[:, -5:]
            assert out[name]["negated"] == pytest.approx(accuracy(model(neg[:, cols]), ds.y_test))
        assert out[name]["shift"] == pytest.approx(shift), name
        assert out[name]["ID"] == out[name]["shift"][2] and out[name]["OOD"] == out[name]["shift"][0]


@pytest.mark.boundary
def test_mnist1d_helpers():
    x = torch.randn(30, 5)
    refused(ValueError, "x", fc.append_background, nan_at(x), 4, torch.Generator())
    refused(ValueError, "x", fc.append_background, x[:0], 4, torch.Generator())
    refused(TypeError, "x", fc.append_background, x.long(), 4, torch.Generator())
    refused(TypeError, "generator", fc.append_background, x, 4, None)
    refused(ValueError, "x", fc.shift_last, nan_at(x), 2, 1.0)
    refused(TypeError, "x", fc.shift_last, x.long(), 2, 1.0)
    refused(ValueError, "n_background", fc.shift_last, x, 50, 1.0)
    refused(ValueError, "magnitude", fc.shift_last, x, 2, NAN)


# =================================================================================================
# contamination.shift_last
# =================================================================================================
@pytest.mark.reference
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


# =================================================================================================
# contamination.run_mnist1d
# =================================================================================================
def test_mnist1d_constant_padding_and_centred_linear():
    cfg = fc.Mnist1dConfig(n_train=60, n_test=30, n_background=5, width=8, depth=1, epochs=2,
                           batch_size=16, magnitudes=(0.0, 1.0), centred_linear=True,
                           constant=True)
    out = fc.run_mnist1d(cfg, seed=1, device="cpu")
    assert {"linear, centred", "ReLU MLP, constant", "linear, constant"} <= set(out)
    assert "ReLU MLP, centred" not in out
    for name in ("linear, centred", "ReLU MLP, constant", "linear, constant"):
        assert 0 <= out[name]["OOD"] <= 1 and len(out[name]["shift"]) == 2


@pytest.mark.reference
def test_mnist1d_null_replicates_are_their_recipe():
    from gtlib.data import mnist1d
    from gtlib.models import MLP
    from gtlib.train import TrainConfig, accuracy, train

    seed = 3
    cfg = fc.Mnist1dConfig(n_train=60, n_test=30, n_background=5, width=8, depth=1, epochs=2,
                           batch_size=16, lr=0.05, magnitudes=(0.0, 1.0), null_replicates=2)
    out = fc.run_mnist1d(cfg, seed=seed, device="cpu")
    reps = out["linear replicates"]
    assert len(reps) == 2 and "linear, centred" not in out
    ds = mnist1d(60, 30, device="cpu")
    for j, rep in enumerate(reps):
        g = torch.Generator().manual_seed(1000 * seed + 400 + j)     # its own background draw
        x_tr = fc.append_background(ds.x, 5, g)
        x_te = fc.append_background(ds.x_test, 5, g)
        for name, offset, extra in (("uniform", 0.0, 0), ("centred", 0.5, 0),
                                    ("centred, again", 0.5, 400)):
            xtr, xte = x_tr.clone(), x_te.clone()
            xtr[:, -5:] -= offset
            xte[:, -5:] -= offset
            torch.manual_seed(1000 * seed + 200 + j + extra)
            model = MLP(45, 1, 0, 10)
            train(model, xtr, ds.y, TrainConfig(
                optimizer="adamw", lr=0.05, weight_decay=1e-2, batch_size=16, epochs=2,
                seed=1000 * seed + 300 + j + extra, check_every=10 ** 9))
            with torch.no_grad():
                shifted = xte.clone()
                shifted[:, -5:] -= 1.0
                assert rep[name]["ID"] == pytest.approx(accuracy(model(xte), ds.y_test))
                assert rep[name]["OOD"] == pytest.approx(accuracy(model(shifted), ds.y_test))
    assert reps[0]["centred"] != reps[1]["centred"]          # their own draws
    with pytest.raises(ValueError, match="null_replicates"):
        fc.Mnist1dConfig(null_replicates=101)


# =================================================================================================
# gtlib.contamination as a whole
# =================================================================================================
def test_embedding_is_orthonormal(emb):
    P = torch.cat([emb.core, emb.background], 1)
    assert torch.allclose(P.T @ P, torch.eye(7), atol=1e-5)
    assert torch.allclose(emb.core.T @ emb.background, torch.zeros(4, 3), atol=1e-6)


@pytest.mark.reference
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


@pytest.mark.boundary
def test_embedding_methods(emb_bou):
    refused(ValueError, "z_core", emb_bou.embed, torch.full((4, 3), NAN), torch.zeros(4, 3))
    refused(TypeError, "z_background", emb_bou.embed, torch.zeros(4, 3), torch.zeros(4, 3).long())
    refused(ValueError, "device", emb_bou.to, "gpu9")
    refused(TypeError, "device", emb_bou.to, 3.5)
    assert emb_bou.to("cpu").core.device.type == "cpu"


@pytest.mark.boundary
def test_forward_hidden_preactivations(nets, toy):
    for method in (nets.forward, nets.hidden, nets.preactivations, nets):
        refused(ValueError, "x", method, nan_at(toy.x))
        refused(ValueError, "x", method, toy.x[:0])
        refused(TypeError, "x", method, toy.x.long())
        refused(TypeError, "x", method, toy.x.double())
        refused(ValueError, "x", method, toy.x[:, :5])
    refused(ValueError, "one sample per member", nets, toy.x.expand(3, -1, -1))


# =================================================================================================
# contamination.orthogonal_shifts
# =================================================================================================
@pytest.mark.reference
def test_orthogonal_shifts_match_the_mean_shift_in_norm_and_are_orthogonal_to_it():
    v = fc.orthogonal_shifts(6, 0.5, 3, seed=4)
    assert v.shape == (3, 6) and v.dtype == torch.float32
    assert torch.allclose(v.norm(dim=1), torch.full((3,), 0.5 * math.sqrt(6)), rtol=1e-5)
    assert float(v.sum(1).abs().max()) < 1e-5                   # no component along 1
    r = torch.randn(3, 6, generator=torch.Generator().manual_seed(4)).double().numpy()
    r = r - r.mean(1, keepdims=True)
    want = 0.5 * math.sqrt(6) * r / np.linalg.norm(r, axis=1, keepdims=True)
    np.testing.assert_allclose(v.numpy(), want, atol=1e-6)
    assert torch.equal(fc.orthogonal_shifts(6, 0.5, 3), fc.orthogonal_shifts(6, 0.5, 3, seed=0))
    assert torch.allclose(fc.orthogonal_shifts(6, -1.0, 3, seed=4), -2 * v, atol=1e-6)


@pytest.mark.boundary
def test_orthogonal_shifts_refuse_bad_input():
    with pytest.raises(ValueError, match="n_background"):
        fc.orthogonal_shifts(1, 0.5, 3)
    refused(ValueError, "n_background", fc.orthogonal_shifts, 0, 0.5, 3)
    refused(ValueError, "magnitude", fc.orthogonal_shifts, 4, NAN, 3)
    refused(ValueError, "count", fc.orthogonal_shifts, 4, 0.5, 0)
    refused(ValueError, "seed", fc.orthogonal_shifts, 4, 0.5, 3, -1)


@pytest.mark.reference
def test_mnist1d_mlp_replicates_are_their_recipe():
    from gtlib.data import mnist1d
    from gtlib.models import MLP
    from gtlib.train import TrainConfig, accuracy, train

    seed = 2
    cfg = fc.Mnist1dConfig(n_train=60, n_test=30, n_background=5, width=8, depth=1, epochs=2,
                           batch_size=16, lr=0.05, magnitudes=(0.0, 1.0), mlp_replicates=2,
                           direction_magnitude=0.7)
    out = fc.run_mnist1d(cfg, seed=seed, device="cpu")
    reps = out["MLP replicates"]
    assert len(reps) == 2 and "linear replicates" not in out
    ds = mnist1d(60, 30, device="cpu")
    for j, rep in enumerate(reps):
        g = torch.Generator().manual_seed(1000 * seed + 500 + j)     # its own background draw
        x_tr = fc.append_background(ds.x, 5, g)
        x_te = fc.append_background(ds.x_test, 5, g)
        torch.manual_seed(1000 * seed + 800 + j)
        model = MLP(45, 8, 1, 10)
        train(model, x_tr, ds.y, TrainConfig(
            optimizer="adamw", lr=0.05, weight_decay=1e-2, batch_size=16, epochs=2,
            seed=1000 * seed + 900 + j, check_every=10 ** 9))
        dirs = fc.orthogonal_shifts(5, 0.7, 5, seed=1000 * seed + 450 + j)
        with torch.no_grad():
            assert rep["ID"] == pytest.approx(accuracy(model(x_te), ds.y_test))
            along = x_te.clone()
            along[:, -5:] -= 0.7
            assert rep["along"] == pytest.approx(accuracy(model(along), ds.y_test))
            orth = []
            for v in dirs:
                xs = x_te.clone()
                xs[:, -5:] -= v
                orth.append(accuracy(model(xs), ds.y_test))
        assert rep["orthogonal"] == pytest.approx(orth)
