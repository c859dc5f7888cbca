"""Tests of gtlib.train, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import math
import pytest
import torch
import torch.nn.functional as F

from gtlib import train as T
from gtlib.engine import member_margins, stop_rule
from gtlib.models import BatchedMLP, MLP, make_mlp
from gtlib.train import (
    TrainConfig,
    train_ensemble,
    loss_fn,
    accuracy,
    margins,
    total_steps,
    train,
    batch_indices,
    make_optimizer,
    History,
    check_data,
    train_sequentially,
)
from gtlib.train import _ensemble_loss as ensemble_loss, _stop_reason as stop_reason


def blobs(n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    x = torch.randn(n, 2, generator=g) + 3 * (2 * y[:, None] - 1).float()
    return x, y


def _hand_sgd(model, x, y, lr, momentum, wd, steps):
    """Full-batch SGD with momentum and coupled weight decay, written out (PyTorch's convention:
    g <- grad + wd p; b <- momentum b + g (b = g at the first step); p <- p - lr b)."""
    bufs = [None] * len(list(model.parameters()))
    for _ in range(steps):
        model.zero_grad()
        loss_fn("cross_entropy", model(x), y).backward()
        with torch.no_grad():
            for i, p in enumerate(model.parameters()):
                g = p.grad + wd * p
                bufs[i] = g.clone() if bufs[i] is None else momentum * bufs[i] + g
                p -= lr * bufs[i]


D = torch.float64


def _loop_margins(logits, y):
    out = torch.empty(logits.shape[:-1], dtype=logits.dtype)
    for idx in torch.cartesian_prod(
        *[torch.arange(s) for s in logits.shape[:-1]]
    ).view(-1, logits.ndim - 1):
        row = logits[tuple(idx)]
        lab = int(y[tuple(idx)[-y.ndim :]]) if y.ndim else int(y)
        others = [float(row[j]) for j in range(row.shape[0]) if j != lab]
        out[tuple(idx)] = float(row[lab]) - max(others)
    return out


def _data(n=23, d=3, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=D)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.7).long()
    return x, y % c


# =================================================================================================
# train.TrainConfig
# =================================================================================================
@pytest.mark.parametrize(
    "kw,match",
    [
        ({"optimizer": "lbfgs"}, "optimizer"),
        ({"lr": 0}, "lr"),
        ({"momentum": 1.0}, "momentum"),
        ({"batch_size": 0}, "batch_size"),
        ({"epochs": 0}, "epochs"),
        ({"target_train_acc": 1.5}, "target_train_acc"),
        ({"margin_fraction": -1}, "margin_fraction"),
        ({"loss": "hinge"}, "loss"),
        ({"margin_gamma": -1.0}, "margin_gamma"),
    ],
)
def test_bad_config(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        TrainConfig(**kw).validate()


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"lr": math.inf}, "TrainConfig.lr"),
        ({"lr": math.nan}, "TrainConfig.lr"),
        ({"weight_decay": math.nan}, "TrainConfig.weight_decay"),
        ({"weight_decay": math.inf}, "TrainConfig.weight_decay"),
        ({"margin_gamma": math.nan}, "TrainConfig.margin_gamma"),
        ({"momentum": math.nan}, "TrainConfig.momentum"),
        ({"optimizer": "adam"}, "TrainConfig.optimizer"),
        ({"batch_size": 0}, "TrainConfig.batch_size"),
        ({"batch_size": 2.0}, "TrainConfig.batch_size"),
        ({"seed": 2**70}, "TrainConfig.seed"),
        ({"check_every": 0}, "TrainConfig.check_every"),
    ],
)
def test_non_finite_and_unknown_settings_are_refused(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        TrainConfig(**kw)
    cfg = TrainConfig()
    with pytest.raises((ValueError, TypeError), match=match):
        setattr(
            cfg, *next(iter(kw.items()))
        )  # nor can a valid config be made invalid


def test_margin_stop_rule_against_hand_margins():
    logits = torch.tensor([[2.0, 0.0], [0.0, 0.5], [3.0, 2.5]])
    y = torch.tensor([0, 1, 0])
    # margins by hand: 2.0, 0.5, 0.5 (one third have margin >= 1, all have margin >= 0.5)
    assert (
        stop_reason(logits, y, TrainConfig(margin_gamma=0.5, margin_fraction=1.0))
        == "margin"
    )
    assert (
        stop_reason(logits, y, TrainConfig(margin_gamma=1.0, margin_fraction=0.5))
        is None
    )
    assert (
        stop_reason(logits, y, TrainConfig(margin_gamma=1.0, margin_fraction=0.3))
        == "margin"
    )


# =================================================================================================
# train.margins
# =================================================================================================
def test_margins_known_values():
    logits = torch.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 1.0]])
    assert torch.allclose(
        margins(logits, torch.tensor([0, 2])), torch.tensor([1.0, -4.0])
    )
    stacked = torch.stack([logits, -logits])
    assert margins(stacked, torch.tensor([0, 2])).shape == (2, 2)
    assert accuracy(logits, torch.tensor([0, 1])) == 1.0


@pytest.mark.reference
def test_margins_by_hand_with_ties_and_per_member_labels():
    logits = torch.tensor(
        [[1.0, 3.0, 3.0, 0.0], [2.0, -1.0, 0.5, 2.0], [0.0, 0.0, -4.0, 1.5]]
    )
    y = torch.tensor([1, 0, 2])
    # 3 - 3 (a tie with class 2) = 0; 2 - 2 (tie with class 3) = 0; -4 - 1.5 = -5.5
    assert margins(logits, y).tolist() == [0.0, 0.0, -5.5]
    assert member_margins(logits, y).tolist() == [0.0, 0.0, -5.5]
    g = torch.Generator().manual_seed(5)
    big = torch.randn(3, 6, 4, generator=g, dtype=D)
    ys = torch.randint(4, (3, 6), generator=g)
    torch.testing.assert_close(
        margins(big, ys), _loop_margins(big, ys), rtol=0, atol=0
    )
    torch.testing.assert_close(
        margins(big, ys[1]), _loop_margins(big, ys[1].expand(3, 6)), rtol=0, atol=0
    )
    far = torch.tensor(
        [[-5000.0, -4000.0, -4500.0]]
    )  # very negative logits stay exact
    assert margins(far, torch.tensor([1])).item() == 500.0
    assert margins(far, torch.tensor([0])).item() == -1000.0
    two = torch.tensor([[0.25, -1.0]])  # two classes: the margin is the difference
    assert margins(two, torch.tensor([1])).item() == -1.25


# =================================================================================================
# train.accuracy
# =================================================================================================
@pytest.mark.reference
def test_accuracy_by_hand_with_ties_and_per_member_labels():
    logits = torch.tensor(
        [
            [1.0, 1.0, 0.0],
            [0.0, 2.0, 2.0],
            [3.0, 0.0, 1.0],
            [0.0, 0.0, 1.0],
            [0.0, 5.0, 1.0],
        ]
    )
    # argmax takes the first of tied maxima: 0, 1, 0, 2, 1
    assert accuracy(logits, torch.tensor([0, 1, 0, 2, 1])) == 1.0
    assert accuracy(logits, torch.tensor([1, 2, 0, 2, 0])) == pytest.approx(0.4)
    stacked = torch.stack([logits, -logits])
    ys = torch.tensor([[0, 1, 0, 2, 0], [2, 0, 1, 0, 0]])
    # member 1's arg-maxes: 2, 0, 1, 0, 0 -> all right; member 0: 4 of 5
    assert accuracy(stacked, ys).tolist() == pytest.approx([0.8, 1.0])
    assert accuracy(stacked, ys[0]).tolist() == pytest.approx([0.8, 0.2])


@pytest.mark.mutation
@pytest.mark.parametrize("members", [1, 2, 4])
def test_accuracy_refuses_per_member_labels_for_another_number_of_members(members):
    logits = torch.randn(3, 5, 4)
    with pytest.raises(ValueError, match=r"y must have shape \(5,\) or \(E, 5\)"):
        T.accuracy(logits, torch.randint(4, (members, 5)))
    assert T.accuracy(logits, torch.randint(4, (3, 5))).shape == (3,)


# =================================================================================================
# train.loss_fn
# =================================================================================================
@pytest.mark.parametrize("name", ["cross_entropy", "mse"])
def test_ensemble_loss_is_each_members_train_loss(name):
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(3, 7, 4, generator=g, dtype=torch.float64)
    y = torch.randint(4, (7,), generator=g)
    per_member_y = torch.randint(4, (3, 7), generator=g)
    got = ensemble_loss(name, logits, y)
    got2 = ensemble_loss(name, logits, per_member_y)
    for e in range(3):
        assert got[e].item() == pytest.approx(
            loss_fn(name, logits[e], y).item(), rel=1e-12
        )
        assert got2[e].item() == pytest.approx(
            loss_fn(name, logits[e], per_member_y[e]).item(), rel=1e-12
        )


def test_loss_fn_against_hand_computation():
    g = torch.Generator().manual_seed(1)
    logits, y = (
        torch.randn(5, 3, generator=g, dtype=torch.float64),
        torch.tensor([0, 2, 1, 1, 0]),
    )
    mse = (
        sum(
            sum((logits[i, c] - (1.0 if c == y[i] else 0.0)) ** 2 for c in range(3))
            for i in range(5)
        )
        / 5
    )
    assert loss_fn("mse", logits, y).item() == pytest.approx(float(mse), rel=1e-12)
    ce = sum(-logits[i, y[i]] + torch.logsumexp(logits[i], 0) for i in range(5)) / 5
    assert loss_fn("cross_entropy", logits, y).item() == pytest.approx(
        float(ce), rel=1e-12
    )


def test_adamw_weight_decay_matches_the_update_rule_by_hand():
    x, y = blobs(30)
    x = x.double()
    torch.manual_seed(4)
    a = MLP(2, 5, 1, 2).double()
    b = MLP(2, 5, 1, 2).double()
    b.load_state_dict(a.state_dict())
    lr, wd, b1, b2, eps, steps = 0.01, 0.3, 0.9, 0.999, 1e-8, 5
    train(
        a,
        x,
        y,
        TrainConfig(
            optimizer="adamw",
            lr=lr,
            weight_decay=wd,
            batch_size=None,
            epochs=steps,
            check_every=100,
        ),
    )
    m = [torch.zeros_like(p) for p in b.parameters()]
    v = [torch.zeros_like(p) for p in b.parameters()]
    for t in range(
        1, steps + 1
    ):  # decoupled decay (Loshchilov and Hutter): p <- p (1 - lr wd)
        b.zero_grad()
        loss_fn("cross_entropy", b(x), y).backward()
        with torch.no_grad():
            for i, p in enumerate(b.parameters()):
                p.mul_(1 - lr * wd)
                m[i] = b1 * m[i] + (1 - b1) * p.grad
                v[i] = b2 * v[i] + (1 - b2) * p.grad**2
                p -= lr * (m[i] / (1 - b1**t)) / ((v[i] / (1 - b2**t)).sqrt() + eps)
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.allclose(p, q, atol=1e-12, rtol=0)


@pytest.mark.parametrize(
    "fn",
    [
        accuracy,
        margins,
        lambda lg, y: loss_fn("mse", lg, y),
        lambda lg, y: loss_fn("cross_entropy", lg, y),
    ],
)
def test_metrics_refuse_bad_labels_naming_them(fn):
    logits = torch.randn(4, 3)
    with pytest.raises(ValueError, match=r"y must hold labels in \[0, 3\)"):
        fn(logits, torch.tensor([0, 1, 2, 3]))
    with pytest.raises(TypeError, match="y must hold integer"):
        fn(logits, torch.zeros(4))
    with pytest.raises(ValueError, match="y must have 4 labels"):
        fn(logits, torch.zeros(5, dtype=torch.int64))


def test_loss_fn_refuses_non_finite_logits_and_unknown_losses():
    with pytest.raises(ValueError, match="logits must hold finite"):
        loss_fn("mse", torch.full((2, 2), math.nan), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="name must be one of"):
        loss_fn("hinge", torch.zeros(2, 2), torch.tensor([0, 1]))


@pytest.mark.reference
def test_losses_are_torch_functional_for_every_shape():
    g = torch.Generator().manual_seed(6)
    logits = torch.randn(3, 5, 4, generator=g, dtype=D)
    ys = torch.randint(4, (3, 5), generator=g)
    for e in range(3):
        want = F.cross_entropy(logits[e], ys[e])
        assert loss_fn("cross_entropy", logits[e], ys[e]).item() == pytest.approx(
            want.item(), rel=1e-13
        )
        assert ensemble_loss("cross_entropy", logits, ys)[e].item() == pytest.approx(
            want.item(), rel=1e-13
        )
        want = F.mse_loss(logits[e], F.one_hot(ys[e], 4).to(D), reduction="sum") / 5
        assert loss_fn("mse", logits[e], ys[e]).item() == pytest.approx(
            want.item(), rel=1e-13
        )
        assert ensemble_loss("mse", logits, ys)[e].item() == pytest.approx(
            want.item(), rel=1e-13
        )
    # (E, n, C) logits with loss_fn: the mean over every member's points
    want = F.cross_entropy(logits.reshape(15, 4), ys.reshape(15))
    assert loss_fn("cross_entropy", logits, ys).item() == pytest.approx(
        want.item(), rel=1e-13
    )
    want = F.mse_loss(logits, F.one_hot(ys, 4).to(D), reduction="sum") / 15
    assert loss_fn("mse", logits, ys).item() == pytest.approx(want.item(), rel=1e-13)
    # shared labels broadcast to every member
    shared = ensemble_loss("cross_entropy", logits, ys[2])
    assert shared.tolist() == pytest.approx(
        [F.cross_entropy(logits[e], ys[2]).item() for e in range(3)], rel=1e-13
    )


@pytest.mark.reference
def test_cross_entropy_and_mse_by_hand():
    logits = torch.tensor([[0.0, math.log(3.0)], [2.0, 0.0]], dtype=D)
    y = torch.tensor([1, 1])
    # p(1 | row 0) = 3/4, p(1 | row 1) = 1 / (1 + e^2)
    want = (-math.log(0.75) + math.log(1 + math.exp(2.0))) / 2
    assert loss_fn("cross_entropy", logits, y).item() == pytest.approx(
        want, rel=1e-14
    )
    # MSE: row 0 (0 - 0)^2 + (ln 3 - 1)^2, row 1 (2 - 0)^2 + (0 - 1)^2 = 5
    assert loss_fn("mse", logits, y).item() == pytest.approx(
        ((math.log(3) - 1) ** 2 + 5) / 2
    )


# =================================================================================================
# train.make_optimizer
# =================================================================================================
def test_make_optimizer_names_what_it_builds():
    p = [torch.nn.Parameter(torch.zeros(2))]
    assert type(make_optimizer(p, TrainConfig(optimizer="sgd"))) is torch.optim.SGD
    assert (
        type(make_optimizer(p, TrainConfig(optimizer="adamw"))) is torch.optim.AdamW
    )
    with pytest.raises(TypeError, match="cfg"):
        make_optimizer(p, {"optimizer": "adam"})


@pytest.mark.reference
def test_make_optimizer_passes_every_setting():
    p = [torch.zeros(2, requires_grad=True)]
    o = make_optimizer(p, TrainConfig(lr=0.3, momentum=0.4, weight_decay=0.02))
    assert isinstance(o, torch.optim.SGD)
    grp = o.param_groups[0]
    assert (grp["lr"], grp["momentum"], grp["weight_decay"]) == (0.3, 0.4, 0.02)
    o = make_optimizer(p, TrainConfig(optimizer="adamw", lr=0.003, weight_decay=0.5))
    assert isinstance(o, torch.optim.AdamW)
    grp = o.param_groups[0]
    assert (grp["lr"], grp["weight_decay"], grp["betas"], grp["eps"]) == (
        0.003,
        0.5,
        (0.9, 0.999),
        1e-8,
    )


# =================================================================================================
# train.total_steps
# =================================================================================================
def test_full_batch_step_count():
    assert total_steps(1000, TrainConfig(batch_size=None, epochs=7)) == 7
    assert total_steps(1000, TrainConfig(batch_size=300, epochs=2)) == 8
    assert total_steps(1000, TrainConfig(batch_size=300, epochs=2, steps=5)) == 5


@pytest.mark.reference
def test_total_steps_edges():
    assert total_steps(10, TrainConfig(batch_size=5, epochs=3)) == 6
    assert total_steps(11, TrainConfig(batch_size=5, epochs=3)) == 9
    assert total_steps(4, TrainConfig(batch_size=64, epochs=3)) == 3
    assert total_steps(10, TrainConfig(batch_size=5, epochs=3, steps=6)) == 6
    assert total_steps(10, TrainConfig(batch_size=5, epochs=3, steps=7)) == 6
    assert total_steps(10, TrainConfig(batch_size=None, epochs=4, steps=3)) == 3
    assert total_steps(1, TrainConfig(batch_size=1, epochs=2)) == 2


# =================================================================================================
# train.batch_indices
# =================================================================================================
def test_empty_data_never_hangs():
    gen = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="n must be"):
        batch_indices(
            0, TrainConfig(), gen, "cpu"
        )  # used to loop forever on an empty permutation
    with pytest.raises(ValueError, match="n must be"):
        total_steps(0, TrainConfig())
    with pytest.raises(ValueError, match="x must hold at least one row"):
        train(
            MLP(2, 4, 1, 2),
            torch.zeros(0, 2),
            torch.zeros(0, dtype=torch.int64),
            TrainConfig(),
        )


def test_batches_cover_every_point_once_per_epoch():
    gen = torch.Generator().manual_seed(0)
    it = batch_indices(10, TrainConfig(batch_size=4), gen, "cpu")
    epoch = [next(it) for _ in range(3)]
    assert [len(b) for b in epoch] == [4, 4, 2]
    assert sorted(torch.cat(epoch).tolist()) == list(range(10))


@pytest.mark.reference
def test_batch_indices_full_batch_and_fresh_permutations():
    it = batch_indices(
        5, TrainConfig(batch_size=None), torch.Generator().manual_seed(0), "cpu"
    )
    assert [next(it).tolist() for _ in range(2)] == [[0, 1, 2, 3, 4]] * 2
    gen = torch.Generator().manual_seed(12)
    it = batch_indices(5, TrainConfig(batch_size=2), gen, "cpu")
    got = [next(it).tolist() for _ in range(6)]
    g = torch.Generator().manual_seed(12)
    p1, p2 = (
        torch.randperm(5, generator=g).tolist(),
        torch.randperm(5, generator=g).tolist(),
    )
    assert got == [p1[:2], p1[2:4], p1[4:], p2[:2], p2[2:4], p2[4:]]


# =================================================================================================
# train.check_data
# =================================================================================================
@pytest.mark.reference
def test_check_data_per_member_labels_and_class_count():
    x = torch.zeros(4, 2)
    check_data(x, torch.tensor([0, 2, 1, 2]), 3)
    check_data(x, torch.zeros(3, 4, dtype=torch.int64), 3, per_member=3)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        check_data(x, torch.tensor([0, 2, 1, 1]), 2)
    with pytest.raises(ValueError, match=r"y must have shape \(4,\) or \(3, 4\)"):
        check_data(x, torch.zeros(2, 4, dtype=torch.int64), 3, per_member=3)
    with pytest.raises(ValueError, match=r"y must have shape \(4,\)"):
        check_data(x, torch.zeros(3, 4, dtype=torch.int64), 3)
    with pytest.raises(ValueError, match="x must have shape"):
        check_data(torch.zeros(4), torch.zeros(4, dtype=torch.int64))
    with pytest.raises(ValueError, match="at least one row and one column"):
        check_data(torch.zeros(4, 0), torch.zeros(4, dtype=torch.int64))
    with pytest.raises(ValueError, match="same device"):  # meta stands in for a GPU
        check_data(x, torch.zeros(4, dtype=torch.int64, device="meta"))


@pytest.mark.mutation
def test_check_data_refuses_labels_on_another_device():
    """x and y on different devices are refused by name (the meta device stands in for a GPU)."""
    x = torch.zeros(3, 2)
    with pytest.raises(ValueError, match="same device"):
        check_data(x, torch.zeros(3, dtype=torch.int64, device="meta"))


# =================================================================================================
# train._stop_reason (private; the stop rules train checks)
# =================================================================================================
@pytest.mark.reference
def test_default_margin_fraction_is_ninety_nine_percent():
    """100 points, margins 1 except k of them at -1: met for k = 1 (99%), not for k = 2."""
    y = torch.zeros(100, dtype=torch.int64)
    for k, want in ((1, True), (2, False)):
        logits = torch.zeros(100, 2)
        logits[:, 0] = 1.0
        logits[:k, 0] = -1.0
        assert bool(stop_rule(margin_gamma=1.0)(logits, y)) is want
        assert (
            stop_reason(logits, y, TrainConfig(margin_gamma=1.0)) == "margin"
        ) is want


@pytest.mark.reference
def test_stop_reason_prefers_accuracy_and_meets_thresholds_exactly():
    logits = torch.tensor([[2.0, 0.0], [0.0, 0.5], [0.0, 1.0], [3.0, 0.0]])
    y = torch.tensor([0, 1, 0, 0])  # 3 of 4 right; margins 2, 0.5, -1, 3
    both = TrainConfig(target_train_acc=0.75, margin_gamma=0.5, margin_fraction=0.75)
    assert stop_reason(logits, y, both) == "target_train_acc"
    assert (
        stop_reason(
            logits,
            y,
            TrainConfig(
                target_train_acc=0.8, margin_gamma=0.5, margin_fraction=0.75
            ),
        )
        == "margin"
    )
    assert (
        stop_reason(logits, y, TrainConfig(margin_gamma=0.5, margin_fraction=0.76))
        is None
    )
    assert (
        stop_reason(logits, y, TrainConfig(margin_gamma=2.0, margin_fraction=0.5))
        == "margin"
    )
    assert (
        stop_reason(logits, y, TrainConfig(margin_gamma=2.01, margin_fraction=0.5))
        is None
    )
    assert stop_reason(logits, y, TrainConfig()) is None


@pytest.mark.reference
def test_a_target_accuracy_met_exactly_stops_training():
    logits = torch.tensor([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 2.0]])
    y = torch.tensor([0, 1, 1, 0])  # accuracy exactly 0.5
    assert (
        stop_reason(logits, y, TrainConfig(target_train_acc=0.5))
        == "target_train_acc"
    )
    assert stop_reason(logits, y, TrainConfig(target_train_acc=0.75)) is None
    y_all = torch.tensor([0, 1, 0, 1])  # accuracy exactly 1.0
    assert (
        stop_reason(logits, y_all, TrainConfig(target_train_acc=1.0))
        == "target_train_acc"
    )


@pytest.mark.mutation
def test_target_accuracy_is_met_at_exactly_the_target():
    """The rule is 'accuracy >= target': 2 of 4 rows right meets a target of 0.5 (by hand)."""
    logits = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    y = torch.tensor([0, 1, 1, 1])  # rows 0 and 1 right, rows 2 and 3 wrong
    assert (
        stop_reason(logits, y, TrainConfig(target_train_acc=0.5))
        == "target_train_acc"
    )
    assert stop_reason(logits, y, TrainConfig(target_train_acc=0.75)) is None


# =================================================================================================
# train.train
# =================================================================================================
def test_training_reduces_loss_and_records_probes():
    torch.manual_seed(0)
    x, y = blobs()
    m = MLP(2, 16, 1, 2)
    h = train(
        m,
        x,
        y,
        TrainConfig(lr=0.1, epochs=5, batch_size=20, check_every=5),
        probes={"w_norm": lambda model: model.layers[0].weight.norm().item()},
    )
    assert h.loss[-1] < h.loss[0] and h.train_acc[-1] > 0.95
    assert len(h.probes["w_norm"]) == len(h.step) and h.steps_taken == total_steps(
        200, TrainConfig(epochs=5, batch_size=20)
    )


def test_stop_rules():
    torch.manual_seed(0)
    x, y = blobs()
    h = train(
        MLP(2, 16, 1, 2),
        x,
        y,
        TrainConfig(
            lr=0.1, epochs=100, batch_size=None, target_train_acc=0.95, check_every=1
        ),
    )
    assert (
        h.stopped_by == "target_train_acc"
        and h.train_acc[-1] >= 0.95
        and h.steps_taken < 100
    )
    h = train(
        MLP(2, 16, 1, 2),
        x,
        y,
        TrainConfig(
            optimizer="adamw",
            lr=0.05,
            epochs=2000,
            batch_size=None,
            margin_gamma=2.0,
            margin_fraction=0.9,
            check_every=5,
        ),
    )
    assert h.stopped_by == "margin"


def test_bad_data_shapes():
    with pytest.raises(ValueError, match="same n"):
        train(
            MLP(2, 4, 1, 2),
            torch.randn(5, 2),
            torch.zeros(4, dtype=torch.int64),
            TrainConfig(),
        )
    with pytest.raises(ValueError, match="logits"):
        margins(torch.randn(3), torch.zeros(3, dtype=torch.int64))


@pytest.mark.parametrize(
    "make,err,match",
    [
        (lambda x, y: (x, y.float()), TypeError, "y must hold integer class labels"),
        (lambda x, y: (x, y + 2), ValueError, r"y must hold labels in \[0, 2\)"),
        (lambda x, y: (x, y - 1), ValueError, "y must hold labels"),
        (
            lambda x, y: (x.masked_fill(x > 2, float("nan")), y),
            ValueError,
            "x must hold finite",
        ),
        (lambda x, y: (x.long(), y), TypeError, "x must be a floating-point"),
        (lambda x, y: (x, y[:, None]), ValueError, "y must have 20 labels"),
        (
            lambda x, y: (x, y[None].expand(2, 20)),
            ValueError,
            r"y must have shape \(20,\)",
        ),
    ],
)
def test_bad_training_data_is_refused_before_torch_sees_it(make, err, match):
    x, y = blobs(20)
    bx, by = make(x, y)
    with pytest.raises(err, match=match):
        train(MLP(2, 4, 1, 2), bx, by, TrainConfig(epochs=1))


@pytest.mark.parametrize("momentum,wd", [(0.0, 0.1), (0.9, 0.05)])
def test_sgd_weight_decay_matches_the_update_rule_by_hand(momentum, wd):
    x, y = blobs(30)
    x = x.double()
    torch.manual_seed(3)
    a = MLP(2, 5, 1, 2).double()
    b = MLP(2, 5, 1, 2).double()
    b.load_state_dict(a.state_dict())
    train(
        a,
        x,
        y,
        TrainConfig(
            lr=0.05,
            momentum=momentum,
            weight_decay=wd,
            batch_size=None,
            epochs=7,
            check_every=100,
        ),
    )
    _hand_sgd(b, x, y, 0.05, momentum, wd, 7)
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.allclose(p, q, atol=1e-12, rtol=0)


def test_train_refuses_bad_model_and_probes():
    x, y = blobs(10)
    with pytest.raises(TypeError, match="model"):
        train("net", x, y, TrainConfig(epochs=1))
    with pytest.raises(TypeError, match="probes"):
        train(MLP(2, 4, 1, 2), x, y, TrainConfig(epochs=1), probes={"a": 3})


@pytest.mark.reference
def test_history_steps_taken_and_train_refusing_labels_beyond_the_model():
    assert History().steps_taken == 0 and History(step=[0, 5, 7]).steps_taken == 7
    x, y = _data()
    with pytest.raises(ValueError, match=r"y must hold labels in \[0, 2\)"):
        train(make_mlp(0, 3, 4, 1, 2).double(), x, y, TrainConfig(epochs=1))
    with pytest.raises(ValueError, match=r"labels in \[0, 2\)"):
        train_ensemble(
            BatchedMLP.init([0], 3, 4, 1, 2).double(), x, y, TrainConfig(epochs=1)
        )


@pytest.mark.reference
def test_the_last_step_is_always_checked():
    torch.manual_seed(0)
    x, y = torch.randn(12, 3), torch.arange(12) % 2
    h = train(
        MLP(3, 4, 1, 2), x, y, TrainConfig(batch_size=None, epochs=7, check_every=5)
    )
    assert h.step == [0, 5, 7] and h.steps_taken == 7


@pytest.mark.mutation
def test_train_reads_the_class_count_from_the_last_layers_outputs():
    # 6 inputs, 3 outputs: labels 0..2 train, label 3 is refused naming y (not the input width).
    net = MLP(6, 5, 1, 3)
    x = torch.randn(8, 6)
    T.train(net, x, torch.tensor([0, 1, 2, 0, 1, 2, 0, 1]), T.TrainConfig(steps=1))
    with pytest.raises(ValueError, match=r"y must hold labels in \[0, 3\)"):
        T.train(
            net, x, torch.tensor([0, 1, 3, 0, 1, 2, 0, 1]), T.TrainConfig(steps=1)
        )


# =================================================================================================
# train._ensemble_loss (private; every ensemble's objective)
# =================================================================================================
def test_ensemble_mse_by_hand():
    logits = torch.tensor([[[1.0, 0.0, 2.0], [0.5, 0.5, 0.5]]], dtype=torch.float64)
    y = torch.tensor([2, 0])
    # point 0: (1-0)^2 + 0 + (2-1)^2 = 2; point 1: 0.25 + 0.25 + 0.25 = 0.75; mean over points
    assert ensemble_loss("mse", logits, y).item() == pytest.approx((2 + 0.75) / 2)


# =================================================================================================
# train.train_ensemble
# =================================================================================================
def test_train_ensemble_refuses_bad_data():
    b = BatchedMLP.init([0, 1], 4, 8, 1, 2)
    x = torch.randn(5, 4)
    y = torch.zeros(5, dtype=torch.int64)
    with pytest.raises(ValueError, match="x must be a torch.Tensor .non-empty"):
        train_ensemble(b, x[:0], y[:0], TrainConfig())
    with pytest.raises(TypeError, match="integer class labels"):
        train_ensemble(b, x, y.float(), TrainConfig())
    with pytest.raises(ValueError, match=r"labels in \[0, 2\)"):
        train_ensemble(b, x, y + 2, TrainConfig())
    with pytest.raises(ValueError, match="finite"):
        train_ensemble(b, x * math.nan, y, TrainConfig())


# =================================================================================================
# train.train_sequentially
# =================================================================================================
@pytest.mark.reference
def test_train_sequentially_mse_and_refusing_stop_rules():
    x, y = _data(n=12)
    cfg = TrainConfig(
        optimizer="sgd",
        lr=0.1,
        momentum=0.2,
        batch_size=5,
        epochs=2,
        loss="mse",
        seed=0,
    )
    [m] = train_sequentially([6], x, y, cfg, 3, 4, 1, 3, act="tanh")
    ref = make_mlp(6, 3, 4, 1, 3, act="tanh").double()
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.2)
    g = torch.Generator().manual_seed(6)
    for _ in range(2):
        perm = torch.randperm(12, generator=g)
        for i in range(0, 12, 5):
            idx = perm[i : i + 5]
            opt.zero_grad()
            ((ref(x[idx]) - F.one_hot(y[idx], 3).double()) ** 2).sum(
                1
            ).mean().backward()
            opt.step()
    assert m.layers[0].weight.dtype == D and m.act_name == "tanh"
    for p, q in zip(m.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-12, atol=1e-13)
    with pytest.raises(ValueError, match="stop rule"):
        train_sequentially([0], x, y, TrainConfig(margin_gamma=1.0), 3, 4, 1, 3)
    with pytest.raises(ValueError, match="stop rule"):
        train_sequentially([0], x, y, TrainConfig(target_train_acc=0.5), 3, 4, 1, 3)
