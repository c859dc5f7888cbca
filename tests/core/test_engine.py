"""Tests of gtlib.engine, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import copy
import math
import pytest
import torch

from gtlib.engine import (
    EpochBatches,
    ReplacementBatches,
    StackedOptimizer,
    StreamBatches,
    fit,
    stop_rule,
)
from gtlib.engine import _member_batch as member_batch
from gtlib.models import BatchedMLP, make_mlp
from gtlib.train import TrainConfig, train, train_ensemble

from tests.oracles.engine_loops import old_train, old_train_ensemble


TORCH = {
    "sgd": torch.optim.SGD,
    "adamw": torch.optim.AdamW,
    "adam": torch.optim.Adam,
}


def _torch_opt(kind, p, lr, momentum, wd):
    if kind == "sgd":
        return torch.optim.SGD([p], lr=lr, momentum=momentum, weight_decay=wd)
    return TORCH[kind]([p], lr=lr, weight_decay=wd)


def _run_both(kinds, lrs, moms, wds, active_pattern, scales, steps=12, E=4):
    """Random gradients fed to the stacked optimizer and to E torch optimizers, float64."""
    g = torch.Generator().manual_seed(0)
    shapes = [(E, 3, 5), (E, 3)]
    stacked = [
        torch.randn(s, generator=g, dtype=torch.float64).requires_grad_()
        for s in shapes
    ]
    ref = [
        [p.detach()[e].clone().requires_grad_() for p in stacked] for e in range(E)
    ]
    opt = StackedOptimizer(stacked, kinds, lrs, moms, wds, members=E)

    def pick(v, e):
        return v[e] if isinstance(v, list) else v

    refs = [
        [
            _torch_opt(pick(kinds, e), q, pick(lrs, e), pick(moms, e), pick(wds, e))
            for q in ref[e]
        ]
        for e in range(E)
    ]
    for t in range(steps):
        grads = [torch.randn(s, generator=g, dtype=torch.float64) for s in shapes]
        active = active_pattern(t)
        opt.step(grads, active, scales(t))
        for e in range(E):
            if active is None or bool(active[e]):
                for q, gr, o in zip(ref[e], grads, refs[e]):
                    for group in o.param_groups:
                        group["lr"] = pick(lrs, e) * scales(t)
                    q.grad = gr[e].clone()
                    o.step()
    for e in range(E):
        for p, q in zip(stacked, ref[e]):
            torch.testing.assert_close(
                p.detach()[e], q.detach(), rtol=1e-12, atol=1e-14
            )


CONFIGS = [
    TrainConfig(
        optimizer="sgd",
        lr=0.05,
        momentum=0.9,
        weight_decay=1e-3,
        batch_size=16,
        epochs=3,
        check_every=5,
    ),
    TrainConfig(
        optimizer="adamw",
        lr=1e-2,
        weight_decay=0.1,
        batch_size=25,
        epochs=2,
        check_every=3,
        loss="mse",
    ),
    TrainConfig(
        optimizer="sgd",
        lr=0.5,
        batch_size=None,
        epochs=30,
        check_every=4,
        target_train_acc=0.9,
    ),
    TrainConfig(
        optimizer="sgd",
        lr=0.3,
        momentum=0.5,
        batch_size=10,
        epochs=20,
        check_every=7,
        margin_gamma=0.5,
        margin_fraction=0.8,
    ),
]


def _toy(seed=0, n=60):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=g)
    return x, (x[:, 0] + 0.3 * x[:, 1] > 0).long() + (x[:, 2] > 1).long()


D = torch.float64


def _pick(v, e):
    return v[e] if isinstance(v, list) else v


def _torch_opt_ref(kind, q, lr, momentum, wd, betas, eps):
    if kind == "sgd":
        return torch.optim.SGD([q], lr=lr, momentum=momentum, weight_decay=wd)
    cls = torch.optim.AdamW if kind == "adamw" else torch.optim.Adam
    return cls([q], lr=lr, betas=betas, eps=eps, weight_decay=wd)


def _compare(
    kinds,
    lrs,
    moms,
    wds,
    active,
    scale=lambda t: 1.0,
    betas=(0.9, 0.999),
    eps=1e-8,
    E=4,
    steps=7,
    seed=0,
):
    """Random float64 gradients fed to one StackedOptimizer and to E torch optimizers."""
    g = torch.Generator().manual_seed(seed)
    shapes = [(E, 2, 3), (E, 3)]
    stacked = [torch.randn(s, generator=g, dtype=D).requires_grad_() for s in shapes]
    ref = [
        [p.detach()[e].clone().requires_grad_() for p in stacked] for e in range(E)
    ]
    opt = StackedOptimizer(
        stacked, kinds, lrs, moms, wds, betas=betas, eps=eps, members=E
    )
    refs = [
        [
            _torch_opt_ref(
                _pick(kinds, e),
                q,
                _pick(lrs, e),
                _pick(moms, e),
                _pick(wds, e),
                betas,
                eps,
            )
            for q in ref[e]
        ]
        for e in range(E)
    ]
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
            torch.testing.assert_close(
                p.detach()[e], q.detach(), rtol=1e-12, atol=1e-13
            )
    return opt


ALL = lambda t: None  # noqa: E731


SCATTERED = lambda t: torch.tensor([t % 2 == 0, True, t % 3 == 0, t != 2])  # noqa: E731


MIDDLE = lambda t: torch.tensor([False, True, True, t == 0])  # noqa: E731  contiguous, not all


SCALE = lambda t: 0.3 + 0.25 * t  # noqa: E731


def _counter(E, lr=1.0):
    w = torch.zeros(E, 1, dtype=D, requires_grad=True)
    return w, StackedOptimizer([w], "sgd", lr, members=E)


# =================================================================================================
# engine.StackedOptimizer
# =================================================================================================
def test_a_frozen_member_is_untouched_and_its_adam_clock_stops():
    p = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    opt = StackedOptimizer([p], "adamw", 0.1, weight_decay=0.5, members=2)
    opt.step([torch.ones(2, 3, dtype=torch.float64)], torch.tensor([True, False]))
    assert torch.equal(p.detach()[1], torch.ones(3, dtype=torch.float64))
    assert opt.t.tolist() == [1, 0]
    assert float(opt.state[0]["m"][1].abs().sum()) == 0


@pytest.mark.parametrize(
    "kind,wd,mom", [("sgd", 0.01, 0.9), ("adamw", 0.1, 0.0), ("adam", 0.0, 0.0)]
)
def test_a_single_model_is_bitwise_torch_optim(kind, wd, mom):
    torch.manual_seed(0)
    a = torch.nn.Linear(5, 3)
    b = copy.deepcopy(a)
    mine = StackedOptimizer(a.parameters(), kind, 0.01, mom, wd)
    theirs = (
        _torch_opt(kind, None, 0.01, mom, wd)
        if False
        else (
            torch.optim.SGD(b.parameters(), lr=0.01, momentum=mom, weight_decay=wd)
            if kind == "sgd"
            else TORCH[kind](b.parameters(), lr=0.01, weight_decay=wd)
        )
    )
    x = torch.randn(20, 5)
    for _ in range(10):
        mine.step(torch.autograd.grad(a(x).square().mean(), list(a.parameters())))
        theirs.zero_grad()
        b(x).square().mean().backward()
        theirs.step()
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)


def test_optimizer_refuses_bad_settings_naming_them():
    p = torch.zeros(3, 2, requires_grad=True)
    with pytest.raises(ValueError, match="lr"):
        StackedOptimizer([p], lr=float("inf"), members=3)
    with pytest.raises(ValueError, match="weight_decay"):
        StackedOptimizer([p], weight_decay=float("nan"), members=3)
    with pytest.raises(ValueError, match="optimizer"):
        StackedOptimizer([p], optimizer="adam2", members=3)
    with pytest.raises(ValueError, match=r"lr must have one entry per member \(3\)"):
        StackedOptimizer([p], lr=[0.1, 0.2], members=3)
    with pytest.raises(ValueError, match="member axis first"):
        StackedOptimizer([p], members=4)
    with pytest.raises(ValueError, match="params"):
        StackedOptimizer([])
    with pytest.raises(TypeError, match="params"):
        StackedOptimizer([torch.zeros(2)])


def test_fit_checks_steps_starts_and_schedule():
    w = torch.zeros(3, 1, requires_grad=True)
    opt = StackedOptimizer([w], "sgd", 1.0, members=3)
    calls, lrs = [], []

    def loss(step, batch):
        return -w[:, 0]  # gradient -1: each update adds lr * scale

    def check(step, due):
        calls.append((step, due.tolist()))
        return torch.tensor([step >= 4, False, False])

    out = fit(
        loss,
        opt,
        [10, 5, 6],
        check=check,
        every=[2, 5, 4],
        start=[0, 0, 3],
        schedule=lambda s: lrs.append(s) or 0.5,
    )
    assert out.stop_step == [4, 5, 6] and out.met_rule == [True, False, False]
    assert calls[0] == (0, [True, True, True])
    assert (4, [True, False, True]) in calls and (5, [False, True, False]) in calls
    assert (6, [False, False, True]) in calls
    assert w.detach()[:, 0].tolist() == [2.0, 2.5, 1.5]  # 4, 5 and 3 updates of 0.5
    assert lrs == [0, 1, 2, 3, 4, 5]


def test_fit_can_hand_the_loss_the_active_members():
    w = torch.zeros(3, 1, requires_grad=True)
    opt = StackedOptimizer([w], "sgd", 1.0, members=3)
    seen = []

    def loss(step, batch, active):
        seen.append(active.tolist())
        return -(w[:, 0] * active)

    fit(loss, opt, [1, 2, 3], active_only=True)
    assert seen == [[True, True, True], [False, True, True], [False, False, True]]
    assert w.detach()[:, 0].tolist() == [1.0, 2.0, 3.0]


def test_a_diverging_member_is_an_error_not_a_nan_result():
    w = torch.ones(2, 1, requires_grad=True)
    opt = StackedOptimizer([w], "sgd", 1.0, members=2)
    with pytest.raises(
        ValueError, match=r"member\(s\) \[1\] at update 0: training diverged"
    ):
        fit(lambda s, b: w[:, 0] * torch.tensor([1.0, float("inf")]), opt, 3)


@pytest.mark.reference
@pytest.mark.parametrize("kind", ["adam", "adamw"])
@pytest.mark.parametrize("active", [ALL, SCATTERED, MIDDLE])
def test_adam_betas_eps_and_decay_are_torch_optims(kind, active):
    """Non-default betas and a large eps (so every one of them shows), shared lr."""
    _compare(kind, 0.03, 0.0, 0.2, active, SCALE, betas=(0.7, 0.95), eps=0.05)


@pytest.mark.reference
@pytest.mark.parametrize("kind", ["adam", "adamw"])
@pytest.mark.parametrize("active", [ALL, SCATTERED, MIDDLE])
def test_adam_per_member_learning_rates_are_torch_optims(kind, active):
    _compare(
        kind,
        [0.01, 0.05, 0.002, 0.2],
        0.0,
        0.1,
        active,
        SCALE,
        betas=(0.8, 0.99),
        eps=1e-3,
    )


@pytest.mark.reference
@pytest.mark.parametrize("lrs", [0.07, [0.07, 0.3, 0.01, 0.12]])
@pytest.mark.parametrize("active", [ALL, SCATTERED, MIDDLE])
def test_sgd_momentum_decay_and_schedule_are_torch_optims(lrs, active):
    _compare("sgd", lrs, 0.6, 0.15, active, SCALE)


@pytest.mark.reference
def test_per_member_momentum_decay_and_kind_are_torch_optims():
    """Every member has its own kind, momentum and decay; two share a group (same settings)."""
    _compare(
        ["sgd", "sgd", "adam", "sgd"],
        [0.1, 0.2, 0.05, 0.3],
        [0.3, 0.8, 0.0, 0.3],
        [0.02, 0.0, 0.3, 0.02],
        SCATTERED,
        SCALE,
        betas=(0.85, 0.9),
        eps=0.01,
    )
    _compare(
        ["adamw", "adam", "adamw", "adamw"],
        0.04,
        0.0,
        [0.5, 0.5, 0.05, 0.5],
        SCATTERED,
        betas=(0.6, 0.97),
        eps=0.02,
    )


@pytest.mark.reference
def test_adam_ignores_sgd_momentum():
    _compare("adam", 0.02, 0.9, 0.0, ALL, betas=(0.8, 0.99), eps=0.01)


@pytest.mark.reference
def test_single_model_optimizer_with_a_schedule_is_torch_optim():
    g = torch.Generator().manual_seed(3)
    for kind in ("sgd", "adamw", "adam"):
        p = torch.randn(3, 2, generator=g, dtype=D).requires_grad_()
        q = p.detach().clone().requires_grad_()
        opt = StackedOptimizer(
            [p],
            kind,
            0.05,
            0.4 if kind == "sgd" else 0.0,
            0.1,
            betas=(0.75, 0.9),
            eps=0.1,
        )
        ref = _torch_opt_ref(kind, q, 0.05, 0.4, 0.1, (0.75, 0.9), 0.1)
        for t in range(5):
            gr = torch.randn(3, 2, generator=g, dtype=D)
            opt.step([gr], lr_scale=2.0 - 0.3 * t)
            ref.param_groups[0]["lr"] = 0.05 * (2.0 - 0.3 * t)
            q.grad = gr.clone()
            ref.step()
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-12, atol=1e-13)
        assert opt.t.tolist() == [5]


@pytest.mark.reference
def test_adam_clock_counts_each_members_own_steps():
    opt = _compare("adam", 0.01, 0.0, 0.0, SCATTERED, steps=6)
    # member 0: t = 0, 2, 4; member 1: all 6; member 2: t = 0, 3; member 3: all but t = 2
    assert opt.t.tolist() == [3, 6, 2, 5]


@pytest.mark.reference
def test_a_none_gradient_leaves_that_parameter_alone():
    a = torch.ones(2, 3, dtype=D, requires_grad=True)
    b = torch.ones(2, 2, dtype=D, requires_grad=True)
    opt = StackedOptimizer([a, b], "sgd", 0.5, weight_decay=0.1, members=2)
    opt.step([None, torch.full((2, 2), 2.0, dtype=D)])
    assert torch.equal(a.detach(), torch.ones(2, 3, dtype=D))
    # w - lr (g + wd w) = 1 - 0.5 (2 + 0.1) = -0.05
    torch.testing.assert_close(b.detach(), torch.full((2, 2), -0.05, dtype=D))


@pytest.mark.reference
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


@pytest.mark.reference
def test_adam_first_step_by_hand():
    """At t = 1 bias correction makes Adam's step lr * g / (|g| + eps) (m_hat = g, v_hat = g^2):
    w = 2, g = 3, lr = 0.1, eps = 1: Adam with L2 decay 0.5: g' = 4, w = 2 - 0.1 * 4 / 5 = 1.92;
    AdamW with decay 0.5: w = 2 (1 - 0.05) - 0.1 * 3 / 4 = 1.825."""
    for kind, want in (("adam", 1.92), ("adamw", 1.825)):
        w = torch.full((1, 1), 2.0, dtype=D, requires_grad=True)
        opt = StackedOptimizer(
            [w], kind, 0.1, weight_decay=0.5, betas=(0.6, 0.7), eps=1.0, members=1
        )
        opt.step([torch.full((1, 1), 3.0, dtype=D)])
        assert w.item() == pytest.approx(want, abs=1e-14)


@pytest.mark.reference
def test_shared_settings_are_shared_and_sequences_need_members():
    p = torch.zeros(3, 2, requires_grad=True)
    opt = StackedOptimizer([p], "adamw", 0.2, 0.0, 0.05, members=3)
    assert (
        opt.kinds == ["adamw"] * 3
        and opt.lr == [0.2] * 3
        and opt.weight_decay == [0.05] * 3
    )
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
    StackedOptimizer(
        [p], momentum=0.0, weight_decay=0.0, betas=(0.0, 0.0), members=3
    )  # edges


@pytest.mark.reference
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
    out = fit(lambda s, b: -w1.sum(), opt, 3, schedule=lambda s: 2.0**s)
    assert w1.detach().tolist() == pytest.approx([0.7, 0.7], abs=1e-15)
    assert out.stop_step == [3]


@pytest.mark.reference
def test_frozen_members_keep_their_momentum_buffers():
    """A member stopped by a check keeps its weights and its SGD buffer, exactly."""
    w = torch.zeros(2, 1, dtype=D, requires_grad=True)
    opt = StackedOptimizer([w], "sgd", 1.0, momentum=0.5, members=2)
    fit(
        lambda s, b: -w[:, 0],
        opt,
        3,
        check=lambda s, due: torch.tensor([s >= 1, False]),
    )
    # gradient -1: member 0 makes one update (buffer -1, w = 1); member 1 three
    # (buffers -1, -1.5, -1.75 -> w = 4.25)
    assert w.detach()[:, 0].tolist() == [1.0, 4.25]
    assert opt.state[0]["buf"][:, 0].tolist() == [-1.0, -1.75]


@pytest.mark.mutation
def test_members_of_one_group_keep_their_own_learning_rates():
    """Members with the same optimizer settings but different learning rates (one group inside the
    optimizer) each follow torch.optim with their own lr, also when some of them are frozen."""
    E, lrs = 3, [0.1, 0.02, 0.3]
    g = torch.Generator().manual_seed(0)
    for kind in ("sgd", "adam"):
        p = torch.randn(E, 4, generator=g, dtype=torch.float64).requires_grad_()
        ref = [p.detach()[e].clone().requires_grad_() for e in range(E)]
        opt = StackedOptimizer(
            [p], kind, lrs, momentum=0.5 if kind == "sgd" else 0.0, members=E
        )
        refs = [
            torch.optim.SGD([q], lr=lr, momentum=0.5)
            if kind == "sgd"
            else torch.optim.Adam([q], lr=lr)
            for q, lr in zip(ref, lrs)
        ]
        for t in range(6):
            grad = torch.randn(E, 4, generator=g, dtype=torch.float64)
            active = None if t % 2 == 0 else torch.tensor([False, True, True])
            opt.step([grad], active)
            for e in range(E):
                if active is None or bool(active[e]):
                    ref[e].grad = grad[e].clone()
                    refs[e].step()
        for e in range(E):
            torch.testing.assert_close(
                p.detach()[e], ref[e].detach(), rtol=1e-12, atol=1e-14
            )


# =================================================================================================
# engine.EpochBatches
# =================================================================================================
def test_epoch_batches_are_each_members_permutations():
    b = EpochBatches(7, 3, [5, 6])
    rows = [next(b) for _ in range(6)]
    for e, s in enumerate([5, 6]):
        g = torch.Generator().manual_seed(s)
        want = torch.cat(
            [torch.randperm(7, generator=g), torch.randperm(7, generator=g)]
        )
        got = torch.cat([r[e] for r in rows])
        assert torch.equal(got, want)
    assert [r.shape[1] for r in rows] == [3, 3, 1, 3, 3, 1]


@pytest.mark.reference
def test_epoch_batches_when_the_batch_divides_n_or_exceeds_it():
    b = EpochBatches(6, 3, [4])
    rows = [next(b)[0] for _ in range(4)]
    g = torch.Generator().manual_seed(4)
    p1, p2 = torch.randperm(6, generator=g), torch.randperm(6, generator=g)
    assert [r.tolist() for r in rows] == [
        p1[:3].tolist(),
        p1[3:].tolist(),
        p2[:3].tolist(),
        p2[3:].tolist(),
    ]
    big = EpochBatches(4, 10, [9, 2])
    one, two = next(big), next(big)
    for e, s in enumerate([9, 2]):
        g = torch.Generator().manual_seed(s)
        assert one[e].tolist() == torch.randperm(4, generator=g).tolist()
        assert two[e].tolist() == torch.randperm(4, generator=g).tolist()


@pytest.mark.reference
def test_batch_orders_draw_from_the_callers_generators():
    g1, g2 = torch.Generator().manual_seed(21), torch.Generator().manual_seed(22)
    b = EpochBatches(5, 5, [g1, 8])
    got = next(b)
    r1 = torch.Generator().manual_seed(21)
    r2 = torch.Generator().manual_seed(8)
    assert got[0].tolist() == torch.randperm(5, generator=r1).tolist()
    assert got[1].tolist() == torch.randperm(5, generator=r2).tolist()
    # the caller's generator advanced: its next draw is the reference's next draw
    assert (
        torch.randperm(5, generator=g1).tolist()
        == torch.randperm(5, generator=r1).tolist()
    )
    s = StreamBatches([5], 2, [g2])
    next(s)
    r = torch.Generator().manual_seed(22)
    torch.randperm(5, generator=r)
    assert (
        torch.randperm(5, generator=g2).tolist()
        == torch.randperm(5, generator=r).tolist()
    )


# =================================================================================================
# engine.StreamBatches
# =================================================================================================
def test_stream_batches_straddle_epochs_or_drop_the_remainder():
    s = StreamBatches([5, 3], 2, [1, 2])
    got = torch.cat([next(s)[1] for _ in range(3)])
    g = torch.Generator().manual_seed(2)
    assert torch.equal(
        got,
        torch.cat([torch.randperm(3, generator=g), torch.randperm(3, generator=g)]),
    )
    d = StreamBatches([5], 2, [3], drop_remainder=True)
    got = [next(d)[0] for _ in range(3)]
    g = torch.Generator().manual_seed(3)
    p1, p2 = torch.randperm(5, generator=g), torch.randperm(5, generator=g)
    assert torch.equal(torch.cat(got), torch.cat([p1[:4], p2[:2]]))
    with pytest.raises(ValueError, match="batch_size"):
        StreamBatches([1, 5], 2, [0, 1], drop_remainder=True)


@pytest.mark.reference
def test_stream_batches_members_of_different_sizes_and_a_batch_over_two_epochs():
    s = StreamBatches([2, 7], 5, [3, 4])
    got = [next(s) for _ in range(3)]
    assert all(t.shape == (2, 5) for t in got)
    g = torch.Generator().manual_seed(
        3
    )  # size 2 < batch 5: three permutations per batch
    want0 = torch.cat([torch.randperm(2, generator=g) for _ in range(8)])[:15]
    assert torch.cat([t[0] for t in got]).tolist() == want0.tolist()
    g = torch.Generator().manual_seed(4)
    want1 = torch.cat([torch.randperm(7, generator=g) for _ in range(3)])[:15]
    assert torch.cat([t[1] for t in got]).tolist() == want1.tolist()
    with pytest.raises(
        ValueError, match=r"seeds must have one entry per member \(2\)"
    ):
        StreamBatches([2, 7], 1, [3])


@pytest.mark.reference
def test_stream_batches_drop_the_remainder_per_member():
    s = StreamBatches([5, 7], 3, [1, 2], drop_remainder=True)
    got = [next(s) for _ in range(3)]
    g = torch.Generator().manual_seed(1)
    p = [torch.randperm(5, generator=g) for _ in range(3)]
    assert (
        torch.cat([t[0] for t in got]).tolist()
        == torch.cat([p[0][:3], p[1][:3], p[2][:3]]).tolist()
    )
    g = torch.Generator().manual_seed(2)
    p = [torch.randperm(7, generator=g) for _ in range(2)]
    assert (
        torch.cat([t[1] for t in got]).tolist()
        == torch.cat([p[0][:6], p[1][:3]]).tolist()
    )
    StreamBatches(
        [3, 4], 3, [0, 1], drop_remainder=True
    )  # batch == smallest size is allowed


@pytest.mark.mutation
def test_stream_batches_drop_only_a_short_remainder():
    """With drop_remainder, a remainder of exactly batch_size indices is a batch, not dropped."""
    s = StreamBatches([4], 2, [7], drop_remainder=True)
    got = torch.cat([next(s)[0] for _ in range(3)])
    g = torch.Generator().manual_seed(7)
    p1, p2 = torch.randperm(4, generator=g), torch.randperm(4, generator=g)
    assert torch.equal(got, torch.cat([p1, p2[:2]]))


# =================================================================================================
# engine.ReplacementBatches
# =================================================================================================
@pytest.mark.reference
def test_replacement_batches_are_torch_randint_per_member_and_reach_every_row():
    r = ReplacementBatches(3, 50, [5, 6, 7])
    first, second = next(r), next(r)
    for e, s in enumerate([5, 6, 7]):
        g = torch.Generator().manual_seed(s)
        assert first[e].tolist() == torch.randint(0, 3, (50,), generator=g).tolist()
        assert second[e].tolist() == torch.randint(0, 3, (50,), generator=g).tolist()
    assert sorted(set(first.flatten().tolist())) == [0, 1, 2]
    assert not torch.equal(first[0], first[1])


# =================================================================================================
# engine._member_batch (private; every training loop's minibatch)
# =================================================================================================
def test_replacement_batches_and_member_batch():
    r = ReplacementBatches(10, 4, [0, 1])
    idx = next(r)
    assert idx.shape == (2, 4) and int(idx.max()) < 10
    g = torch.Generator().manual_seed(1)
    assert torch.equal(idx[1], torch.randint(0, 10, (4,), generator=g))
    x, y = torch.arange(30.0).view(10, 3), torch.arange(10)
    xb, yb = member_batch(x, y, idx)
    assert torch.equal(xb, x[idx]) and torch.equal(yb, idx)
    xs, ys = torch.stack([x, -x]), torch.stack([y, y + 1])
    xb, yb = member_batch(xs, ys, idx)
    assert torch.equal(xb[1], -x[idx[1]]) and torch.equal(yb[1], idx[1] + 1)
    with pytest.raises(ValueError, match="seeds"):
        EpochBatches(3, 2, [])


@pytest.mark.reference
def test_member_batch_for_every_combination_of_shared_and_per_member_data():
    E, n, d = 2, 5, 3
    x = torch.arange(n * d, dtype=D).view(n, d)
    xs = torch.stack([x, 100 + x])
    y, ys = (
        torch.tensor([4, 3, 2, 1, 0]),
        torch.tensor([[0, 1, 2, 3, 4], [9, 8, 7, 6, 5]]),
    )
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


# =================================================================================================
# engine.stop_rule
# =================================================================================================
def test_stop_rule_accuracy_and_margin():
    logits = torch.tensor([[[2.0, 0.0], [0.0, 1.0]], [[0.0, 2.0], [0.0, 1.0]]])
    y = torch.tensor([0, 1])
    assert stop_rule(target_train_acc=1.0)(logits, y).tolist() == [True, False]
    assert stop_rule(margin_gamma=1.5, margin_fraction=0.5)(logits, y).tolist() == [
        True,
        False,
    ]
    assert stop_rule()(logits, y).tolist() == [False, False]
    with pytest.raises(ValueError, match="margin_gamma"):
        stop_rule(margin_gamma=float("nan"))


@pytest.mark.reference
def test_stop_rule_edges_by_hand():
    # member 0: margins 1, 0.5, 2, -1 (3 of 4 correct); member 1: margins 0.5, 0.5, 0.5, 0.5
    logits = torch.tensor(
        [
            [[1.0, 0.0], [0.0, 0.5], [2.0, 0.0], [0.0, 1.0]],
            [[0.5, 0.0], [0.0, 0.5], [0.5, 0.0], [0.0, 0.5]],
        ]
    )
    y = torch.tensor([0, 1, 0, 0])
    yb = torch.tensor([[0, 1, 0, 0], [0, 1, 0, 1]])
    assert stop_rule(target_train_acc=0.75)(logits, yb).tolist() == [True, True]
    assert stop_rule(target_train_acc=0.76)(logits, yb).tolist() == [False, True]
    assert stop_rule(target_train_acc=0.75)(logits, y).tolist() == [True, True]
    assert stop_rule(target_train_acc=0.0)(logits, y).tolist() == [True, True]
    # margin >= gamma counts at equality: member 0 has 3 of 4 at >= 0.5, member 1 all 4
    assert stop_rule(margin_gamma=0.5, margin_fraction=0.75)(
        logits, yb
    ).tolist() == [True, True]
    assert stop_rule(margin_gamma=0.5, margin_fraction=0.8)(logits, yb).tolist() == [
        False,
        True,
    ]
    assert stop_rule(margin_gamma=0.5)(logits, yb).tolist() == [
        False,
        True,
    ]  # default 0.99
    assert stop_rule(margin_gamma=0.6, margin_fraction=0.5)(logits, yb).tolist() == [
        True,
        False,
    ]
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


# =================================================================================================
# engine.fit
# =================================================================================================
def test_fit_refuses_a_loss_of_the_wrong_shape():
    w = torch.zeros(2, 1, requires_grad=True)
    opt = StackedOptimizer([w], members=2)
    with pytest.raises(
        ValueError, match=r"loss must return a tensor of shape \(2,\)"
    ):
        fit(lambda s, b: w.sum(), opt, 3)
    with pytest.raises(ValueError, match="steps"):
        fit(lambda s, b: w[:, 0], opt, -1)


def test_engine_refuses_bad_input_naming_the_argument():
    w = torch.zeros(2, 3, requires_grad=True)
    opt = StackedOptimizer([w], members=2)
    g = torch.ones(2, 3)
    cases = [
        (lambda: opt.step(None), TypeError, "grads"),
        (lambda: opt.step([g, g]), ValueError, "grads must have one entry"),
        (lambda: opt.step([g * float("nan")]), ValueError, r"grads\[0\]"),
        (
            lambda: opt.step([torch.ones(3, 2)]),
            ValueError,
            r"grads\[0\] must have the shape",
        ),
        (
            lambda: opt.step([g], torch.ones(5, dtype=torch.bool)),
            ValueError,
            "active",
        ),
        (lambda: opt.step([g], lr_scale=float("nan")), ValueError, "lr_scale"),
        (lambda: opt.step([g], lr_scale=-1.0), ValueError, "lr_scale"),
        (lambda: StackedOptimizer(None), TypeError, "params"),
        (lambda: EpochBatches(5, 2, [0], device="gpu9"), ValueError, "device"),
        (lambda: EpochBatches(5, 2, [0], device=3.5), TypeError, "device"),
        (lambda: StreamBatches([], 2, [0]), TypeError, "sizes"),
        (
            lambda: StreamBatches([5], 2, [0], drop_remainder="yes"),
            TypeError,
            "drop_remainder",
        ),
        (
            lambda: fit(lambda s, b: w[:, 0], opt, 3, batches="abc"),
            TypeError,
            "batches",
        ),
        (lambda: fit(lambda s, b: w[:, 0], opt, 3, check=3), TypeError, "check"),
        (lambda: fit(lambda s, b: w[:, 0], opt, 3, start=2), TypeError, "start"),
        (
            lambda: fit(lambda s, b: w[:, 0], opt, 3, active_only="yes"),
            TypeError,
            "active_only",
        ),
        (
            lambda: fit(
                lambda s, b: w[:, 0], opt, 3, schedule=lambda s: float("nan")
            ),
            ValueError,
            "schedule",
        ),
        (lambda: stop_rule(margin_gamma=0.0), ValueError, "margin_gamma"),
    ]
    for call, error, word in cases:
        with pytest.raises(error, match=word):
            call()


@pytest.mark.reference
def test_a_stop_mask_counts_only_for_members_the_check_is_due_for():
    w, opt = _counter(3)
    calls = []

    def check(step, due):
        calls.append((step, due.tolist()))
        return torch.full((3,), step >= 2)  # says every member met the rule

    out = fit(lambda s, b: -w[:, 0], opt, [5, 5, 5], check=check, every=[2, 3, 4])
    assert calls == [
        (0, [True, True, True]),
        (2, [True, False, False]),
        (3, [False, True, False]),
        (4, [False, False, True]),
    ]
    assert out.stop_step == [2, 3, 4] and out.met_rule == [True, True, True]
    assert w.detach()[:, 0].tolist() == [2.0, 3.0, 4.0]


@pytest.mark.reference
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


@pytest.mark.reference
def test_every_scalar_checks_multiples_and_the_last_step_once():
    w, opt = _counter(2)
    seen = []
    out = fit(
        lambda s, b: -w[:, 0], opt, 7, check=lambda s, due: seen.append(s), every=3
    )
    assert (
        seen == [0, 3, 6, 7]
        and out.stop_step == [7, 7]
        and out.met_rule == [False, False]
    )
    seen.clear()
    w, opt = _counter(2)
    fit(lambda s, b: -w[:, 0], opt, 6, check=lambda s, due: seen.append(s), every=3)
    assert seen == [0, 3, 6]  # the last step is a multiple: checked once
    seen.clear()
    w, opt = _counter(2)
    fit(lambda s, b: -w[:, 0], opt, 3, check=lambda s, due: seen.append(s), every=1)
    assert seen == [0, 1, 2, 3]


@pytest.mark.reference
def test_every_counts_updates_from_zero_not_from_a_members_start():
    """A check is due when the update count is a multiple of every (or at the last step), also
    for a member that started late; the check at step 0 includes members not started yet."""
    w, opt = _counter(2)
    calls = []
    fit(
        lambda s, b: -w[:, 0],
        opt,
        [6, 6],
        check=lambda s, due: calls.append((s, due.tolist())),
        every=[4, 2],
        start=[0, 1],
    )
    assert calls == [
        (0, [True, True]),
        (2, [False, True]),
        (4, [True, True]),
        (6, [True, True]),
    ]
    assert w.detach()[:, 0].tolist() == [6.0, 5.0]


@pytest.mark.reference
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


@pytest.mark.reference
def test_a_stopped_members_non_finite_loss_is_not_an_error_nor_an_update():
    w, opt = _counter(2)
    out = fit(
        lambda s, b: (
            -w[:, 0] * torch.tensor([1.0, math.nan if s > 0 else 1.0], dtype=D)
        ),
        opt,
        4,
        check=lambda s, due: torch.tensor([False, s >= 1]),
    )
    assert out.stop_step == [4, 1] and w.detach()[:, 0].tolist() == [4.0, 1.0]
    w, opt = _counter(2)  # a member not yet started may return NaN too
    fit(
        lambda s, b: (
            -w[:, 0] * torch.tensor([1.0, math.nan if s < 2 else 1.0], dtype=D)
        ),
        opt,
        4,
        start=[0, 2],
    )
    assert w.detach()[:, 0].tolist() == [4.0, 2.0]
    w, opt = _counter(2)
    with pytest.raises(ValueError, match=r"member\(s\) \[0\] at update 2"):
        fit(
            lambda s, b: (
                -w[:, 0] * torch.tensor([math.inf if s == 2 else 1.0, 1.0], dtype=D)
            ),
            opt,
            4,
        )


@pytest.mark.reference
def test_active_only_masks_follow_stops_and_starts():
    w, opt = _counter(3)
    seen = []

    def loss(step, batch, active):
        seen.append(active.tolist())
        return -(w[:, 0] * active)

    out = fit(
        loss,
        opt,
        [4, 4, 4],
        check=lambda s, due: torch.tensor([s >= 1, False, False]),
        start=[0, 0, 2],
        active_only=True,
    )
    assert seen == [
        [True, True, False],
        [False, True, False],
        [False, True, True],
        [False, True, True],
    ]
    assert out.stop_step == [1, 4, 4] and w.detach()[:, 0].tolist() == [
        1.0,
        4.0,
        2.0,
    ]


# =================================================================================================
# gtlib.engine as a whole
# =================================================================================================
@pytest.mark.parametrize("kind", ["sgd", "adamw", "adam"])
def test_each_rule_matches_torch_optim_member_by_member(kind):
    _run_both(kind, 0.05, 0.9, 0.01, lambda t: None, lambda t: 1.0)


def test_per_member_settings_frozen_members_and_schedule():
    kinds = ["sgd", "adamw", "adam", "sgd"]
    _run_both(
        kinds,
        [0.1, 0.01, 0.02, 0.03],
        [0.9, 0.0, 0.0, 0.0],
        [0.0, 0.1, 0.01, 0.05],
        lambda t: torch.tensor([True, t % 2 == 0, t % 3 != 0, t > 4]),
        lambda t: 1.0 - t / 20,
    )


@pytest.mark.parametrize("cfg", CONFIGS)
def test_train_gives_the_old_loops_numbers(cfg):
    x, y = _toy()
    a, b = make_mlp(3, 6, 12, 2, 3), make_mlp(3, 6, 12, 2, 3)
    ha = train(a, x, y, cfg, probes={"w": lambda m: m.layers[0].weight.sum().item()})
    hb = old_train(
        b, x, y, cfg, probes={"w": lambda m: m.layers[0].weight.sum().item()}
    )
    assert (ha.step, ha.loss, ha.train_acc, ha.probes, ha.stopped_by) == (
        hb.step,
        hb.loss,
        hb.train_acc,
        hb.probes,
        hb.stopped_by,
    )
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)


@pytest.mark.parametrize("cfg", CONFIGS)
def test_train_ensemble_gives_the_old_loops_numbers(cfg):
    x, y = _toy(1)
    seeds = [4, 5, 6, 7]
    a, b = BatchedMLP.init(seeds, 6, 12, 2, 3), BatchedMLP.init(seeds, 6, 12, 2, 3)
    ys = torch.stack([y, y, (y + 1) % 3, y])
    ha = train_ensemble(a, x, ys, cfg, seeds=seeds)
    hb = old_train_ensemble(b, x, ys, cfg, seeds=seeds)
    assert (
        ha.step == hb.step
        and ha.probes == hb.probes
        and ha.stopped_by == hb.stopped_by
    )
    # the old loop let a stopped member train on and restored it at the end, so its later rows
    # described weights it did not keep; the engine freezes it: rows agree up to each member's stop
    stop = torch.tensor(ha.probes["stop_step"])
    for step, u, v in zip(
        ha.step * 2, ha.loss + ha.train_acc, hb.loss + hb.train_acc
    ):
        live = stop >= step
        assert torch.equal(u[live], v[live])
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)


def test_no_chapter_module_writes_its_own_training_step():
    """gradient steps live in the core; a chapter module composes gtlib.engine."""
    import pathlib

    import gtlib

    root = pathlib.Path(gtlib.__file__).parent
    chapters = [
        "preliminaries",
        "connectivity",
        "contamination",
        "contrastive",
        "soft",
        "uniform",
    ]
    for name in chapters:
        # a chapter is a module gtlib/<name>.py or a package gtlib/<name>/
        files = (
            [root / f"{name}.py"]
            if (root / f"{name}.py").exists()
            else sorted((root / name).glob("*.py"))
        )
        assert files, f"gtlib has no chapter module or package {name!r}"
        for path in files:
            text = path.read_text()
            # ".backward(" is a call that runs a backward pass (loss.backward(),
            # torch.autograd.backward(...)); an autograd Function's own
            # "def backward(" and "ctx.save_for_backward(" define an operation's
            # gradient, not a training step
            for word in (".backward(", "torch.optim", "MemberOptimizer"):
                assert word not in text, (
                    f"{path.relative_to(root.parent)} contains {word!r}"
                )
