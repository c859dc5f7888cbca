"""The training engine (gtlib.engine) against references it cannot share a bug with: torch.optim
run member by member in float64, hand-drawn permutations, and the loops it replaced
(tests/reference_loops.py), which must give the same numbers."""
import copy

import pytest
import torch

from gtlib.engine import (EpochBatches, ReplacementBatches, StackedOptimizer, StreamBatches, fit,
                          member_batch, stop_rule)
from gtlib.models import BatchedMLP, make_mlp
from gtlib.train import TrainConfig, train, train_ensemble
from tests.reference_loops import old_train, old_train_ensemble

TORCH = {"sgd": torch.optim.SGD, "adamw": torch.optim.AdamW, "adam": torch.optim.Adam}


def _torch_opt(kind, p, lr, momentum, wd):
    if kind == "sgd":
        return torch.optim.SGD([p], lr=lr, momentum=momentum, weight_decay=wd)
    return TORCH[kind]([p], lr=lr, weight_decay=wd)


def _run_both(kinds, lrs, moms, wds, active_pattern, scales, steps=12, E=4):
    """Random gradients fed to the stacked optimizer and to E torch optimizers, float64."""
    g = torch.Generator().manual_seed(0)
    shapes = [(E, 3, 5), (E, 3)]
    stacked = [torch.randn(s, generator=g, dtype=torch.float64).requires_grad_() for s in shapes]
    ref = [[p.detach()[e].clone().requires_grad_() for p in stacked] for e in range(E)]
    opt = StackedOptimizer(stacked, kinds, lrs, moms, wds, members=E)

    def pick(v, e):
        return v[e] if isinstance(v, list) else v

    refs = [[_torch_opt(pick(kinds, e), q, pick(lrs, e), pick(moms, e), pick(wds, e)) for q in ref[e]]
            for e in range(E)]
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
            torch.testing.assert_close(p.detach()[e], q.detach(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind", ["sgd", "adamw", "adam"])
def test_each_rule_matches_torch_optim_member_by_member(kind):
    _run_both(kind, 0.05, 0.9, 0.01, lambda t: None, lambda t: 1.0)


def test_per_member_settings_frozen_members_and_schedule():
    kinds = ["sgd", "adamw", "adam", "sgd"]
    _run_both(kinds, [0.1, 0.01, 0.02, 0.03], [0.9, 0.0, 0.0, 0.0], [0.0, 0.1, 0.01, 0.05],
              lambda t: torch.tensor([True, t % 2 == 0, t % 3 != 0, t > 4]),
              lambda t: 1.0 - t / 20)


def test_a_frozen_member_is_untouched_and_its_adam_clock_stops():
    p = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    opt = StackedOptimizer([p], "adamw", 0.1, weight_decay=0.5, members=2)
    opt.step([torch.ones(2, 3, dtype=torch.float64)], torch.tensor([True, False]))
    assert torch.equal(p.detach()[1], torch.ones(3, dtype=torch.float64))
    assert opt.t.tolist() == [1, 0]
    assert float(opt.state[0]["m"][1].abs().sum()) == 0


@pytest.mark.parametrize("kind,wd,mom", [("sgd", 0.01, 0.9), ("adamw", 0.1, 0.0), ("adam", 0.0, 0.0)])
def test_a_single_model_is_bitwise_torch_optim(kind, wd, mom):
    torch.manual_seed(0)
    a = torch.nn.Linear(5, 3)
    b = copy.deepcopy(a)
    mine = StackedOptimizer(a.parameters(), kind, 0.01, mom, wd)
    theirs = _torch_opt(kind, None, 0.01, mom, wd) if False else (
        torch.optim.SGD(b.parameters(), lr=0.01, momentum=mom, weight_decay=wd) if kind == "sgd"
        else TORCH[kind](b.parameters(), lr=0.01, weight_decay=wd))
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


def test_epoch_batches_are_each_members_permutations():
    b = EpochBatches(7, 3, [5, 6])
    rows = [next(b) for _ in range(6)]
    for e, s in enumerate([5, 6]):
        g = torch.Generator().manual_seed(s)
        want = torch.cat([torch.randperm(7, generator=g), torch.randperm(7, generator=g)])
        got = torch.cat([r[e] for r in rows])
        assert torch.equal(got, want)
    assert [r.shape[1] for r in rows] == [3, 3, 1, 3, 3, 1]


def test_stream_batches_straddle_epochs_or_drop_the_remainder():
    s = StreamBatches([5, 3], 2, [1, 2])
    got = torch.cat([next(s)[1] for _ in range(3)])
    g = torch.Generator().manual_seed(2)
    assert torch.equal(got, torch.cat([torch.randperm(3, generator=g), torch.randperm(3, generator=g)]))
    d = StreamBatches([5], 2, [3], drop_remainder=True)
    got = [next(d)[0] for _ in range(3)]
    g = torch.Generator().manual_seed(3)
    p1, p2 = torch.randperm(5, generator=g), torch.randperm(5, generator=g)
    assert torch.equal(torch.cat(got), torch.cat([p1[:4], p2[:2]]))
    with pytest.raises(ValueError, match="batch_size"):
        StreamBatches([1, 5], 2, [0, 1], drop_remainder=True)


def test_replacement_batches_and_member_batch():
    r = ReplacementBatches(10, 4, [0, 1])
    idx = next(r)
    assert idx.shape == (2, 4) and int(idx.max()) < 10
    g = torch.Generator().manual_seed(1)
    assert torch.equal(idx[1], torch.randint(0, 10, (4,), generator=g))
    x, y = torch.arange(30.).view(10, 3), torch.arange(10)
    xb, yb = member_batch(x, y, idx)
    assert torch.equal(xb, x[idx]) and torch.equal(yb, idx)
    xs, ys = torch.stack([x, -x]), torch.stack([y, y + 1])
    xb, yb = member_batch(xs, ys, idx)
    assert torch.equal(xb[1], -x[idx[1]]) and torch.equal(yb[1], idx[1] + 1)
    with pytest.raises(ValueError, match="seeds"):
        EpochBatches(3, 2, [])


def test_fit_checks_steps_starts_and_schedule():
    w = torch.zeros(3, 1, requires_grad=True)
    opt = StackedOptimizer([w], "sgd", 1.0, members=3)
    calls, lrs = [], []

    def loss(step, batch):
        return -w[:, 0]  # gradient -1: each update adds lr * scale

    def check(step, due):
        calls.append((step, due.tolist()))
        return torch.tensor([step >= 4, False, False])

    out = fit(loss, opt, [10, 5, 6], check=check, every=[2, 5, 4], start=[0, 0, 3],
              schedule=lambda s: lrs.append(s) or 0.5)
    assert out.stop_step == [4, 5, 6] and out.met_rule == [True, False, False]
    assert calls[0] == (0, [True, True, True])
    assert (4, [True, False, True]) in calls and (5, [False, True, False]) in calls
    assert (6, [False, False, True]) in calls
    assert w.detach()[:, 0].tolist() == [2.0, 2.5, 1.5]  # 4, 5 and 3 updates of 0.5
    assert lrs == [0, 1, 2, 3, 4, 5]


def test_fit_refuses_a_loss_of_the_wrong_shape():
    w = torch.zeros(2, 1, requires_grad=True)
    opt = StackedOptimizer([w], members=2)
    with pytest.raises(ValueError, match=r"loss must return a tensor of shape \(2,\)"):
        fit(lambda s, b: w.sum(), opt, 3)
    with pytest.raises(ValueError, match="steps"):
        fit(lambda s, b: w[:, 0], opt, -1)


def test_stop_rule_accuracy_and_margin():
    logits = torch.tensor([[[2.0, 0.0], [0.0, 1.0]], [[0.0, 2.0], [0.0, 1.0]]])
    y = torch.tensor([0, 1])
    assert stop_rule(target_train_acc=1.0)(logits, y).tolist() == [True, False]
    assert stop_rule(margin_gamma=1.5, margin_fraction=0.5)(logits, y).tolist() == [True, False]
    assert stop_rule()(logits, y).tolist() == [False, False]
    with pytest.raises(ValueError, match="margin_gamma"):
        stop_rule(margin_gamma=float("nan"))


# --- the engine reproduces the loops it replaced, number for number -----------------------------
CONFIGS = [
    TrainConfig(optimizer="sgd", lr=0.05, momentum=0.9, weight_decay=1e-3, batch_size=16,
                epochs=3, check_every=5),
    TrainConfig(optimizer="adamw", lr=1e-2, weight_decay=0.1, batch_size=25, epochs=2,
                check_every=3, loss="mse"),
    TrainConfig(optimizer="sgd", lr=0.5, batch_size=None, epochs=30, check_every=4,
                target_train_acc=0.9),
    TrainConfig(optimizer="sgd", lr=0.3, momentum=0.5, batch_size=10, epochs=20, check_every=7,
                margin_gamma=0.5, margin_fraction=0.8),
]


def _toy(seed=0, n=60):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=g)
    return x, (x[:, 0] + 0.3 * x[:, 1] > 0).long() + (x[:, 2] > 1).long()


@pytest.mark.parametrize("cfg", CONFIGS)
def test_train_gives_the_old_loops_numbers(cfg):
    x, y = _toy()
    a, b = make_mlp(3, 6, 12, 2, 3), make_mlp(3, 6, 12, 2, 3)
    ha = train(a, x, y, cfg, probes={"w": lambda m: m.layers[0].weight.sum().item()})
    hb = old_train(b, x, y, cfg, probes={"w": lambda m: m.layers[0].weight.sum().item()})
    assert (ha.step, ha.loss, ha.train_acc, ha.probes, ha.stopped_by) == \
        (hb.step, hb.loss, hb.train_acc, hb.probes, hb.stopped_by)
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
    assert ha.step == hb.step and ha.probes == hb.probes and ha.stopped_by == hb.stopped_by
    # the old loop let a stopped member train on and restored it at the end, so its later rows
    # described weights it did not keep; the engine freezes it: rows agree up to each member's stop
    stop = torch.tensor(ha.probes["stop_step"])
    for step, u, v in zip(ha.step * 2, ha.loss + ha.train_acc, hb.loss + hb.train_acc):
        live = stop >= step
        assert torch.equal(u[live], v[live])
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)


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


# --- bad input at the engine's boundary ------------------------------------------------------------
def test_engine_refuses_bad_input_naming_the_argument():
    w = torch.zeros(2, 3, requires_grad=True)
    opt = StackedOptimizer([w], members=2)
    g = torch.ones(2, 3)
    cases = [
        (lambda: opt.step(None), TypeError, "grads"),
        (lambda: opt.step([g, g]), ValueError, "grads must have one entry"),
        (lambda: opt.step([g * float("nan")]), ValueError, r"grads\[0\]"),
        (lambda: opt.step([torch.ones(3, 2)]), ValueError, r"grads\[0\] must have the shape"),
        (lambda: opt.step([g], torch.ones(5, dtype=torch.bool)), ValueError, "active"),
        (lambda: opt.step([g], lr_scale=float("nan")), ValueError, "lr_scale"),
        (lambda: opt.step([g], lr_scale=-1.0), ValueError, "lr_scale"),
        (lambda: StackedOptimizer(None), TypeError, "params"),
        (lambda: EpochBatches(5, 2, [0], device="gpu9"), ValueError, "device"),
        (lambda: EpochBatches(5, 2, [0], device=3.5), TypeError, "device"),
        (lambda: StreamBatches([], 2, [0]), TypeError, "sizes"),
        (lambda: StreamBatches([5], 2, [0], drop_remainder="yes"), TypeError, "drop_remainder"),
        (lambda: member_batch(torch.ones(4, 2), None, torch.tensor([[9]])), ValueError, "idx"),
        (lambda: member_batch(None, None, torch.tensor([[0]])), TypeError, "x"),
        (lambda: fit(lambda s, b: w[:, 0], opt, 3, batches="abc"), TypeError, "batches"),
        (lambda: fit(lambda s, b: w[:, 0], opt, 3, check=3), TypeError, "check"),
        (lambda: fit(lambda s, b: w[:, 0], opt, 3, start=2), TypeError, "start"),
        (lambda: fit(lambda s, b: w[:, 0], opt, 3, active_only="yes"), TypeError, "active_only"),
        (lambda: fit(lambda s, b: w[:, 0], opt, 3, schedule=lambda s: float("nan")), ValueError,
         "schedule"),
        (lambda: stop_rule(margin_gamma=0.0), ValueError, "margin_gamma"),
    ]
    for call, error, word in cases:
        with pytest.raises(error, match=word):
            call()


def test_a_diverging_member_is_an_error_not_a_nan_result():
    w = torch.ones(2, 1, requires_grad=True)
    opt = StackedOptimizer([w], "sgd", 1.0, members=2)
    with pytest.raises(ValueError, match=r"member\(s\) \[1\] at update 0: training diverged"):
        fit(lambda s, b: w[:, 0] * torch.tensor([1.0, float("inf")]), opt, 3)


def test_no_chapter_module_writes_its_own_training_step():
    """Issue 17: gradient steps live in the core; a chapter module composes gtlib.engine."""
    import pathlib

    import gtlib
    root = pathlib.Path(gtlib.__file__).parent
    chapters = ["preliminaries", "connectivity", "contamination", "contrastive", "soft", "uniform"]
    for name in chapters:
        text = (root / f"{name}.py").read_text()
        for word in ("backward(", "torch.optim", "MemberOptimizer"):
            assert word not in text, f"gtlib/{name}.py contains {word!r}"
