"""Tests of gtlib.uniform.margin, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import math
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy import stats

from gtlib import uniform as U
from gtlib.uniform.margin import _member_logits
from gtlib.uniform import margin as uniform_margin
from gtlib.data import mnist1d
from gtlib.models import BatchedMLP
from gtlib.train import TrainConfig

from tests.chapters.uniform.helpers import (
    ATOL,
    RTOL,
    _acc,
    _bartlett_np,
    _hand_margins,
    _nan_at,
    _neyshabur_np,
    _np,
    _raises,
    _spec_np,
)
from tests.oracles import uniform_loops as ref


def _tiny_problem(n=32, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = (x[:, 0] > 0).long()
    return x, y


def _pool(n=40, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long() + (
        x[:, 2] > 0.8
    ).long()  # 3 unbalanced classes
    return x, y


def _solo(model, i):
    bs = [b[i : i + 1] for b in model.biases] if model.has_bias else None
    return BatchedMLP([w[i : i + 1] for w in model.weights], bs, act=model.act_name)


def _rule_met(model, i, x, y, gamma, fraction):
    with torch.no_grad():
        mg = _hand_margins(_member_logits(model, i, x), y)
    return np.mean(mg >= gamma) >= fraction


def _blobs(n=48, d=5, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % classes
    x = (
        torch.randn(n, d, generator=g, dtype=torch.float64)
        + 2 * F.one_hot(y, d).double()
    )
    return x, y


def _pool_eng(n=48, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long() + (x[:, 2] > 1).long()  # 3 classes
    return x, y


def _both(sizes, cfg, bias, **kw):
    """The same ensemble trained by the old loop and by the new one."""
    x, y = _pool_eng()
    models = [
        BatchedMLP.init([5 + i for i in range(len(sizes))], 6, 16, 2, 3, bias=bias)
        for _ in range(2)
    ]
    seeds = [40 + i for i in range(len(sizes))]
    old = ref.old_train_on_subsets(models[0], x, y, sizes, cfg, seeds=seeds, **kw)
    new = U.train_on_subsets(models[1], x, y, sizes, cfg, seeds=seeds, **kw)
    return old, new, models[0], models[1]


# =================================================================================================
# uniform._member_logits (private; one member's logits)
# =================================================================================================
def test_train_on_subsets_each_member_fits_its_prefix():
    x, y = _tiny_problem()
    y_bad = y.clone()
    y_bad[8:] = 1 - y_bad[8:]  # member 0 never sees these labels
    model = BatchedMLP.init([0, 1], 5, 32, 1, 2)
    cfg = TrainConfig(lr=0.5, batch_size=4, target_train_acc=1.0)
    run = U.train_on_subsets(
        model, x, y_bad, [8, 32], cfg, check_every_epochs=1, max_epochs=500
    )
    assert run.met_rule == [True, True]
    with torch.no_grad():
        assert (_member_logits(model, 0, x[:8]).argmax(1) == y_bad[:8]).all()
        assert (_member_logits(model, 1, x).argmax(1) == y_bad).all()
    assert all(e > 0 for e in run.epochs)


@pytest.mark.reference
@pytest.mark.parametrize("bias,act", [(True, "tanh"), (False, "relu")])
def test_member_logits_against_a_loop(bias, act):
    model = BatchedMLP.init([1, 2, 3], 4, 6, 2, 3, bias=bias, act=act).double()
    x = torch.randn(
        5, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )
    fn = torch.tanh if act == "tanh" else torch.relu
    for i in (0, 2):
        h = x
        for l, w in enumerate(model.weights):
            h = h @ w[i].T + (model.biases[l][i] if bias else 0)
            if l < 2:
                h = fn(h)
        got = _member_logits(model, i, x)
        assert got.shape == (5, 3) and torch.allclose(got, h, rtol=1e-12, atol=1e-14)
        assert torch.allclose(got, model(x)[i], rtol=1e-12, atol=1e-14)
    assert bool((got < 0).any())  # no activation on the output layer


@pytest.mark.reference
def test_train_on_subsets_accuracy_rule_and_full_batch_mse_gradient_descent():
    x, y = _pool()
    model = BatchedMLP.init([2, 3], 5, 16, 1, 3).double()
    cfg = TrainConfig(lr=0.5, batch_size=4, target_train_acc=0.95)
    run = U.train_on_subsets(model, x, y, [15, 40], cfg, max_epochs=300)
    assert run.met_rule == [True, True]
    for i, n in enumerate([15, 40]):
        with torch.no_grad():
            acc = (
                (_member_logits(model, i, x[:n]).argmax(1) == y[:n]).double().mean()
            )
        assert float(acc) >= 0.95
    # the loss and the learning rate of cfg: a member whose batch is its whole prefix takes
    # full-batch gradient steps on the summed-over-classes squared error to one-hot targets
    one = BatchedMLP.init([6], 5, 7, 2, 3, bias=True, act="tanh").double()
    ws = [p[0].detach().clone().requires_grad_() for p in one.parameters()]
    names = [n for n, _ in one.named_parameters()]
    n, lr = 18, 0.2
    cfg = TrainConfig(lr=lr, batch_size=n, margin_gamma=1e6, loss="mse")
    U.train_on_subsets(one, x, y, [n], cfg, max_epochs=3)
    W = {k: v for k, v in zip(names, ws)}
    for _ in range(3):
        h = torch.tanh(x[:n] @ W["weights.0"].T + W["biases.0"])
        h = torch.tanh(h @ W["weights.1"].T + W["biases.1"])
        out = h @ W["weights.2"].T + W["biases.2"]
        loss = ((out - F.one_hot(y[:n], 3).double()) ** 2).sum(1).mean()
        grads = torch.autograd.grad(loss, list(W.values()))
        W = {
            k: (v - lr * g).detach().requires_grad_()
            for (k, v), g in zip(W.items(), grads)
        }
    for k, p in one.named_parameters():
        assert torch.allclose(p[0], W[k], rtol=1e-10, atol=1e-12), k


@pytest.mark.boundary
def test_cnn_forward_refuses_bad_x():
    cnn = U.BatchedCNN1d([0, 1], 2, 8)
    _raises(ValueError, "x", cnn, _nan_at(torch.randn(3, 40)))
    _raises(TypeError, "x", cnn, [[0.0] * 40])
    _raises(TypeError, "seeds", U.BatchedCNN1d, None)
    assert cnn(torch.randn(3, 40)).shape == (2, 3, 10)


# =================================================================================================
# uniform.train_on_subsets
# =================================================================================================
def test_train_on_subsets_frozen_member_keeps_weights():
    x, y = _tiny_problem()
    model = BatchedMLP.init([3, 4], 5, 16, 1, 2)
    before = [w.detach().clone() for w in model.weights]
    # any margin reached by 0% of points is always met: both members stop at step 0, untouched
    cfg = TrainConfig(lr=0.5, batch_size=4, margin_gamma=1.0, margin_fraction=0.0)
    run = U.train_on_subsets(model, x, y, [8, 16], cfg)
    assert run.stop_step == [0, 0] and run.met_rule == [True, True]
    for w, w0 in zip(model.weights, before):
        assert torch.equal(w.detach(), w0)


def test_train_on_subsets_bad_input():
    x, y = _tiny_problem()
    model = BatchedMLP.init([0, 1], 5, 8, 1, 2)
    ok = TrainConfig(lr=0.1, batch_size=4, target_train_acc=1.0)
    with pytest.raises(ValueError):
        U.train_on_subsets(model, x, y, [8, 64], ok)
    with pytest.raises(ValueError):
        U.train_on_subsets(model, x, y, [8], ok)
    with pytest.raises(ValueError):
        U.train_on_subsets(
            model,
            x,
            y,
            [8, 16],
            TrainConfig(lr=0.1, momentum=0.9, target_train_acc=1.0),
        )
    with pytest.raises(ValueError):
        U.train_on_subsets(model, x, y, [8, 16], TrainConfig(lr=0.1, batch_size=4))
    with pytest.raises(TypeError):
        U.train_on_subsets(model, x, y, [8, 16.5], ok)


@pytest.mark.reference
def test_train_on_subsets_batched_equals_each_member_trained_alone():
    x, y = _pool()
    model = BatchedMLP.init([5, 6, 7], 5, 10, 1, 3, bias=True).double()
    solos = [_solo(model, i) for i in range(3)]
    # sizes out of order: the middle member stops first, so for a while the members still
    # training (0 and 2) are not a contiguous block of the ensemble
    sizes, seeds = [40, 8, 20], [40, 41, 42]
    cfg = TrainConfig(lr=0.3, batch_size=5, margin_gamma=1.5, margin_fraction=0.75)
    kw = dict(check_every_epochs=0.5, max_epochs=30)
    run = U.train_on_subsets(model, x, y, sizes, cfg, seeds=seeds, **kw)
    assert run.stop_step[1] < run.stop_step[2] < run.stop_step[0]
    for i in range(3):
        one = U.train_on_subsets(
            solos[i], x, y, [sizes[i]], cfg, seeds=[seeds[i]], **kw
        )
        assert (one.stop_step[0], one.met_rule[0], one.epochs[0]) == (
            run.stop_step[i],
            run.met_rule[i],
            run.epochs[i],
        )
        for p, q in zip(model.parameters(), solos[i].parameters()):
            assert torch.allclose(p[i], q[0], rtol=1e-10, atol=1e-12)
    for s, n, e in zip(run.stop_step, sizes, run.epochs):
        assert e == pytest.approx(s * 5 / n, rel=1e-15)


@pytest.mark.reference
def test_train_on_subsets_seeds_default_to_cfg_seed_plus_index():
    x, y = _pool()
    cfg = TrainConfig(lr=0.25, batch_size=4, margin_gamma=1e6, seed=7)  # never met
    runs = {}
    for key, seeds in (("none", None), ("explicit", [7, 8]), ("other", [7, 9])):
        model = BatchedMLP.init([1, 2], 5, 6, 1, 3).double()
        U.train_on_subsets(model, x, y, [12, 20], cfg, seeds=seeds, max_epochs=2)
        runs[key] = [w.detach().clone() for w in model.weights]
    assert all(torch.equal(a, b) for a, b in zip(runs["none"], runs["explicit"]))
    # member 0 has seed 7 in both, member 1 draws its batches from another stream
    assert all(
        torch.equal(a[0], b[0]) for a, b in zip(runs["explicit"], runs["other"])
    )
    assert not torch.equal(runs["explicit"][0][1], runs["other"][0][1])


@pytest.mark.reference
def test_train_on_subsets_max_epochs_by_hand():
    x, y = _pool()
    cfg = TrainConfig(lr=0.1, batch_size=4, margin_gamma=1e6)  # never met
    model = BatchedMLP.init([1, 2], 5, 3, 1, 3).double()
    run = U.train_on_subsets(model, x, y, [10, 30], cfg, max_epochs=2.5)
    # ceil(2.5 * 10 / 4) = 7 and ceil(2.5 * 30 / 4) = 19 steps
    assert run.stop_step == [7, 19] and run.met_rule == [False, False]
    assert run.epochs == [pytest.approx(7 * 4 / 10), pytest.approx(19 * 4 / 30)]
    # at least one step, however small max_epochs
    assert U.train_on_subsets(
        model, x, y, [10, 30], cfg, max_epochs=0.01
    ).stop_step == [1, 1]


@pytest.mark.reference
def test_train_on_subsets_stops_at_the_first_due_check_meeting_the_rule():
    x, y = _pool()
    y = y.clone()
    y[12:] = (
        y[12:] + 1
    ) % 3  # member 0 never sees these: on all of x it could not stop
    gamma, frac, b, lr = 1.0, 0.9, 6, 0.8
    cfg = TrainConfig(lr=lr, batch_size=b, margin_gamma=gamma, margin_fraction=frac)
    sizes, seeds = [12, 30], [3, 4]
    stops = {}
    for cee, periods in (
        (1.4, [3, 7]),
        (1.0, [2, 5]),
        (0.2, [1, 1]),
    ):  # round(cee n / b)
        model = BatchedMLP.init([8, 9], 5, 24, 1, 3).double()
        init = [w.detach().clone() for w in model.weights] + [
            p.detach().clone() for p in model.biases
        ]
        run = U.train_on_subsets(
            model,
            x,
            y,
            sizes,
            cfg,
            seeds=seeds,
            check_every_epochs=cee,
            max_epochs=60,
        )
        assert run.met_rule == [True, True]
        stops[cee] = run.stop_step
        for i, (n, per, s) in enumerate(zip(sizes, periods, run.stop_step)):
            assert s > 0 and s % per == 0, (cee, i, s, per)
            assert _rule_met(model, i, x[:n], y[:n], gamma, frac)
            if cee == 1.0 or (cee == 0.2 and i == 1):
                continue
            # replay the member alone to the check before: the rule was not met there
            replay = _solo(BatchedMLP(init[:2], init[2:]), i)
            U.train_on_subsets(
                replay,
                x,
                y,
                [n],
                TrainConfig(lr=lr, batch_size=b, margin_gamma=1e6),
                seeds=[seeds[i]],
                max_epochs=(s - per - 0.5) * b / n,
            )
            assert not _rule_met(replay, 0, x[:n], y[:n], gamma, frac), (cee, i)
    assert stops[1.4][0] != stops[1.0][0] and stops[1.4][1] != stops[1.0][1]
    assert (
        stops[0.2][0] % 2 == 1
    )  # checked after every step: an odd step is possible


@pytest.mark.reference
def test_train_on_subsets_is_gradient_descent_with_its_learning_rate():
    x, y = _blobs(n=40)
    sizes = [20, 40]
    model = BatchedMLP.init([3, 4], 5, 8, 1, 3, bias=False).double()
    init = [
        [w[e].detach().clone().requires_grad_() for w in model.weights]
        for e in range(2)
    ]
    lr, epochs = 0.3, 3
    for e, n in enumerate(
        sizes
    ):  # batch = the whole prefix: each step is a full-batch GD step
        cfg = TrainConfig(
            lr=lr, batch_size=n, margin_gamma=1e6
        )  # never met: runs max_epochs
        one = BatchedMLP(
            [w[e : e + 1].detach() for w in model.weights], None
        ).double()
        U.train_on_subsets(one, x, y, [n], cfg, max_epochs=epochs)
        ws = init[e]
        for _ in range(epochs):
            logits = torch.relu(x[:n] @ ws[0].T) @ ws[1].T
            grads = torch.autograd.grad(F.cross_entropy(logits, y[:n]), ws)
            ws = [(w - lr * g).detach().requires_grad_() for w, g in zip(ws, grads)]
        for got, want in zip(one.weights, ws):
            assert torch.allclose(got[0], want, atol=1e-10, rtol=0)


@pytest.mark.boundary
def test_train_on_subsets_refuses_bad_labels_and_checks_sizes_first():
    model = BatchedMLP.init([0, 1], 5, 8, 1, 3)
    x, y = torch.randn(30, 5), torch.randint(0, 3, (30,))
    ok = TrainConfig(lr=0.1, batch_size=4, target_train_acc=1.0)
    _raises(
        ValueError,
        "y",
        U.train_on_subsets,
        model,
        x,
        torch.full((30,), 99),
        [10, 20],
        ok,
    )
    _raises(TypeError, "y", U.train_on_subsets, model, x, y.float(), [10, 20], ok)
    _raises(ValueError, "x", U.train_on_subsets, model, _nan_at(x), y, [10, 20], ok)
    _raises(TypeError, "cfg", U.train_on_subsets, model, x, y, [10, 20], None)
    _raises(
        TypeError, "seeds", U.train_on_subsets, model, x, y, [10, 20], ok, seeds=3
    )
    # the size is named even when the config also lacks a stop rule
    _raises(
        ValueError,
        "sizes",
        U.train_on_subsets,
        model,
        x,
        y,
        [10, 300],
        TrainConfig(lr=0.1, batch_size=4),
    )


# =================================================================================================
# uniform.margin_sweep
# =================================================================================================
@pytest.mark.reference
def test_margin_sweep_reports_what_its_members_do(monkeypatch):
    kept = []
    real = U.train_on_subsets

    def keeping(model, x, y, sizes, tcfg, **kw):
        kept.append(
            dict(
                model=model,
                init=[w.detach().clone() for w in model.weights],
                tcfg=tcfg,
                kw=kw,
            )
        )
        return real(model, x, y, sizes, tcfg, **kw)

    monkeypatch.setattr(uniform_margin, "train_on_subsets", keeping)
    cfg = U.MarginSweepConfig(
        sizes=(20, 35, 50),
        n_test=40,
        width=12,
        depth=1,
        lr=0.2,
        batch_size=10,
        gamma=1.5,
        margin_fraction=0.8,
        check_every_epochs=2.0,
        max_epochs=40,
    )
    seed = 1
    r = U.margin_sweep(cfg, seed=seed)
    k = kept[0]
    assert k["kw"] == dict(
        seeds=[150, 151, 152], check_every_epochs=2.0, max_epochs=40
    )
    assert (
        k["tcfg"].lr,
        k["tcfg"].batch_size,
        k["tcfg"].margin_gamma,
        k["tcfg"].margin_fraction,
    ) == (0.2, 10, 1.5, 0.8)
    ds = mnist1d(50, 40)
    fresh = BatchedMLP.init([150, 151, 152], 40, 12, 1, 10, bias=False)
    assert all(torch.equal(a, b.detach()) for a, b in zip(k["init"], fresh.weights))
    model = k["model"]
    with torch.no_grad():
        assert r.test_error == pytest.approx(
            (1 - _acc(model(ds.x_test), ds.y_test)).tolist(), abs=1e-7
        )
        assert r.init_test_error == pytest.approx(
            (1 - _acc(fresh(ds.x_test), ds.y_test)).tolist(), abs=1e-7
        )
    for i, n in enumerate(cfg.sizes):
        ws = [w[i].detach() for w in model.weights]
        w0s = [w0[i] for w0 in k["init"]]
        assert r.init_spectral_product[i] == pytest.approx(
            np.prod([_spec_np(w) for w in w0s]), rel=1e-6
        )
        m = r.measures[i]
        xi = ds.x[:n]
        assert m.spectral == pytest.approx([_spec_np(w) for w in ws], rel=1e-6)
        assert m.distance == pytest.approx(
            math.sqrt(sum(((_np(a) - _np(b)) ** 2).sum() for a, b in zip(ws, w0s))),
            rel=1e-5,
        )
        xf = float(np.sqrt((_np(xi) ** 2).sum()))
        B = float(np.sqrt((_np(xi) ** 2).sum(1)).max())
        assert m.bartlett == pytest.approx(
            _bartlett_np(ws, w0s, xf, 1.5, n), rel=1e-5
        )
        assert m.neyshabur == pytest.approx(
            _neyshabur_np(ws, w0s, B, 1.5, n, h=40), rel=1e-5
        )
        if r.met_margin[i]:
            with torch.no_grad():
                mg = _hand_margins(_member_logits(model, i, xi), ds.y[:n])
            assert np.mean(mg >= 1.5) >= 0.8
        assert r.epochs[i] * n / 10 == pytest.approx(round(r.epochs[i] * n / 10))
    series = r.series()
    assert list(series) == [
        "test error",
        "distance from init",
        "product of spectral norms",
        "Bartlett et al. bound",
        "Neyshabur et al. bound",
    ]
    assert series["distance from init"].tolist() == [m.distance for m in r.measures]
    assert series["Neyshabur et al. bound"].tolist() == [
        m.neyshabur for m in r.measures
    ]
    for name, v in series.items():
        ref = stats.linregress(np.log(cfg.sizes), np.log(v))
        assert r.fits[name].slope == pytest.approx(ref.slope, rel=1e-9, abs=1e-12), (
            name
        )
        assert r.fits[name].intercept == pytest.approx(ref.intercept, rel=1e-9), name


# =================================================================================================
# uniform.train_on_subsets against the loop it replaced
# =================================================================================================
@pytest.mark.engine
@pytest.mark.parametrize("bias", [False, True])
def test_train_on_subsets_is_exactly_the_old_loop(bias):
    # margin rule, members stopping at different steps (so most steps update only some members:
    # the active_only path) and one member running out of epochs; lr a power of two: bitwise
    cfg = TrainConfig(lr=0.5, batch_size=5, margin_gamma=3.0, margin_fraction=0.75)
    old, new, m_old, m_new = _both(
        [8, 20, 48], cfg, bias, check_every_epochs=0.5, max_epochs=20
    )
    assert (new.stop_step, new.met_rule, new.epochs) == (
        old.stop_step,
        old.met_rule,
        old.epochs,
    )
    assert len(set(old.stop_step)) == 3 and old.met_rule == [True, False, True]
    for p, q in zip(m_new.parameters(), m_old.parameters()):
        assert torch.equal(p.detach(), q.detach())


@pytest.mark.engine
def test_train_on_subsets_accuracy_rule_matches_at_the_chapters_learning_rate():
    cfg = TrainConfig(lr=0.1, batch_size=4, target_train_acc=1.0)
    old, new, m_old, m_new = _both([8, 16, 40], cfg, True, max_epochs=80)
    assert (new.stop_step, new.met_rule, new.epochs) == (
        old.stop_step,
        old.met_rule,
        old.epochs,
    )
    assert len(set(old.stop_step)) > 1 and any(old.met_rule)
    for p, q in zip(m_new.parameters(), m_old.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=RTOL, atol=ATOL)
