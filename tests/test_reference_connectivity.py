"""gtlib.connectivity against references that cannot share its bugs (issue 19, section 6).

Every public function of the module is pinned on tiny inputs against a hand computation, a numpy
re-implementation written here (features, cosines, barriers, REPAIR statistics), a brute-force
search (weight and activation matching against every permutation of a five-unit layer), a
``torch.optim.SGD`` loop run member by member (``fit``), or a symmetry
(``f(a, b, alpha) = f(b, a, 1 - alpha)``). Test points are asymmetric on purpose: alpha = 0.3,
never 0.5; distinct networks; non-square layers (input 4, width 5, output 3); unequal endpoints.
"""
from __future__ import annotations

import copy
import itertools
import types

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment

from gtlib import connectivity as C
from gtlib.models import BatchedMLP, make_mlp

D, W, K = 4, 5, 3  # input size, width, classes: nothing square


def net(seed=0, width=W, depth=2, d=D, out=K, bias=True, act="relu"):
    return make_mlp(seed, d, width, depth, out, bias=bias, act=act)


def data(n=23, d=D, classes=K, seed=0, shift=0.0):
    g = torch.Generator().manual_seed(1000 + seed)
    x = torch.randn(n, d, generator=g) + shift
    y = torch.randint(0, classes, (n,), generator=g)
    return x, y


X, Y = data()


def npw(model):
    """Weights and biases of an MLP as float64 numpy arrays."""
    ws = [l.weight.detach().double().numpy() for l in model.layers]
    bs = None if model.layers[0].bias is None else [l.bias.detach().double().numpy()
                                                    for l in model.layers]
    return ws, bs


ACT = {"relu": lambda z: np.maximum(z, 0), "tanh": np.tanh,
       "leaky_relu": lambda z: np.where(z > 0, z, 0.1 * z), "identity": lambda z: z}


def np_forward(ws, bs, x, act="relu"):
    """Pre-activations of the hidden layers, post-activations, and logits, by hand."""
    h = np.asarray(x, dtype=float)
    pre, post = [], []
    for l, w in enumerate(ws):
        z = h @ w.T + (0 if bs is None else bs[l])
        if l < len(ws) - 1:
            pre.append(z)
            h = ACT[act](z)
            post.append(h)
        else:
            return pre, post, z


def np_features(model, x):
    ws, bs = npw(model)
    _, post, logits = np_forward(ws, bs, x.double().numpy(), model.act_name)
    return post + [logits]


def np_cos_dis(u, v):
    nu, nv = np.linalg.norm(u, axis=1), np.linalg.norm(v, axis=1)
    out = []
    for i in range(len(u)):
        if nu[i] < 1e-12 and nv[i] < 1e-12:
            out.append(0.0)
        else:
            out.append(1 - float(u[i] @ v[i]) / max(nu[i] * nv[i], 1e-12))
    return float(np.mean(out))


def same_params(m, n, atol=0.0):
    for p, q in zip(m.parameters(), n.parameters()):
        if atol:
            torch.testing.assert_close(p.detach().double(), q.detach().double(), atol=atol,
                                       rtol=0)
        else:
            assert torch.equal(p.detach(), q.detach())


# ---------------------------------------------------------------------------------------------
# params, from_params, stack, members
# ---------------------------------------------------------------------------------------------


def test_params_lists_every_layer_in_order_and_from_params_rebuilds_the_function():
    m = net(3, depth=3, act="tanh")
    ws, bs = C.params(m)
    assert [tuple(w.shape) for w in ws] == [(W, D), (W, W), (W, W), (K, W)]
    assert all(torch.equal(w, l.weight) for w, l in zip(ws, m.layers))
    assert all(torch.equal(b, l.bias) for b, l in zip(bs, m.layers))
    assert not ws[0].requires_grad
    back = C.from_params(ws, bs, "tanh")
    same_params(back, m)
    assert back.act_name == "tanh"
    np.testing.assert_allclose(back(X).detach().double().numpy(), np_features(m, X)[-1],
                               rtol=1e-5, atol=1e-6)
    assert C.params(net(bias=False))[1] is None
    nb = C.from_params(C.params(net(4, bias=False))[0], None)
    assert nb.layers[0].bias is None and nb.act_name == "relu"


def test_stack_and_members_keep_the_order():
    nets = [net(s) for s in (5, 6, 7)]
    s = C.stack(nets)
    out = s(X)
    for i, m in enumerate(nets):
        torch.testing.assert_close(out[i], m(X))
    for m, n in zip(C.members(s), nets):
        same_params(m, n)


# ---------------------------------------------------------------------------------------------
# Recipe: steps and schedule, by hand
# ---------------------------------------------------------------------------------------------


def test_recipe_steps_is_epochs_times_ceil_n_over_batch():
    r = C.Recipe(batch_size=10, epochs=3)
    assert [r.steps(n) for n in (1, 10, 25, 30, 31)] == [3, 3, 9, 9, 12]


def test_recipe_schedule_hand_values():
    # lr 0.5, warm-up 0.25 of 8 steps = 2 steps from 0.2 * lr, then linear decay to 0 at step 8
    r = C.Recipe(lr=0.5, warmup=0.25, start_factor=0.2)
    want = [0.2, 0.6, 1.0, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6, 0.0]
    got = [r.lr_factor(s, 8) for s in range(9)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose([r.lr_at(s, 8) for s in range(9)], 0.5 * np.array(want),
                               rtol=1e-12, atol=1e-15)
    # warm-up 0.3 of 10 steps = 3 steps; without warm-up the first step is at the peak
    r = C.Recipe(lr=2.0, warmup=0.3, start_factor=0.1)
    assert r.lr_factor(2, 10) == pytest.approx(0.1 + 0.9 * 2 / 3)
    assert r.lr_factor(3, 10) == pytest.approx(1.0) and r.lr_factor(4, 10) == pytest.approx(6 / 7)
    r = C.Recipe(lr=2.0, warmup=0.0, start_factor=0.1)
    assert r.lr_at(0, 4) == 2.0 and r.lr_at(1, 4) == pytest.approx(1.5)
    with pytest.raises(ValueError):
        r.lr_at(5, 4)
    with pytest.raises(ValueError):
        r.lr_factor(5, 4)


def test_recipe_defaults_are_the_documented_ones():
    r = C.Recipe()
    assert (r.lr, r.momentum, r.batch_size, r.epochs, r.warmup, r.start_factor,
            r.weight_decay) == (0.05, 0.9, 100, 30, 0.2, 0.05, 0.0)
    cfg = C.ConnectivityConfig()
    assert cfg.alphas == 25 and cfg.max_iter == 100 and cfg.depth == 3
    assert (cfg.recipe.lr, cfg.recipe.warmup) == (0.1, 0.2)
    assert (cfg.spawn_recipe.lr, cfg.spawn_recipe.warmup) == (0.2, 0.0)
    assert (cfg.n_train, cfg.n_test) == (4000, 1000)  # MNIST-1D's default split
    assert cfg.widths == (32, 64, 128, 256, 512)
    assert len(cfg.lambdas) == 16 and cfg.lambdas[0] == 0.0 and cfg.lambdas[-1] == 1.5
    full = C.ConnectivityConfig.full()
    assert full.recipe.epochs == 2 * cfg.recipe.epochs and full.widths[-1] == 2048
    assert 512 in full.widths and full.alphas == 25


# ---------------------------------------------------------------------------------------------
# fit: against torch.optim.SGD run member by member, with the minibatches drawn here
# ---------------------------------------------------------------------------------------------


def ref_factor(r, step, total):
    w = int(round(r.warmup * total))
    if step < w:
        return r.start_factor + (1 - r.start_factor) * step / w
    return max(0.0, (total - step) / max(1, total - w))


def ref_fit_member(m, x, y, r, seed, start=0, stop=None, train="all", snaps=()):
    """One network alone: torch.optim.SGD, its own generator's permutation per epoch."""
    m = copy.deepcopy(m)
    n = x.shape[0]
    total = r.steps(n)
    stop = total if stop is None else stop
    per_epoch = -(-n // r.batch_size)
    layers = list(m.layers)
    if train == "head":
        ps = list(layers[-1].parameters())
    elif train == "body":
        ps = [p for l in layers[:-1] for p in l.parameters()]
    else:
        ps = list(m.parameters())
    opt = torch.optim.SGD(ps, lr=r.lr, momentum=r.momentum, weight_decay=r.weight_decay)
    g = torch.Generator().manual_seed(seed)
    order, out = None, {}
    for step in range(stop + 1):
        if step in snaps:
            out[step] = copy.deepcopy(m)
        if step == stop:
            break
        pos = step % per_epoch
        if pos == 0:
            order = torch.randperm(n, generator=g)
        idx = order[pos * r.batch_size:(pos + 1) * r.batch_size]
        if step < start:
            continue
        for gr in opt.param_groups:
            gr["lr"] = r.lr * ref_factor(r, step, total)
        opt.zero_grad()
        F.cross_entropy(m(x[idx]), y[idx]).backward()
        opt.step()
    return m, out


def f64_stack(seeds, **kw):
    return BatchedMLP.init(seeds, D, W, kw.pop("depth", 2), K, **kw).to(torch.float64)


def test_fit_matches_sgd_member_by_member_with_spawning_stop_and_snapshots():
    x, y = data(n=22)
    x = x.double()
    r = C.Recipe(lr=0.3, momentum=0.7, batch_size=6, epochs=3, warmup=0.25, start_factor=0.3,
                 weight_decay=0.02)
    model = f64_stack([1, 2, 3])
    init = C.members(model)
    seeds, starts, stop = [11, 12, 13], [0, 2, 5], 10
    snaps = C.fit(model, x, y, r, seeds=seeds, start_steps=starts, stop_step=stop,
                  snapshot_steps=[0, 4, 10])
    assert sorted(snaps) == [0, 4, 10]
    for i in range(3):
        want, wsnaps = ref_fit_member(init[i], x, y, r, seeds[i], starts[i], stop, snaps=(0, 4, 10))
        same_params(model.member(i), want, atol=1e-12)
        for k in (0, 4, 10):
            same_params(snaps[k][i], wsnaps[k], atol=1e-12)
    # the member that starts at 5 is still its initialization at the snapshot of step 4
    same_params(snaps[4][2], init[2])
    assert not torch.equal(snaps[4][1].layers[0].weight, init[1].layers[0].weight)


def test_fit_full_run_and_each_member_reads_its_own_seed():
    x, y = data(n=17)
    x = x.double()
    r = C.Recipe(lr=0.2, momentum=0.5, batch_size=5, epochs=2, warmup=0.4, start_factor=0.5)
    a, b = f64_stack([4, 4]), f64_stack([4, 4])
    C.fit(a, x, y, r, seeds=[21, 22])
    C.fit(b, x, y, r, seeds=[22, 21])
    same_params(a.member(0), b.member(1))
    same_params(a.member(1), b.member(0))
    assert not torch.equal(a.weights[0][0], a.weights[0][1])
    want, _ = ref_fit_member(f64_stack([4]).member(0), x, y, r, 22)
    same_params(a.member(1), want, atol=1e-12)


@pytest.mark.parametrize("which,train", [("only_last_layer", "head"),
                                         ("freeze_last_layer", "body")])
def test_fit_trains_only_the_chosen_layers_as_sgd_would(which, train):
    x, y = data(n=15)
    x = x.double()
    Y = torch.stack([y, (y + 1) % K])  # one labelling per member
    r = C.Recipe(lr=0.4, momentum=0.6, batch_size=4, epochs=2, warmup=0.0, weight_decay=0.05)
    model = f64_stack([8, 9])
    init = C.members(model)
    C.fit(model, x, Y, r, seeds=[3, 4], **{which: True})
    for i in range(2):
        want, _ = ref_fit_member(init[i], x, Y[i], r, [3, 4][i], train=train)
        same_params(model.member(i), want, atol=1e-12)
    frozen = -1 if train == "body" else 0
    assert torch.equal(model.member(0).layers[frozen].weight, init[0].layers[frozen].weight)


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


def test_train_nets_inits_from_the_seeds_and_draws_batches_from_10000_plus_seed():
    x, y = data(n=14)
    r = C.Recipe(lr=0.1, batch_size=5, epochs=1)
    a, b = C.train_nets([3, 8], x, y, W, 1, K, r)
    c = C.train_nets([3], x, y, W, 1, K, r)[0]
    same_params(a, c)  # a member depends on its own seed only
    want, _ = ref_fit_member(make_mlp(8, D, W, 1, K), x, y, r, 10_008)
    same_params(b, want, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# interpolation and barriers
# ---------------------------------------------------------------------------------------------


def test_lerp_weights_by_hand_and_symmetry():
    a, b = net(0, act="tanh"), net(1, act="tanh")
    m = C.lerp(a, b, 0.3)
    (wa, ba), (wb, bb), (wm, bm) = npw(a), npw(b), npw(m)
    for l in range(3):
        np.testing.assert_allclose(wm[l], 0.7 * wa[l] + 0.3 * wb[l], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(bm[l], 0.7 * ba[l] + 0.3 * bb[l], rtol=1e-6, atol=1e-7)
    assert m.act_name == "tanh"
    same_params(C.lerp(b, a, 0.7), m, atol=1e-7)
    same_params(C.lerp(a, b, 0.0), a)
    nb = C.lerp(net(0, bias=False), net(1, bias=False), 0.8)
    np.testing.assert_allclose(npw(nb)[0][1], 0.2 * npw(net(0, bias=False))[0][1]
                               + 0.8 * npw(net(1, bias=False))[0][1], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("bias", [True, False])
def test_path_stack_members_are_the_lerps(bias):
    a, b = net(0, bias=bias), net(1, bias=bias)
    al = [0.0, 0.2, 0.7, 1.0]
    s = C.path_stack(a, b, al)
    for i, alpha in enumerate(al):
        same_params(s.member(i), C.lerp(a, b, alpha), atol=1e-6)


def test_barrier_and_barrier_mean_by_hand_on_a_nonuniform_grid():
    al = [0.0, 0.25, 0.5, 1.0]
    v = [1.0, 1.2, 2.9, 3.0]  # chord 1, 1.5, 2, 3: rises 0, -0.3, 0.9, 0
    assert C.barrier(al, v) == pytest.approx(0.9)
    assert C.barrier_mean(al, v) == pytest.approx(1.0)  # 3 - (1 + 3) / 2
    v = [1.0, 4.0, 2.0, 3.0]  # chord 1, 1.5, 2, 3
    assert C.barrier(al, v) == pytest.approx(2.5)
    assert C.barrier_mean(al, v) == pytest.approx(2.0)
    # reversing the curve: the same barrier
    assert C.barrier([0, 0.5, 0.75, 1.0], v[::-1]) == pytest.approx(2.5)
    # a curve strictly under its chord: the endpoints give 0
    assert C.barrier([0, 0.4, 1], [2.0, 0.0, 1.0]) == pytest.approx(0.0)
    assert C.barrier_mean([0, 0.4, 1], [2.0, 0.0, 1.0]) == pytest.approx(0.5)
    for bad in ([0.1, 0.5, 1.0], [0.0, 0.5, 0.9], [0.0, 0.6, 0.6, 1.0], [0.0, 0.7, 0.3, 1.0]):
        with pytest.raises(ValueError):
            C.barrier(bad, [1.0] * len(bad))
        with pytest.raises(ValueError):
            C.barrier_mean(bad, [1.0] * len(bad))
    with pytest.raises(ValueError):
        C.barrier([0.0], [1.0])
    assert C.barrier([0.0, 1.0], [1.0, 5.0]) == 0.0  # two points: nothing above the chord


def test_path_properties_by_hand():
    p = C.Path(np.array([0.0, 0.1, 0.3, 0.55, 1.0]), np.array([1.0, 2.0, 3.0, 1.5, 2.0]),
               np.array([0.9, 0.5, 0.4, 0.6, 0.7]))
    assert p.loss_barrier == pytest.approx(3.0 - (0.7 * 1 + 0.3 * 2))
    # error 0.1, 0.5, 0.6, 0.4, 0.3; chord 0.1 + 0.2 alpha = 0.1, 0.12, 0.16, 0.21, 0.3
    assert p.error_barrier == pytest.approx(0.6 - 0.16)
    assert p.error_barrier_mean == pytest.approx(0.6 - 0.2)
    assert p.mid_acc == pytest.approx(0.6)   # alpha 0.55 is closest to 0.5 (not the middle)
    assert p.end_acc == pytest.approx(0.8)
    with pytest.raises(ValueError):
        C.Path(np.zeros(3), np.zeros(3), np.zeros(2))


def ref_path(models, x, y):
    loss, acc = [], []
    for m in models:
        z = np_features(m, x)[-1]
        z = z - z.max(1, keepdims=True)
        lp = z - np.log(np.exp(z).sum(1, keepdims=True))
        loss.append(-lp[np.arange(len(y)), y.numpy()].mean())
        acc.append(np.mean(z.argmax(1) == y.numpy()))
    return np.array(loss), np.array(acc)


def test_evaluate_path_against_a_numpy_cross_entropy():
    a, b = net(0), net(1)
    al = [0.0, 0.3, 0.55, 1.0]
    p = C.evaluate_path(a, b, X, Y, al)
    loss, acc = ref_path([C.lerp(a, b, t) for t in al], X, Y)
    np.testing.assert_allclose(p.loss, loss, rtol=1e-5)
    np.testing.assert_allclose(p.acc, acc, atol=1e-7)
    np.testing.assert_allclose(p.alphas, al)
    p5 = C.evaluate_path(a, b, X, Y, 5)
    np.testing.assert_allclose(p5.alphas, [0, 0.25, 0.5, 0.75, 1])
    loss, _ = ref_path([C.lerp(a, b, t) for t in p5.alphas], X, Y)
    np.testing.assert_allclose(p5.loss, loss, rtol=1e-5)
    assert len(C.evaluate_path(a, b, X, Y).alphas) == 25  # Git Re-Basin's 25 points


def test_evaluate_stack_reads_member_i_at_alpha_i():
    nets = [net(s) for s in (3, 4, 5)]
    p = C.evaluate_stack(C.stack(nets), [0.0, 0.6, 1.0], X, Y)
    loss, acc = ref_path(nets, X, Y)
    np.testing.assert_allclose(p.loss, loss, rtol=1e-5)
    np.testing.assert_allclose(p.acc, acc, atol=1e-7)
    with pytest.raises(ValueError):
        C.evaluate_stack(C.stack(nets), [0.0, 1.0], X, Y)


# ---------------------------------------------------------------------------------------------
# permutations and matching
# ---------------------------------------------------------------------------------------------


def test_permute_convention_by_hand():
    m = net(2, depth=2)
    p0, p1 = np.array([2, 0, 4, 1, 3]), np.array([1, 3, 0, 4, 2])
    q = C.permute(m, [p0, p1])
    (w, b), (wq, bq) = npw(m), npw(q)
    np.testing.assert_array_equal(wq[0], w[0][p0])            # unit i is old unit p0[i]
    np.testing.assert_array_equal(bq[0], b[0][p0])
    np.testing.assert_array_equal(wq[1], w[1][p1][:, p0])
    np.testing.assert_array_equal(bq[1], b[1][p1])
    np.testing.assert_array_equal(wq[2], w[2][:, p1])
    np.testing.assert_array_equal(bq[2], b[2])
    torch.testing.assert_close(q(X), m(X))
    nb = net(2, bias=False)
    torch.testing.assert_close(C.permute(nb, [p0, p1])(X), nb(X))


def test_random_perms_are_numpy_default_rng_permutations():
    m = net(0, depth=3, width=7)
    rng = np.random.default_rng(12)
    want = [rng.permutation(7) for _ in range(3)]
    got = C.random_perms(m, seed=12)
    assert len(got) == 3
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert not all(np.array_equal(u, v) for u, v in zip(got, C.random_perms(m, seed=13)))
    np.testing.assert_array_equal(C.random_perms(m)[0], np.random.default_rng(0).permutation(7))


def objective(wa, ba, wb, bb, perms):
    """Git Re-Basin's weight-matching objective of b permuted by ``perms`` (numpy, by hand)."""
    total = 0.0
    L = len(perms)
    for l in range(L + 1):
        w = wb[l]
        if l < L:
            w = w[perms[l]]
        if l > 0:
            w = w[:, perms[l - 1]]
        total += float((wa[l] * w).sum())
        if ba is not None:
            bv = bb[l][perms[l]] if l < L else bb[l]
            total += float(ba[l] @ bv)
    return total


ALL5 = [np.array(p) for p in itertools.permutations(range(W))]


def ref_weight_matching(a, b, max_iter, seed):
    """Coordinate descent with each layer's best permutation found by brute force."""
    (wa, ba), (wb, bb) = npw(a), npw(b)
    L = len(wa) - 1
    perms = [np.arange(W) for _ in range(L)]
    rng = np.random.default_rng(seed)
    for _ in range(max_iter):
        improved = False
        for l in rng.permutation(L):
            def score(p):
                return objective(wa, ba, wb, bb, perms[:l] + [p] + perms[l + 1:])
            best = max(ALL5, key=score)
            if score(best) > score(perms[l]) + 1e-9:
                perms[l], improved = best, True
        if not improved:
            break
    return perms


@pytest.mark.parametrize("depth,bias,seed,max_iter", [(1, True, 0, 100), (3, True, 0, 100),
                                                      (3, False, 7, 100), (3, True, 5, 1)])
def test_weight_matching_is_coordinate_descent_with_brute_force_layers(depth, bias, seed,
                                                                         max_iter):
    a, b = net(10, depth=depth, bias=bias), net(11, depth=depth, bias=bias)
    got = C.weight_matching(a, b, max_iter=max_iter, seed=seed)
    want = ref_weight_matching(a, b, max_iter, seed)
    assert len(got) == depth
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    (wa, ba), (wb, bb) = npw(a), npw(b)
    # once converged, every layer is at its own optimum given the others (brute force)
    for l in range(depth if max_iter > 1 else 0):
        best = max(objective(wa, ba, wb, bb, got[:l] + [p] + got[l + 1:]) for p in ALL5)
        assert objective(wa, ba, wb, bb, got) == pytest.approx(best, rel=1e-12)
    assert objective(wa, ba, wb, bb, got) > objective(wa, ba, wb, bb, [np.arange(W)] * depth)


def test_weight_matching_one_layer_is_the_assignment_of_scipy():
    a, b = net(20, depth=1), net(21, depth=1)
    (wa, ba), (wb, bb) = npw(a), npw(b)
    cost = np.zeros((W, W))
    for i in range(W):
        for j in range(W):  # similarity of a's unit i with b's unit j, in and out weights, bias
            cost[i, j] = wa[0][i] @ wb[0][j] + ba[0][i] * bb[0][j] + wa[1][:, i] @ wb[1][:, j]
    want = linear_sum_assignment(-cost)[1]
    np.testing.assert_array_equal(C.weight_matching(a, b)[0], want)


def test_weight_matching_max_iter_and_seed_matter_somewhere():
    found_iter = found_seed = False
    for s in range(12):
        a, b = net(30 + s, depth=3), net(60 + s, depth=3)
        one, many = C.weight_matching(a, b, max_iter=1), C.weight_matching(a, b)
        found_iter |= not all(np.array_equal(u, v) for u, v in zip(one, many))
        other = C.weight_matching(a, b, seed=4)
        found_seed |= not all(np.array_equal(u, v) for u, v in zip(other, many))
        if found_iter and found_seed:
            break
    assert found_iter and found_seed


@pytest.mark.parametrize("method", ["cross", "pearson"])
def test_activation_matching_against_brute_force(method):
    a, b = net(40, depth=2, act="tanh"), net(41, depth=2, act="tanh")
    x, _ = data(n=31, shift=1.5)  # inputs far from 0: centring changes the answer
    fa, fb = np_features(a, x)[:-1], np_features(b, x)[:-1]
    got = C.activation_matching(a, b, x, method=method)
    for l in range(2):
        u, v = fa[l], fb[l]
        if method == "pearson":
            sim = np.corrcoef(u.T, v.T)[:W, W:]
        else:
            sim = u.T @ v / len(x)
        best = max(ALL5, key=lambda p: sim[np.arange(W), p].sum())
        np.testing.assert_array_equal(got[l], best)
    assert len(got) == 2


def test_activation_matching_methods_disagree_on_shifted_inputs():
    a, b = net(40, depth=2, act="tanh"), net(41, depth=2, act="tanh")
    x, _ = data(n=31, shift=1.5)
    c, p = C.activation_matching(a, b, x), C.activation_matching(a, b, x, method="pearson")
    assert not all(np.array_equal(u, v) for u, v in zip(c, p))


def test_perm_recovery_by_hand():
    assert C.perm_recovery([np.array([1, 2, 0])], [np.array([2, 0, 1])]) == [1.0]
    assert C.perm_recovery([np.array([1, 2, 0])], [np.array([1, 2, 0])]) == [0.0]
    got = C.perm_recovery([np.array([0, 2, 1, 3]), np.arange(3)],
                          [np.arange(4), np.array([0, 2, 1])])
    assert got == [0.5, pytest.approx(1 / 3)]


# ---------------------------------------------------------------------------------------------
# feature metrics
# ---------------------------------------------------------------------------------------------


def test_cosine_dissimilarity_by_hand():
    u = torch.tensor([[3.0, 4.0], [1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    v = torch.tensor([[4.0, 3.0], [-2.0, 0.0], [0.0, 0.0], [1.0, 2.0]])
    # rows: 1 - 24/25, 1 - (-1), identical zeros 0, zero vs non-zero 1
    assert C.cosine_dissimilarity(u, v) == pytest.approx((0.04 + 2 + 0 + 1) / 4)
    assert C.cosine_dissimilarity(v, u) == pytest.approx((0.04 + 2 + 0 + 1) / 4)
    with pytest.raises(ValueError):
        C.cosine_dissimilarity(u, v[:3])


@pytest.mark.parametrize("alpha", [0.3, 0.85])
def test_llfc_dissimilarity_against_numpy(alpha):
    a, b = net(50, depth=2), net(51, depth=2)
    fa, fb = np_features(a, X), np_features(b, X)
    fm = np_features(C.lerp(a, b, alpha), X)
    want = [np_cos_dis(m, (1 - alpha) * u + alpha * v) for u, v, m in zip(fa, fb, fm)]
    got = C.llfc_dissimilarity(a, b, X, alpha)
    assert len(got) == 3
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    wrong = [np_cos_dis(m, alpha * u + (1 - alpha) * v) for u, v, m in zip(fa, fb, fm)]
    assert not np.allclose(got, wrong, rtol=1e-3)
    np.testing.assert_allclose(C.llfc_dissimilarity(b, a, X, 1 - alpha), got, rtol=1e-4,
                               atol=1e-6)


def test_llfc_default_alpha_is_one_half_and_profile_stacks_hidden_layers():
    a, b = net(52, depth=3), net(53, depth=3)
    assert C.llfc_dissimilarity(a, b, X) == C.llfc_dissimilarity(a, b, X, 0.5)
    prof = C.llfc_profile(a, b, X, [0.2, 0.5, 0.9])
    assert prof.shape == (3, 3)
    for i, al in enumerate([0.2, 0.5, 0.9]):
        np.testing.assert_allclose(prof[i], C.llfc_dissimilarity(a, b, X, al)[:-1], rtol=1e-12)
    assert not np.allclose(prof[0], prof[2])


def test_commutativity_residual_every_layer_against_numpy_and_symmetric():
    a, b = net(54, depth=3), net(55, depth=3)
    fa, fb = np_features(a, X)[:-1], np_features(b, X)[:-1]
    wa, wb = npw(a)[0], npw(b)[0]
    want = []
    for l in range(3):
        A, B = wa[l + 1], wb[l + 1]
        same = fa[l] @ A.T + fb[l] @ B.T
        cross = fb[l] @ A.T + fa[l] @ B.T
        want.append(np.linalg.norm(same - cross) / np.linalg.norm(same))
    got = C.commutativity_residual(a, b, X)
    np.testing.assert_allclose(got, want, rtol=1e-4)
    np.testing.assert_allclose(C.commutativity_residual(b, a, X), got, rtol=1e-5)


def test_endpoint_dissimilarity_against_numpy():
    a, b = net(56, depth=2, act="tanh"), net(57, depth=2, act="tanh")
    want = [np_cos_dis(u, v) for u, v in zip(np_features(a, X), np_features(b, X))]
    np.testing.assert_allclose(C.endpoint_dissimilarity(a, b, X), want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("act", ["relu", "tanh"])
def test_preactivations_against_numpy(act):
    m = net(58, depth=3, act=act)
    ws, bs = npw(m)
    pre, _, _ = np_forward(ws, bs, X.double().numpy(), act)
    got = C.preactivations(m, X)
    assert len(got) == 3
    for g, w in zip(got, pre):
        np.testing.assert_allclose(g.double().numpy(), w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("act", ["relu", "leaky_relu"])
def test_weak_additivity_against_numpy(act):
    a, b = net(60, depth=2, act=act), net(61, depth=2, act=act)
    za = np_forward(*npw(a), X.double().numpy(), act)[0]
    zb = np_forward(*npw(b), X.double().numpy(), act)[0]
    s = ACT[act]
    want = [np_cos_dis(s(u) + s(v), s(u + v)) for u, v in zip(za, zb)]
    got = C.weak_additivity(a, b, X)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert min(got) > 1e-3
    np.testing.assert_allclose(C.weak_additivity(b, a, X), got, rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# REPAIR and Bezier curves
# ---------------------------------------------------------------------------------------------


def test_repair_stack_statistics_and_folding():
    a, b = net(70, depth=2), net(71, depth=2)
    x, y = data(n=40, seed=3)
    al = [0.0, 0.3, 1.0]
    s = C.repair_stack(a, b, al, x)
    za = np_forward(*npw(a), x.double().numpy())[0]
    zb = np_forward(*npw(b), x.double().numpy())[0]
    for i, t in enumerate(al):
        m = s.member(i)
        zm = np_forward(*npw(m), x.double().numpy())[0]
        lin = npw(C.lerp(a, b, t))[0]
        for l in range(2):
            mu_t = (1 - t) * za[l].mean(0) + t * zb[l].mean(0)
            sd_t = (1 - t) * za[l].std(0, ddof=1) + t * zb[l].std(0, ddof=1)
            np.testing.assert_allclose(zm[l].mean(0), mu_t, atol=2e-5)
            np.testing.assert_allclose(zm[l].std(0, ddof=1), sd_t, rtol=2e-4, atol=1e-5)
            if l == 0:  # the first layer's rows are the interpolated rows times sd_t / sd
                ratio = npw(m)[0][0] / lin[0]
                np.testing.assert_allclose(ratio, ratio[:, :1] * np.ones((1, D)), rtol=1e-4)
                assert (ratio > 0).all()
        np.testing.assert_allclose(npw(m)[0][-1], lin[-1], rtol=1e-6, atol=1e-7)  # head as is
    # the endpoints are the networks themselves
    torch.testing.assert_close(s(x)[0], a(x), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(s(x)[2], b(x), atol=1e-4, rtol=1e-4)


def test_repair_eps_leaves_flat_units_unscaled_but_shifted():
    a, b = net(72, depth=1), net(73, depth=1)
    with torch.no_grad():  # unit 2 of both networks ignores the input: constant pre-activation
        a.layers[0].weight[2] = 0
        b.layers[0].weight[2] = 0
    x, _ = data(n=30, seed=4)
    m = C.repair_stack(a, b, [0.3], x).member(0)
    lin = C.lerp(a, b, 0.3)
    (wm, bm), (wl, bl), (_, ba), (_, bb) = npw(m), npw(lin), npw(a), npw(b)
    assert np.all(wm[0][2] == 0)
    assert bm[0][2] == pytest.approx(0.7 * ba[0][2] + 0.3 * bb[0][2], abs=1e-6)
    # with a huge eps no unit is rescaled: weights are the interpolated ones, biases shifted
    big = C.repair_stack(a, b, [0.3], x, eps=1e6).member(0)
    np.testing.assert_allclose(npw(big)[0][0], wl[0], rtol=1e-6, atol=1e-7)
    za = np_forward(*npw(a), x.double().numpy())[0][0]
    zb = np_forward(*npw(b), x.double().numpy())[0][0]
    zl = np_forward(wl, bl, x.double().numpy())[0][0]
    want_b = bl[0] - zl.mean(0) + 0.7 * za.mean(0) + 0.3 * zb.mean(0)
    np.testing.assert_allclose(npw(big)[1][0], want_b, atol=2e-5)
    assert not np.allclose(npw(C.repair_stack(a, b, [0.3], x).member(0))[0][0], wl[0])


def test_repair_path_takes_statistics_on_x_stats_and_evaluates_on_x():
    a, b = net(74, depth=2), net(75, depth=2)
    xs, _ = data(n=40, seed=6, shift=0.5)
    al = [0.0, 0.4, 1.0]
    p = C.repair_path(a, b, xs, X, Y, al)
    want = C.evaluate_stack(C.repair_stack(a, b, al, xs), al, X, Y)
    np.testing.assert_allclose(p.loss, want.loss, rtol=1e-6)
    np.testing.assert_allclose(p.acc, want.acc)
    other = C.repair_path(a, b, X, X, Y, al)
    assert not np.allclose(other.loss[1], p.loss[1], rtol=1e-4)
    assert len(C.repair_path(a, b, xs, X, Y).alphas) == 25


def test_bezier_stack_by_hand_and_reversal():
    a, m, b = net(80), net(81), net(82)
    s = C.bezier_stack(a, m, b, [0.0, 0.3, 1.0])
    (wa, ba), (wm, bm), (wb, bb) = npw(a), npw(m), npw(b)
    got = npw(s.member(1))
    for l in range(3):  # (1 - t)^2, 2 t (1 - t), t^2 = 0.49, 0.42, 0.09
        np.testing.assert_allclose(got[0][l], 0.49 * wa[l] + 0.42 * wm[l] + 0.09 * wb[l],
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1][l], 0.49 * ba[l] + 0.42 * bm[l] + 0.09 * bb[l],
                                   rtol=1e-5, atol=1e-6)
    same_params(s.member(0), a, atol=1e-7)
    same_params(s.member(2), b, atol=1e-7)
    same_params(C.bezier_stack(b, m, a, [0.7]).member(0), s.member(1), atol=1e-6)
    nb = C.bezier_stack(net(0, bias=False), net(1, bias=False), net(2, bias=False), [0.6])
    want = 0.16 * npw(net(0, bias=False))[0][0] + 0.48 * npw(net(1, bias=False))[0][0] \
        + 0.36 * npw(net(2, bias=False))[0][0]
    np.testing.assert_allclose(npw(nb.member(0))[0][0], want, rtol=1e-5, atol=1e-6)


def test_evaluate_bezier_is_the_path_of_the_curve():
    a, m, b = net(80), net(81), net(82)
    p = C.evaluate_bezier(a, m, b, X, Y, [0.0, 0.3, 1.0])
    loss, acc = ref_path([C.bezier_stack(a, m, b, [t]).member(0) for t in (0.0, 0.3, 1.0)], X, Y)
    np.testing.assert_allclose(p.loss, loss, rtol=1e-5)
    np.testing.assert_allclose(p.acc, acc)
    assert len(C.evaluate_bezier(a, m, b, X, Y).alphas) == 25


def ref_fit_bezier(a, b, x, y, r, seed, samples):
    """The control point by hand: torch.optim.SGD on the curve's loss, draws from one generator."""
    (wa, ba), (wb, bb) = npw(a), npw(b)
    pa = [torch.tensor(v) for v in wa], [torch.tensor(v) for v in ba]
    pb = [torch.tensor(v) for v in wb], [torch.tensor(v) for v in bb]
    pm = ([((u + v) / 2).clone().requires_grad_(True) for u, v in zip(pa[0], pb[0])],
          [((u + v) / 2).clone().requires_grad_(True) for u, v in zip(pa[1], pb[1])])
    opt = torch.optim.SGD(pm[0] + pm[1], lr=r.lr, momentum=r.momentum,
                          weight_decay=r.weight_decay)
    g = torch.Generator().manual_seed(seed)
    n = x.shape[0]
    total, per_epoch = r.steps(n), -(-n // r.batch_size)
    xd = x.double()
    for step in range(total):
        pos = step % per_epoch
        if pos == 0:
            order = torch.randperm(n, generator=g)
        idx = order[pos * r.batch_size:(pos + 1) * r.batch_size]
        ts = torch.rand(samples, generator=g).double()
        loss = 0.0
        for t in ts:
            h = xd[idx]
            for l in range(len(pa[0])):
                w = (1 - t) ** 2 * pa[0][l] + 2 * t * (1 - t) * pm[0][l] + t ** 2 * pb[0][l]
                c = (1 - t) ** 2 * pa[1][l] + 2 * t * (1 - t) * pm[1][l] + t ** 2 * pb[1][l]
                h = h @ w.T + c
                if l < len(pa[0]) - 1:
                    h = torch.relu(h)
            loss = loss + F.cross_entropy(h, y[idx])
        for gr in opt.param_groups:
            gr["lr"] = r.lr * ref_factor(r, step, total)
        opt.zero_grad()
        (loss / samples).backward()
        opt.step()
    return [w.detach().numpy() for w in pm[0]], [v.detach().numpy() for v in pm[1]]


def test_fit_bezier_against_a_hand_written_sgd_loop():
    a, b = net(90, depth=1), net(91, depth=1)
    x, y = data(n=13, seed=7)
    r = C.Recipe(lr=0.3, momentum=0.6, batch_size=5, epochs=2, warmup=0.35, start_factor=0.25,
                 weight_decay=0.03)
    m = C.fit_bezier(a, b, x, y, r, seed=4, samples=3)
    ws, bs = ref_fit_bezier(a, b, x, y, r, 4, 3)
    for l in range(2):
        np.testing.assert_allclose(npw(m)[0][l], ws[l], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(npw(m)[1][l], bs[l], rtol=1e-4, atol=1e-5)
    mid = npw(C.lerp(a, b, 0.5))[0][0]
    assert np.abs(npw(m)[0][0] - mid).max() > 1e-3
    # the default draws 4 values of t per step
    same_params(C.fit_bezier(a, b, x, y, r, seed=4), C.fit_bezier(a, b, x, y, r, seed=4,
                                                                  samples=4))
    assert not torch.equal(C.fit_bezier(a, b, x, y, r, seed=5, samples=3).layers[0].weight,
                           m.layers[0].weight)


# ---------------------------------------------------------------------------------------------
# averaging, task vectors, heads, accuracy
# ---------------------------------------------------------------------------------------------


def test_average_of_three_by_hand():
    ms = [net(s, act="tanh") for s in (1, 2, 3)]
    avg = C.average(ms)
    ps = [npw(m) for m in ms]
    for l in range(3):
        np.testing.assert_allclose(npw(avg)[0][l], sum(p[0][l] for p in ps) / 3, rtol=1e-6,
                                   atol=1e-7)
        np.testing.assert_allclose(npw(avg)[1][l], sum(p[1][l] for p in ps) / 3, rtol=1e-6,
                                   atol=1e-7)
    assert avg.act_name == "tanh"
    nb = C.average([net(1, bias=False), net(2, bias=False)])
    assert nb.layers[0].bias is None


def test_task_vector_layout_and_values():
    pre, ft = net(1, depth=2), net(2, depth=2, out=7)  # heads may differ in size
    tau = C.task_vector(pre, ft)
    (wp, bp), (wf, bf) = npw(pre), npw(ft)
    want = [wf[0] - wp[0], bf[0] - bp[0], wf[1] - wp[1], bf[1] - bp[1]]
    assert len(tau) == 4
    for t, w in zip(tau, want):
        np.testing.assert_allclose(t.double().numpy(), w, rtol=1e-6, atol=1e-7)
    tb = C.task_vector(net(1, bias=False), net(2, bias=False))
    assert len(tb) == 2 and tuple(tb[1].shape) == (W, W)


def test_apply_task_vectors_by_hand_with_two_vectors():
    pre, f1, f2 = net(1, depth=2), net(2, depth=2), net(3, depth=2)
    head = net(4, depth=2, out=6)
    taus = [C.task_vector(pre, f1), C.task_vector(pre, f2)]
    m = C.apply_task_vectors(pre, taus, 0.7, head)
    (wp, bp), (w1, b1), (w2, b2), (wh, bh) = npw(pre), npw(f1), npw(f2), npw(head)
    for l in range(2):
        np.testing.assert_allclose(npw(m)[0][l], wp[l] + 0.7 * (w1[l] - wp[l] + w2[l] - wp[l]),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(npw(m)[1][l], bp[l] + 0.7 * (b1[l] - bp[l] + b2[l] - bp[l]),
                                   rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(npw(m)[0][2], wh[2])
    np.testing.assert_array_equal(npw(m)[1][2], bh[2])
    nb = [net(s, bias=False) for s in (1, 2, 3)]
    mb = C.apply_task_vectors(nb[0], [C.task_vector(nb[0], nb[1])], -0.4, nb[2])
    np.testing.assert_allclose(npw(mb)[0][1], 1.4 * npw(nb[0])[0][1] - 0.4 * npw(nb[1])[0][1],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(npw(mb)[0][2], npw(nb[2])[0][2])
    with pytest.raises(ValueError):
        C.apply_task_vectors(pre, [taus[0][:3]], 1.0, head)


def test_with_head_replaces_only_the_output_layer():
    body = net(5, depth=2)
    hw, hb = torch.randn(7, W), torch.randn(7)
    m = C.with_head(body, hw, hb)
    assert torch.equal(m.layers[-1].weight, hw) and torch.equal(m.layers[-1].bias, hb)
    for l in range(2):
        assert torch.equal(m.layers[l].weight, body.layers[l].weight)
        assert torch.equal(m.layers[l].bias, body.layers[l].bias)
    assert m(X).shape == (len(X), 7)
    with pytest.raises(ValueError):
        C.with_head(body, torch.randn(7, W + 1), hb)


def test_accuracy_by_hand():
    m = net(6)
    pred = np_features(m, X)[-1].argmax(1)
    y = torch.as_tensor(pred.copy())
    y[:5] = (y[:5] + 1) % K
    assert C.accuracy(m, X, y) == pytest.approx((len(X) - 5) / len(X))


# ---------------------------------------------------------------------------------------------
# noise and the planted check
# ---------------------------------------------------------------------------------------------


def test_add_noise_is_relative_gaussian_from_one_generator():
    m = net(7, depth=2)
    got = C.add_noise(m, 0.3, seed=9)
    g = torch.Generator().manual_seed(9)
    ws, bs = C.params(m)
    want = [t + 0.3 * float(t.std()) * torch.randn(t.shape, generator=g) for t in ws]
    want += [t + 0.3 * float(t.std()) * torch.randn(t.shape, generator=g) for t in bs]
    for p, q in zip([l.weight for l in got.layers] + [l.bias for l in got.layers], want):
        torch.testing.assert_close(p.detach(), q, rtol=1e-6, atol=1e-7)
    same_params(C.add_noise(m, 0.0, seed=9), m)
    assert not torch.equal(C.add_noise(m, 0.3, seed=10).layers[0].weight, got.layers[0].weight)
    same_params(C.add_noise(m, 0.3), C.add_noise(m, 0.3, seed=0))
    assert C.add_noise(net(1, bias=False), 0.1).layers[0].bias is None


@pytest.mark.parametrize("noise", [0.0, 0.4])
def test_planted_permutation_check_is_its_composition(noise):
    m = net(13, depth=3, width=W)
    r = C.planted_permutation_check(m, X, Y, seed=3, max_iter=7, noise=noise)
    planted = C.random_perms(m, 3)
    shuffled = C.permute(m, planted)
    if noise:
        shuffled = C.add_noise(shuffled, noise, 4)
    found = C.weight_matching(m, shuffled, max_iter=7, seed=3)
    if noise:  # with noise the matching's seed (the check's seed) changes what it finds
        other = C.weight_matching(m, shuffled, max_iter=7, seed=0)
        assert not all(np.array_equal(u, v) for u, v in zip(found, other))
    assert r["recovered"] == C.perm_recovery(found, planted)
    assert r["recovered_identity"] == C.perm_recovery([np.arange(W)] * 3, planted)
    path = C.evaluate_path(m, C.permute(shuffled, found), X, Y, 11)
    un = C.evaluate_path(m, shuffled, X, Y, 11)
    np.testing.assert_allclose(r["path"].loss, path.loss, rtol=1e-6)
    np.testing.assert_allclose(r["unaligned_path"].loss, un.loss, rtol=1e-6)
    assert r["barrier"] == pytest.approx(path.loss_barrier, abs=1e-7)
    assert r["unaligned_barrier"] == pytest.approx(un.loss_barrier, abs=1e-7)
    assert 0 <= r["max_logit_diff"] < 1e-12
    if not noise:
        assert r["recovered"] == [1.0, 1.0, 1.0]


# ---------------------------------------------------------------------------------------------
# the experiments: seeds, compositions and summaries
# ---------------------------------------------------------------------------------------------


def test_seeds_scheme_by_hand():
    assert C._seeds(0, 10, 2) == [10_000, 10_001]
    assert C._seeds(2, 31, 3) == [2_031_006, 2_031_007, 2_031_008]
    parts = [set(C._seeds(s, t, 4)) for s in range(3) for t in (10, 30, 31, 32, 40, 50)]
    assert len(set().union(*parts)) == sum(map(len, parts))


def tiny_cfg(**kw):
    base = dict(n_train=20, n_test=20, depth=1, widths=(3, 4), alphas=5, max_iter=5,
                recipe=C.Recipe(lr=0.1, batch_size=8, epochs=2, warmup=0.2),
                spawn_width=4, spawn_fractions=(0.3, 0.0, 0.01), spawn_pairs=1,
                spawn_recipe=C.Recipe(lr=0.1, batch_size=8, epochs=2, warmup=0.0),
                epoch_width=4, epoch_snapshots=(0, 1), depths=(1, 2), depth_width=3)
    base.update(kw)
    return C.ConnectivityConfig(**base).validate()


def test_train_pairs_seeds_and_snapshots():
    cfg = tiny_cfg()
    x, y = data(n=20, seed=8)
    snaps = {}
    out = C.train_pairs(cfg, x, y, seed=1, snapshots=snaps)
    assert sorted(out) == [3, 4]
    for j, w in enumerate((3, 4)):
        s = C._seeds(1, 10 + j, 2)
        for i in range(2):
            want, _ = ref_fit_member(make_mlp(s[i], D, w, 1, K), x, y, cfg.recipe, 10_000 + s[i])
            same_params(out[w][i], want, atol=1e-6)
    per_epoch = 3  # ceil(20 / 8)
    assert sorted(snaps) == [0, per_epoch, 2 * per_epoch]
    same_params(snaps[0][0], make_mlp(C._seeds(1, 11, 2)[0], D, 4, 1, K))
    same_params(snaps[2 * per_epoch][1], out[4][1])
    assert C.train_pairs(cfg, x, y, seed=1).keys() == out.keys()


def test_align_is_matching_then_four_paths():
    a, b = net(100, depth=2), net(101, depth=2)
    xt, yt = data(n=19, seed=9)
    r = C.align(a, b, X, Y, xt, yt, alphas=6, max_iter=3, seed=2)
    perms = C.weight_matching(a, b, max_iter=3, seed=2)
    for u, v in zip(r.perms, perms):
        np.testing.assert_array_equal(u, v)
    bm = C.permute(b, perms)
    same_params(r.b_matched, bm)
    for got, (m, x, y) in zip([r.naive, r.matched, r.naive_train, r.matched_train],
                              [(b, xt, yt), (bm, xt, yt), (b, X, Y), (bm, X, Y)]):
        want = C.evaluate_path(a, m, x, y, 6)
        assert len(got.alphas) == 6
        np.testing.assert_allclose(got.loss, want.loss, rtol=1e-6)


def spawning(eb, fractions):
    eb = np.asarray(eb, dtype=float)
    return C.Spawning(list(range(len(fractions))), list(fractions), 10, {}, eb, eb * 0)


def test_spawning_first_stable_and_mean_by_hand():
    fr = [0.0, 0.1, 0.2, 0.3]
    s = spawning([[6.0, 4.0], [2.0, 2.0], [1.0, 2.0], [0.0, 1.0]], fr)
    np.testing.assert_allclose(s.mean_error_barrier, [5.0, 2.0, 1.5, 0.5])
    assert s.first_stable == 0.1  # a mean of exactly 2 points counts as stable
    assert spawning([[5.0], [1.0], [3.0], [1.0]], fr).first_stable == 0.3
    assert spawning([[5.0], [1.0], [1.0], [2.5]], fr).first_stable is None
    assert spawning([[1.0], [1.0], [1.0], [1.0]], fr).first_stable == 0.0


def test_spawn_experiment_against_its_composition():
    cfg = tiny_cfg(spawn_pairs=2)
    x, y = data(n=20, seed=10)
    xt, yt = data(n=17, seed=11)
    r = C.spawn_experiment(cfg, x, y, xt, yt, seed=2)
    rec = cfg.spawn_recipe
    total = rec.steps(20)
    # spawn steps: round(f * total), sorted, duplicates merged (0.3 * 6 = 1.8 -> 2, 0.06 -> 0)
    assert r.total_steps == total == 6 and r.steps == [0, 2]
    assert r.fractions == [0.0, pytest.approx(1 / 3)] and r.error_barrier.shape == (2, 2)
    parent = make_mlp(C._seeds(2, 30, 1)[0], D, 4, 1, K)
    _, psnaps = ref_fit_member(parent, x, y, rec, C._seeds(2, 31, 1)[0], stop=2, snaps=(0, 2))
    kid_seeds = C._seeds(2, 32, 8)  # 4 children per spawn step, pair j = children 2j, 2j + 1
    for i, k in enumerate([0, 2]):
        assert len(r.children[k]) == 2
        for j, (c0, c1) in enumerate(r.children[k]):
            for c, kid in ((c0, 4 * i + 2 * j), (c1, 4 * i + 2 * j + 1)):
                want, _ = ref_fit_member(psnaps[k], x, y, rec, kid_seeds[kid], start=k)
                same_params(c, want, atol=1e-6)
            p = C.evaluate_path(c0, c1, xt, yt, cfg.alphas)
            assert r.error_barrier[i, j] == pytest.approx(100 * p.error_barrier_mean, abs=1e-9)
            assert r.loss_barrier[i, j] == pytest.approx(p.loss_barrier, abs=1e-7)
    ctrl = C._seeds(2, 33, 2)
    for j in range(2):
        want, _ = ref_fit_member(make_mlp(ctrl[j], D, 4, 1, K), x, y, rec,
                                 C._seeds(2, 34, 2)[j])
        same_params(r.independent[j], want, atol=1e-6)
    p = C.evaluate_path(*r.independent, xt, yt, cfg.alphas)
    assert r.independent_error_barrier == pytest.approx(100 * p.error_barrier_mean, abs=1e-9)
    other = C.Recipe(lr=0.3, batch_size=10, epochs=1, warmup=0.0)
    r2 = C.spawn_experiment(cfg, x, y, xt, yt, seed=2, recipe=other, control=False)
    assert r2.total_steps == 2 and r2.steps == [0, 1] and r2.independent is None  # 0.6 -> 1
    assert np.isnan(r2.independent_error_barrier)


def test_barrier_vs_epoch_labels_order_and_paths():
    nets = {6: [net(110), net(111)], 0: [net(112), net(113)]}
    pts = C.barrier_vs_epoch(nets, 4, X, Y, alphas=5, max_iter=3, seed=1)
    assert [p.label for p in pts] == [0.0, 1.5]
    a, b = nets[6]
    bm = C.permute(b, C.weight_matching(a, b, max_iter=3, seed=1))
    np.testing.assert_allclose(pts[1].naive.loss, C.evaluate_path(a, b, X, Y, 5).loss, rtol=1e-6)
    np.testing.assert_allclose(pts[1].matched.loss, C.evaluate_path(a, bm, X, Y, 5).loss,
                               rtol=1e-6)


def test_depth_sweep_against_its_composition():
    cfg = tiny_cfg(depths=(1, 3), depth_width=5)
    x, y = data(n=20, seed=12)
    pts = C.depth_sweep(cfg, x, y, seed=1)
    assert [p.label for p in pts] == [1, 3]
    for j, dep in enumerate((1, 3)):
        a, b = C.train_nets(C._seeds(1, 50 + j, 2), x, y, 5, dep, K, cfg.recipe)
        perms = C.weight_matching(a, b, max_iter=cfg.max_iter, seed=1)
        if dep == 3:  # here the matching's seed (the experiment's) changes the permutations
            other = C.weight_matching(a, b, max_iter=cfg.max_iter, seed=0)
            assert not all(np.array_equal(u, v) for u, v in zip(perms, other))
        bm = C.permute(b, perms)
        np.testing.assert_allclose(pts[j].naive.loss, C.evaluate_path(a, b, x, y, 5).loss,
                                   rtol=1e-6)
        np.testing.assert_allclose(pts[j].matched.loss, C.evaluate_path(a, bm, x, y, 5).loss,
                                   rtol=1e-6)


def test_task_labels_by_hand_and_bad_tasks():
    y = torch.tensor([7, 0, 9, 4, 5, 2])
    assert C.task_labels(y, "pretrain").tolist() == [1, 0, 1, 0, 1, 0]
    assert C.task_labels(y, 0).tolist() == [2, 0, 4, 4, 0, 2]
    assert C.task_labels(y, 1).tolist() == [3, 0, 4, 2, 2, 1]
    for bad in (2, True, "x", -1):
        with pytest.raises(ValueError):
            C.task_labels(y, bad)


def test_cross_task_gains_by_hand():
    lam = np.array([0.0, 0.5, 1.0])
    acc = np.array([[0.2, 0.3], [0.6, 0.5], [0.5, 0.9]])
    assert C.CrossTask._gain(acc, lam, 0.55, [0.2, 0.1], [1.0, 0.5]) == \
        pytest.approx([0.5, 1.0], rel=1e-12)  # 0.55 is nearest to 0.5, not to 1.0
    g = C.CrossTask._gain(acc, lam, 1.0, [0.3, 0.9], [0.3, 1.0])
    assert np.isnan(g[0]) and g[1] == pytest.approx(0.0)
    ns = types.SimpleNamespace(
        _gain=C.CrossTask._gain, lambdas=lam, best_lambda=0.5, scratch_best_lambda=1.0,
        arith_acc=acc, arith_train_acc=acc[::-1], scratch_arith_acc=acc * 0.5,
        scratch_arith_train_acc=acc * 0.9, acc_pre=[0.1, 0.2], acc_ft=[[0.9, 0.0], [0.7, 0.0]],
        acc_init=[0.0, 0.1], acc_scratch=[0.5, 0.6],
        train_ends={"pre": [0.2, 0.1], "ft": [0.7, 0.9], "init": [0.1, 0.2],
                    "scratch": [0.6, 0.7]})
    assert C.CrossTask.gain_recovered.fget(ns) == pytest.approx([0.5 / 0.8, 0.3 / 0.5])
    assert C.CrossTask.train_gain_recovered.fget(ns) == pytest.approx([0.4 / 0.5, 0.4 / 0.8])
    assert C.CrossTask.scratch_gain_recovered.fget(ns) == pytest.approx([0.25 / 0.5, 0.35 / 0.5])
    assert C.CrossTask.scratch_train_gain_recovered.fget(ns) == pytest.approx(
        [(0.45 - 0.1) / 0.5, (0.81 - 0.2) / 0.5])


def test_task_arithmetic_accuracies_and_best_lambda():
    base = net(121, depth=1, out=5)
    ends = [net(301, depth=1, out=5), net(401, depth=1, out=5)]
    xt, _ = data(n=15, seed=13)
    with torch.no_grad():  # each task's labels are its fine-tuned model's predictions
        tr = [(X, ends[t](X).argmax(1)) for t in range(2)]
        te = [(xt, ends[t](xt).argmax(1)) for t in range(2)]
    lam = np.array([0.0, 0.4, 0.7, 1.0, 1.3])
    acc_te, acc_tr, best, lo, hi = C._task_arithmetic(base, ends, lam, tr, te)
    taus = [C.task_vector(base, m) for m in ends]
    for i, l in enumerate(lam):
        for t in (0, 1):
            m = C.apply_task_vectors(base, taus, float(l), ends[t])
            assert acc_te[i, t] == C.accuracy(m, *te[t])
            assert acc_tr[i, t] == C.accuracy(m, *tr[t])
    want_lo = [C.accuracy(C.with_head(base, ends[t].layers[-1].weight, ends[t].layers[-1].bias),
                          *tr[t]) for t in (0, 1)]
    want_hi = [C.accuracy(ends[t], *tr[t]) for t in (0, 1)]
    assert lo == want_lo and hi == want_hi
    assert hi == [1.0, 1.0] and lo[0] != lo[1]
    norm = np.stack([(acc_tr[:, t] - lo[t]) / (1 - lo[t]) for t in (0, 1)], 1)
    # the worse task decides: the best mean gain would be at another lambda
    assert best == lam[int(np.argmax(norm.min(1)))] != lam[int(np.argmax(norm.mean(1)))]


def test_cross_task_experiment_against_its_composition():
    rec = C.Recipe(lr=0.2, batch_size=16, epochs=1, warmup=0.0)
    cfg = C.ConnectivityConfig(ctl_width=W, depth=1, spawn_recipe=rec, probe_recipe=rec,
                               ft_recipe=C.Recipe(lr=0.3, batch_size=10, epochs=1, warmup=0.0),
                               lambdas=(0.0, 0.6, 1.0)).validate()
    g = torch.Generator().manual_seed(14)
    x, y = torch.randn(30, D, generator=g), torch.randint(0, 10, (30,), generator=g)
    xt, yt = torch.randn(21, D, generator=g), torch.randint(0, 10, (21,), generator=g)
    s = 2
    r = C.cross_task_experiment(cfg, x, y, xt, yt, seed=s)
    ypre = y // 5
    pre, _ = ref_fit_member(make_mlp(C._seeds(s, 40, 1)[0], D, W, 1, 2), x, ypre, rec,
                            C._seeds(s, 41, 1)[0])
    same_params(r.pretrained, pre, atol=1e-6)
    tr = [(x, y % 5), (x, y // 2)]
    te = [(xt, yt % 5), (xt, yt // 2)]
    for t in (0, 1):
        head = make_mlp(C._seeds(s, 42, 2)[t], D, W, 1, 5).layers[-1]
        probe, _ = ref_fit_member(C.with_head(pre, head.weight, head.bias), x, tr[t][1], rec,
                                  C._seeds(s, 43, 2)[t], train="head")
        same_params(r.probes[t], probe, atol=1e-6)
        for k in (0, 1):
            ft, _ = ref_fit_member(r.probes[t], x, tr[t][1], cfg.ft_recipe,
                                   C._seeds(s, 44, 4)[2 * t + k], train="body")
            same_params(r.finetuned[t][k], ft, atol=1e-6)
        sc, _ = ref_fit_member(make_mlp(C._seeds(s, 45, 1)[0], D, W, 1, 5), x, tr[t][1], rec,
                               C._seeds(s, 46, 2)[t])
        same_params(r.scratch[t], sc, atol=1e-6)
    same_params(r.init, make_mlp(C._seeds(s, 45, 1)[0], D, W, 1, 5))
    ft, sc = r.finetuned, r.scratch
    assert r.acc_pre == [C.accuracy(r.probes[t], *te[t]) for t in (0, 1)]
    assert r.acc_ft == [[C.accuracy(m, *te[t]) for m in ft[t]] for t in (0, 1)]
    assert r.acc_scratch == [C.accuracy(sc[t], *te[t]) for t in (0, 1)]
    heads = [(m.layers[-1].weight, m.layers[-1].bias) for m in sc]
    assert r.acc_init == [C.accuracy(C.with_head(r.init, *heads[t]), *te[t]) for t in (0, 1)]
    assert r.acc_init[1] != C.accuracy(C.with_head(r.init, *heads[0]), *te[1])
    assert r.ctl == C.llfc_dissimilarity(ft[0][0], ft[1][0], xt)[:-1]
    assert r.ctl_base == C.endpoint_dissimilarity(ft[0][0], ft[1][0], xt)[:-1]
    assert r.ctl_scratch == C.llfc_dissimilarity(sc[0], sc[1], xt)[:-1]
    assert r.ctl_scratch_base == C.endpoint_dissimilarity(sc[0], sc[1], xt)[:-1]
    for t in (0, 1):
        xt_, yt_ = te[t]
        la = np_features(C.average(ft[t]), xt_)[-1].argmax(1)
        runs = [np_features(m, xt_)[-1] for m in ft[t]]
        le = ((runs[0] + runs[1]) / 2).argmax(1)
        assert r.avg_acc[t] == pytest.approx(np.mean(la == yt_.numpy()))
        assert r.ens_acc[t] == pytest.approx(np.mean(le == yt_.numpy()))
        assert r.agreement[t] == pytest.approx(np.mean(la == le))
        assert r.single_agreement[t] == pytest.approx(max(np.mean(u.argmax(1) == le)
                                                          for u in runs))
    acc_te, acc_tr, best, lo, hi = C._task_arithmetic(r.pretrained, [ft[0][0], ft[1][0]],
                                                      np.array([0.0, 0.6, 1.0]), tr, te)
    np.testing.assert_array_equal(r.arith_acc, acc_te)
    np.testing.assert_array_equal(r.arith_train_acc, acc_tr)
    assert r.best_lambda == best and r.train_ends["pre"] == lo and r.train_ends["ft"] == hi
    acc_te, acc_tr, best, lo, hi = C._task_arithmetic(r.init, sc, np.array([0.0, 0.6, 1.0]),
                                                      tr, te)
    np.testing.assert_array_equal(r.scratch_arith_acc, acc_te)
    np.testing.assert_array_equal(r.scratch_arith_train_acc, acc_tr)
    assert r.scratch_best_lambda == best
    assert r.train_ends["init"] == lo and r.train_ends["scratch"] == hi
