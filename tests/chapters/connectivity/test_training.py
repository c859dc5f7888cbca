"""Tests of gtlib.connectivity.training, one section per public function."""

from __future__ import annotations
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from gtlib import connectivity as C
from gtlib.models import BatchedMLP, make_mlp, MLP
from tests.oracles.connectivity_loops import old_fit, old_fit_bezier, old_lr_at
from tests.chapters.connectivity.helpers import (
    _blobs,
    _stack,
    A,
    B,
    D,
    data,
    K,
    net_ref,
    np_features,
    RECIPE,
    ref_fit_member,
    same_params,
    W,
    X_bou,
    X_ref,
    Y_bou,
)


def f64_stack(seeds, **kw):
    return BatchedMLP.init(seeds, D, W, kw.pop("depth", 2), K, **kw).to(
        torch.float64
    )


def _schedule(recipe, step, total):
    """The documented schedule: linear warm-up from lr * start_factor over round(warmup * total)
    steps, then linear decay to 0 at `total`."""
    w = round(recipe.warmup * total)
    if step < w:
        return recipe.lr * (
            recipe.start_factor + (1 - recipe.start_factor) * step / w
        )
    return recipe.lr * (total - step) / (total - w)


def _hand_fit(w, b, x, y, recipe, steps, total):
    """Full-batch SGD with momentum and coupled weight decay, `steps` = the global steps it takes."""
    params = [t.detach().clone().requires_grad_() for t in w + b]
    bufs = [None] * len(params)
    L = len(w)
    for step in steps:
        h = x
        for l in range(L):
            h = h @ params[l].T + params[L + l]
            if l < L - 1:
                h = torch.relu(h)
        grads = torch.autograd.grad(F.cross_entropy(h, y), params)
        lr = _schedule(recipe, step, total)
        with torch.no_grad():
            for i, (p, g) in enumerate(zip(params, grads)):
                d = g + recipe.weight_decay * p
                bufs[i] = (
                    d.clone() if bufs[i] is None else recipe.momentum * bufs[i] + d
                )
                p -= lr * bufs[i]
    return params


NO_BIAS = MLP(5, 8, 1, 3, bias=False)


def _data(n=30, d=6, classes=3, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(n, d, generator=g).to(dtype),
        torch.randint(0, classes, (n,), generator=g),
    )


def _both(seeds, d=6, width=8, depth=2, classes=3, bias=True, dtype=torch.float32):
    a = BatchedMLP.init(seeds, d, width, depth, classes, bias=bias).to(dtype)
    b = BatchedMLP.init(seeds, d, width, depth, classes, bias=bias).to(dtype)
    return a, b


def _same_stack(a: BatchedMLP, b: BatchedMLP):
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p.detach(), q.detach())


def _same_snaps(s, t):
    assert sorted(s) == sorted(t)
    for k in s:
        for m, n in zip(s[k], t[k]):
            for u, v in zip(m.parameters(), n.parameters()):
                assert torch.equal(u.detach(), v.detach())


# =================================================================================================
# connectivity.params
# =================================================================================================
@pytest.mark.reference
def test_params_lists_every_layer_in_order_and_from_params_rebuilds_the_function():
    m = net_ref(3, depth=3, act="tanh")
    ws, bs = C.params(m)
    assert [tuple(w.shape) for w in ws] == [(W, D), (W, W), (W, W), (K, W)]
    assert all(torch.equal(w, l.weight) for w, l in zip(ws, m.layers))
    assert all(torch.equal(b, l.bias) for b, l in zip(bs, m.layers))
    assert not ws[0].requires_grad
    back = C.from_params(ws, bs, "tanh")
    same_params(back, m)
    assert back.act_name == "tanh"
    np.testing.assert_allclose(
        back(X_ref).detach().double().numpy(),
        np_features(m, X_ref)[-1],
        rtol=1e-5,
        atol=1e-6,
    )
    assert C.params(net_ref(bias=False))[1] is None
    nb = C.from_params(C.params(net_ref(4, bias=False))[0], None)
    assert nb.layers[0].bias is None and nb.act_name == "relu"


# =================================================================================================
# connectivity.stack
# =================================================================================================
@pytest.mark.reference
def test_stack_and_members_keep_the_order():
    nets = [net_ref(s) for s in (5, 6, 7)]
    s = C.stack(nets)
    out = s(X_ref)
    for i, m in enumerate(nets):
        torch.testing.assert_close(out[i], m(X_ref))
    for m, n in zip(C.members(s), nets):
        same_params(m, n)


# =================================================================================================
# connectivity.members
# =================================================================================================
@pytest.mark.reference
def test_fit_matches_sgd_member_by_member_with_spawning_stop_and_snapshots():
    x, y = data(n=22)
    x = x.double()
    r = C.Recipe(
        lr=0.3,
        momentum=0.7,
        batch_size=6,
        epochs=3,
        warmup=0.25,
        start_factor=0.3,
        weight_decay=0.02,
    )
    model = f64_stack([1, 2, 3])
    init = C.members(model)
    seeds, starts, stop = [11, 12, 13], [0, 2, 5], 10
    snaps = C.fit(
        model,
        x,
        y,
        r,
        seeds=seeds,
        start_steps=starts,
        stop_step=stop,
        snapshot_steps=[0, 4, 10],
    )
    assert sorted(snaps) == [0, 4, 10]
    for i in range(3):
        want, wsnaps = ref_fit_member(
            init[i], x, y, r, seeds[i], starts[i], stop, snaps=(0, 4, 10)
        )
        same_params(model.member(i), want, atol=1e-12)
        for k in (0, 4, 10):
            same_params(snaps[k][i], wsnaps[k], atol=1e-12)
    # the member that starts at 5 is still its initialization at the snapshot of step 4
    same_params(snaps[4][2], init[2])
    assert not torch.equal(snaps[4][1].layers[0].weight, init[1].layers[0].weight)


@pytest.mark.reference
@pytest.mark.parametrize(
    "which,train", [("only_last_layer", "head"), ("freeze_last_layer", "body")]
)
def test_fit_trains_only_the_chosen_layers_as_sgd_would(which, train):
    x, y = data(n=15)
    x = x.double()
    Y_ref = torch.stack([y, (y + 1) % K])  # one labelling per member
    r = C.Recipe(
        lr=0.4, momentum=0.6, batch_size=4, epochs=2, warmup=0.0, weight_decay=0.05
    )
    model = f64_stack([8, 9])
    init = C.members(model)
    C.fit(model, x, Y_ref, r, seeds=[3, 4], **{which: True})
    for i in range(2):
        want, _ = ref_fit_member(init[i], x, Y_ref[i], r, [3, 4][i], train=train)
        same_params(model.member(i), want, atol=1e-12)
    frozen = -1 if train == "body" else 0
    assert torch.equal(
        model.member(0).layers[frozen].weight, init[0].layers[frozen].weight
    )


@pytest.mark.reference
def test_fit_with_adam_at_a_constant_rate_as_torch_would():
    x, y = data(n=15)
    x = x.double()
    r = C.Recipe(
        lr=0.01, batch_size=4, epochs=2, warmup=0.0, optimizer="adam", decay=False
    )
    assert [r.lr_factor(s, 8) for s in (0, 4, 8)] == [1.0, 1.0, 1.0]
    model = f64_stack([8, 9])
    init = C.members(model)
    C.fit(model, x, y, r, seeds=[3, 4])
    for i in range(2):
        want, _ = ref_fit_member(init[i], x, y, r, [3, 4][i])
        same_params(model.member(i), want, atol=1e-12)


def test_recipe_refuses_an_unknown_optimizer_or_a_non_bool_decay():
    with pytest.raises(ValueError, match="optimizer"):
        C.Recipe(optimizer="adamw")
    with pytest.raises((TypeError, ValueError), match="decay"):
        C.Recipe(decay="no")
    # warm-up, then constant: the same ramp as the decaying schedule, then the peak
    r = C.Recipe(lr=1.0, warmup=0.5, start_factor=0.1, decay=False)
    assert r.lr_at(0, 10) == pytest.approx(0.1) and r.lr_at(9, 10) == 1.0


@pytest.mark.reference
def test_fit_one_training_set_per_member():
    x, y = data(n=12)
    x2, y2 = data(n=12, seed=5)
    X2 = torch.stack([x, x2]).double()
    Y2 = torch.stack([y, y2])
    r = C.Recipe(lr=0.25, momentum=0.0, batch_size=12, epochs=3, warmup=0.0)
    model = f64_stack([1, 1])
    init = C.members(model)
    C.fit(model, X2, Y2, r, seeds=[0, 0])
    for i in range(2):
        want, _ = ref_fit_member(init[i], X2[i], Y2[i], r, 0)
        same_params(model.member(i), want, atol=1e-12)


@pytest.mark.engine
@pytest.mark.parametrize("bias,wd", [(True, 0.01), (False, 0.0)])
def test_fit_bezier_same_control_point(bias, wd):
    x, y = _data(n=26)  # float32 only: from_params builds float32 networks
    a, b = C.members(BatchedMLP.init([0, 1], 6, 8, 2, 3, bias=bias))
    rec = C.Recipe(
        lr=0.05, momentum=0.9, batch_size=8, epochs=3, warmup=0.25, weight_decay=wd
    )
    m_new = C.fit_bezier(a, b, x, y, rec, seed=3, samples=3)
    m_old = old_fit_bezier(a, b, x, y, rec, seed=3, samples=3)
    for u, v in zip(m_new.parameters(), m_old.parameters()):
        assert torch.equal(u, v)
    assert not torch.equal(
        m_new.layers[0].weight, C.lerp(a, b, 0.5).layers[0].weight
    )


# =================================================================================================
# connectivity.Recipe
# =================================================================================================
def test_recipe_schedule():
    r = C.Recipe(lr=1.0, warmup=0.5, start_factor=0.1)
    assert r.lr_at(0, 10) == pytest.approx(0.1) and r.lr_at(5, 10) == pytest.approx(
        1.0
    )
    assert r.lr_at(10, 10) == 0.0
    assert C.Recipe(lr=1.0, warmup=0.0).lr_at(0, 10) == 1.0


@pytest.mark.reference
def test_recipe_steps_is_epochs_times_ceil_n_over_batch():
    r = C.Recipe(batch_size=10, epochs=3)
    assert [r.steps(n) for n in (1, 10, 25, 30, 31)] == [3, 3, 9, 9, 12]


@pytest.mark.reference
def test_recipe_schedule_hand_values():
    # lr 0.5, warm-up 0.25 of 8 steps = 2 steps from 0.2 * lr, then linear decay to 0 at step 8
    r = C.Recipe(lr=0.5, warmup=0.25, start_factor=0.2)
    want = [0.2, 0.6, 1.0, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6, 0.0]
    got = [r.lr_factor(s, 8) for s in range(9)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(
        [r.lr_at(s, 8) for s in range(9)],
        0.5 * np.array(want),
        rtol=1e-12,
        atol=1e-15,
    )
    # warm-up 0.3 of 10 steps = 3 steps; without warm-up the first step is at the peak
    r = C.Recipe(lr=2.0, warmup=0.3, start_factor=0.1)
    assert r.lr_factor(2, 10) == pytest.approx(0.1 + 0.9 * 2 / 3)
    assert r.lr_factor(3, 10) == pytest.approx(1.0) and r.lr_factor(
        4, 10
    ) == pytest.approx(6 / 7)
    r = C.Recipe(lr=2.0, warmup=0.0, start_factor=0.1)
    assert r.lr_at(0, 4) == 2.0 and r.lr_at(1, 4) == pytest.approx(1.5)
    with pytest.raises(ValueError):
        r.lr_at(5, 4)
    with pytest.raises(ValueError):
        r.lr_factor(5, 4)


@pytest.mark.engine
def test_schedule_factor_is_lr_at_bit_for_bit():
    for r in (
        C.Recipe(lr=0.05),
        C.Recipe(lr=0.3, warmup=0.0),
        C.Recipe(lr=0.07, warmup=0.33, start_factor=0.1),
    ):
        for total in (1, 7, 60, 301):
            for step in range(total + 1):
                want = old_lr_at(r, step, total)
                assert r.lr_at(step, total) == want
                assert r.lr * r.lr_factor(step, total) == want


# =================================================================================================
# connectivity.fit
# =================================================================================================
def test_fit_trains_and_respects_start_steps_and_frozen_head():
    x = torch.randn(64, 6)
    y = (x[:, 0] > 0).long()
    model = BatchedMLP.init([0, 0], 6, 8, 1, 2)
    w0 = [w.detach().clone() for w in model.weights]
    rec = C.Recipe(lr=0.1, epochs=5, batch_size=16, warmup=0.0, weight_decay=0.01)
    C.fit(
        model,
        x,
        y,
        rec,
        seeds=[1, 2],
        start_steps=[0, rec.steps(64)],
        freeze_last_layer=True,
    )
    assert torch.equal(
        model.weights[0][1], w0[0][1]
    )  # member 1 never started (nor decayed)
    assert not torch.equal(model.weights[0][0], w0[0][0])  # member 0 trained
    assert torch.equal(model.weights[-1], w0[-1])  # head frozen for both


def test_spawn_snapshots_match_parent_prefix():
    x, y = torch.randn(40, 6), torch.randint(0, 3, (40,))
    model = BatchedMLP.init([3], 6, 8, 2, 3)
    rec = C.Recipe(lr=0.05, epochs=2, batch_size=10)
    snaps = C.fit(model, x, y, rec, seeds=[4], stop_step=5, snapshot_steps=[0, 5])
    assert sorted(snaps) == [0, 5]
    assert torch.equal(
        snaps[5][0].layers[0].weight, model.member(0).layers[0].weight
    )


@pytest.mark.reference
def test_fit_full_run_and_each_member_reads_its_own_seed():
    x, y = data(n=17)
    x = x.double()
    r = C.Recipe(
        lr=0.2, momentum=0.5, batch_size=5, epochs=2, warmup=0.4, start_factor=0.5
    )
    a, b = f64_stack([4, 4]), f64_stack([4, 4])
    C.fit(a, x, y, r, seeds=[21, 22])
    C.fit(b, x, y, r, seeds=[22, 21])
    same_params(a.member(0), b.member(1))
    same_params(a.member(1), b.member(0))
    assert not torch.equal(a.weights[0][0], a.weights[0][1])
    want, _ = ref_fit_member(f64_stack([4]).member(0), x, y, r, 22)
    same_params(a.member(1), want, atol=1e-12)


@pytest.mark.reference
def test_fit_follows_its_schedule_and_activates_spawned_members_on_time():
    x, y = _blobs(n=40)
    recipe = C.Recipe(
        lr=0.2,
        momentum=0.9,
        batch_size=40,
        epochs=10,
        warmup=0.3,
        start_factor=0.1,
        weight_decay=0.01,
    )  # full batch: the order is irrelevant
    model = BatchedMLP.init([0, 1], 5, 8, 1, 3).double()
    init = [
        (
            [w[e].detach().clone() for w in model.weights],
            [p[e].detach().clone() for p in model.biases],
        )
        for e in range(2)
    ]
    total, spawn = recipe.steps(40), 4
    C.fit(model, x, y, recipe, seeds=[0, 1], start_steps=[0, spawn])
    for e, first in ((0, 0), (1, spawn)):
        ref = _hand_fit(*init[e], x, y, recipe, range(first, total), total)
        got = [w[e] for w in model.weights] + [p[e] for p in model.biases]
        for p, q in zip(got, ref):
            assert torch.allclose(p, q, atol=1e-10, rtol=0)


@pytest.mark.boundary
def test_fit_refuses_empty_and_non_finite_data():
    model = BatchedMLP.init([0], 4, 8, 1, 3)
    recipe = C.Recipe(lr=0.1, epochs=1, warmup=0.0)
    with pytest.raises(ValueError, match="n = 0"):
        C.fit(
            model,
            torch.zeros(0, 4),
            torch.zeros(0, dtype=torch.long),
            recipe,
            seeds=[0],
        )
    x = torch.zeros(5, 4)
    x[0, 0] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        C.fit(model, x, torch.zeros(5, dtype=torch.long), recipe, seeds=[0])


@pytest.mark.boundary
def test_valid_input_is_still_accepted():
    """What the boundary must let through: a declared optional None, defaults, the edge values
    the chapter uses (a spawn at step 0 trains the parent for no step; a snapshot between the
    stop step and the end of the schedule is not reached)."""
    assert len(C.with_head(NO_BIAS, torch.randn(4, 8), None).layers) == 2
    assert RECIPE.lr_at(3, 3) == 0.0 and RECIPE.lr_factor(0, 1) == 1.0
    k0 = C.ConnectivityConfig(
        depth=1,
        alphas=3,
        spawn_width=8,
        spawn_fractions=(0.0,),
        spawn_pairs=1,
        spawn_recipe=RECIPE,
    )
    s = C.spawn_experiment(k0, X_bou, Y_bou, X_bou, Y_bou, control=False)
    assert s.steps == [0] and s.error_barrier.shape == (1, 1)
    snaps = C.fit(
        _stack(), X_bou, Y_bou, RECIPE, [0, 1], stop_step=1, snapshot_steps=[0, 1, 3]
    )
    assert sorted(snaps) == [0, 1]
    assert C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], snapshot_steps=[]) == {}
    assert C.evaluate_path(
        A, B, X_bou, Y_bou, np.linspace(0, 1, 4)
    ).alphas.shape == (4,)
    assert C.bezier_stack(A, A, B, torch.tensor([0.0, 1.0])).size == 2
    assert C.perm_recovery([[1, 0, 2]], [np.array([1, 0, 2])]) == [1.0]
    assert C.apply_task_vectors(A, [C.task_vector(A, B)], -2.0, B) is not None
    assert C.llfc_profile(A, B, X_bou, np.array([0.0, 0.5, 1.0])).shape == (3, 1)
    assert C.task_labels(Y_bou[:-1], 1).shape == (
        29,
    )  # no length to check against: accepted


# float64 as well: there a learning rate one float64 ulp off would already show
@pytest.mark.engine
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fit_spawning_stop_step_snapshots_and_weight_decay(dtype):
    x, y = _data(dtype=dtype)
    rec = C.Recipe(
        lr=0.1, momentum=0.9, batch_size=8, epochs=3, warmup=0.3, weight_decay=0.01
    )
    new, old = _both([0, 1, 2], dtype=dtype)
    kw = dict(
        seeds=[5, 6, 7],
        start_steps=[0, 3, 7],
        stop_step=10,
        snapshot_steps=[0, 3, 10, 11],
    )
    _same_snaps(C.fit(new, x, y, rec, **kw), old_fit(old, x, y, rec, **kw))
    _same_stack(new, old)
    # a member that starts late was left as it was until then (no weight decay either)
    new, old = _both([0, 1], dtype=dtype)
    kw = dict(seeds=[1, 2], start_steps=[4, rec.steps(30)])
    C.fit(new, x, y, rec, **kw)
    old_fit(old, x, y, rec, **kw)
    _same_stack(new, old)


@pytest.mark.engine
@pytest.mark.parametrize("which", ["only_last_layer", "freeze_last_layer"])
def test_fit_probe_and_frozen_head_with_one_labelling_per_member(which):
    x, y = _data()
    Y = torch.stack([y, (y + 1) % 3])
    rec = C.Recipe(
        lr=0.05, momentum=0.8, batch_size=7, epochs=2, warmup=0.2, weight_decay=0.001
    )
    new, old = _both([3, 4])
    C.fit(new, x, Y, rec, seeds=[8, 9], **{which: True})
    old_fit(old, x, Y, rec, seeds=[8, 9], **{which: True})
    if which == "freeze_last_layer":
        _same_stack(new, old)
    else:  # a probe reads its frozen features computed once on all of x: the last bits differ
        for p, q in zip(new.parameters(), old.parameters()):
            torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-5, atol=1e-6)


@pytest.mark.engine
def test_fit_one_training_set_per_member_without_momentum_or_bias():
    x, y = _data(n=20)
    X = torch.stack([x, x.flip(0)])
    Y = torch.stack([y, y.flip(0)])
    rec = C.Recipe(lr=0.2, momentum=0.0, batch_size=6, epochs=2, warmup=0.0)
    new, old = _both([0, 1], bias=False)
    C.fit(new, X, Y, rec, seeds=[0, 1], start_steps=[0, 2])
    old_fit(old, X, Y, rec, seeds=[0, 1], start_steps=[0, 2])
    _same_stack(new, old)


# =================================================================================================
# connectivity.train_nets
# =================================================================================================
@pytest.mark.reference
def test_train_nets_inits_from_the_seeds_and_draws_batches_from_10000_plus_seed():
    x, y = data(n=14)
    r = C.Recipe(lr=0.1, batch_size=5, epochs=1)
    a, b = C.train_nets([3, 8], x, y, W, 1, K, r)
    c = C.train_nets([3], x, y, W, 1, K, r)[0]
    same_params(a, c)  # a member depends on its own seed only
    want, _ = ref_fit_member(make_mlp(8, D, W, 1, K), x, y, r, 10_008)
    same_params(b, want, atol=1e-6)


@pytest.mark.boundary
def test_train_nets_names_the_seeds():
    with pytest.raises((ValueError, TypeError), match="seeds"):
        C.train_nets(
            [],
            torch.zeros(5, 4),
            torch.zeros(5, dtype=torch.long),
            8,
            1,
            3,
            C.Recipe(lr=0.1, epochs=1, warmup=0.0),
        )
