"""Tests of gtlib.contamination.networks, one section per public function."""

import copy
import math
import numpy as np
import pytest
import torch
from gtlib import contamination as fc
from tests.oracles import contamination_loops as ref
from gtlib.contamination.training import _optimizer
from tests.chapters.contamination.helpers import (
    _double_emb,
    _np_forward,
    _specs,
    _toy,
    ATOL,
    axis_embedding,
    nan_at,
    np_loss,
    refused,
    RTOL,
)


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
            as_.append(
                np.array([1 / width] * (width // 2) + [-1 / width] * (width // 2))
            )
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
    row = {
        "core_norm": np.linalg.norm(W @ C, axis=-1).mean(-1),
        "background_norm": np.linalg.norm(v, axis=-1).mean(-1),
        "background_mean": np.abs(along).mean(-1),
        "background_orth": orth.mean(-1),
    }
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
    row["id_loss"], row["ood_loss"] = (
        member_losses(f_id, yt),
        member_losses(f_ood, yt),
    )
    row["id_acc"], row["ood_acc"] = (
        (f_id * yb > 0).mean(-1),
        (f_ood * yb > 0).mean(-1),
    )
    return row


def _reference_training(net, specs, x, y, xt, yt, emb, steps, records, shift):
    """Each member alone with torch.optim and a forward pass written out; curves by numpy."""
    params = []
    for e, s in enumerate(specs):
        p = {
            k: getattr(net, k)[e].detach().clone()
            for k in ("W", "b", "a", "c")
            if getattr(net, k) is not None
        }
        train_out = net.a.requires_grad
        leaves = [p[k].requires_grad_() for k in p if k in ("W", "b") or train_out]
        opt = (
            torch.optim.SGD(
                leaves, lr=s.lr, momentum=s.momentum, weight_decay=s.weight_decay
            )
            if s.optimizer == "sgd"
            else torch.optim.AdamW(leaves, lr=s.lr, weight_decay=s.weight_decay)
        )
        params.append((p, opt))
    acts = net.acts
    act_fn = {
        "relu": torch.relu,
        "identity": lambda z: z,
        "tanh": torch.tanh,
        "sigmoid": torch.sigmoid,
    }
    rows = {}

    def snapshot():
        st = {
            k: np.stack([p[k].detach().numpy() for p, _ in params])
            if k in params[0][0]
            else None
            for k in ("W", "b", "a", "c")
        }
        return _np_curves(
            st["W"], st["b"], st["a"], st["c"], acts, specs, emb, x, y, xt, yt, shift
        )

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
            loss = (
                torch.relu(1 - m)
                if s.loss == "hinge"
                else torch.nn.functional.softplus(-m)
            )
            opt.zero_grad()
            loss.mean().backward()
            opt.step()
    final = {
        k: np.stack([p[k].detach().numpy() for p, _ in params]) for k in params[0][0]
    }
    return rows, final


CURVES = (
    "core_norm",
    "background_norm",
    "background_mean",
    "background_orth",
    "train_loss",
    "id_loss",
    "ood_loss",
    "id_acc",
    "ood_acc",
)


def _compare(old_net, new_net, old_hist, new_hist, **tol):
    assert new_hist.step == old_hist.step
    for name, p in new_net.named_parameters():
        torch.testing.assert_close(
            p.detach(), getattr(old_net, name).detach(), **tol
        )
    for name in CURVES:
        assert len(getattr(new_hist, name)) == len(getattr(old_hist, name))
        for a, b in zip(getattr(new_hist, name), getattr(old_hist, name)):
            torch.testing.assert_close(a, b, **tol)


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
    specs = [
        fc.NetSpec(optimizer=opt, lr=0.05, momentum=0.9, weight_decay=0.1),
        fc.NetSpec(optimizer=opt, lr=0.01, momentum=0.5, weight_decay=0.0),
    ]
    W = torch.nn.Parameter(w0.clone())
    so = _optimizer([W, torch.zeros(2, requires_grad=False)], specs)
    assert so.params == [W]  # tensors that do not require grad are left out
    refs = [torch.nn.Parameter(w0[i].clone()) for i in range(2)]
    topts = [
        torch.optim.SGD(
            [refs[i]], lr=s.lr, momentum=s.momentum, weight_decay=s.weight_decay
        )
        if opt == "sgd"
        else torch.optim.AdamW([refs[i]], lr=s.lr, weight_decay=s.weight_decay)
        for i, s in enumerate(specs)
    ]
    for _ in range(5):
        so.step(
            torch.autograd.grad((torch.tanh(x @ W.transpose(1, 2)) ** 2).sum(), [W])
        )
        for r, o in zip(refs, topts):
            o.zero_grad()
            (torch.tanh(x @ r.T) ** 2).sum().backward()
            o.step()
    for i in range(2):
        torch.testing.assert_close(
            W[i].detach(), refs[i].detach(), rtol=1e-12, atol=1e-14
        )


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
        fc.train_two_layer(
            net,
            [fc.NetSpec(), fc.NetSpec()],
            torch.zeros(4, 12),
            torch.ones(4),
            1,
            emb,
        )
    with pytest.raises(ValueError, match="act"):
        fc.train_two_layer(
            net, [fc.NetSpec(act="gelu")], torch.zeros(4, 12), torch.ones(4), 1, emb
        )
    with pytest.raises(ValueError, match="x"):
        fc.train_two_layer(
            net, [fc.NetSpec()], torch.zeros(4, 12), torch.ones(5), 1, emb
        )
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
    assert (
        s.act,
        s.loss,
        s.optimizer,
        s.lr,
        s.momentum,
        s.weight_decay,
        s.label,
    ) == ("relu", "hinge", "sgd", 1e-3, 0.9, 1e-3, "")
    assert s.name == "relu/sgd/hinge"
    assert (
        fc.NetSpec(act="tanh", optimizer="adamw", loss="logistic").name
        == "tanh/adamw/logistic"
    )
    assert fc.NetSpec(label="mine").name == "mine"
    fc.NetSpec(momentum=0.0, weight_decay=0.0)  # both ends that are allowed
    with pytest.raises(ValueError, match="momentum"):
        fc.NetSpec(momentum=1.0)
    with pytest.raises(ValueError, match="weight_decay"):
        fc.NetSpec(weight_decay=-1e-9)


@pytest.mark.reference
@pytest.mark.parametrize("frozen_output", [True, False])
def test_train_two_layer_is_torch_optim_per_member_and_records_numpy_curves(
    frozen_output,
):
    emb32 = fc.random_embedding(2, 3, 7, seed=1)
    tr, te = fc.sample_toy(9, emb32, seed=1), fc.sample_toy(7, emb32, seed=2)
    emb = _double_emb(emb32)
    x, y, xt = tr.x.double(), tr.y.double(), te.x.double()
    y = y[torch.tensor([0, 2, 1, 3, 4, 5, 6, 7, 8])]  # shuffled, unbalanced (4 vs 5)
    yt = te.y.double()
    specs = [
        fc.NetSpec(act="relu", lr=0.3, momentum=0.9, weight_decay=0.05),
        fc.NetSpec(act="identity", lr=0.1, momentum=0.0, weight_decay=0.2),
        fc.NetSpec(
            act="tanh", loss="logistic", lr=0.2, momentum=0.5, weight_decay=0.0
        ),
        fc.NetSpec(
            act="relu", optimizer="adamw", loss="logistic", lr=0.05, weight_decay=0.3
        ),
    ]
    net = fc.init_two_layer(
        [s.act for s in specs],
        7,
        4,
        [2, 5, 1, 9],
        frozen_output=frozen_output,
        bias=True,
    ).double()
    start = {k: getattr(net, k).detach().clone() for k in ("W", "b", "a")}
    rows, final = _reference_training(
        net, specs, x, y, xt, yt, emb, 7, {0, 3, 6, 7}, 0.6
    )
    hist = fc.train_two_layer(
        net, specs, x, y, 7, emb, xt, yt, shift=0.6, record_every=3
    )
    assert hist.step == [0, 3, 6, 7]
    for k in final:
        np.testing.assert_allclose(
            getattr(net, k).detach().numpy(),
            final[k],
            rtol=1e-10,
            atol=1e-12,
            err_msg=k,
        )
    assert not torch.allclose(net.W.detach(), start["W"])
    for i, step in enumerate(hist.step):
        for name, want in rows[step].items():
            tol = 1e-6 if name.endswith("acc") else 1e-12  # accuracies are float32
            np.testing.assert_allclose(
                hist.array(name)[i],
                want,
                rtol=1e-9,
                atol=tol,
                err_msg=f"{name} at step {step}",
            )
    assert hist.array("core_norm").shape == (4, 4)


@pytest.mark.reference
def test_train_two_layer_on_one_sample_per_member_and_without_a_test_set():
    emb32 = fc.random_embedding(2, 2, 5, seed=0)
    parts = [fc.sample_toy(7, emb32, "default", seed=s) for s in (3, 8)]
    emb = _double_emb(emb32)
    x = torch.stack([p.x for p in parts]).double()
    y = torch.stack([p.y for p in parts]).double()
    y[1] = -y[1]
    specs = [
        fc.NetSpec(
            act="tanh",
            loss="logistic",
            optimizer="adamw",
            lr=0.05,
            weight_decay=0.01,
        ),
        fc.NetSpec(
            act="tanh", loss="hinge", optimizer="sgd", lr=0.2, weight_decay=0.1
        ),
    ]
    net = fc.init_two_layer(
        ["tanh", "tanh"], 5, 6, [1, 2], frozen_output=False, bias=True
    ).double()
    rows, final = _reference_training(net, specs, x, y, x, y, emb, 6, {0, 6}, 1.0)
    hist = fc.train_two_layer(net, specs, x, y, 6, emb)  # record_every 25 by default
    assert hist.step == [0, 6]
    assert hist.id_loss == [] and hist.ood_acc == []
    for k in final:
        np.testing.assert_allclose(
            getattr(net, k).detach().numpy(), final[k], rtol=1e-10, atol=1e-12
        )
    for i, step in enumerate(hist.step):
        for name in (
            "core_norm",
            "background_norm",
            "background_mean",
            "background_orth",
            "train_loss",
        ):
            np.testing.assert_allclose(
                hist.array(name)[i],
                rows[step][name],
                rtol=1e-9,
                atol=1e-12,
                err_msg=name,
            )
    with pytest.raises(ValueError, match="not recorded"):
        hist.array("id_acc")
    with pytest.raises(ValueError, match="name"):
        hist.array("step")


@pytest.mark.reference
def test_the_optimizer_leaves_frozen_tensors_out_and_sets_each_member():
    specs = [
        fc.NetSpec(optimizer="adamw", lr=0.02, weight_decay=0.3),
        fc.NetSpec(lr=0.4, momentum=0.25, weight_decay=0.0),
    ]
    W = torch.nn.Parameter(torch.ones(2, 3, dtype=torch.float64))
    frozen = torch.zeros(2, 3, dtype=torch.float64)
    opt = _optimizer([W, frozen], specs)
    assert opt.params == [W]
    g = torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]], dtype=torch.float64)
    opt.step([g])
    # member 1: SGD, first step buf = g, p = 1 - 0.4 g; member 0: AdamW, first step
    # p = (1 - lr wd) - lr sign(g) (|m_hat / sqrt(v_hat)| = 1)
    np.testing.assert_allclose(
        W[1].detach().numpy(), 1 - 0.4 * g[1].numpy(), rtol=1e-12
    )
    want0 = (1 - 0.02 * 0.3) - 0.02 * np.sign(g[0].numpy()) * np.abs(
        g[0].numpy()
    ) / (np.abs(g[0].numpy()) + 1e-8)
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
    W, a, b, c = (
        torch.randn(E, h, d, dtype=torch.float64),
        torch.randn(E, h, dtype=torch.float64),
        torch.randn(E, h, dtype=torch.float64),
        torch.randn(E, dtype=torch.float64),
    )
    x = torch.randn(n, d, dtype=torch.float64)
    net = fc.TwoLayerNets(W, acts, a, b=b, c=c)
    assert (net.size, net.width) == (E, h)
    pre, hid, out = _np_forward(W, acts, a, b, c, x)
    np.testing.assert_allclose(
        net.preactivations(x).detach().numpy(), pre, rtol=1e-12
    )
    np.testing.assert_allclose(net.hidden(x).detach().numpy(), hid, rtol=1e-12)
    np.testing.assert_allclose(net(x).detach().numpy(), out, rtol=1e-12, atol=1e-14)
    # one sample per member (E, n, d)
    xs = torch.randn(E, n, d, dtype=torch.float64)
    np.testing.assert_allclose(
        net(xs).detach().numpy(),
        _np_forward(W, acts, a, b, c, xs)[2],
        rtol=1e-12,
        atol=1e-14,
    )
    # without biases, and a single activation group
    plain = fc.TwoLayerNets(W[:2], ["sigmoid", "sigmoid"], a[:2])
    np.testing.assert_allclose(
        plain(x).detach().numpy(),
        _np_forward(W[:2], ["sigmoid"] * 2, a[:2], x=x)[2],
        rtol=1e-12,
    )
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
    refused(
        TypeError, "b", fc.TwoLayerNets, W, ["relu", "tanh"], a, b=[[0.0] * 6] * 2
    )
    refused(
        TypeError,
        "train_output",
        fc.TwoLayerNets,
        W,
        ["relu", "tanh"],
        a,
        train_output="yes",
    )
    refused(
        TypeError,
        "train_output",
        fc.TwoLayerNets,
        W,
        ["relu", "tanh"],
        a,
        train_output=None,
    )


# =================================================================================================
# contamination.init_two_layer
# =================================================================================================
def test_frozen_output_layer_and_forward():
    net = fc.init_two_layer(
        ["relu", "identity"], 5, 4, [0, 1], frozen_output=True, bias=False
    )
    assert torch.allclose(net.a[0], torch.tensor([0.25, 0.25, -0.25, -0.25]))
    assert not net.a.requires_grad and [n for n, _ in net.named_parameters()] == [
        "W"
    ]
    x = torch.randn(7, 5)
    out = net(x)
    W = net.W.detach()
    assert torch.allclose(out[0], torch.relu(x @ W[0].T) @ net.a[0], atol=1e-6)
    assert torch.allclose(out[1], (x @ W[1].T) @ net.a[1], atol=1e-6)


def test_identity_net_is_linear_and_member_order_is_kept():
    net = fc.init_two_layer(["gelu", "identity", "gelu"], 3, 2, [0, 1, 2], bias=True)
    x = torch.randn(5, 3)
    assert torch.allclose(
        net(2 * x)[1] - net(x)[1], net(x)[1] - net(0 * x)[1], atol=1e-6
    )
    h = net.hidden(x)
    assert torch.allclose(
        h[2], torch.nn.functional.gelu(x @ net.W[2].T + net.b[2]), atol=1e-6
    )


@pytest.mark.reference
@pytest.mark.parametrize(
    "frozen_output,bias",
    [(True, False), (True, True), (False, True), (False, False)],
)
def test_init_two_layer_is_nn_linear_uniform_per_seed(frozen_output, bias):
    acts, seeds = ["relu", "tanh", "identity"], [3, 11, 4]
    net = fc.init_two_layer(
        acts, 5, 4, seeds, frozen_output=frozen_output, bias=bias
    )
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
    for steps, every, want in (
        (6, 3, [0, 3, 6]),
        (5, 2, [0, 2, 4, 5]),
        (3, 5, [0, 3]),
        (4, 1, [0, 1, 2, 3, 4]),
    ):
        net = fc.init_two_layer(["relu"], 5, 2, [0])
        assert (
            fc.train_two_layer(
                net, [fc.NetSpec()], d.x, d.y, steps, emb, record_every=every
            ).step
            == want
        )
    net = fc.init_two_layer(["relu"], 5, 2, [0])
    assert fc.train_two_layer(net, [fc.NetSpec()], d.x, d.y, 60, emb).step == [
        0,
        25,
        50,
        60,
    ]


@pytest.mark.boundary
def test_init_two_layer():
    refused(TypeError, "acts", fc.init_two_layer, None, 10, 6, [0, 1])
    refused(TypeError, "seeds", fc.init_two_layer, ["relu"], 10, 6, 3)
    refused(ValueError, r"seeds\[0\]", fc.init_two_layer, ["relu"], 10, 6, [-1])
    refused(TypeError, r"seeds\[0\]", fc.init_two_layer, ["relu"], 10, 6, [0.5])
    refused(
        TypeError,
        "frozen_output",
        fc.init_two_layer,
        ["relu"],
        10,
        6,
        [0],
        frozen_output="yes",
    )
    refused(TypeError, "bias", fc.init_two_layer, ["relu"], 10, 6, [0], bias=None)


@pytest.mark.engine
@pytest.mark.parametrize("frozen_output", [True, False])
def test_train_two_layer_matches_the_old_loop(frozen_output):
    emb, train, test = _toy()
    specs = _specs()
    net = fc.init_two_layer(
        [s.act for s in specs],
        8,
        6,
        list(range(len(specs))),
        frozen_output=frozen_output,
        bias=True,
    )
    old, new = copy.deepcopy(net), copy.deepcopy(net)
    h_old = ref.old_train_two_layer(
        old, specs, train.x, train.y, 20, emb, test.x, test.y, record_every=10
    )
    h_new = fc.train_two_layer(
        new, specs, train.x, train.y, 20, emb, test.x, test.y, record_every=10
    )
    assert h_new.step == [0, 10, 20]
    assert not torch.equal(new.W, net.W)  # it trained
    _compare(old, new, h_old, h_new, rtol=RTOL, atol=ATOL)


@pytest.mark.engine
def test_train_two_layer_matches_the_old_loop_on_replicates():
    # run_default's use: each member its own sample (E, n, d), trainable output, AdamW, logistic;
    # 25 steps recorded every 10 also checks the final record at a step that is not a multiple
    emb, train, test = _toy("default", replicates=3)
    specs = [
        fc.NetSpec(
            act=a, loss="logistic", optimizer="adamw", lr=1e-2, weight_decay=1e-3
        )
        for a in ("relu", "relu", "silu")
    ]
    net = fc.init_two_layer(
        [s.act for s in specs], 8, 6, [5, 6, 7], frozen_output=False, bias=True
    )
    old, new = copy.deepcopy(net), copy.deepcopy(net)
    h_old = ref.old_train_two_layer(
        old, specs, train.x, train.y, 25, emb, test.x, test.y, record_every=10
    )
    h_new = fc.train_two_layer(
        new, specs, train.x, train.y, 25, emb, test.x, test.y, record_every=10
    )
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
