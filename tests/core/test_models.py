"""Tests of gtlib.models, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import dataclasses
import math
import matplotlib
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gtlib import models as gmodels, models, train as T
from gtlib.models import BatchedMLP, make_mlp, MLP, activation, ACTIVATIONS
from gtlib.train import (
    TrainConfig,
    train_ensemble,
    train_sequentially,
    total_steps,
    train,
)


def data(n=120, d=6, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=torch.float64), torch.randint(
        c, (n,), generator=g
    )


def _hand_step_member(params, x, y, lr, momentum, wd, bufs):
    """One full-batch SGD step of one stand-alone MLP, PyTorch's update written out."""
    h = x
    for l, (w, b) in enumerate(params):
        h = h @ w.T + b
        if l < len(params) - 1:
            h = torch.relu(h)
    loss = F.cross_entropy(h, y)
    grads = torch.autograd.grad(loss, [t for wb in params for t in wb])
    out = []
    with torch.no_grad():
        for i, (p, g) in enumerate(zip([t for wb in params for t in wb], grads)):
            d = g + wd * p
            bufs[i] = d.clone() if bufs[i] is None else momentum * bufs[i] + d
            out.append((p - lr * bufs[i]).requires_grad_())
    return [(out[2 * l], out[2 * l + 1]) for l in range(len(params))]


D = torch.float64


def _data(n=23, d=3, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=D)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.7).long()
    return x, y % c


def _scratch_train(model, x, y, cfg, probe=None):
    """cfg's training with torch.optim and torch.randperm only: rows (step, loss, acc, probe)."""
    if cfg.optimizer == "sgd":
        opt = torch.optim.SGD(
            model.parameters(),
            lr=cfg.lr,
            momentum=cfg.momentum,
            weight_decay=cfg.weight_decay,
        )
    else:
        opt = torch.optim.AdamW(
            model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay
        )
    n = len(y)
    g = torch.Generator().manual_seed(cfg.seed)
    order = []
    per_epoch = 1 if cfg.batch_size is None else math.ceil(n / cfg.batch_size)
    total = (
        cfg.epochs * per_epoch
        if cfg.steps is None
        else min(cfg.epochs * per_epoch, cfg.steps)
    )

    def lossf(out, lab):
        if cfg.loss == "cross_entropy":
            return F.cross_entropy(out, lab)
        return (
            ((out - F.one_hot(lab, out.shape[1]).to(out.dtype)) ** 2).sum(1).mean()
        )

    rows, stopped = [], "epochs"

    def record(step):
        nonlocal stopped
        with torch.no_grad():
            out = model(x)
            acc = (out.argmax(1) == y).double().mean().item()
            rows.append(
                (step, lossf(out, y).item(), acc, probe(model) if probe else None)
            )
            srt = out.sort(1, descending=True).values
            true = out.gather(1, y[:, None])[:, 0]
            other = torch.where(out.argmax(1) == y, srt[:, 1], srt[:, 0])
            if cfg.target_train_acc is not None and acc >= cfg.target_train_acc:
                stopped = "target_train_acc"
                return True
            if (
                cfg.margin_gamma is not None
                and ((true - other) >= cfg.margin_gamma).double().mean()
                >= cfg.margin_fraction
            ):
                stopped = "margin"
                return True
            return False

    if record(0):
        return rows, stopped
    for step in range(1, total + 1):
        if cfg.batch_size is None:
            idx = torch.arange(n)
        else:
            if not order:
                perm = torch.randperm(n, generator=g)
                order = [
                    perm[i : i + cfg.batch_size] for i in range(0, n, cfg.batch_size)
                ]
            idx = order.pop(0)
        opt.zero_grad()
        lossf(model(x[idx]), y[idx]).backward()
        opt.step()
        if (step % cfg.check_every == 0 or step == total) and record(step):
            break
    return rows, stopped


SCRATCH = [
    TrainConfig(
        optimizer="sgd",
        lr=0.2,
        momentum=0.7,
        weight_decay=0.03,
        batch_size=5,
        epochs=3,
        check_every=4,
        seed=3,
    ),
    TrainConfig(
        optimizer="adamw",
        lr=0.03,
        weight_decay=0.2,
        batch_size=7,
        epochs=2,
        steps=6,
        check_every=5,
        seed=8,
        loss="mse",
    ),
    TrainConfig(
        optimizer="sgd",
        lr=0.5,
        batch_size=None,
        epochs=40,
        check_every=3,
        target_train_acc=0.9,
    ),
    TrainConfig(
        optimizer="sgd",
        lr=0.4,
        momentum=0.3,
        batch_size=6,
        epochs=30,
        check_every=2,
        margin_gamma=0.3,
        margin_fraction=0.6,
        seed=1,
    ),
]


def _blobs(n=48, d=5, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % classes
    x = (
        torch.randn(n, d, generator=g, dtype=torch.float64)
        + 2 * F.one_hot(y, d).double()
    )
    return x, y


matplotlib.use("Agg")


NAN, INF = float("nan"), float("inf")


# =================================================================================================
# models.activation
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_every_activation_is_its_torch_function(name):
    z = torch.tensor([-3.0, -0.5, 0.0, 0.25, 2.0], dtype=D)
    want = {
        "relu": torch.relu(z),
        "gelu": F.gelu(z),
        "silu": z * torch.sigmoid(z),
        "tanh": torch.tanh(z),
        "sigmoid": 1 / (1 + torch.exp(-z)),
        "leaky_relu": torch.tensor([-0.3, -0.05, 0.0, 0.25, 2.0], dtype=D),
        "identity": z,
    }[name]
    torch.testing.assert_close(activation(name)(z), want, rtol=1e-14, atol=1e-15)
    torch.manual_seed(1)
    m = MLP(2, 3, 1, 2, activation=name).double()
    x = torch.tensor([[0.3, -1.2], [2.0, 0.5]], dtype=D)
    h = activation(name)(x @ m.layers[0].weight.T + m.layers[0].bias)
    logits = (
        h @ m.layers[1].weight.T + m.layers[1].bias
    )  # the last layer has no activation
    torch.testing.assert_close(m(x), logits)
    feats = m.features(x)
    assert len(feats) == 2
    torch.testing.assert_close(feats[0], h)
    torch.testing.assert_close(feats[1], logits)
    assert m.act_name == name


# =================================================================================================
# models.MLP
# =================================================================================================
def test_shapes_and_features():
    m = MLP(40, 16, 3, 10)
    x = torch.randn(5, 40)
    feats = m.features(x)
    assert [f.shape for f in feats] == [(5, 16)] * 3 + [(5, 10)]
    assert torch.allclose(feats[-1], m(x))
    assert m.depth == 3


def test_linear_model_and_no_bias():
    m = MLP(4, 8, 0, 3, bias=False)
    assert len(m.layers) == 1 and m.layers[0].bias is None
    x = torch.randn(2, 4)
    assert torch.allclose(m(x), x @ m.layers[0].weight.T)


def test_identity_activation_is_linear():
    m = MLP(3, 5, 2, 2, activation="identity")
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    assert torch.allclose(m(x + y) + m(torch.zeros(1, 3)), m(x) + m(y), atol=1e-5)


@pytest.mark.parametrize(
    "kw,err,match",
    [
        ({"width": 0}, ValueError, "width"),
        ({"depth": -1}, ValueError, "depth"),
        ({"in_dim": 2.0}, TypeError, "in_dim"),
        ({"activation": "swish"}, ValueError, "activation"),
    ],
)
def test_bad_arguments(kw, err, match):
    args = {"in_dim": 4, "width": 8, "depth": 1, "out_dim": 2, **kw}
    with pytest.raises(err, match=match):
        MLP(**args)


def test_bad_input_shape():
    with pytest.raises(ValueError, match="x must have shape"):
        MLP(4, 8, 1, 2)(torch.randn(3, 5))
    with pytest.raises(TypeError, match="activation"):
        activation(3)


@pytest.mark.parametrize(
    "act,fn",
    [
        ("relu", torch.relu),
        ("tanh", torch.tanh),
        ("leaky_relu", lambda z: torch.where(z > 0, z, 0.1 * z)),
    ],
)
def test_features_are_post_activations_by_hand(act, fn):
    torch.manual_seed(0)
    m = MLP(4, 6, 2, 3, activation=act)
    x = torch.randn(5, 4)
    h1 = fn(x @ m.layers[0].weight.T + m.layers[0].bias)
    h2 = fn(h1 @ m.layers[1].weight.T + m.layers[1].bias)
    out = h2 @ m.layers[2].weight.T + m.layers[2].bias
    feats = m.features(x)
    for got, want in zip(feats, (h1, h2, out)):
        assert torch.allclose(got, want, atol=1e-6)
    assert torch.allclose(m(x), out, atol=1e-6)
    if act == "relu":
        assert all(
            bool((f >= 0).all()) for f in feats[:-1]
        )  # post-activation: never negative


@pytest.mark.reference
def test_mlp_layers_are_nn_linear_built_in_order_under_the_seed():
    torch.manual_seed(4)
    m = MLP(3, 5, 2, 2)
    torch.manual_seed(4)
    ref = [nn.Linear(3, 5), nn.Linear(5, 5), nn.Linear(5, 2)]
    assert [(l.in_features, l.out_features) for l in m.layers] == [
        (3, 5),
        (5, 5),
        (5, 2),
    ]
    for l, r in zip(m.layers, ref):
        assert torch.equal(l.weight, r.weight) and torch.equal(l.bias, r.bias)
    x = torch.randn(4, 3)
    want = ref[2](torch.relu(ref[1](torch.relu(ref[0](x)))))
    torch.testing.assert_close(m(x), want, rtol=0, atol=0)
    torch.manual_seed(4)
    nb = MLP(3, 5, 1, 2, bias=False)
    torch.manual_seed(4)
    r0, r1 = nn.Linear(3, 5, bias=False), nn.Linear(5, 2, bias=False)
    assert torch.equal(nb.layers[0].weight, r0.weight) and torch.equal(
        nb.layers[1].weight, r1.weight
    )
    assert nb.depth == 1 and MLP(3, 5, 0, 2).depth == 0


@pytest.mark.reference
def test_parameter_limit_is_inclusive_and_counts_every_weight_and_bias(monkeypatch):
    # MLP(3, 4, 2, 2): 3*4 + 4 + 4*4 + 4 + 4*2 + 2 = 46 parameters
    monkeypatch.setattr(gmodels, "MAX_PARAMETERS", 46)
    MLP(3, 4, 2, 2)
    monkeypatch.setattr(gmodels, "MAX_PARAMETERS", 45)
    with pytest.raises(ValueError, match="46 parameters"):
        MLP(3, 4, 2, 2)


@pytest.mark.reference
def test_mlp_refuses_wrong_dtype_and_non_finite_input_and_accepts_numpy_bools():
    import numpy as np

    m = MLP(2, 3, 1, 2, bias=np.bool_(False))
    assert m.layers[0].bias is None
    with pytest.raises(TypeError, match="dtype"):
        m(torch.zeros(1, 2, dtype=D))
    with pytest.raises(ValueError, match="finite"):
        m.features(torch.tensor([[0.0, math.inf]]))
    with pytest.raises(TypeError, match="bias"):
        MLP(2, 3, 1, 2, bias=1)


@pytest.mark.boundary
def test_mlp_refuses_huge_sizes_and_bad_inputs_before_torch_does():
    with pytest.raises(ValueError, match="width"):
        models.MLP(5, 10**12, 1, 3)
    net = models.MLP(5, 8, 1, 3)
    x = torch.randn(4, 5)
    with pytest.raises(TypeError, match="x"):
        net(x.double())
    with pytest.raises(TypeError, match="x"):
        net(x.long())
    with pytest.raises(TypeError, match="x"):
        net(x.numpy())
    x[0, 0] = NAN
    with pytest.raises(ValueError, match="x"):
        net(x)
    with pytest.raises(ValueError, match="x"):
        net.features(x)


@pytest.mark.mutation
def test_make_mlp_is_torch_default_init_under_exactly_its_seed():
    """make_mlp(s) is the MLP torch builds right after torch.manual_seed(s)."""
    torch.manual_seed(11)
    ref = MLP(5, 7, 2, 3)
    got = make_mlp(11, 5, 7, 2, 3)
    for p, q in zip(got.parameters(), ref.parameters()):
        assert torch.equal(p, q)


# =================================================================================================
# models.make_mlp
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize("cfg", SCRATCH)
def test_train_is_the_loop_written_with_torch_alone(cfg):
    x, y = _data()
    a = make_mlp(5, 3, 6, 1, 3).double()
    b = make_mlp(5, 3, 6, 1, 3).double()
    probe = lambda m: m.layers[1].weight.norm().item()  # noqa: E731
    h = train(a, x, y, cfg, probes={"norm": probe})
    rows, stopped = _scratch_train(b, x, y, cfg, probe)
    assert h.step == [r[0] for r in rows]
    assert h.loss == pytest.approx([r[1] for r in rows], rel=1e-11)
    assert h.train_acc == pytest.approx(
        [r[2] for r in rows], abs=1e-6
    )  # float32 mean
    assert h.probes["norm"] == pytest.approx([r[3] for r in rows], rel=1e-11)
    assert h.stopped_by == stopped and h.steps_taken == rows[-1][0]
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-11, atol=1e-12)
    if cfg.target_train_acc is not None or cfg.margin_gamma is not None:
        assert stopped != "epochs"  # the rule did stop training early in this test
        assert h.steps_taken < total_steps(len(y), cfg)


@pytest.mark.reference
def test_make_mlp_leaves_the_global_generator_alone_and_passes_its_arguments():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    m = make_mlp(7, 3, 5, 2, 4, bias=False, act="gelu")
    assert torch.equal(torch.get_rng_state(), before)
    assert m.act_name == "gelu" and m.layers[0].bias is None and m.depth == 2
    assert [(l.in_features, l.out_features) for l in m.layers] == [
        (3, 5),
        (5, 5),
        (5, 4),
    ]
    assert not torch.equal(
        make_mlp(7, 3, 5, 2, 4).layers[0].weight,
        make_mlp(8, 3, 5, 2, 4).layers[0].weight,
    )


# =================================================================================================
# models.BatchedMLP
# =================================================================================================
def test_members_match_their_mlps():
    models = [make_mlp(s, 6, 8, 2, 3) for s in range(3)]
    b = BatchedMLP.from_models(models)
    x = torch.randn(10, 6)
    out = b(x)
    for i, m in enumerate(models):
        assert torch.allclose(out[i], m(x), atol=1e-6)
        assert torch.allclose(b.member(i)(x), m(x), atol=1e-6)
    assert b.size == 3 and [f.shape for f in b.features(x)][0] == (3, 10, 8)


@pytest.mark.parametrize("opt,mom,wd", [("sgd", 0.9, 1e-3), ("adamw", 0.0, 1e-2)])
def test_batched_training_equals_sequential(opt, mom, wd):
    x, y = data()
    cfg = TrainConfig(
        optimizer=opt,
        lr=0.05 if opt == "sgd" else 1e-2,
        momentum=mom,
        weight_decay=wd,
        batch_size=32,
        epochs=6,
        check_every=7,
    )
    seeds = [3, 11, 5]
    b = BatchedMLP.init(seeds, 6, 8, 2, 3).double()
    train_ensemble(b, x, y, cfg, seeds=seeds)
    ref = train_sequentially(seeds, x, y, cfg, 6, 8, 2, 3)
    for i, m in enumerate(ref):
        assert torch.allclose(b(x)[i], m(x), atol=1e-10)


def test_hidden_mask_makes_narrower_nets():
    mask = torch.zeros(2, 8)
    mask[0, :3] = 1
    mask[1, :] = 1
    b = BatchedMLP.init([0, 1], 4, 8, 1, 2, hidden_mask=mask)
    x = torch.randn(5, 4)
    h = b.features(x)[0]
    assert torch.all(h[0, :, 3:] == 0)
    narrow = b.member(0)
    assert torch.allclose(narrow(x), b(x)[0], atol=1e-6)
    loss = b(x).sum()
    loss.backward()
    assert torch.all(
        b.weights[1].grad[0][:, 3:] == 0
    )  # masked units receive no gradient downstream


def test_per_member_labels_and_stop_rules():
    x, y = data(n=60)
    labels = torch.stack(
        [y, torch.randint(3, (60,), generator=torch.Generator().manual_seed(9))]
    )
    b = BatchedMLP.init([0, 1], 6, 64, 1, 3).double()
    h = train_ensemble(
        b,
        x,
        labels,
        TrainConfig(
            optimizer="adamw",
            lr=1e-2,
            batch_size=None,
            epochs=3000,
            target_train_acc=1.0,
            check_every=10,
        ),
    )
    stops = h.probes["stop_step"]
    assert all(s < 3000 for s in stops)
    with torch.no_grad():
        acc = (b(x).argmax(-1) == labels).double().mean(-1)
    assert torch.all(acc == 1.0)


def test_bad_input():
    b = BatchedMLP.init([0, 1], 4, 8, 1, 2)
    with pytest.raises(ValueError, match="x must have shape"):
        b(torch.randn(3, 2, 4))
    with pytest.raises(ValueError, match="seeds"):
        train_ensemble(
            b,
            torch.randn(5, 4),
            torch.zeros(5, dtype=torch.int64),
            TrainConfig(),
            seeds=[1],
        )
    with pytest.raises(ValueError, match="y must have shape"):
        train_ensemble(
            b, torch.randn(5, 4), torch.zeros(4, dtype=torch.int64), TrainConfig()
        )
    with pytest.raises(ValueError, match="hidden_mask"):
        BatchedMLP.init([0, 1], 4, 8, 1, 2, hidden_mask=torch.ones(3, 8))
    with pytest.raises(ValueError, match="i must lie"):
        b.member(5)
    with pytest.raises(ValueError, match="models"):
        BatchedMLP.from_models([])


def test_train_ensemble_equals_hand_sgd_member_by_member():
    x, y = data(n=40)
    b = BatchedMLP.init([0, 1, 2], 6, 5, 1, 3).double()
    ref = [
        [
            (
                b.weights[l][e].detach().clone().requires_grad_(),
                b.biases[l][e].detach().clone().requires_grad_(),
            )
            for l in range(2)
        ]
        for e in range(3)
    ]
    lr, mom, wd, steps = 0.1, 0.9, 0.03, 6
    train_ensemble(
        b,
        x,
        y,
        TrainConfig(
            lr=lr,
            momentum=mom,
            weight_decay=wd,
            batch_size=None,
            epochs=steps,
            check_every=100,
        ),
    )
    for e in range(3):
        params, bufs = ref[e], [None] * 4
        for _ in range(steps):
            params = _hand_step_member(params, x, y, lr, mom, wd, bufs)
        for l in range(2):
            assert torch.allclose(b.weights[l][e], params[l][0], atol=1e-12, rtol=0)
            assert torch.allclose(b.biases[l][e], params[l][1], atol=1e-12, rtol=0)


def test_batched_features_are_post_activation_by_hand():
    b = BatchedMLP.init([0, 1], 4, 6, 2, 3, act="tanh")
    x = torch.randn(5, 4)
    feats = b.features(x)
    for e in range(2):
        h = x
        for l in range(3):
            z = h @ b.weights[l][e].T + b.biases[l][e]
            h = torch.tanh(z) if l < 2 else z
            assert torch.allclose(feats[l][e], h, atol=1e-6)


@pytest.mark.parametrize(
    "seeds,err",
    [
        ([], ValueError),
        (0, TypeError),
        ([1.5], TypeError),
        ([-1], ValueError),
        ([2**70], ValueError),
    ],
)
def test_bad_seeds_are_named_seeds(seeds, err):
    with pytest.raises(err, match="seeds"):
        BatchedMLP.init(seeds, 4, 8, 1, 2)


def test_stop_step_is_the_first_check_that_met_the_rule():
    x, y = data(n=60)
    labels = torch.stack(
        [y, torch.randint(3, (60,), generator=torch.Generator().manual_seed(9))]
    )
    b = BatchedMLP.init([0, 1], 6, 32, 1, 3).double()
    h = train_ensemble(
        b,
        x,
        labels,
        TrainConfig(
            optimizer="adamw",
            lr=1e-2,
            batch_size=None,
            epochs=400,
            target_train_acc=0.9,
            check_every=1,
        ),
    )
    for e, stop in enumerate(h.probes["stop_step"]):
        first = next(s for s, acc in zip(h.step, h.train_acc) if acc[e] >= 0.9)
        assert stop == first
    with (
        torch.no_grad()
    ):  # the stopped member keeps the weights it had at its stop step
        assert torch.all((b(x).argmax(-1) == labels).double().mean(-1) >= 0.9)


def test_more_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="seed"):
        make_mlp(-1, 3, 4, 1, 2)
    with pytest.raises(TypeError, match="seed"):
        make_mlp(1.5, 3, 4, 1, 2)
    with pytest.raises(ValueError, match="hidden_mask must hold only 0s and 1s"):
        BatchedMLP.init([0], 3, 4, 1, 2, hidden_mask=torch.full((1, 4), 0.5))
    with pytest.raises(TypeError, match="i must be an int"):
        BatchedMLP.init([0], 3, 4, 1, 2).member(0.5)


def test_member_of_a_masked_stack_is_the_same_function_for_any_activation():
    # a masked unit outputs act(0), which is 0.5 for the sigmoid: the next layer must ignore it
    mask = torch.tensor([[1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]])
    for act in ("sigmoid", "relu", "tanh"):
        model = BatchedMLP.init([0, 1], 5, 8, 2, 3, act=act, hidden_mask=mask)
        x = torch.randn(7, 5)
        for i in range(2):
            torch.testing.assert_close(
                model.member(i)(x), model(x)[i], rtol=1e-5, atol=1e-6
            )


@pytest.mark.reference
@pytest.mark.parametrize(
    "cfg",
    [
        TrainConfig(
            optimizer="sgd",
            lr=0.3,
            momentum=0.5,
            weight_decay=0.01,
            batch_size=6,
            epochs=4,
            check_every=3,
            target_train_acc=0.8,
        ),
        TrainConfig(
            optimizer="adamw",
            lr=0.05,
            weight_decay=0.1,
            batch_size=None,
            epochs=25,
            check_every=2,
            margin_gamma=0.2,
            margin_fraction=0.7,
            loss="mse",
        ),
    ],
)
def test_each_ensemble_member_is_train_alone_with_its_own_seed_and_labels(cfg):
    x, y = _data(seed=2)
    ys = torch.stack(
        [y.flip(0), (y + 1) % 3, y]
    )  # stop steps (16, 16, 12) and (25, 18, 8)
    seeds = [4, 9, 1]
    ens = BatchedMLP.init([7, 8, 9], 3, 6, 1, 3).double()
    h = train_ensemble(ens, x, ys, cfg, seeds=seeds)
    for e in range(3):
        m = make_mlp([7, 8, 9][e], 3, 6, 1, 3).double()
        he = train(m, x, ys[e], dataclasses.replace(cfg, seed=seeds[e]))
        assert h.probes["stop_step"][e] == he.steps_taken
        rows = [i for i, s in enumerate(h.step) if s in he.step]
        assert [h.step[i] for i in rows] == he.step
        assert [h.loss[i][e].item() for i in rows] == pytest.approx(
            he.loss, rel=1e-10
        )
        assert [h.train_acc[i][e].item() for i in rows] == pytest.approx(
            he.train_acc, abs=1e-6
        )
        torch.testing.assert_close(ens(x)[e], m(x), rtol=1e-10, atol=1e-11)
    stops = h.probes["stop_step"]
    assert (
        stops != sorted(stops) and len(set(stops)) > 1
    )  # members stop at their own steps
    want = (
        "all members met the stop rule"
        if max(stops) < total_steps(len(y), cfg)
        else "epochs"
    )
    assert h.stopped_by == want


@pytest.mark.reference
def test_train_ensemble_history_rows_and_probes():
    x, y = _data(n=10)
    ens = BatchedMLP.init([1, 2], 3, 4, 1, 3).double()
    h = train_ensemble(
        ens,
        x,
        y,
        TrainConfig(lr=0.1, batch_size=4, epochs=2, check_every=4),
        seeds=[0, 1],
        probes={"w": lambda m: float(m.weights[0].sum())},
    )
    assert h.step == [0, 4, 6] and len(h.probes["w"]) == 3
    assert all(r.shape == (2,) for r in h.loss + h.train_acc)
    assert h.probes["stop_step"] == [6, 6] and h.stopped_by == "epochs"
    with torch.no_grad():
        assert h.loss[-1].tolist() == pytest.approx(
            [F.cross_entropy(ens(x)[e], y).item() for e in range(2)], rel=1e-12
        )
        assert h.probes["w"][-1] == pytest.approx(
            float(ens.weights[0].sum()), rel=1e-12
        )


@pytest.mark.reference
@pytest.mark.parametrize(
    "rule",
    [{"margin_gamma": 0.5, "margin_fraction": 0.0}, {"target_train_acc": 0.0}],
)
def test_either_rule_alone_met_by_every_member_is_reported(rule):
    """A fraction 0 (or an accuracy target 0) is met at the check before the first update."""
    x, y = _data(n=8)
    ens = BatchedMLP.init([1, 2], 3, 4, 1, 3).double()
    before = [p.detach().clone() for p in ens.parameters()]
    h = train_ensemble(ens, x, y, TrainConfig(batch_size=None, epochs=5, **rule))
    assert h.probes["stop_step"] == [0, 0] and h.step == [0]
    assert h.stopped_by == "all members met the stop rule"
    assert all(torch.equal(p, q) for p, q in zip(ens.parameters(), before))
    m = make_mlp(1, 3, 4, 1, 3).double()
    h = train(m, x, y, TrainConfig(batch_size=None, epochs=5, **rule))
    want = "margin" if "margin_gamma" in rule else "target_train_acc"
    assert h.stopped_by == want and h.step == [0]


@pytest.mark.reference
def test_batched_mlp_per_member_inputs_and_no_bias_by_hand():
    seeds = [3, 1, 4]
    ens = BatchedMLP.init(seeds, 2, 3, 2, 2, bias=False, act="sigmoid").double()
    assert not ens.has_bias and ens.size == 3 and ens.act_name == "sigmoid"
    g = torch.Generator().manual_seed(0)
    xs = torch.randn(3, 4, 2, generator=g, dtype=D)
    out = ens(xs)
    feats = ens.features(xs)
    for e, s in enumerate(seeds):
        m = make_mlp(s, 2, 3, 2, 2, bias=False, act="sigmoid").double()
        h = torch.sigmoid(xs[e] @ m.layers[0].weight.T)
        torch.testing.assert_close(feats[0][e], h, rtol=1e-14, atol=1e-15)
        h = torch.sigmoid(h @ m.layers[1].weight.T)
        torch.testing.assert_close(feats[1][e], h, rtol=1e-14, atol=1e-15)
        torch.testing.assert_close(
            out[e], h @ m.layers[2].weight.T, rtol=1e-14, atol=1e-15
        )
        mem = ens.member(e)
        assert mem.layers[0].bias is None and mem.act_name == "sigmoid"
        torch.testing.assert_close(mem(xs[e]), out[e], rtol=1e-14, atol=1e-15)
    with pytest.raises(TypeError, match="dtype"):
        ens(torch.zeros(4, 2))


@pytest.mark.reference
def test_batched_mlp_construction_checks_and_linear_members():
    lin = BatchedMLP.init([0, 5], 3, 7, 0, 2)  # depth 0: one linear layer per member
    x = torch.randn(4, 3)
    for e, s in enumerate([0, 5]):
        m = make_mlp(s, 3, 7, 0, 2)
        torch.testing.assert_close(
            lin(x)[e], x @ m.layers[0].weight.T + m.layers[0].bias
        )
        torch.testing.assert_close(lin.member(e)(x), lin(x)[e])
    assert lin.member(1).depth == 0
    w = [torch.zeros(2, 3, 4), torch.zeros(2, 5, 3)]
    b = [torch.zeros(2, 3), torch.zeros(2, 5)]
    with pytest.raises(ValueError, match=r"weights\[1\] must take 3 inputs"):
        BatchedMLP([w[0], torch.zeros(2, 5, 4)], None)
    with pytest.raises(
        ValueError, match=r"weights\[1\] must have shape \(E, out, in\) with E = 2"
    ):
        BatchedMLP([w[0], torch.zeros(3, 5, 3)], None)
    with pytest.raises(ValueError, match=r"biases\[1\] must have shape \(2, 5\)"):
        BatchedMLP(w, [b[0], torch.zeros(2, 4)])
    with pytest.raises(ValueError, match="one entry per layer"):
        BatchedMLP(w, b[:1])
    with pytest.raises(
        ValueError, match="models\\[1\\] must have the shape and activation"
    ):
        BatchedMLP.from_models(
            [make_mlp(0, 3, 4, 1, 2), make_mlp(0, 3, 4, 1, 2, act="tanh")]
        )
    ok = BatchedMLP(w, b, act="tanh")
    assert ok.size == 2 and ok(torch.zeros(1, 4)).shape == (2, 1, 5)
    with pytest.raises(
        ValueError, match=r"x must have shape \(n, 4\) or \(2, n, 4\)"
    ):
        ok(torch.zeros(3, 1, 4))


@pytest.mark.reference
def test_hidden_mask_is_a_narrower_net_by_hand():
    """Member 0 keeps hidden units 0 and 2 of 4 (tanh, depth 2), member 1 keeps all: the stack
    computes, and member() returns, the net of the kept units' weights alone."""
    mask = torch.tensor([[1, 0, 1, 0], [1, 1, 1, 1]])
    ens = BatchedMLP.init([2, 6], 3, 4, 2, 2, act="tanh", hidden_mask=mask).double()
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(1), dtype=D)
    out = ens(x)
    for e, keep in enumerate([[0, 2], [0, 1, 2, 3]]):
        W = [ens.weights[l][e].detach() for l in range(3)]
        B = [ens.biases[l][e].detach() for l in range(3)]
        h = torch.tanh(x @ W[0][keep].T + B[0][keep])
        h = torch.tanh(h @ W[1][keep][:, keep].T + B[1][keep])
        want = h @ W[2][:, keep].T + B[2]
        torch.testing.assert_close(out[e], want, rtol=1e-13, atol=1e-14)
        torch.testing.assert_close(ens.member(e)(x), want, rtol=1e-13, atol=1e-14)
    assert torch.equal(ens.features(x)[1][0][:, [1, 3]], torch.zeros(5, 2, dtype=D))


@pytest.mark.reference
def test_default_minibatch_seeds_are_the_config_seed_plus_the_member_index():
    x, y = _data(n=9)
    cfg = TrainConfig(lr=0.2, batch_size=4, epochs=2, seed=5)
    a = BatchedMLP.init([1, 1], 3, 4, 1, 3).double()
    b = BatchedMLP.init([1, 1], 3, 4, 1, 3).double()
    train_ensemble(a, x, y, cfg)
    train_ensemble(b, x, y, cfg, seeds=[5, 6])
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(
        a.weights[0][0], a.weights[0][1]
    )  # same init, different orders


@pytest.mark.reference
def test_train_models_uses_the_configs_learning_rate_and_weight_decay():
    from gtlib import preliminaries as prelim
    from gtlib.data import Dataset

    x, y = _blobs(n=60)
    x = x.float()
    ds = Dataset(x, y, x[:12], y[:12], num_classes=3)
    cfg = prelim.PrelimConfig(
        width=8, depth=1, seeds=2, epochs=3, batch_size=20, lr=0.03, weight_decay=0.2
    )
    model, _ = prelim.train_models(ds, cfg, depth=1, seed=0)
    # the reference: each member alone, AdamW with the config's settings, the same seeds
    ref = train_sequentially(
        [0, 1],
        x,
        y,
        TrainConfig(
            optimizer="adamw",
            lr=0.03,
            weight_decay=0.2,
            batch_size=20,
            epochs=3,
            check_every=10**9,
        ),
        5,
        8,
        1,
        3,
    )
    for e, m in enumerate(ref):
        assert torch.allclose(model(x)[e], m(x), atol=1e-5)
    assert not math.isclose(
        float(model.weights[0].norm()),
        float(BatchedMLP.init([0, 1], 5, 8, 1, 3).weights[0].norm()),
    )


@pytest.mark.mutation
def test_default_minibatch_seeds_are_cfg_seed_plus_member_index():
    """Without ``seeds``, member i draws its minibatches from seed ``cfg.seed + i``: the plain
    PyTorch loop (train_sequentially, torch.optim) run with those seeds gives the same nets."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(40, 5, generator=g, dtype=torch.float64)
    y = torch.randint(3, (40,), generator=g)
    cfg = TrainConfig(
        lr=0.1, momentum=0.5, batch_size=8, epochs=2, check_every=100, seed=5
    )
    b = BatchedMLP.init([5, 6], 5, 7, 1, 3).double()
    train_ensemble(b, x, y, cfg)
    ref = train_sequentially([5, 6], x, y, cfg, 5, 7, 1, 3)
    with torch.no_grad():
        for i, m in enumerate(ref):
            torch.testing.assert_close(b(x)[i], m(x), rtol=0, atol=1e-10)


@pytest.mark.mutation
def test_train_refuses_a_stack_of_networks_and_names_the_right_function():
    # A BatchedMLP (E members) is trained by train_ensemble; train() used to read its class
    # count and then fail deep inside cross_entropy with mismatched batch sizes.
    stack = BatchedMLP.init([0, 1], 6, 4, 1, 3)
    x, y = torch.randn(8, 6), torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    with pytest.raises(TypeError, match="model must be one network.*train_ensemble"):
        T.train(stack, x, y, T.TrainConfig())
