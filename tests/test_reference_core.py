"""The core (gtlib.engine, gtlib.train, gtlib.models) against references that
cannot share its bugs (issue 19, section 6, round 3): torch.optim run member by member in float64
for every optimizer hyperparameter, torch.randperm/randint drawn by hand for every batch order,
a training loop written from scratch with torch alone, torch.nn.functional losses, nn.Linear and
hand computations on tiny asymmetric inputs, and edge values (ties, thresholds met exactly,
contiguous and scattered frozen members, zero steps, a check at step 0)."""
import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gtlib import models as gmodels
from gtlib.engine import (EpochBatches, ReplacementBatches, StackedOptimizer, StreamBatches, fit,
                          member_batch, member_margins, stop_rule)
from gtlib.models import ACTIVATIONS, BatchedMLP, MLP, activation, make_mlp
from gtlib.train import (History, TrainConfig, accuracy, batch_indices, check_data, ensemble_loss,
                         loss_fn, make_optimizer, margins, stop_reason, total_steps, train,
                         train_ensemble, train_sequentially)

D = torch.float64


# =============================================================================================
# 1. StackedOptimizer against torch.optim, member by member, every hyperparameter
# =============================================================================================
def _pick(v, e):
    return v[e] if isinstance(v, list) else v


def _torch_opt(kind, q, lr, momentum, wd, betas, eps):
    if kind == "sgd":
        return torch.optim.SGD([q], lr=lr, momentum=momentum, weight_decay=wd)
    cls = torch.optim.AdamW if kind == "adamw" else torch.optim.Adam
    return cls([q], lr=lr, betas=betas, eps=eps, weight_decay=wd)


def _compare(kinds, lrs, moms, wds, active, scale=lambda t: 1.0, betas=(0.9, 0.999), eps=1e-8,
             E=4, steps=7, seed=0):
    """Random float64 gradients fed to one StackedOptimizer and to E torch optimizers."""
    g = torch.Generator().manual_seed(seed)
    shapes = [(E, 2, 3), (E, 3)]
    stacked = [torch.randn(s, generator=g, dtype=D).requires_grad_() for s in shapes]
    ref = [[p.detach()[e].clone().requires_grad_() for p in stacked] for e in range(E)]
    opt = StackedOptimizer(stacked, kinds, lrs, moms, wds, betas=betas, eps=eps, members=E)
    refs = [[_torch_opt(_pick(kinds, e), q, _pick(lrs, e), _pick(moms, e), _pick(wds, e), betas,
                        eps) for q in ref[e]] for e in range(E)]
    for t in range(steps):
        grads = [torch.randn(s, generator=g, dtype=D) for s in shapes]
        act = active(t)
        opt.step(grads, act, scale(t))
        for e in range(E):
            if act is None or bool(act[e]):
                for q, gr, o in zip(ref[e], grads, refs[e]):
                    o.param_groups[0]["lr"] = _pick(lrs, e) * scale(t)
                    q.grad = gr[e].clone()
                    o.step()
    for e in range(E):
        for p, q in zip(stacked, ref[e]):
            torch.testing.assert_close(p.detach()[e], q.detach(), rtol=1e-12, atol=1e-13)
    return opt


ALL = lambda t: None  # noqa: E731
SCATTERED = lambda t: torch.tensor([t % 2 == 0, True, t % 3 == 0, t != 2])  # noqa: E731
MIDDLE = lambda t: torch.tensor([False, True, True, t == 0])  # noqa: E731  contiguous, not all
SCALE = lambda t: 0.3 + 0.25 * t  # noqa: E731


@pytest.mark.parametrize("kind", ["adam", "adamw"])
@pytest.mark.parametrize("active", [ALL, SCATTERED, MIDDLE])
def test_adam_betas_eps_and_decay_are_torch_optims(kind, active):
    """Non-default betas and a large eps (so every one of them shows), shared lr."""
    _compare(kind, 0.03, 0.0, 0.2, active, SCALE, betas=(0.7, 0.95), eps=0.05)


@pytest.mark.parametrize("kind", ["adam", "adamw"])
@pytest.mark.parametrize("active", [ALL, SCATTERED, MIDDLE])
def test_adam_per_member_learning_rates_are_torch_optims(kind, active):
    _compare(kind, [0.01, 0.05, 0.002, 0.2], 0.0, 0.1, active, SCALE, betas=(0.8, 0.99),
             eps=1e-3)


@pytest.mark.parametrize("lrs", [0.07, [0.07, 0.3, 0.01, 0.12]])
@pytest.mark.parametrize("active", [ALL, SCATTERED, MIDDLE])
def test_sgd_momentum_decay_and_schedule_are_torch_optims(lrs, active):
    _compare("sgd", lrs, 0.6, 0.15, active, SCALE)


def test_per_member_momentum_decay_and_kind_are_torch_optims():
    """Every member has its own kind, momentum and decay; two share a group (same settings)."""
    _compare(["sgd", "sgd", "adam", "sgd"], [0.1, 0.2, 0.05, 0.3], [0.3, 0.8, 0.0, 0.3],
             [0.02, 0.0, 0.3, 0.02], SCATTERED, SCALE, betas=(0.85, 0.9), eps=0.01)
    _compare(["adamw", "adam", "adamw", "adamw"], 0.04, 0.0, [0.5, 0.5, 0.05, 0.5], SCATTERED,
             betas=(0.6, 0.97), eps=0.02)


def test_adam_ignores_sgd_momentum():
    _compare("adam", 0.02, 0.9, 0.0, ALL, betas=(0.8, 0.99), eps=0.01)


def test_single_model_optimizer_with_a_schedule_is_torch_optim():
    g = torch.Generator().manual_seed(3)
    for kind in ("sgd", "adamw", "adam"):
        p = torch.randn(3, 2, generator=g, dtype=D).requires_grad_()
        q = p.detach().clone().requires_grad_()
        opt = StackedOptimizer([p], kind, 0.05, 0.4 if kind == "sgd" else 0.0, 0.1,
                               betas=(0.75, 0.9), eps=0.1)
        ref = _torch_opt(kind, q, 0.05, 0.4, 0.1, (0.75, 0.9), 0.1)
        for t in range(5):
            gr = torch.randn(3, 2, generator=g, dtype=D)
            opt.step([gr], lr_scale=2.0 - 0.3 * t)
            ref.param_groups[0]["lr"] = 0.05 * (2.0 - 0.3 * t)
            q.grad = gr.clone()
            ref.step()
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-12, atol=1e-13)
        assert opt.t.tolist() == [5]


def test_adam_clock_counts_each_members_own_steps():
    opt = _compare("adam", 0.01, 0.0, 0.0, SCATTERED, steps=6)
    # member 0: t = 0, 2, 4; member 1: all 6; member 2: t = 0, 3; member 3: all but t = 2
    assert opt.t.tolist() == [3, 6, 2, 5]


def test_a_none_gradient_leaves_that_parameter_alone():
    a = torch.ones(2, 3, dtype=D, requires_grad=True)
    b = torch.ones(2, 2, dtype=D, requires_grad=True)
    opt = StackedOptimizer([a, b], "sgd", 0.5, weight_decay=0.1, members=2)
    opt.step([None, torch.full((2, 2), 2.0, dtype=D)])
    assert torch.equal(a.detach(), torch.ones(2, 3, dtype=D))
    # w - lr (g + wd w) = 1 - 0.5 (2 + 0.1) = -0.05
    torch.testing.assert_close(b.detach(), torch.full((2, 2), -0.05, dtype=D))


def test_sgd_first_steps_by_hand():
    """Two SGD steps with momentum 0.5 and decay 0.1 on w = 1, g = 1, lr = 0.1, lr_scale 2:
    b1 = 1 + 0.1 = 1.1, w1 = 1 - 0.2 * 1.1 = 0.78; b2 = 0.5 * 1.1 + 1 + 0.078 = 1.628,
    w2 = 0.78 - 0.2 * 1.628 = 0.4544."""
    w = torch.ones(1, 1, dtype=D, requires_grad=True)
    opt = StackedOptimizer([w], "sgd", 0.1, 0.5, 0.1, members=1)
    opt.step([torch.ones(1, 1, dtype=D)], lr_scale=2.0)
    assert w.item() == pytest.approx(0.78, abs=1e-15)
    opt.step([torch.ones(1, 1, dtype=D)], lr_scale=2.0)
    assert w.item() == pytest.approx(0.4544, abs=1e-15)


def test_adam_first_step_by_hand():
    """At t = 1 bias correction makes Adam's step lr * g / (|g| + eps) (m_hat = g, v_hat = g^2):
    w = 2, g = 3, lr = 0.1, eps = 1: Adam with L2 decay 0.5: g' = 4, w = 2 - 0.1 * 4 / 5 = 1.92;
    AdamW with decay 0.5: w = 2 (1 - 0.05) - 0.1 * 3 / 4 = 1.825."""
    for kind, want in (("adam", 1.92), ("adamw", 1.825)):
        w = torch.full((1, 1), 2.0, dtype=D, requires_grad=True)
        opt = StackedOptimizer([w], kind, 0.1, weight_decay=0.5, betas=(0.6, 0.7), eps=1.0,
                               members=1)
        opt.step([torch.full((1, 1), 3.0, dtype=D)])
        assert w.item() == pytest.approx(want, abs=1e-14)


def test_shared_settings_are_shared_and_sequences_need_members():
    p = torch.zeros(3, 2, requires_grad=True)
    opt = StackedOptimizer([p], "adamw", 0.2, 0.0, 0.05, members=3)
    assert opt.kinds == ["adamw"] * 3 and opt.lr == [0.2] * 3 and opt.weight_decay == [0.05] * 3
    assert len(opt.groups) == 1 and opt.uniform_lr
    opt = StackedOptimizer([p], ["sgd", "adam", "sgd"], [0.1, 0.1, 0.2], members=3)
    assert sorted(idx.tolist() for _, idx in opt.groups) == [[0, 2], [1]]
    assert not opt.uniform_lr
    with pytest.raises(ValueError, match="only be a sequence when members is given"):
        StackedOptimizer([p], lr=[0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match="betas"):
        StackedOptimizer([p], betas=(0.9,), members=3)
    with pytest.raises(ValueError, match=r"betas\[1\]"):
        StackedOptimizer([p], betas=(0.9, 1.0), members=3)
    with pytest.raises(ValueError, match="eps"):
        StackedOptimizer([p], eps=0.0, members=3)
    with pytest.raises(ValueError, match="momentum"):
        StackedOptimizer([p], momentum=1.0, members=3)
    StackedOptimizer([p], momentum=0.0, weight_decay=0.0, betas=(0.0, 0.0), members=3)  # edges


# =============================================================================================
# 2. Batch orders against torch.randperm / torch.randint drawn by hand
# =============================================================================================
def test_epoch_batches_when_the_batch_divides_n_or_exceeds_it():
    b = EpochBatches(6, 3, [4])
    rows = [next(b)[0] for _ in range(4)]
    g = torch.Generator().manual_seed(4)
    p1, p2 = torch.randperm(6, generator=g), torch.randperm(6, generator=g)
    assert [r.tolist() for r in rows] == [p1[:3].tolist(), p1[3:].tolist(), p2[:3].tolist(),
                                         p2[3:].tolist()]
    big = EpochBatches(4, 10, [9, 2])
    one, two = next(big), next(big)
    for e, s in enumerate([9, 2]):
        g = torch.Generator().manual_seed(s)
        assert one[e].tolist() == torch.randperm(4, generator=g).tolist()
        assert two[e].tolist() == torch.randperm(4, generator=g).tolist()


def test_batch_orders_draw_from_the_callers_generators():
    g1, g2 = torch.Generator().manual_seed(21), torch.Generator().manual_seed(22)
    b = EpochBatches(5, 5, [g1, 8])
    got = next(b)
    r1 = torch.Generator().manual_seed(21)
    r2 = torch.Generator().manual_seed(8)
    assert got[0].tolist() == torch.randperm(5, generator=r1).tolist()
    assert got[1].tolist() == torch.randperm(5, generator=r2).tolist()
    # the caller's generator advanced: its next draw is the reference's next draw
    assert torch.randperm(5, generator=g1).tolist() == torch.randperm(5, generator=r1).tolist()
    s = StreamBatches([5], 2, [g2])
    next(s)
    r = torch.Generator().manual_seed(22)
    torch.randperm(5, generator=r)
    assert torch.randperm(5, generator=g2).tolist() == torch.randperm(5, generator=r).tolist()


def test_stream_batches_members_of_different_sizes_and_a_batch_over_two_epochs():
    s = StreamBatches([2, 7], 5, [3, 4])
    got = [next(s) for _ in range(3)]
    assert all(t.shape == (2, 5) for t in got)
    g = torch.Generator().manual_seed(3)  # size 2 < batch 5: three permutations per batch
    want0 = torch.cat([torch.randperm(2, generator=g) for _ in range(8)])[:15]
    assert torch.cat([t[0] for t in got]).tolist() == want0.tolist()
    g = torch.Generator().manual_seed(4)
    want1 = torch.cat([torch.randperm(7, generator=g) for _ in range(3)])[:15]
    assert torch.cat([t[1] for t in got]).tolist() == want1.tolist()
    with pytest.raises(ValueError, match=r"seeds must have one entry per member \(2\)"):
        StreamBatches([2, 7], 1, [3])


def test_stream_batches_drop_the_remainder_per_member():
    s = StreamBatches([5, 7], 3, [1, 2], drop_remainder=True)
    got = [next(s) for _ in range(3)]
    g = torch.Generator().manual_seed(1)
    p = [torch.randperm(5, generator=g) for _ in range(3)]
    assert torch.cat([t[0] for t in got]).tolist() == torch.cat([p[0][:3], p[1][:3], p[2][:3]]
                                                                ).tolist()
    g = torch.Generator().manual_seed(2)
    p = [torch.randperm(7, generator=g) for _ in range(2)]
    assert torch.cat([t[1] for t in got]).tolist() == torch.cat([p[0][:6], p[1][:3]]).tolist()
    StreamBatches([3, 4], 3, [0, 1], drop_remainder=True)  # batch == smallest size is allowed


def test_replacement_batches_are_torch_randint_per_member_and_reach_every_row():
    r = ReplacementBatches(3, 50, [5, 6, 7])
    first, second = next(r), next(r)
    for e, s in enumerate([5, 6, 7]):
        g = torch.Generator().manual_seed(s)
        assert first[e].tolist() == torch.randint(0, 3, (50,), generator=g).tolist()
        assert second[e].tolist() == torch.randint(0, 3, (50,), generator=g).tolist()
    assert sorted(set(first.flatten().tolist())) == [0, 1, 2]
    assert not torch.equal(first[0], first[1])


def test_member_batch_for_every_combination_of_shared_and_per_member_data():
    E, n, d = 2, 5, 3
    x = torch.arange(n * d, dtype=D).view(n, d)
    xs = torch.stack([x, 100 + x])
    y, ys = torch.tensor([4, 3, 2, 1, 0]), torch.tensor([[0, 1, 2, 3, 4], [9, 8, 7, 6, 5]])
    idx = torch.tensor([[4, 0, 4], [1, 2, 3]])
    for xx in (x, xs):
        for yy in (y, ys, None):
            xb, yb = member_batch(xx, yy, idx)
            for e in range(E):
                for j in range(3):
                    row = xx[idx[e, j]] if xx.ndim == 2 else xx[e, idx[e, j]]
                    assert torch.equal(xb[e, j], row)
                    if yy is None:
                        assert yb is None
                    else:
                        lab = yy[idx[e, j]] if yy.ndim == 1 else yy[e, idx[e, j]]
                        assert int(yb[e, j]) == int(lab)
    with pytest.raises(ValueError, match="for 3 members"):
        member_batch(xs, None, torch.zeros(3, 1, dtype=torch.int64))
    with pytest.raises(ValueError, match="one label per row"):
        member_batch(x, torch.zeros(4, dtype=torch.int64), idx)
    with pytest.raises(ValueError, match="idx"):
        member_batch(x, None, torch.tensor([[-1]]))
    member_batch(x, None, torch.tensor([[n - 1]]))  # the last row is a row


# =============================================================================================
# 3. Margins, accuracy, losses and stop rules by hand
# =============================================================================================
def _loop_margins(logits, y):
    out = torch.empty(logits.shape[:-1], dtype=logits.dtype)
    for idx in torch.cartesian_prod(*[torch.arange(s) for s in logits.shape[:-1]]).view(
            -1, logits.ndim - 1):
        row = logits[tuple(idx)]
        lab = int(y[tuple(idx)[-y.ndim:]]) if y.ndim else int(y)
        others = [float(row[j]) for j in range(row.shape[0]) if j != lab]
        out[tuple(idx)] = float(row[lab]) - max(others)
    return out


def test_margins_by_hand_with_ties_and_per_member_labels():
    logits = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, -1.0, 0.5, 2.0], [0.0, 0.0, -4.0, 1.5]])
    y = torch.tensor([1, 0, 2])
    # 3 - 3 (a tie with class 2) = 0; 2 - 2 (tie with class 3) = 0; -4 - 1.5 = -5.5
    assert margins(logits, y).tolist() == [0.0, 0.0, -5.5]
    assert member_margins(logits, y).tolist() == [0.0, 0.0, -5.5]
    g = torch.Generator().manual_seed(5)
    big = torch.randn(3, 6, 4, generator=g, dtype=D)
    ys = torch.randint(4, (3, 6), generator=g)
    torch.testing.assert_close(margins(big, ys), _loop_margins(big, ys), rtol=0, atol=0)
    torch.testing.assert_close(margins(big, ys[1]),
                               _loop_margins(big, ys[1].expand(3, 6)), rtol=0, atol=0)
    far = torch.tensor([[-5000.0, -4000.0, -4500.0]])  # very negative logits stay exact
    assert margins(far, torch.tensor([1])).item() == 500.0
    assert margins(far, torch.tensor([0])).item() == -1000.0
    two = torch.tensor([[0.25, -1.0]])  # two classes: the margin is the difference
    assert margins(two, torch.tensor([1])).item() == -1.25


def test_accuracy_by_hand_with_ties_and_per_member_labels():
    logits = torch.tensor([[1.0, 1.0, 0.0], [0.0, 2.0, 2.0], [3.0, 0.0, 1.0], [0.0, 0.0, 1.0],
                           [0.0, 5.0, 1.0]])
    # argmax takes the first of tied maxima: 0, 1, 0, 2, 1
    assert accuracy(logits, torch.tensor([0, 1, 0, 2, 1])) == 1.0
    assert accuracy(logits, torch.tensor([1, 2, 0, 2, 0])) == pytest.approx(0.4)
    stacked = torch.stack([logits, -logits])
    ys = torch.tensor([[0, 1, 0, 2, 0], [2, 0, 1, 0, 0]])
    # member 1's arg-maxes: 2, 0, 1, 0, 0 -> all right; member 0: 4 of 5
    assert accuracy(stacked, ys).tolist() == pytest.approx([0.8, 1.0])
    assert accuracy(stacked, ys[0]).tolist() == pytest.approx([0.8, 0.2])


def test_losses_are_torch_functional_for_every_shape():
    g = torch.Generator().manual_seed(6)
    logits = torch.randn(3, 5, 4, generator=g, dtype=D)
    ys = torch.randint(4, (3, 5), generator=g)
    for e in range(3):
        want = F.cross_entropy(logits[e], ys[e])
        assert loss_fn("cross_entropy", logits[e], ys[e]).item() == pytest.approx(want.item(),
                                                                                 rel=1e-13)
        assert ensemble_loss("cross_entropy", logits, ys)[e].item() == pytest.approx(
            want.item(), rel=1e-13)
        want = F.mse_loss(logits[e], F.one_hot(ys[e], 4).to(D), reduction="sum") / 5
        assert loss_fn("mse", logits[e], ys[e]).item() == pytest.approx(want.item(), rel=1e-13)
        assert ensemble_loss("mse", logits, ys)[e].item() == pytest.approx(want.item(), rel=1e-13)
    # (E, n, C) logits with loss_fn: the mean over every member's points
    want = F.cross_entropy(logits.reshape(15, 4), ys.reshape(15))
    assert loss_fn("cross_entropy", logits, ys).item() == pytest.approx(want.item(), rel=1e-13)
    want = F.mse_loss(logits, F.one_hot(ys, 4).to(D), reduction="sum") / 15
    assert loss_fn("mse", logits, ys).item() == pytest.approx(want.item(), rel=1e-13)
    # shared labels broadcast to every member
    shared = ensemble_loss("cross_entropy", logits, ys[2])
    assert shared.tolist() == pytest.approx([F.cross_entropy(logits[e], ys[2]).item()
                                             for e in range(3)], rel=1e-13)


def test_cross_entropy_and_mse_by_hand():
    logits = torch.tensor([[0.0, math.log(3.0)], [2.0, 0.0]], dtype=D)
    y = torch.tensor([1, 1])
    # p(1 | row 0) = 3/4, p(1 | row 1) = 1 / (1 + e^2)
    want = (-math.log(0.75) + math.log(1 + math.exp(2.0))) / 2
    assert loss_fn("cross_entropy", logits, y).item() == pytest.approx(want, rel=1e-14)
    # MSE: row 0 (0 - 0)^2 + (ln 3 - 1)^2, row 1 (2 - 0)^2 + (0 - 1)^2 = 5
    assert loss_fn("mse", logits, y).item() == pytest.approx(((math.log(3) - 1) ** 2 + 5) / 2)


def test_stop_rule_edges_by_hand():
    # member 0: margins 1, 0.5, 2, -1 (3 of 4 correct); member 1: margins 0.5, 0.5, 0.5, 0.5
    logits = torch.tensor([[[1.0, 0.0], [0.0, 0.5], [2.0, 0.0], [0.0, 1.0]],
                           [[0.5, 0.0], [0.0, 0.5], [0.5, 0.0], [0.0, 0.5]]])
    y = torch.tensor([0, 1, 0, 0])
    yb = torch.tensor([[0, 1, 0, 0], [0, 1, 0, 1]])
    assert stop_rule(target_train_acc=0.75)(logits, yb).tolist() == [True, True]
    assert stop_rule(target_train_acc=0.76)(logits, yb).tolist() == [False, True]
    assert stop_rule(target_train_acc=0.75)(logits, y).tolist() == [True, True]
    assert stop_rule(target_train_acc=0.0)(logits, y).tolist() == [True, True]
    # margin >= gamma counts at equality: member 0 has 3 of 4 at >= 0.5, member 1 all 4
    assert stop_rule(margin_gamma=0.5, margin_fraction=0.75)(logits, yb).tolist() == [True, True]
    assert stop_rule(margin_gamma=0.5, margin_fraction=0.8)(logits, yb).tolist() == [False, True]
    assert stop_rule(margin_gamma=0.5)(logits, yb).tolist() == [False, True]  # default 0.99
    assert stop_rule(margin_gamma=0.6, margin_fraction=0.5)(logits, yb).tolist() == [True, False]
    # either rule met is enough (accuracy met, margins not; and the other way round)
    r = stop_rule(target_train_acc=0.75, margin_gamma=5.0, margin_fraction=1.0)
    assert r(logits, yb).tolist() == [True, True]
    r = stop_rule(target_train_acc=1.0, margin_gamma=0.5, margin_fraction=0.75)
    assert r(logits, yb).tolist() == [True, True]
    r = stop_rule(target_train_acc=1.0, margin_gamma=0.6, margin_fraction=0.5)
    assert r(logits, yb).tolist() == [True, True]
    # a single model: a () result
    out = stop_rule(margin_gamma=1.0, margin_fraction=0.5)(logits[0], y)
    assert out.shape == () and bool(out)
    out = stop_rule(margin_gamma=1.0, margin_fraction=0.51)(logits[0], y)
    assert not bool(out)
    with pytest.raises(ValueError, match="must match"):
        stop_rule(target_train_acc=0.5)(logits, torch.tensor([0, 1]))


def test_default_margin_fraction_is_ninety_nine_percent():
    """100 points, margins 1 except k of them at -1: met for k = 1 (99%), not for k = 2."""
    y = torch.zeros(100, dtype=torch.int64)
    for k, want in ((1, True), (2, False)):
        logits = torch.zeros(100, 2)
        logits[:, 0] = 1.0
        logits[:k, 0] = -1.0
        assert bool(stop_rule(margin_gamma=1.0)(logits, y)) is want
        assert (stop_reason(logits, y, TrainConfig(margin_gamma=1.0)) == "margin") is want


def test_stop_reason_prefers_accuracy_and_meets_thresholds_exactly():
    logits = torch.tensor([[2.0, 0.0], [0.0, 0.5], [0.0, 1.0], [3.0, 0.0]])
    y = torch.tensor([0, 1, 0, 0])  # 3 of 4 right; margins 2, 0.5, -1, 3
    both = TrainConfig(target_train_acc=0.75, margin_gamma=0.5, margin_fraction=0.75)
    assert stop_reason(logits, y, both) == "target_train_acc"
    assert stop_reason(logits, y, TrainConfig(target_train_acc=0.8, margin_gamma=0.5,
                                              margin_fraction=0.75)) == "margin"
    assert stop_reason(logits, y, TrainConfig(margin_gamma=0.5, margin_fraction=0.76)) is None
    assert stop_reason(logits, y, TrainConfig(margin_gamma=2.0, margin_fraction=0.5)) == "margin"
    assert stop_reason(logits, y, TrainConfig(margin_gamma=2.01, margin_fraction=0.5)) is None
    assert stop_reason(logits, y, TrainConfig()) is None


# =============================================================================================
# 4. fit: check, every, start, schedule, active_only, steps = 0, a check at step 0
# =============================================================================================
def _counter(E, lr=1.0):
    w = torch.zeros(E, 1, dtype=D, requires_grad=True)
    return w, StackedOptimizer([w], "sgd", lr, members=E)


def test_a_stop_mask_counts_only_for_members_the_check_is_due_for():
    w, opt = _counter(3)
    calls = []

    def check(step, due):
        calls.append((step, due.tolist()))
        return torch.full((3,), step >= 2)  # says every member met the rule

    out = fit(lambda s, b: -w[:, 0], opt, [5, 5, 5], check=check, every=[2, 3, 4])
    assert calls == [(0, [True, True, True]), (2, [True, False, False]),
                     (3, [False, True, False]), (4, [False, False, True])]
    assert out.stop_step == [2, 3, 4] and out.met_rule == [True, True, True]
    assert w.detach()[:, 0].tolist() == [2.0, 3.0, 4.0]


def test_a_check_at_step_zero_stops_before_any_update_and_zero_steps_mean_none():
    w, opt = _counter(3)
    calls = []

    def check(step, due):
        calls.append((step, due.tolist()))
        return [step == 0, False, step == 0]  # a list is a mask too

    out = fit(lambda s, b: -w[:, 0], opt, [4, 3, 0], check=check, every=10)
    assert out.stop_step == [0, 3, 0] and out.met_rule == [True, False, True]
    assert w.detach()[:, 0].tolist() == [0.0, 3.0, 0.0]
    assert calls == [(0, [True, True, True]), (3, [False, True, False])]
    w, opt = _counter(2)
    out = fit(lambda s, b: -w[:, 0], opt, [0, 2])
    assert out.stop_step == [0, 2] and out.met_rule == [False, False]
    assert w.detach()[:, 0].tolist() == [0.0, 2.0]


def test_every_scalar_checks_multiples_and_the_last_step_once():
    w, opt = _counter(2)
    seen = []
    out = fit(lambda s, b: -w[:, 0], opt, 7, check=lambda s, due: seen.append(s), every=3)
    assert seen == [0, 3, 6, 7] and out.stop_step == [7, 7] and out.met_rule == [False, False]
    seen.clear()
    w, opt = _counter(2)
    fit(lambda s, b: -w[:, 0], opt, 6, check=lambda s, due: seen.append(s), every=3)
    assert seen == [0, 3, 6]  # the last step is a multiple: checked once
    seen.clear()
    w, opt = _counter(2)
    fit(lambda s, b: -w[:, 0], opt, 3, check=lambda s, due: seen.append(s), every=1)
    assert seen == [0, 1, 2, 3]


def test_every_counts_updates_from_zero_not_from_a_members_start():
    """A check is due when the update count is a multiple of every (or at the last step), also
    for a member that started late; the check at step 0 includes members not started yet."""
    w, opt = _counter(2)
    calls = []
    fit(lambda s, b: -w[:, 0], opt, [6, 6], check=lambda s, due: calls.append((s, due.tolist())),
        every=[4, 2], start=[0, 1])
    assert calls == [(0, [True, True]), (2, [False, True]), (4, [True, True]), (6, [True, True])]
    assert w.detach()[:, 0].tolist() == [6.0, 5.0]


def test_a_late_start_gets_the_batches_of_its_own_steps():
    """Batches are drawn once per step whether or not a member trains at it; the loss sees the
    0-based update index and that step's batch; a member frozen until start[e] makes
    steps[e] - start[e] updates."""
    w, opt = _counter(2)
    drawn, seen = iter(torch.full((2, 1), k) for k in range(100)), []

    def loss(step, batch):
        seen.append((step, int(batch[0, 0])))
        return -w[:, 0]

    out = fit(loss, opt, [5, 4], batches=drawn, start=[2, 3])
    assert seen == [(2, 2), (3, 3), (4, 4)]
    assert w.detach()[:, 0].tolist() == [3.0, 1.0]
    assert out.stop_step == [5, 4]
    assert int(next(drawn)[0, 0]) == 5  # five steps, five batches drawn


def test_schedule_is_indexed_by_update_and_scales_every_members_own_rate():
    w = torch.zeros(2, 1, dtype=D, requires_grad=True)
    opt = StackedOptimizer([w], "sgd", [1.0, 0.5], members=2)
    seen = []

    def schedule(s):
        seen.append(s)
        return 1.0 / (s + 1)

    fit(lambda s, b: -w[:, 0], opt, [4, 2], schedule=schedule)
    assert seen == [0, 1, 2, 3]
    want = [1 + 1 / 2 + 1 / 3 + 1 / 4, 0.5 * (1 + 1 / 2)]
    assert w.detach()[:, 0].tolist() == pytest.approx(want, abs=1e-15)
    w1 = torch.zeros(2, dtype=D, requires_grad=True)  # a single model: a scalar loss
    opt = StackedOptimizer([w1], "sgd", 0.1)
    out = fit(lambda s, b: -w1.sum(), opt, 3, schedule=lambda s: 2.0 ** s)
    assert w1.detach().tolist() == pytest.approx([0.7, 0.7], abs=1e-15)
    assert out.stop_step == [3]


def test_a_stopped_members_non_finite_loss_is_not_an_error_nor_an_update():
    w, opt = _counter(2)
    out = fit(lambda s, b: -w[:, 0] * torch.tensor([1.0, math.nan if s > 0 else 1.0], dtype=D),
              opt, 4, check=lambda s, due: torch.tensor([False, s >= 1]))
    assert out.stop_step == [4, 1] and w.detach()[:, 0].tolist() == [4.0, 1.0]
    w, opt = _counter(2)  # a member not yet started may return NaN too
    fit(lambda s, b: -w[:, 0] * torch.tensor([1.0, math.nan if s < 2 else 1.0], dtype=D), opt,
        4, start=[0, 2])
    assert w.detach()[:, 0].tolist() == [4.0, 2.0]
    w, opt = _counter(2)
    with pytest.raises(ValueError, match=r"member\(s\) \[0\] at update 2"):
        fit(lambda s, b: -w[:, 0] * torch.tensor([math.inf if s == 2 else 1.0, 1.0], dtype=D),
            opt, 4)


def test_active_only_masks_follow_stops_and_starts():
    w, opt = _counter(3)
    seen = []

    def loss(step, batch, active):
        seen.append(active.tolist())
        return -(w[:, 0] * active)

    out = fit(loss, opt, [4, 4, 4], check=lambda s, due: torch.tensor([s >= 1, False, False]),
              start=[0, 0, 2], active_only=True)
    assert seen == [[True, True, False], [False, True, False], [False, True, True],
                    [False, True, True]]
    assert out.stop_step == [1, 4, 4] and w.detach()[:, 0].tolist() == [1.0, 4.0, 2.0]


def test_frozen_members_keep_their_momentum_buffers():
    """A member stopped by a check keeps its weights and its SGD buffer, exactly."""
    w = torch.zeros(2, 1, dtype=D, requires_grad=True)
    opt = StackedOptimizer([w], "sgd", 1.0, momentum=0.5, members=2)
    fit(lambda s, b: -w[:, 0], opt, 3, check=lambda s, due: torch.tensor([s >= 1, False]))
    # gradient -1: member 0 makes one update (buffer -1, w = 1); member 1 three
    # (buffers -1, -1.5, -1.75 -> w = 4.25)
    assert w.detach()[:, 0].tolist() == [1.0, 4.25]
    assert opt.state[0]["buf"][:, 0].tolist() == [-1.0, -1.75]


# =============================================================================================
# 5. train() against a loop written with torch alone
# =============================================================================================
def _data(n=23, d=3, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=D)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.7).long()
    return x, y % c


def _scratch_train(model, x, y, cfg, probe=None):
    """cfg's training with torch.optim and torch.randperm only: rows (step, loss, acc, probe)."""
    if cfg.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum,
                              weight_decay=cfg.weight_decay)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    n = len(y)
    g = torch.Generator().manual_seed(cfg.seed)
    order = []
    per_epoch = 1 if cfg.batch_size is None else math.ceil(n / cfg.batch_size)
    total = cfg.epochs * per_epoch if cfg.steps is None else min(cfg.epochs * per_epoch,
                                                                   cfg.steps)

    def lossf(out, lab):
        if cfg.loss == "cross_entropy":
            return F.cross_entropy(out, lab)
        return ((out - F.one_hot(lab, out.shape[1]).to(out.dtype)) ** 2).sum(1).mean()

    rows, stopped = [], "epochs"

    def record(step):
        nonlocal stopped
        with torch.no_grad():
            out = model(x)
            acc = (out.argmax(1) == y).double().mean().item()
            rows.append((step, lossf(out, y).item(), acc, probe(model) if probe else None))
            srt = out.sort(1, descending=True).values
            true = out.gather(1, y[:, None])[:, 0]
            other = torch.where(out.argmax(1) == y, srt[:, 1], srt[:, 0])
            if cfg.target_train_acc is not None and acc >= cfg.target_train_acc:
                stopped = "target_train_acc"
                return True
            if cfg.margin_gamma is not None and ((true - other) >= cfg.margin_gamma
                                                 ).double().mean() >= cfg.margin_fraction:
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
                order = [perm[i:i + cfg.batch_size] for i in range(0, n, cfg.batch_size)]
            idx = order.pop(0)
        opt.zero_grad()
        lossf(model(x[idx]), y[idx]).backward()
        opt.step()
        if (step % cfg.check_every == 0 or step == total) and record(step):
            break
    return rows, stopped


SCRATCH = [
    TrainConfig(optimizer="sgd", lr=0.2, momentum=0.7, weight_decay=0.03, batch_size=5,
                epochs=3, check_every=4, seed=3),
    TrainConfig(optimizer="adamw", lr=0.03, weight_decay=0.2, batch_size=7, epochs=2, steps=6,
                check_every=5, seed=8, loss="mse"),
    TrainConfig(optimizer="sgd", lr=0.5, batch_size=None, epochs=40, check_every=3,
                target_train_acc=0.9),
    TrainConfig(optimizer="sgd", lr=0.4, momentum=0.3, batch_size=6, epochs=30, check_every=2,
                margin_gamma=0.3, margin_fraction=0.6, seed=1),
]


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
    assert h.train_acc == pytest.approx([r[2] for r in rows], abs=1e-6)  # float32 mean
    assert h.probes["norm"] == pytest.approx([r[3] for r in rows], rel=1e-11)
    assert h.stopped_by == stopped and h.steps_taken == rows[-1][0]
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-11, atol=1e-12)
    if cfg.target_train_acc is not None or cfg.margin_gamma is not None:
        assert stopped != "epochs"  # the rule did stop training early in this test
        assert h.steps_taken < total_steps(len(y), cfg)


def test_history_steps_taken_and_train_refusing_labels_beyond_the_model():
    assert History().steps_taken == 0 and History(step=[0, 5, 7]).steps_taken == 7
    x, y = _data()
    with pytest.raises(ValueError, match=r"y must hold labels in \[0, 2\)"):
        train(make_mlp(0, 3, 4, 1, 2).double(), x, y, TrainConfig(epochs=1))
    with pytest.raises(ValueError, match=r"labels in \[0, 2\)"):
        train_ensemble(BatchedMLP.init([0], 3, 4, 1, 2).double(), x, y, TrainConfig(epochs=1))


def test_total_steps_edges():
    assert total_steps(10, TrainConfig(batch_size=5, epochs=3)) == 6
    assert total_steps(11, TrainConfig(batch_size=5, epochs=3)) == 9
    assert total_steps(4, TrainConfig(batch_size=64, epochs=3)) == 3
    assert total_steps(10, TrainConfig(batch_size=5, epochs=3, steps=6)) == 6
    assert total_steps(10, TrainConfig(batch_size=5, epochs=3, steps=7)) == 6
    assert total_steps(10, TrainConfig(batch_size=None, epochs=4, steps=3)) == 3
    assert total_steps(1, TrainConfig(batch_size=1, epochs=2)) == 2


def test_batch_indices_full_batch_and_fresh_permutations():
    it = batch_indices(5, TrainConfig(batch_size=None), torch.Generator().manual_seed(0), "cpu")
    assert [next(it).tolist() for _ in range(2)] == [[0, 1, 2, 3, 4]] * 2
    gen = torch.Generator().manual_seed(12)
    it = batch_indices(5, TrainConfig(batch_size=2), gen, "cpu")
    got = [next(it).tolist() for _ in range(6)]
    g = torch.Generator().manual_seed(12)
    p1, p2 = torch.randperm(5, generator=g).tolist(), torch.randperm(5, generator=g).tolist()
    assert got == [p1[:2], p1[2:4], p1[4:], p2[:2], p2[2:4], p2[4:]]


def test_make_optimizer_passes_every_setting():
    p = [torch.zeros(2, requires_grad=True)]
    o = make_optimizer(p, TrainConfig(lr=0.3, momentum=0.4, weight_decay=0.02))
    assert isinstance(o, torch.optim.SGD)
    grp = o.param_groups[0]
    assert (grp["lr"], grp["momentum"], grp["weight_decay"]) == (0.3, 0.4, 0.02)
    o = make_optimizer(p, TrainConfig(optimizer="adamw", lr=0.003, weight_decay=0.5))
    assert isinstance(o, torch.optim.AdamW)
    grp = o.param_groups[0]
    assert (grp["lr"], grp["weight_decay"], grp["betas"], grp["eps"]) == (0.003, 0.5,
                                                                           (0.9, 0.999), 1e-8)


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


# =============================================================================================
# 6. train_ensemble: each member is train() alone; train_sequentially is plain torch
# =============================================================================================
@pytest.mark.parametrize("cfg", [
    TrainConfig(optimizer="sgd", lr=0.3, momentum=0.5, weight_decay=0.01, batch_size=6, epochs=4,
                check_every=3, target_train_acc=0.8),
    TrainConfig(optimizer="adamw", lr=0.05, weight_decay=0.1, batch_size=None, epochs=25,
                check_every=2, margin_gamma=0.2, margin_fraction=0.7, loss="mse"),
])
def test_each_ensemble_member_is_train_alone_with_its_own_seed_and_labels(cfg):
    x, y = _data(seed=2)
    ys = torch.stack([y.flip(0), (y + 1) % 3, y])  # stop steps (16, 16, 12) and (25, 18, 8)
    seeds = [4, 9, 1]
    ens = BatchedMLP.init([7, 8, 9], 3, 6, 1, 3).double()
    h = train_ensemble(ens, x, ys, cfg, seeds=seeds)
    for e in range(3):
        m = make_mlp([7, 8, 9][e], 3, 6, 1, 3).double()
        he = train(m, x, ys[e], dataclasses.replace(cfg, seed=seeds[e]))
        assert h.probes["stop_step"][e] == he.steps_taken
        rows = [i for i, s in enumerate(h.step) if s in he.step]
        assert [h.step[i] for i in rows] == he.step
        assert [h.loss[i][e].item() for i in rows] == pytest.approx(he.loss, rel=1e-10)
        assert [h.train_acc[i][e].item() for i in rows] == pytest.approx(he.train_acc, abs=1e-6)
        torch.testing.assert_close(ens(x)[e], m(x), rtol=1e-10, atol=1e-11)
    stops = h.probes["stop_step"]
    assert stops != sorted(stops) and len(set(stops)) > 1  # members stop at their own steps
    want = "all members met the stop rule" if max(stops) < total_steps(len(y), cfg) else "epochs"
    assert h.stopped_by == want


def test_train_ensemble_history_rows_and_probes():
    x, y = _data(n=10)
    ens = BatchedMLP.init([1, 2], 3, 4, 1, 3).double()
    h = train_ensemble(ens, x, y, TrainConfig(lr=0.1, batch_size=4, epochs=2, check_every=4),
                       seeds=[0, 1], probes={"w": lambda m: float(m.weights[0].sum())})
    assert h.step == [0, 4, 6] and len(h.probes["w"]) == 3
    assert all(r.shape == (2,) for r in h.loss + h.train_acc)
    assert h.probes["stop_step"] == [6, 6] and h.stopped_by == "epochs"
    with torch.no_grad():
        assert h.loss[-1].tolist() == pytest.approx(
            [F.cross_entropy(ens(x)[e], y).item() for e in range(2)], rel=1e-12)
        assert h.probes["w"][-1] == pytest.approx(float(ens.weights[0].sum()), rel=1e-12)


@pytest.mark.parametrize("rule", [{"margin_gamma": 0.5, "margin_fraction": 0.0},
                                  {"target_train_acc": 0.0}])
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


def test_train_sequentially_mse_and_refusing_stop_rules():
    x, y = _data(n=12)
    cfg = TrainConfig(optimizer="sgd", lr=0.1, momentum=0.2, batch_size=5, epochs=2, loss="mse",
                      seed=0)
    [m] = train_sequentially([6], x, y, cfg, 3, 4, 1, 3, act="tanh")
    ref = make_mlp(6, 3, 4, 1, 3, act="tanh").double()
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.2)
    g = torch.Generator().manual_seed(6)
    for _ in range(2):
        perm = torch.randperm(12, generator=g)
        for i in range(0, 12, 5):
            idx = perm[i:i + 5]
            opt.zero_grad()
            ((ref(x[idx]) - F.one_hot(y[idx], 3).double()) ** 2).sum(1).mean().backward()
            opt.step()
    assert m.layers[0].weight.dtype == D and m.act_name == "tanh"
    for p, q in zip(m.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-12, atol=1e-13)
    with pytest.raises(ValueError, match="stop rule"):
        train_sequentially([0], x, y, TrainConfig(margin_gamma=1.0), 3, 4, 1, 3)
    with pytest.raises(ValueError, match="stop rule"):
        train_sequentially([0], x, y, TrainConfig(target_train_acc=0.5), 3, 4, 1, 3)


# =============================================================================================
# 7. MLP, make_mlp and BatchedMLP against nn.Linear and hand computations
# =============================================================================================
def test_mlp_layers_are_nn_linear_built_in_order_under_the_seed():
    torch.manual_seed(4)
    m = MLP(3, 5, 2, 2)
    torch.manual_seed(4)
    ref = [nn.Linear(3, 5), nn.Linear(5, 5), nn.Linear(5, 2)]
    assert [(l.in_features, l.out_features) for l in m.layers] == [(3, 5), (5, 5), (5, 2)]
    for l, r in zip(m.layers, ref):
        assert torch.equal(l.weight, r.weight) and torch.equal(l.bias, r.bias)
    x = torch.randn(4, 3)
    want = ref[2](torch.relu(ref[1](torch.relu(ref[0](x)))))
    torch.testing.assert_close(m(x), want, rtol=0, atol=0)
    torch.manual_seed(4)
    nb = MLP(3, 5, 1, 2, bias=False)
    torch.manual_seed(4)
    r0, r1 = nn.Linear(3, 5, bias=False), nn.Linear(5, 2, bias=False)
    assert torch.equal(nb.layers[0].weight, r0.weight) and torch.equal(nb.layers[1].weight,
                                                                       r1.weight)
    assert nb.depth == 1 and MLP(3, 5, 0, 2).depth == 0


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_every_activation_is_its_torch_function(name):
    z = torch.tensor([-3.0, -0.5, 0.0, 0.25, 2.0], dtype=D)
    want = {"relu": torch.relu(z), "gelu": F.gelu(z), "silu": z * torch.sigmoid(z),
            "tanh": torch.tanh(z), "sigmoid": 1 / (1 + torch.exp(-z)),
            "leaky_relu": torch.tensor([-0.3, -0.05, 0.0, 0.25, 2.0], dtype=D),
            "identity": z}[name]
    torch.testing.assert_close(activation(name)(z), want, rtol=1e-14, atol=1e-15)
    torch.manual_seed(1)
    m = MLP(2, 3, 1, 2, activation=name).double()
    x = torch.tensor([[0.3, -1.2], [2.0, 0.5]], dtype=D)
    h = activation(name)(x @ m.layers[0].weight.T + m.layers[0].bias)
    logits = h @ m.layers[1].weight.T + m.layers[1].bias  # the last layer has no activation
    torch.testing.assert_close(m(x), logits)
    feats = m.features(x)
    assert len(feats) == 2
    torch.testing.assert_close(feats[0], h)
    torch.testing.assert_close(feats[1], logits)
    assert m.act_name == name


def test_parameter_limit_is_inclusive_and_counts_every_weight_and_bias(monkeypatch):
    # MLP(3, 4, 2, 2): 3*4 + 4 + 4*4 + 4 + 4*2 + 2 = 46 parameters
    monkeypatch.setattr(gmodels, "MAX_PARAMETERS", 46)
    MLP(3, 4, 2, 2)
    monkeypatch.setattr(gmodels, "MAX_PARAMETERS", 45)
    with pytest.raises(ValueError, match="46 parameters"):
        MLP(3, 4, 2, 2)


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


def test_make_mlp_leaves_the_global_generator_alone_and_passes_its_arguments():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    m = make_mlp(7, 3, 5, 2, 4, bias=False, act="gelu")
    assert torch.equal(torch.get_rng_state(), before)
    assert m.act_name == "gelu" and m.layers[0].bias is None and m.depth == 2
    assert [(l.in_features, l.out_features) for l in m.layers] == [(3, 5), (5, 5), (5, 4)]
    assert not torch.equal(make_mlp(7, 3, 5, 2, 4).layers[0].weight,
                           make_mlp(8, 3, 5, 2, 4).layers[0].weight)


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
        torch.testing.assert_close(out[e], h @ m.layers[2].weight.T, rtol=1e-14, atol=1e-15)
        mem = ens.member(e)
        assert mem.layers[0].bias is None and mem.act_name == "sigmoid"
        torch.testing.assert_close(mem(xs[e]), out[e], rtol=1e-14, atol=1e-15)
    with pytest.raises(TypeError, match="dtype"):
        ens(torch.zeros(4, 2))


def test_batched_mlp_construction_checks_and_linear_members():
    lin = BatchedMLP.init([0, 5], 3, 7, 0, 2)  # depth 0: one linear layer per member
    x = torch.randn(4, 3)
    for e, s in enumerate([0, 5]):
        m = make_mlp(s, 3, 7, 0, 2)
        torch.testing.assert_close(lin(x)[e], x @ m.layers[0].weight.T + m.layers[0].bias)
        torch.testing.assert_close(lin.member(e)(x), lin(x)[e])
    assert lin.member(1).depth == 0
    w = [torch.zeros(2, 3, 4), torch.zeros(2, 5, 3)]
    b = [torch.zeros(2, 3), torch.zeros(2, 5)]
    with pytest.raises(ValueError, match=r"weights\[1\] must take 3 inputs"):
        BatchedMLP([w[0], torch.zeros(2, 5, 4)], None)
    with pytest.raises(ValueError, match=r"weights\[1\] must have shape \(E, out, in\) with E = 2"):
        BatchedMLP([w[0], torch.zeros(3, 5, 3)], None)
    with pytest.raises(ValueError, match=r"biases\[1\] must have shape \(2, 5\)"):
        BatchedMLP(w, [b[0], torch.zeros(2, 4)])
    with pytest.raises(ValueError, match="one entry per layer"):
        BatchedMLP(w, b[:1])
    with pytest.raises(ValueError, match="models\\[1\\] must have the shape and activation"):
        BatchedMLP.from_models([make_mlp(0, 3, 4, 1, 2), make_mlp(0, 3, 4, 1, 2, act="tanh")])
    ok = BatchedMLP(w, b, act="tanh")
    assert ok.size == 2 and ok(torch.zeros(1, 4)).shape == (2, 1, 5)
    with pytest.raises(ValueError, match=r"x must have shape \(n, 4\) or \(2, n, 4\)"):
        ok(torch.zeros(3, 1, 4))


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


def test_default_minibatch_seeds_are_the_config_seed_plus_the_member_index():
    x, y = _data(n=9)
    cfg = TrainConfig(lr=0.2, batch_size=4, epochs=2, seed=5)
    a = BatchedMLP.init([1, 1], 3, 4, 1, 3).double()
    b = BatchedMLP.init([1, 1], 3, 4, 1, 3).double()
    train_ensemble(a, x, y, cfg)
    train_ensemble(b, x, y, cfg, seeds=[5, 6])
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.weights[0][0], a.weights[0][1])  # same init, different orders
