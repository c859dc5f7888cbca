"""Tests of gtlib.connectivity, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""
from __future__ import annotations
import copy
import itertools
import numpy as np
import pytest
import torch
import torch.nn.functional as F
import types
from scipy.optimize import linear_sum_assignment

from gtlib import connectivity as C
from gtlib.connectivity import llfc_dissimilarity, cosine_dissimilarity
from gtlib.models import BatchedMLP, make_mlp, MLP

from tests.oracles.connectivity_loops import old_fit, old_fit_bezier, old_lr_at


def net(seed=0, width=16, depth=3, d=6, out=4, bias=True):
    return make_mlp(seed, d, width, depth, out, bias=bias)


X = torch.randn(50, 6, generator=torch.Generator().manual_seed(1))


Y = torch.randint(0, 4, (50,), generator=torch.Generator().manual_seed(2))


D, W, K = 4, 5, 3  # input size, width, classes: nothing square


def net_ref(seed=0, width=W, depth=2, d=D, out=K, bias=True, act="relu"):
    return make_mlp(seed, d, width, depth, out, bias=bias, act=act)


def data(n=23, d=D, classes=K, seed=0, shift=0.0):
    g = torch.Generator().manual_seed(1000 + seed)
    x = torch.randn(n, d, generator=g) + shift
    y = torch.randint(0, classes, (n,), generator=g)
    return x, y


X_ref, Y_ref = data()


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


def ref_path(models, x, y):
    loss, acc = [], []
    for m in models:
        z = np_features(m, x)[-1]
        z = z - z.max(1, keepdims=True)
        lp = z - np.log(np.exp(z).sum(1, keepdims=True))
        loss.append(-lp[np.arange(len(y)), y.numpy()].mean())
        acc.append(np.mean(z.argmax(1) == y.numpy()))
    return np.array(loss), np.array(acc)


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


def tiny_cfg(**kw):
    base = dict(n_train=20, n_test=20, depth=1, widths=(3, 4), alphas=5, max_iter=5,
                recipe=C.Recipe(lr=0.1, batch_size=8, epochs=2, warmup=0.2),
                spawn_width=4, spawn_fractions=(0.3, 0.0, 0.01), spawn_pairs=1,
                spawn_recipe=C.Recipe(lr=0.1, batch_size=8, epochs=2, warmup=0.0),
                epoch_width=4, epoch_snapshots=(0, 1), depths=(1, 2), depth_width=3)
    base.update(kw)
    return C.ConnectivityConfig(**base).validate()


def spawning(eb, fractions):
    eb = np.asarray(eb, dtype=float)
    return C.Spawning(list(range(len(fractions))), list(fractions), 10, {}, eb, eb * 0)


def _blobs(n=48, d=5, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % classes
    x = torch.randn(n, d, generator=g, dtype=torch.float64) + 2 * F.one_hot(y, d).double()
    return x, y


def _schedule(recipe, step, total):
    """The documented schedule: linear warm-up from lr * start_factor over round(warmup * total)
    steps, then linear decay to 0 at `total`."""
    w = round(recipe.warmup * total)
    if step < w:
        return recipe.lr * (recipe.start_factor + (1 - recipe.start_factor) * step / w)
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
                bufs[i] = d.clone() if bufs[i] is None else recipe.momentum * bufs[i] + d
                p -= lr * bufs[i]
    return params


NAN, INF = float("nan"), float("inf")


torch.manual_seed(0)


X_bou = torch.randn(30, 5, generator=torch.Generator().manual_seed(0))


Y_bou = torch.arange(30) % 3


A, B = MLP(5, 8, 1, 3), MLP(5, 8, 1, 3)


NO_BIAS = MLP(5, 8, 1, 3, bias=False)


RECIPE = C.Recipe(lr=0.05, epochs=1, warmup=0.0, batch_size=10)


CFG = C.ConnectivityConfig(n_train=30, n_test=12, depth=1, widths=(4, 8), alphas=3, max_iter=2,
                           recipe=RECIPE, spawn_width=8, spawn_fractions=(0.0, 0.5),
                           spawn_pairs=1, spawn_recipe=RECIPE, ctl_width=8, probe_recipe=RECIPE,
                           ft_recipe=RECIPE, lambdas=(0.0, 1.0), epoch_width=8,
                           epoch_snapshots=(0, 1), depths=(1,), depth_width=8, bezier_width=8,
                           bezier_recipe=RECIPE)


def _nan(t):
    t = t.clone()
    t.view(-1)[0] = NAN
    return t


def _neg(y):
    y = y.clone()
    y[0] = -1
    return y


def _stack():
    return BatchedMLP.init([0, 1], 5, 8, 1, 3)


# (call, error, the argument the message must name): every case returned silently before
SILENT = [
    (lambda: RECIPE.lr_at(True, 10), TypeError, "step"),
    (lambda: RECIPE.lr_at(2.5, 10), TypeError, "step"),
    (lambda: RECIPE.lr_at(11, 10), ValueError, "step"),
    (lambda: RECIPE.lr_factor(1, 0), ValueError, "total"),
    (lambda: RECIPE.lr_factor(1, -1), ValueError, "total"),
    (lambda: RECIPE.steps(0), ValueError, "n"),
    (lambda: RECIPE.steps(True), TypeError, "n"),
    (lambda: C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], stop_step=0), ValueError, "stop_step"),
    (lambda: C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], stop_step=2.5), TypeError, "stop_step"),
    (lambda: C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], only_last_layer="yes"), TypeError,
     "only_last_layer"),
    (lambda: C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], freeze_last_layer=None), TypeError,
     "freeze_last_layer"),
    (lambda: C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], snapshot_steps=[10**6]), ValueError,
     "snapshot_steps"),
    (lambda: C.lerp(A, B, "0.5"), TypeError, "alpha"),
    (lambda: C.evaluate_path(A, B, _nan(X_bou), Y_bou, 3), ValueError, "x"),
    (lambda: C.evaluate_stack(C.path_stack(A, B, [0, 1]), [0, 1], _nan(X_bou), Y_bou), ValueError, "x"),
    (lambda: C.Path(np.zeros(0), np.zeros(0), np.zeros(0)).error_barrier, ValueError, "alphas"),
    (lambda: C.Path(np.array([0, .5, 1]), np.ones(3), np.array([NAN, .5, .9])), ValueError,
     "acc"),
    (lambda: C.Path("abc", np.ones(3), np.ones(3)), TypeError, "alphas"),
    (lambda: C.Path(np.array([0, .5, 1]), None, np.ones(3)), TypeError, "loss"),
    (lambda: C.random_perms(A, 2**64), ValueError, "seed"),
    (lambda: C.random_perms(A, True), TypeError, "seed"),
    (lambda: C.weight_matching(A, B, seed=True), TypeError, "seed"),
    (lambda: C.cosine_dissimilarity(_nan(X_bou), X_bou), ValueError, "u"),
    (lambda: C.llfc_dissimilarity(A, B, X_bou[:0]), ValueError, "x"),
    (lambda: C.llfc_dissimilarity(A, B, X_bou, -0.1), ValueError, "alpha"),
    (lambda: C.llfc_dissimilarity(A, B, X_bou, 1.5), ValueError, "alpha"),
    (lambda: C.llfc_dissimilarity(A, B, X_bou, True), TypeError, "alpha"),
    (lambda: C.commutativity_residual(A, B, X_bou[:0]), ValueError, "x"),
    (lambda: C.endpoint_dissimilarity(A, B, X_bou[:0]), ValueError, "x"),
    (lambda: C.preactivations(A, _nan(X_bou)), ValueError, "x"),
    (lambda: C.preactivations(A, X_bou[0]), ValueError, "x"),
    (lambda: C.weak_additivity(A, B, _nan(X_bou)), ValueError, "x"),
    (lambda: C.repair_stack(A, B, [0, 0.5, 1], X_bou[0]), ValueError, "x"),
    (lambda: C.repair_stack(A, B, [0, 0.5, 1], X_bou[:1]), ValueError, "x"),
    (lambda: C.repair_stack(A, B, [0, 0.5, 1], X_bou, eps=0.0), ValueError, "eps"),
    (lambda: C.repair_stack(A, B, [0, 0.5, 1], X_bou, eps=NAN), ValueError, "eps"),
    (lambda: C.repair_path(A, B, X_bou[0], X_bou, Y_bou, 3), ValueError, "x_stats"),
    (lambda: C.bezier_stack(A, A, B, []), ValueError, "ts"),
    (lambda: C.bezier_stack(A, A, B, [NAN]), ValueError, "ts"),
    (lambda: C.fit_bezier(A, B, _nan(X_bou), Y_bou, RECIPE), ValueError, "x"),
    (lambda: C.fit_bezier(A, B, X_bou, Y_bou, RECIPE, seed=-1), ValueError, "seed"),
    (lambda: C.fit_bezier(A, B, X_bou, Y_bou, RECIPE, seed="0"), TypeError, "seed"),
    (lambda: C.evaluate_bezier(A, A, B, _nan(X_bou), Y_bou, 3), ValueError, "x"),
    (lambda: C.apply_task_vectors(A, [C.task_vector(A, B)], NAN, B), ValueError, "scale"),
    (lambda: C.apply_task_vectors(A, [C.task_vector(A, B)], INF, B), ValueError, "scale"),
    (lambda: C.with_head(A, _nan(torch.randn(4, 8)), torch.randn(4)), ValueError, "head_weight"),
    (lambda: C.with_head(A, torch.randn(4, 8).long(), torch.randn(4)), TypeError, "head_weight"),
    (lambda: C.with_head(A, torch.randn(4, 8), _nan(torch.randn(4))), ValueError, "head_bias"),
    (lambda: C.with_head(A, torch.randn(4, 8), None), ValueError, "head_bias"),
    (lambda: C.accuracy(A, X_bou, torch.full_like(Y_bou, 99)), ValueError, "y"),
    (lambda: C.accuracy(A, X_bou, _neg(Y_bou)), ValueError, "y"),
    (lambda: C.accuracy(A, X_bou, Y_bou.float()), TypeError, "y"),
    (lambda: C.train_pairs(CFG, X_bou, torch.full_like(Y_bou, 99)), ValueError, "y"),
    (lambda: C.train_pairs(CFG, X_bou, Y_bou, seed=1.5), TypeError, "seed"),
    (lambda: C.align(A, B, _nan(X_bou), Y_bou, X_bou, Y_bou, 3, 2), ValueError, "x"),
    (lambda: C.align(A, B, X_bou, Y_bou, X_bou, Y_bou, 3, 2, seed=2**64), ValueError, "seed"),
    (lambda: C.spawn_experiment(CFG, X_bou, torch.full_like(Y_bou, 99), X_bou, Y_bou), ValueError, "y"),
    (lambda: C.spawn_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou, recipe={}), TypeError, "recipe"),
    (lambda: C.spawn_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou, control="yes"), TypeError, "control"),
    (lambda: C.spawn_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou, seed="0"), TypeError, "seed"),
    (lambda: C.barrier_vs_epoch({0: [A, B]}, -1, X_bou, Y_bou, 3, 2), ValueError, "steps_per_epoch"),
    (lambda: C.barrier_vs_epoch({0: [A, B]}, 2.5, X_bou, Y_bou, 3, 2), TypeError, "steps_per_epoch"),
    (lambda: C.barrier_vs_epoch({0: [A, B]}, 3, _nan(X_bou), Y_bou, 3, 2), ValueError, "x"),
    (lambda: C.depth_sweep(CFG, X_bou, torch.full_like(Y_bou, 99)), ValueError, "y"),
    (lambda: C.depth_sweep(CFG, X_bou, Y_bou, seed=True), TypeError, "seed"),
    (lambda: C.task_labels(_neg(Y_bou), 0), ValueError, "y"),
    (lambda: C.task_labels(torch.full_like(Y_bou, 12), "pretrain"), ValueError, "y"),
    (lambda: C.cross_task_experiment(CFG, X_bou, Y_bou, X_bou, _neg(Y_bou)), ValueError, "y_test"),
    (lambda: C.cross_task_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou, seed=1.5), TypeError, "seed"),
    (lambda: C.cross_task_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou, x_pre=X_bou), ValueError, "y_pre"),
    (lambda: C.spawn_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou, unshared=1), TypeError, "unshared"),
    (lambda: C.commutativity_bound_ratio(A, B, _nan(X_bou)), ValueError, "x"),
    (lambda: C.logit_interpolation(A, B, X_bou, torch.full_like(Y_bou, 99)), ValueError, "y"),
    (lambda: C.logit_interpolation(A, B, X_bou, Y_bou, alphas=1), ValueError, "alphas"),
    (lambda: C.disagreement_ratio(A, "B", X_bou), TypeError, "m2"),
    (lambda: C.disagreement_ratio(A, B, X_bou.long()), TypeError, "x"),
    (lambda: C.cross_task_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou, sweep="ps"), TypeError, "sweep"),
    (lambda: C.pretraining_sweep(CFG, X_bou, Y_bou, X_bou, _neg(Y_bou)), ValueError, "y_test"),
    (lambda: C.pretraining_sweep(CFG, X_bou, Y_bou, X_bou, Y_bou, x_pre=X_bou), ValueError, "y_pre"),
    (lambda: C.pretraining_sweep(CFG, X_bou, Y_bou, X_bou, Y_bou, seed=1.5), TypeError, "seed"),
    (lambda: C.add_noise(A, True), TypeError, "scale"),
    (lambda: C.add_noise(A, 0.1, seed=-1), ValueError, "seed"),
    (lambda: C.planted_permutation_check(A, X_bou, Y_bou, noise=-0.5), ValueError, "noise"),
    (lambda: C.planted_permutation_check(A, X_bou, Y_bou, noise=NAN), ValueError, "noise"),
    (lambda: C.planted_permutation_check(A, X_bou, Y_bou, seed=2**64), ValueError, "seed"),
    (lambda: C.llfc_profile(A, B, X_bou[:0], [0.0, 1.0]), ValueError, "x"),
    (lambda: C.llfc_profile(A, B, X_bou, []), ValueError, "alphas"),
    (lambda: C.from_params([torch.full((8, 5), NAN), torch.randn(3, 8)], None), ValueError,
     "weights"),
]


# errors that came from inside torch, numpy or another gtlib function, not naming the argument
UNCLEAR = [
    (lambda: RECIPE.lr_factor(-1, 10), ValueError, "step"),  # ZeroDivisionError before
    (lambda: C.from_params(None, None), TypeError, "weights"),
    (lambda: C.from_params([torch.randn(8, 5), torch.randn(3, 8)], []), ValueError, "biases"),
    (lambda: C.from_params([torch.randn(8, 5), torch.randn(3, 7)], None), ValueError,
     "weights"),
    (lambda: C.stack(None), TypeError, "models"),
    (lambda: C.members("net"), TypeError, "model"),
    (lambda: C.fit(_stack(), X_bou[:0], Y_bou, RECIPE, [0, 1]), ValueError, "x"),
    (lambda: C.fit(_stack(), X_bou.long(), Y_bou, RECIPE, [0, 1]), TypeError, "x"),
    (lambda: C.fit(_stack(), X_bou.double(), Y_bou, RECIPE, [0, 1]), TypeError, "x"),
    (lambda: C.fit(_stack(), X_bou, torch.full_like(Y_bou, 99), RECIPE, [0, 1]), ValueError, "y"),
    (lambda: C.fit(_stack(), X_bou, Y_bou.float(), RECIPE, [0, 1]), TypeError, "y"),
    (lambda: C.fit(_stack(), X_bou, Y_bou, None, [0, 1]), TypeError, "recipe"),
    (lambda: C.fit(_stack(), X_bou, Y_bou, RECIPE, 3), TypeError, "seeds"),
    (lambda: C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], start_steps=[NAN, 0]), TypeError,
     "start_steps"),
    (lambda: C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], snapshot_steps="a"), TypeError,
     "snapshot_steps"),
    (lambda: C.train_nets([0, 1], X_bou, Y_bou, 8, 1, 0, RECIPE), ValueError, "num_classes"),
    (lambda: C.train_nets([0, 1], X_bou, Y_bou, 8, 1, 2, RECIPE), ValueError, "y"),
    (lambda: C.path_stack(A, B, "abc"), TypeError, "alphas"),
    (lambda: C.barrier("abc", [0.1, 0.5, 0.2]), TypeError, "alphas"),
    (lambda: C.barrier_mean([0, 0.5, 1], "abc"), TypeError, "values"),
    (lambda: C.evaluate_path(A, B, X_bou, Y_bou[:-1], 3), ValueError, "y"),
    (lambda: C.evaluate_path(A, B, X_bou, Y_bou, True), TypeError, "alphas"),
    (lambda: C.evaluate_stack(None, [0, 1], X_bou, Y_bou), TypeError, "model"),
    (lambda: C.evaluate_stack(C.path_stack(A, B, [0, 1]), [0, 0.5, 1], X_bou, Y_bou), ValueError,
     "alphas"),
    (lambda: C.weight_matching(A, B, seed=-1), ValueError, "seed"),
    (lambda: C.perm_recovery(None, C.random_perms(A)), TypeError, "found"),
    (lambda: C.perm_recovery(C.random_perms(A), [np.zeros(8, int)]), ValueError, "planted"),
    (lambda: C.permute(A, "abc"), TypeError, "perms"),
    (lambda: C.cosine_dissimilarity(X_bou.long(), X_bou.long()), TypeError, "u"),
    (lambda: C.weak_additivity(A, B, X_bou[0]), ValueError, "x"),
    (lambda: C.weak_additivity(A, B, X_bou[:, :3]), ValueError, "x"),
    (lambda: C.repair_stack(A, B, "abc", X_bou), TypeError, "alphas"),
    (lambda: C.repair_path(A, B, X_bou, X_bou, Y_bou.float(), 3), TypeError, "y"),
    (lambda: C.fit_bezier(A, B, X_bou, Y_bou[:-1], RECIPE), ValueError, "y"),
    (lambda: C.fit_bezier(A, B, X_bou, Y_bou, {}), TypeError, "recipe"),
    (lambda: C.evaluate_bezier(A, A, B, X_bou, Y_bou, 2.5), TypeError, "ts"),
    (lambda: C.task_vector(None, B), TypeError, "pretrained"),
    (lambda: C.task_vector(A, MLP(5, 9, 1, 3)), ValueError, "pretrained"),
    (lambda: C.apply_task_vectors(A, "ab", 0.5, B), TypeError, "vectors"),
    (lambda: C.apply_task_vectors(A, [[torch.zeros(2, 2)]], 0.5, B), ValueError, "vectors"),
    (lambda: C.apply_task_vectors(A, [C.task_vector(A, B)], 0.5, None), TypeError, "head"),
    (lambda: C.with_head(None, torch.randn(4, 8), torch.randn(4)), TypeError, "body"),
    (lambda: C.with_head(A, torch.randn(4, 7), torch.randn(4)), ValueError, "head_weight"),
    (lambda: C.with_head(A, torch.randn(4, 8), torch.randn(3)), ValueError, "head_bias"),
    (lambda: C.accuracy(None, X_bou, Y_bou), TypeError, "model"),
    (lambda: C.train_pairs({}, X_bou, Y_bou), TypeError, "cfg"),
    (lambda: C.train_pairs(CFG, X_bou, Y_bou, snapshots=[1]), TypeError, "snapshots"),
    (lambda: C.align(A, B, X_bou, Y_bou, X_bou[0], Y_bou, 3, 2), ValueError, "x_test"),
    (lambda: C.align(A, B, X_bou, Y_bou, X_bou, Y_bou[:-1], 3, 2), ValueError, "y_test"),
    (lambda: C.spawn_experiment(CFG, X_bou, Y_bou, X_bou, torch.full_like(Y_bou, 99)), ValueError, "y_test"),
    (lambda: C.spawn_experiment(CFG, X_bou[0], Y_bou, X_bou, Y_bou), ValueError, "x"),
    (lambda: C.barrier_vs_epoch(None, 3, X_bou, Y_bou), TypeError, "snapshots"),
    (lambda: C.barrier_vs_epoch({0: [A]}, 3, X_bou, Y_bou), ValueError, "snapshots"),
    (lambda: C.barrier_vs_epoch({0: [A, B]}, 0, X_bou, Y_bou), ValueError, "steps_per_epoch"),
    (lambda: C.cross_task_experiment(CFG, X_bou.long(), Y_bou, X_bou, Y_bou), TypeError, "x"),
    (lambda: C.cross_task_experiment(CFG, X_bou, Y_bou, X_bou, Y_bou[:-1]), ValueError, "y_test"),
    (lambda: C.add_noise(A, "0.1"), TypeError, "scale"),
    (lambda: C.add_noise(A, 0.1, seed=2**64), ValueError, "seed"),
    (lambda: C.planted_permutation_check(A, X_bou[:0], Y_bou), ValueError, "x"),
    (lambda: C.planted_permutation_check(A, X_bou, Y_bou, noise=None), TypeError, "noise"),
    (lambda: C.llfc_profile(A, B, X_bou, [NAN]), ValueError, "alphas"),
    (lambda: C.llfc_profile(A, B, X_bou, [0.0, 1.5]), ValueError, "alphas"),
]


def _data(n=30, d=6, classes=3, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, d, generator=g).to(dtype),
            torch.randint(0, classes, (n,), generator=g))


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
    np.testing.assert_allclose(back(X_ref).detach().double().numpy(), np_features(m, X_ref)[-1],
                               rtol=1e-5, atol=1e-6)
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


@pytest.mark.reference
@pytest.mark.parametrize("which,train", [("only_last_layer", "head"),
                                         ("freeze_last_layer", "body")])
def test_fit_trains_only_the_chosen_layers_as_sgd_would(which, train):
    x, y = data(n=15)
    x = x.double()
    Y_ref = torch.stack([y, (y + 1) % K])  # one labelling per member
    r = C.Recipe(lr=0.4, momentum=0.6, batch_size=4, epochs=2, warmup=0.0, weight_decay=0.05)
    model = f64_stack([8, 9])
    init = C.members(model)
    C.fit(model, x, Y_ref, r, seeds=[3, 4], **{which: True})
    for i in range(2):
        want, _ = ref_fit_member(init[i], x, Y_ref[i], r, [3, 4][i], train=train)
        same_params(model.member(i), want, atol=1e-12)
    frozen = -1 if train == "body" else 0
    assert torch.equal(model.member(0).layers[frozen].weight, init[0].layers[frozen].weight)


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
    rec = C.Recipe(lr=0.05, momentum=0.9, batch_size=8, epochs=3, warmup=0.25,
                   weight_decay=wd)
    m_new = C.fit_bezier(a, b, x, y, rec, seed=3, samples=3)
    m_old = old_fit_bezier(a, b, x, y, rec, seed=3, samples=3)
    for u, v in zip(m_new.parameters(), m_old.parameters()):
        assert torch.equal(u, v)
    assert not torch.equal(m_new.layers[0].weight, C.lerp(a, b, 0.5).layers[0].weight)


# =================================================================================================
# connectivity.Recipe
# =================================================================================================
def test_recipe_schedule():
    r = C.Recipe(lr=1.0, warmup=0.5, start_factor=0.1)
    assert r.lr_at(0, 10) == pytest.approx(0.1) and r.lr_at(5, 10) == pytest.approx(1.0)
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


@pytest.mark.engine
def test_schedule_factor_is_lr_at_bit_for_bit():
    for r in (C.Recipe(lr=0.05), C.Recipe(lr=0.3, warmup=0.0), C.Recipe(lr=0.07, warmup=0.33,
                                                                         start_factor=0.1)):
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
    C.fit(model, x, y, rec, seeds=[1, 2], start_steps=[0, rec.steps(64)], freeze_last_layer=True)
    assert torch.equal(model.weights[0][1], w0[0][1])          # member 1 never started (nor decayed)
    assert not torch.equal(model.weights[0][0], w0[0][0])      # member 0 trained
    assert torch.equal(model.weights[-1], w0[-1])              # head frozen for both


def test_spawn_snapshots_match_parent_prefix():
    x, y = torch.randn(40, 6), torch.randint(0, 3, (40,))
    model = BatchedMLP.init([3], 6, 8, 2, 3)
    rec = C.Recipe(lr=0.05, epochs=2, batch_size=10)
    snaps = C.fit(model, x, y, rec, seeds=[4], stop_step=5, snapshot_steps=[0, 5])
    assert sorted(snaps) == [0, 5]
    assert torch.equal(snaps[5][0].layers[0].weight, model.member(0).layers[0].weight)


@pytest.mark.reference
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


@pytest.mark.reference
def test_fit_follows_its_schedule_and_activates_spawned_members_on_time():
    x, y = _blobs(n=40)
    recipe = C.Recipe(lr=0.2, momentum=0.9, batch_size=40, epochs=10, warmup=0.3,
                      start_factor=0.1, weight_decay=0.01)  # full batch: the order is irrelevant
    model = BatchedMLP.init([0, 1], 5, 8, 1, 3).double()
    init = [([w[e].detach().clone() for w in model.weights],
             [p[e].detach().clone() for p in model.biases]) for e in range(2)]
    total, spawn = recipe.steps(40), 4
    C.fit(model, x, y, recipe, seeds=[0, 1], start_steps=[0, spawn])
    for e, first in ((0, 0), (1, spawn)):
        ref = _hand_fit(*init[e], x, y, recipe, range(first, total), total)
        got = [w[e] for w in model.weights] + [p[e] for p in model.biases]
        for p, q in zip(got, ref):
            assert torch.allclose(p, q, atol=1e-10, rtol=0)


@pytest.mark.boundary
def test_fit_refuses_empty_and_non_finite_data():
    model = C.BatchedMLP.init([0], 4, 8, 1, 3)
    recipe = C.Recipe(lr=0.1, epochs=1, warmup=0.0)
    with pytest.raises(ValueError, match="n = 0"):
        C.fit(model, torch.zeros(0, 4), torch.zeros(0, dtype=torch.long), recipe, seeds=[0])
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
    k0 = C.ConnectivityConfig(depth=1, alphas=3, spawn_width=8, spawn_fractions=(0.0,),
                              spawn_pairs=1, spawn_recipe=RECIPE)
    s = C.spawn_experiment(k0, X_bou, Y_bou, X_bou, Y_bou, control=False)
    assert s.steps == [0] and s.error_barrier.shape == (1, 1)
    snaps = C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], stop_step=1, snapshot_steps=[0, 1, 3])
    assert sorted(snaps) == [0, 1]
    assert C.fit(_stack(), X_bou, Y_bou, RECIPE, [0, 1], snapshot_steps=[]) == {}
    assert C.evaluate_path(A, B, X_bou, Y_bou, np.linspace(0, 1, 4)).alphas.shape == (4,)
    assert C.bezier_stack(A, A, B, torch.tensor([0.0, 1.0])).size == 2
    assert C.perm_recovery([[1, 0, 2]], [np.array([1, 0, 2])]) == [1.0]
    assert C.apply_task_vectors(A, [C.task_vector(A, B)], -2.0, B) is not None
    assert C.llfc_profile(A, B, X_bou, np.array([0.0, 0.5, 1.0])).shape == (3, 1)
    assert C.task_labels(Y_bou[:-1], 1).shape == (29,)  # no length to check against: accepted


# float64 as well: there a learning rate one float64 ulp off would already show
@pytest.mark.engine
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fit_spawning_stop_step_snapshots_and_weight_decay(dtype):
    x, y = _data(dtype=dtype)
    rec = C.Recipe(lr=0.1, momentum=0.9, batch_size=8, epochs=3, warmup=0.3,
                   weight_decay=0.01)
    new, old = _both([0, 1, 2], dtype=dtype)
    kw = dict(seeds=[5, 6, 7], start_steps=[0, 3, 7], stop_step=10, snapshot_steps=[0, 3, 10, 11])
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
    rec = C.Recipe(lr=0.05, momentum=0.8, batch_size=7, epochs=2, warmup=0.2,
                   weight_decay=0.001)
    new, old = _both([3, 4])
    C.fit(new, x, Y, rec, seeds=[8, 9], **{which: True})
    old_fit(old, x, Y, rec, seeds=[8, 9], **{which: True})
    _same_stack(new, old)


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
        C.train_nets([], torch.zeros(5, 4), torch.zeros(5, dtype=torch.long), 8, 1, 3,
                     C.Recipe(lr=0.1, epochs=1, warmup=0.0))


# =================================================================================================
# connectivity.lerp
# =================================================================================================
def test_path_endpoints_are_the_networks():
    a, b = net(0), net(1)
    stack = C.path_stack(a, b, [0.0, 0.25, 1.0])
    out = stack(X)
    assert torch.allclose(out[0], a(X), atol=1e-5) and torch.allclose(out[2], b(X), atol=1e-5)
    assert torch.allclose(out[1], C.lerp(a, b, 0.25)(X), atol=1e-5)


def test_bad_inputs_raise():
    a = net()
    with pytest.raises(TypeError, match="a must be"):
        C.lerp("net", a, 0.5)
    with pytest.raises(ValueError, match="same layer shapes"):
        C.weight_matching(a, net(width=8))
    with pytest.raises(ValueError, match="perms"):
        C.permute(a, [np.arange(16)])
    with pytest.raises(ValueError, match=r"perms\[0\]"):
        C.permute(a, [np.zeros(16, int)] * 3)
    with pytest.raises(ValueError, match="max_iter"):
        C.weight_matching(a, a, max_iter=0)
    with pytest.raises(ValueError, match="alphas"):
        C.barrier([0.2, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="alphas"):
        C.evaluate_path(a, a, X, Y, 1)
    with pytest.raises(ValueError, match="alpha"):
        C.lerp(a, a, float("nan"))
    with pytest.raises(ValueError, match="u and v"):
        C.cosine_dissimilarity(torch.zeros(2, 3), torch.zeros(3, 2))
    with pytest.raises(ValueError, match="lr"):
        C.Recipe(lr=0).validate()
    with pytest.raises(ValueError, match="widths"):
        C.ConnectivityConfig(widths=(64, 32)).validate()
    with pytest.raises(ValueError, match="seeds"):
        C.fit(BatchedMLP.init([0], 6, 4, 1, 2), X, Y % 2, C.Recipe(), seeds=[1, 2])
    with pytest.raises(ValueError, match="task"):
        C.task_labels(Y, 2)
    with pytest.raises(TypeError, match="y must be"):
        C.task_labels(X[:, 0], 0)
    with pytest.raises(TypeError, match="model must be a BatchedMLP"):
        C.fit(a, X, Y, C.Recipe(), seeds=[0])


def test_bezier_curve_endpoints_and_straight_line_case():
    a, b = net(0), net(1)
    mid = C.lerp(a, b, 0.5)
    ts = [0.0, 0.3, 1.0]
    out = C.bezier_stack(a, mid, b, ts)(X)
    assert torch.allclose(out[0], a(X), atol=1e-5) and torch.allclose(out[2], b(X), atol=1e-5)
    assert torch.allclose(out[1], C.lerp(a, b, 0.3)(X), atol=1e-5)  # midpoint control = line
    x = torch.randn(64, 6)
    y = (x[:, 0] > 0).long()
    a2, b2 = C.train_nets([0, 1], x, y, 8, 1, 2, C.Recipe(lr=0.1, epochs=3, batch_size=16))
    m = C.fit_bezier(a2, b2, x, y, C.Recipe(lr=0.05, epochs=2, batch_size=16), seed=0)
    assert not torch.equal(m.layers[0].weight, C.lerp(a2, b2, 0.5).layers[0].weight)
    p = C.evaluate_bezier(a2, m, b2, x, y, 5)
    assert len(p.loss) == 5 and np.all(np.isfinite(p.loss))
    with pytest.raises(ValueError, match="samples"):
        C.fit_bezier(a2, b2, x, y, C.Recipe(), samples=0)


@pytest.mark.reference
def test_lerp_weights_by_hand_and_symmetry():
    a, b = net_ref(0, act="tanh"), net_ref(1, act="tanh")
    m = C.lerp(a, b, 0.3)
    (wa, ba), (wb, bb), (wm, bm) = npw(a), npw(b), npw(m)
    for l in range(3):
        np.testing.assert_allclose(wm[l], 0.7 * wa[l] + 0.3 * wb[l], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(bm[l], 0.7 * ba[l] + 0.3 * bb[l], rtol=1e-6, atol=1e-7)
    assert m.act_name == "tanh"
    same_params(C.lerp(b, a, 0.7), m, atol=1e-7)
    same_params(C.lerp(a, b, 0.0), a)
    nb = C.lerp(net_ref(0, bias=False), net_ref(1, bias=False), 0.8)
    np.testing.assert_allclose(npw(nb)[0][1], 0.2 * npw(net_ref(0, bias=False))[0][1]
                               + 0.8 * npw(net_ref(1, bias=False))[0][1], rtol=1e-6, atol=1e-7)


# =================================================================================================
# connectivity.path_stack
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize("bias", [True, False])
def test_path_stack_members_are_the_lerps(bias):
    a, b = net_ref(0, bias=bias), net_ref(1, bias=bias)
    al = [0.0, 0.2, 0.7, 1.0]
    s = C.path_stack(a, b, al)
    for i, alpha in enumerate(al):
        same_params(s.member(i), C.lerp(a, b, alpha), atol=1e-6)


# =================================================================================================
# connectivity.Path
# =================================================================================================
@pytest.mark.reference
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


# =================================================================================================
# connectivity.barrier
# =================================================================================================
def test_barrier_closed_forms():
    a = np.linspace(0, 1, 5)
    assert C.barrier(a, 1 + a) == 0.0                   # a line has no barrier
    assert C.barrier(a, a * (1 - a)) == pytest.approx(0.25)  # a bump of height 1/4
    assert C.barrier(a, (a - 0.5) ** 2) == pytest.approx(0.0)  # convex: at most the chord
    assert C.barrier(a, -a * (1 - a)) == pytest.approx(0.0)


@pytest.mark.reference
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


# =================================================================================================
# connectivity.barrier_mean
# =================================================================================================
def test_barrier_mean_closed_forms():
    a = np.linspace(0, 1, 5)
    assert C.barrier_mean(a, 1 + a) == pytest.approx(0.5)     # max 2 minus mean 1.5
    assert C.barrier_mean(a, a * (1 - a)) == pytest.approx(0.25)
    v = 0.3 + a * (1 - a)                                      # equal endpoints: both forms agree
    assert C.barrier_mean(a, v) == pytest.approx(C.barrier(a, v))
    with pytest.raises(ValueError, match="alphas"):
        C.barrier_mean([0.0, 0.5], [1.0, 2.0])


# =================================================================================================
# connectivity.evaluate_path
# =================================================================================================
def test_barrier_of_a_net_with_itself_is_zero():
    m = net()
    p = C.evaluate_path(m, m, X, Y, 9)
    assert abs(p.loss_barrier) < 1e-6 and abs(p.error_barrier) < 1e-9
    assert np.allclose(p.loss, p.loss[0], atol=1e-6)


@pytest.mark.reference
def test_evaluate_path_against_a_numpy_cross_entropy():
    a, b = net_ref(0), net_ref(1)
    al = [0.0, 0.3, 0.55, 1.0]
    p = C.evaluate_path(a, b, X_ref, Y_ref, al)
    loss, acc = ref_path([C.lerp(a, b, t) for t in al], X_ref, Y_ref)
    np.testing.assert_allclose(p.loss, loss, rtol=1e-5)
    np.testing.assert_allclose(p.acc, acc, atol=1e-7)
    np.testing.assert_allclose(p.alphas, al)
    p5 = C.evaluate_path(a, b, X_ref, Y_ref, 5)
    np.testing.assert_allclose(p5.alphas, [0, 0.25, 0.5, 0.75, 1])
    loss, _ = ref_path([C.lerp(a, b, t) for t in p5.alphas], X_ref, Y_ref)
    np.testing.assert_allclose(p5.loss, loss, rtol=1e-5)
    assert len(C.evaluate_path(a, b, X_ref, Y_ref).alphas) == 25  # Git Re-Basin's 25 points


@pytest.mark.reference
def test_barrier_vs_epoch_labels_order_and_paths():
    nets = {6: [net_ref(110), net_ref(111)], 0: [net_ref(112), net_ref(113)]}
    pts = C.barrier_vs_epoch(nets, 4, X_ref, Y_ref, alphas=5, max_iter=3, seed=1)
    assert [p.label for p in pts] == [0.0, 1.5]
    a, b = nets[6]
    bm = C.permute(b, C.weight_matching(a, b, max_iter=3, seed=1))
    np.testing.assert_allclose(pts[1].naive.loss, C.evaluate_path(a, b, X_ref, Y_ref, 5).loss, rtol=1e-6)
    np.testing.assert_allclose(pts[1].matched.loss, C.evaluate_path(a, bm, X_ref, Y_ref, 5).loss,
                               rtol=1e-6)


# =================================================================================================
# connectivity.evaluate_stack
# =================================================================================================
@pytest.mark.reference
def test_evaluate_stack_reads_member_i_at_alpha_i():
    nets = [net_ref(s) for s in (3, 4, 5)]
    p = C.evaluate_stack(C.stack(nets), [0.0, 0.6, 1.0], X_ref, Y_ref)
    loss, acc = ref_path(nets, X_ref, Y_ref)
    np.testing.assert_allclose(p.loss, loss, rtol=1e-5)
    np.testing.assert_allclose(p.acc, acc, atol=1e-7)
    with pytest.raises(ValueError):
        C.evaluate_stack(C.stack(nets), [0.0, 1.0], X_ref, Y_ref)


# =================================================================================================
# connectivity.permute
# =================================================================================================
@pytest.mark.parametrize("bias", [True, False])
def test_permuted_net_computes_same_function(bias):
    m = net(bias=bias)
    p = C.permute(m, C.random_perms(m, seed=3))
    assert torch.allclose(p(X), m(X), atol=1e-5)
    assert not torch.allclose(p.layers[0].weight, m.layers[0].weight)


def test_permute_with_identity_is_a_copy_and_inverse_undoes():
    m = net()
    ident = [np.arange(16)] * 3
    assert all(torch.equal(u.weight, v.weight) for u, v in zip(C.permute(m, ident).layers, m.layers))
    perms = C.random_perms(m, seed=5)
    back = C.permute(C.permute(m, perms), [np.argsort(p) for p in perms])
    assert all(torch.equal(u.weight, v.weight) for u, v in zip(back.layers, m.layers))


def test_weight_matching_does_not_lower_the_objective():
    a, b = net(0), net(1)

    def score(bb):
        return sum(float(((u.weight * v.weight).sum() + (u.bias * v.bias).sum()).detach())
                   for u, v in zip(a.layers, bb.layers))
    assert score(C.permute(b, C.weight_matching(a, b))) >= score(b) - 1e-6


@pytest.mark.reference
def test_permute_convention_by_hand():
    m = net_ref(2, depth=2)
    p0, p1 = np.array([2, 0, 4, 1, 3]), np.array([1, 3, 0, 4, 2])
    q = C.permute(m, [p0, p1])
    (w, b), (wq, bq) = npw(m), npw(q)
    np.testing.assert_array_equal(wq[0], w[0][p0])            # unit i is old unit p0[i]
    np.testing.assert_array_equal(bq[0], b[0][p0])
    np.testing.assert_array_equal(wq[1], w[1][p1][:, p0])
    np.testing.assert_array_equal(bq[1], b[1][p1])
    np.testing.assert_array_equal(wq[2], w[2][:, p1])
    np.testing.assert_array_equal(bq[2], b[2])
    torch.testing.assert_close(q(X_ref), m(X_ref))
    nb = net_ref(2, bias=False)
    torch.testing.assert_close(C.permute(nb, [p0, p1])(X_ref), nb(X_ref))


@pytest.mark.reference
@pytest.mark.parametrize("noise", [0.0, 0.4])
def test_planted_permutation_check_is_its_composition(noise):
    m = net_ref(13, depth=3, width=W)
    r = C.planted_permutation_check(m, X_ref, Y_ref, seed=3, max_iter=7, noise=noise)
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
    path = C.evaluate_path(m, C.permute(shuffled, found), X_ref, Y_ref, 11)
    un = C.evaluate_path(m, shuffled, X_ref, Y_ref, 11)
    np.testing.assert_allclose(r["path"].loss, path.loss, rtol=1e-6)
    np.testing.assert_allclose(r["unaligned_path"].loss, un.loss, rtol=1e-6)
    assert r["barrier"] == pytest.approx(path.loss_barrier, abs=1e-7)
    assert r["unaligned_barrier"] == pytest.approx(un.loss_barrier, abs=1e-7)
    assert 0 <= r["max_logit_diff"] < 1e-12
    if not noise:
        assert r["recovered"] == [1.0, 1.0, 1.0]


# =================================================================================================
# connectivity.random_perms
# =================================================================================================
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weight_matching_recovers_planted_permutation(seed):
    m = net(seed=seed, width=24)
    planted = C.random_perms(m, seed=seed + 10)
    found = C.weight_matching(m, C.permute(m, planted))
    assert C.perm_recovery(found, planted) == [1.0, 1.0, 1.0]


def test_activation_matching_recovers_planted_permutation():
    m = make_mlp(0, 6, 12, 3, 4, act="tanh")  # no dead units, so no ties between silent units
    planted = C.random_perms(m, seed=4)
    found = C.activation_matching(m, C.permute(m, planted), X)
    assert C.perm_recovery(found, planted) == [1.0, 1.0, 1.0]


@pytest.mark.reference
def test_random_perms_are_numpy_default_rng_permutations():
    m = net_ref(0, depth=3, width=7)
    rng = np.random.default_rng(12)
    want = [rng.permutation(7) for _ in range(3)]
    got = C.random_perms(m, seed=12)
    assert len(got) == 3
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert not all(np.array_equal(u, v) for u, v in zip(got, C.random_perms(m, seed=13)))
    np.testing.assert_array_equal(C.random_perms(m)[0], np.random.default_rng(0).permutation(7))


# =================================================================================================
# connectivity.weight_matching
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize("depth,bias,seed,max_iter", [(1, True, 0, 100), (3, True, 0, 100),
                                                      (3, False, 7, 100), (3, True, 5, 1)])
def test_weight_matching_is_coordinate_descent_with_brute_force_layers(depth, bias, seed,
                                                                         max_iter):
    a, b = net_ref(10, depth=depth, bias=bias), net_ref(11, depth=depth, bias=bias)
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


@pytest.mark.reference
def test_weight_matching_one_layer_is_the_assignment_of_scipy():
    a, b = net_ref(20, depth=1), net_ref(21, depth=1)
    (wa, ba), (wb, bb) = npw(a), npw(b)
    cost = np.zeros((W, W))
    for i in range(W):
        for j in range(W):  # similarity of a's unit i with b's unit j, in and out weights, bias
            cost[i, j] = wa[0][i] @ wb[0][j] + ba[0][i] * bb[0][j] + wa[1][:, i] @ wb[1][:, j]
    want = linear_sum_assignment(-cost)[1]
    np.testing.assert_array_equal(C.weight_matching(a, b)[0], want)


@pytest.mark.reference
def test_weight_matching_max_iter_and_seed_matter_somewhere():
    found_iter = found_seed = False
    for s in range(12):
        a, b = net_ref(30 + s, depth=3), net_ref(60 + s, depth=3)
        one, many = C.weight_matching(a, b, max_iter=1), C.weight_matching(a, b)
        found_iter |= not all(np.array_equal(u, v) for u, v in zip(one, many))
        other = C.weight_matching(a, b, seed=4)
        found_seed |= not all(np.array_equal(u, v) for u, v in zip(other, many))
        if found_iter and found_seed:
            break
    assert found_iter and found_seed


@pytest.mark.reference
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


# =================================================================================================
# connectivity.activation_matching
# =================================================================================================
def test_activation_matching_methods_and_bad_method():
    m = make_mlp(0, 6, 12, 3, 4, act="tanh")
    planted = C.random_perms(m, seed=4)
    found = C.activation_matching(m, C.permute(m, planted), X, method="pearson")
    assert C.perm_recovery(found, planted) == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="method"):
        C.activation_matching(m, m, X, method="cosine")


@pytest.mark.reference
@pytest.mark.parametrize("method", ["cross", "pearson"])
def test_activation_matching_against_brute_force(method):
    a, b = net_ref(40, depth=2, act="tanh"), net_ref(41, depth=2, act="tanh")
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


@pytest.mark.reference
def test_activation_matching_methods_disagree_on_shifted_inputs():
    a, b = net_ref(40, depth=2, act="tanh"), net_ref(41, depth=2, act="tanh")
    x, _ = data(n=31, shift=1.5)
    c, p = C.activation_matching(a, b, x), C.activation_matching(a, b, x, method="pearson")
    assert not all(np.array_equal(u, v) for u, v in zip(c, p))


# =================================================================================================
# connectivity.perm_recovery
# =================================================================================================
@pytest.mark.reference
def test_perm_recovery_by_hand():
    assert C.perm_recovery([np.array([1, 2, 0])], [np.array([2, 0, 1])]) == [1.0]
    assert C.perm_recovery([np.array([1, 2, 0])], [np.array([1, 2, 0])]) == [0.0]
    got = C.perm_recovery([np.array([0, 2, 1, 3]), np.arange(3)],
                          [np.arange(4), np.array([0, 2, 1])])
    assert got == [0.5, pytest.approx(1 / 3)]


# =================================================================================================
# connectivity.cosine_dissimilarity
# =================================================================================================
def test_llfc_of_identical_features_is_zero_and_scale_invariant():
    m = net()
    assert max(C.llfc_dissimilarity(m, m, X, 0.3)) < 1e-6
    u = torch.rand(10, 5)
    assert C.cosine_dissimilarity(u, 3 * u) < 1e-6
    assert C.cosine_dissimilarity(torch.zeros(3, 4), torch.zeros(3, 4)) == 0.0
    assert C.cosine_dissimilarity(torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])) == \
        pytest.approx(1.0)


@pytest.mark.reference
def test_cosine_dissimilarity_by_hand():
    u = torch.tensor([[3.0, 4.0], [1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    v = torch.tensor([[4.0, 3.0], [-2.0, 0.0], [0.0, 0.0], [1.0, 2.0]])
    # rows: 1 - 24/25, 1 - (-1), identical zeros 0, zero vs non-zero 1
    assert C.cosine_dissimilarity(u, v) == pytest.approx((0.04 + 2 + 0 + 1) / 4)
    assert C.cosine_dissimilarity(v, u) == pytest.approx((0.04 + 2 + 0 + 1) / 4)
    with pytest.raises(ValueError):
        C.cosine_dissimilarity(u, v[:3])


@pytest.mark.mutation
def test_cosine_dissimilarity_of_a_zero_and_a_nonzero_row_is_one():
    """Only two zero rows count as identical; a zero row against a non-zero one has cos 0."""
    u = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    v = torch.tensor([[1.0, 2.0], [1.0, 0.0]])
    assert cosine_dissimilarity(u, v) == pytest.approx(0.5)


# =================================================================================================
# connectivity.llfc_dissimilarity
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize("alpha", [0.3, 0.85])
def test_llfc_dissimilarity_against_numpy(alpha):
    a, b = net_ref(50, depth=2), net_ref(51, depth=2)
    fa, fb = np_features(a, X_ref), np_features(b, X_ref)
    fm = np_features(C.lerp(a, b, alpha), X_ref)
    want = [np_cos_dis(m, (1 - alpha) * u + alpha * v) for u, v, m in zip(fa, fb, fm)]
    got = C.llfc_dissimilarity(a, b, X_ref, alpha)
    assert len(got) == 3
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    wrong = [np_cos_dis(m, alpha * u + (1 - alpha) * v) for u, v, m in zip(fa, fb, fm)]
    assert not np.allclose(got, wrong, rtol=1e-3)
    np.testing.assert_allclose(C.llfc_dissimilarity(b, a, X_ref, 1 - alpha), got, rtol=1e-4,
                               atol=1e-6)


@pytest.mark.reference
def test_llfc_default_alpha_is_one_half_and_profile_stacks_hidden_layers():
    a, b = net_ref(52, depth=3), net_ref(53, depth=3)
    assert C.llfc_dissimilarity(a, b, X_ref) == C.llfc_dissimilarity(a, b, X_ref, 0.5)
    prof = C.llfc_profile(a, b, X_ref, [0.2, 0.5, 0.9])
    assert prof.shape == (3, 3)
    for i, al in enumerate([0.2, 0.5, 0.9]):
        np.testing.assert_allclose(prof[i], C.llfc_dissimilarity(a, b, X_ref, al)[:-1], rtol=1e-12)
    assert not np.allclose(prof[0], prof[2])


@pytest.mark.reference
def test_llfc_is_symmetric_under_swapping_the_endpoints():
    a, b = make_mlp(0, 5, 16, 2, 3), make_mlp(1, 5, 16, 2, 3)
    x = _blobs()[0].float()
    for alpha in (0.2, 0.7):
        ab = C.llfc_dissimilarity(a, b, x, alpha)
        ba = C.llfc_dissimilarity(b, a, x, 1 - alpha)
        assert ab == pytest.approx(ba, abs=1e-5)
    # at alpha = 0 the interpolated net is `a` itself and so are its target features
    assert max(C.llfc_dissimilarity(a, b, x, 0.0)) == pytest.approx(0.0, abs=1e-5)
    assert max(C.llfc_dissimilarity(a, b, x, 0.3)) > 1e-4  # distinct nets: not trivially zero


@pytest.mark.mutation
def test_llfc_weights_alpha_on_b_and_one_minus_alpha_on_a():
    """At alpha = 0 (1) the interpolated net is a (b), so its features are a's (b's) exactly and
    every layer's LLFC dissimilarity is 0; with identity activations the first hidden layer is
    linear in the weights, so it is 0 at every alpha."""
    x = torch.randn(30, 4, generator=torch.Generator().manual_seed(0))
    a, b = make_mlp(0, 4, 6, 2, 3), make_mlp(1, 4, 6, 2, 3)
    for alpha in (0.0, 1.0):
        assert max(llfc_dissimilarity(a, b, x, alpha)) < 1e-6
    a, b = make_mlp(0, 4, 6, 2, 3, act="identity"), make_mlp(1, 4, 6, 2, 3, act="identity")
    for alpha in (0.1, 0.3, 0.8):
        assert llfc_dissimilarity(a, b, x, alpha)[0] < 1e-6


# =================================================================================================
# connectivity.commutativity_residual
# =================================================================================================
def test_commutativity_residual_closed_form():
    m = net()
    assert max(C.commutativity_residual(m, m, X)) < 1e-7
    a, b = net(0), net(1)
    ha, hb = a.features(X)[0], b.features(X)[0]
    wa, wb = a.layers[1].weight, b.layers[1].weight
    want = ((ha @ wa.T + hb @ wb.T - hb @ wa.T - ha @ wb.T).norm() / (ha @ wa.T + hb @ wb.T).norm())
    assert C.commutativity_residual(a, b, X)[0] == pytest.approx(float(want), rel=1e-4)


@pytest.mark.reference
def test_commutativity_residual_every_layer_against_numpy_and_symmetric():
    a, b = net_ref(54, depth=3), net_ref(55, depth=3)
    fa, fb = np_features(a, X_ref)[:-1], np_features(b, X_ref)[:-1]
    wa, wb = npw(a)[0], npw(b)[0]
    want = []
    for l in range(3):
        A, B = wa[l + 1], wb[l + 1]
        same = fa[l] @ A.T + fb[l] @ B.T
        cross = fb[l] @ A.T + fa[l] @ B.T
        want.append(np.linalg.norm(same - cross) / np.linalg.norm(same))
    got = C.commutativity_residual(a, b, X_ref)
    np.testing.assert_allclose(got, want, rtol=1e-4)
    np.testing.assert_allclose(C.commutativity_residual(b, a, X_ref), got, rtol=1e-5)


# =================================================================================================
# connectivity.commutativity_bound_ratio
# =================================================================================================
def test_commutativity_bound_ratio_known_answers():
    a, b = net(0), net(1)
    r = C.commutativity_bound_ratio(a, b, X)
    assert len(r) == 3 and all(0.0 <= v <= 1.0 + 1e-6 for v in r)
    assert C.commutativity_bound_ratio(a, a, X) == [0.0, 0.0, 0.0]  # no difference: 0/0 -> 0
    # residual / bound reproduces the residual of commutativity_residual up to the norms
    res = C.commutativity_residual(a, b, X)
    with torch.no_grad():
        fa, fb = a.features(X)[:-1], b.features(X)[:-1]
    for l in range(3):
        dw = (a.layers[l + 1].weight - b.layers[l + 1].weight).detach()
        same = fa[l] @ a.layers[l + 1].weight.detach().T + fb[l] @ b.layers[l + 1].weight.detach().T
        bound = torch.linalg.matrix_norm(dw, ord=2) * (fa[l] - fb[l]).norm()
        assert r[l] == pytest.approx(float(res[l] * same.norm() / bound), rel=1e-4)
    # permuting both networks the same way changes nothing
    p = C.random_perms(a, seed=3)
    assert C.commutativity_bound_ratio(C.permute(a, p), C.permute(b, p), X) == \
        pytest.approx(r, rel=1e-4)


def test_commutativity_bound_ratio_is_one_for_a_rank_one_case():
    # one hidden layer; the two nets differ in one output weight of one unit only, and the
    # feature difference lies in that unit: the residual equals its bound
    a = make_mlp(0, 6, 4, 1, 3)
    b = make_mlp(0, 6, 4, 1, 3)
    with torch.no_grad():
        b.layers[0].weight[1] += 1.0
        b.layers[1].weight[:, 1] += 1.0
    assert C.commutativity_bound_ratio(a, b, X)[0] == pytest.approx(1.0, abs=1e-5)


# =================================================================================================
# connectivity.logit_interpolation
# =================================================================================================
def test_logit_interpolation_obeys_its_bound():
    for s in range(3):
        a, b = net(s), net(s + 10)
        r = C.logit_interpolation(a, b, X, Y, 7)
        assert r["lerp_error"] <= r["bound"] + 1e-9
        assert r["bound"] == pytest.approx(r["err_a"] + r["err_b"])
    a = net(0)
    r = C.logit_interpolation(a, a, X, Y, 5)  # a pair of copies: the path is one network
    assert r["path_error"] == r["lerp_error"] == pytest.approx(r["err_a"])
    assert r["bound"] == pytest.approx(2 * r["err_a"])


# =================================================================================================
# connectivity.endpoint_dissimilarity
# =================================================================================================
@pytest.mark.reference
def test_endpoint_dissimilarity_against_numpy():
    a, b = net_ref(56, depth=2, act="tanh"), net_ref(57, depth=2, act="tanh")
    want = [np_cos_dis(u, v) for u, v in zip(np_features(a, X_ref), np_features(b, X_ref))]
    np.testing.assert_allclose(C.endpoint_dissimilarity(a, b, X_ref), want, rtol=1e-4, atol=1e-6)


# =================================================================================================
# connectivity.preactivations
# =================================================================================================
def test_repair_keeps_endpoints_and_matches_target_statistics():
    a, b = net(0), net(1)
    stk = C.repair_stack(a, b, [0.0, 0.5, 1.0], X)
    out = stk(X)
    assert torch.allclose(out[0], a(X), atol=1e-4) and torch.allclose(out[2], b(X), atol=1e-4)
    mid = stk.member(1)
    z = C.preactivations(mid, X)
    za, zb = C.preactivations(a, X), C.preactivations(b, X)
    for l in range(3):
        live = (za[l].std(0) + zb[l].std(0)) > 1e-3
        assert torch.allclose(z[l].mean(0), (za[l].mean(0) + zb[l].mean(0)) / 2, atol=1e-4)
        assert torch.allclose(z[l].std(0)[live], ((za[l].std(0) + zb[l].std(0)) / 2)[live],
                              rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="biases"):
        C.repair_stack(net(bias=False), net(1, bias=False), [0.5], X)


@pytest.mark.reference
@pytest.mark.parametrize("act", ["relu", "tanh"])
def test_preactivations_against_numpy(act):
    m = net_ref(58, depth=3, act=act)
    ws, bs = npw(m)
    pre, _, _ = np_forward(ws, bs, X_ref.double().numpy(), act)
    got = C.preactivations(m, X_ref)
    assert len(got) == 3
    for g, w in zip(got, pre):
        np.testing.assert_allclose(g.double().numpy(), w, rtol=1e-5, atol=1e-5)


# =================================================================================================
# connectivity.weak_additivity
# =================================================================================================
def test_endpoint_dissimilarity_and_weak_additivity():
    m = net()
    assert max(C.endpoint_dissimilarity(m, m, X)) < 1e-6
    assert max(C.weak_additivity(m, m, X)) < 1e-6          # relu(2z) = 2 relu(z)
    a, b = net(0), net(1)
    za, zb = C.preactivations(a, X)[0], C.preactivations(b, X)[0]
    want = C.cosine_dissimilarity(torch.relu(za) + torch.relu(zb), torch.relu(za + zb))
    assert C.weak_additivity(a, b, X)[0] == pytest.approx(want)
    assert C.weak_additivity(a, b, X)[0] > 0.01


@pytest.mark.reference
@pytest.mark.parametrize("act", ["relu", "leaky_relu"])
def test_weak_additivity_against_numpy(act):
    a, b = net_ref(60, depth=2, act=act), net_ref(61, depth=2, act=act)
    za = np_forward(*npw(a), X_ref.double().numpy(), act)[0]
    zb = np_forward(*npw(b), X_ref.double().numpy(), act)[0]
    s = ACT[act]
    want = [np_cos_dis(s(u) + s(v), s(u + v)) for u, v in zip(za, zb)]
    got = C.weak_additivity(a, b, X_ref)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert min(got) > 1e-3
    np.testing.assert_allclose(C.weak_additivity(b, a, X_ref), got, rtol=1e-5)


# =================================================================================================
# connectivity.repair_stack
# =================================================================================================
def test_repair_stats_b_default_and_null():
    a, b = net(0), net(1)
    al = [0.0, 0.5, 1.0]
    plain = C.repair_stack(a, b, al, X)
    same = C.repair_stack(a, b, al, X, stats_b=b)
    assert all(torch.equal(u, v) for u, v in zip(plain.weights, same.weights))
    # a permuted copy of b as stats_b: b's statistics go to the wrong units, a's stay
    shuffled = C.repair_stack(a, b, al, X, stats_b=C.permute(b, C.random_perms(b, seed=4)))
    assert torch.allclose(shuffled.weights[0][0], plain.weights[0][0])  # alpha = 0: a alone
    assert not torch.allclose(shuffled.weights[0][1], plain.weights[0][1])
    with pytest.raises(ValueError, match="stats_b"):
        C.repair_stack(a, b, al, X, stats_b=net(2, width=8))


def test_repair_path_reuses_its_statistics_pass():
    # statistics on the evaluation inputs: the repair's own forward pass gives the path,
    # the same as evaluating the repaired stack afresh (and with other statistics inputs)
    a, b = net(0), net(1)
    y = torch.arange(len(X)) % a.layers[-1].weight.shape[0]
    for mode in ("full", "mean", "layer"):
        for xs in (X, X.clone(), X[: len(X) // 2]):
            got = C.repair_path(a, b, xs, X, y, [0.0, 0.3, 1.0], mode=mode)
            ref = C.evaluate_stack(C.repair_stack(a, b, [0.0, 0.3, 1.0], xs, mode=mode),
                                   [0.0, 0.3, 1.0], X, y)
            assert np.allclose(got.loss, ref.loss, atol=1e-5)
            assert np.allclose(got.acc, ref.acc)


def _repair_case(seed_a, seed_b, data_seed):
    """Two depth-2 reference networks, 40 inputs and each network's pre-activations on them."""
    a, b = net_ref(seed_a, depth=2), net_ref(seed_b, depth=2)
    x, _ = data(n=40, seed=data_seed)
    za = np_forward(*npw(a), x.double().numpy())[0]
    zb = np_forward(*npw(b), x.double().numpy())[0]
    return a, b, x, za, zb


@pytest.mark.reference
def test_repair_modes_mean_only_and_per_layer():
    a, b, x, za, zb = _repair_case(74, 75, data_seed=5)
    al = [0.0, 0.4, 1.0]
    full = C.repair_stack(a, b, al, x)
    for mode in ("mean", "layer"):
        s = C.repair_stack(a, b, al, x, mode=mode)
        for i, t in enumerate(al):
            m, lin = s.member(i), npw(C.lerp(a, b, t))[0]
            zm = np_forward(*npw(m), x.double().numpy())[0]
            mu_t = (1 - t) * za[0].mean(0) + t * zb[0].mean(0)
            np.testing.assert_allclose(zm[0].mean(0), mu_t, atol=2e-5)  # means reset
            ratio = npw(m)[0][0] / lin[0]  # first layer: one factor (mean) or one per layer
            np.testing.assert_allclose(ratio, ratio[0, 0] * np.ones_like(ratio), rtol=1e-4)
            if mode == "mean":
                np.testing.assert_allclose(ratio, 1.0, rtol=1e-5)
            else:  # the layer's mean deviation is the mean target deviation
                sd_t = (1 - t) * za[0].std(0, ddof=1) + t * zb[0].std(0, ddof=1)
                assert zm[0].std(0, ddof=1).mean() == pytest.approx(sd_t.mean(), rel=1e-4)
    assert not torch.allclose(full.weights[0][1], s.weights[0][1])
    with pytest.raises(ValueError, match="mode"):
        C.repair_stack(a, b, al, x, mode="unit")


@pytest.mark.reference
def test_repair_stack_statistics_and_folding():
    a, b, x, za, zb = _repair_case(70, 71, data_seed=3)
    al = [0.0, 0.3, 1.0]
    s = C.repair_stack(a, b, al, x)
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


@pytest.mark.reference
def test_repair_eps_leaves_flat_units_unscaled_but_shifted():
    a, b = net_ref(72, depth=1), net_ref(73, depth=1)
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


# =================================================================================================
# connectivity.repair_path
# =================================================================================================
@pytest.mark.reference
def test_repair_path_takes_statistics_on_x_stats_and_evaluates_on_x():
    a, b = net_ref(74, depth=2), net_ref(75, depth=2)
    xs, _ = data(n=40, seed=6, shift=0.5)
    al = [0.0, 0.4, 1.0]
    p = C.repair_path(a, b, xs, X_ref, Y_ref, al)
    want = C.evaluate_stack(C.repair_stack(a, b, al, xs), al, X_ref, Y_ref)
    np.testing.assert_allclose(p.loss, want.loss, rtol=1e-6)
    np.testing.assert_allclose(p.acc, want.acc)
    other = C.repair_path(a, b, X_ref, X_ref, Y_ref, al)
    assert not np.allclose(other.loss[1], p.loss[1], rtol=1e-4)
    assert len(C.repair_path(a, b, xs, X_ref, Y_ref).alphas) == 25


# =================================================================================================
# connectivity.bezier_stack
# =================================================================================================
@pytest.mark.reference
def test_bezier_stack_by_hand_and_reversal():
    a, m, b = net_ref(80), net_ref(81), net_ref(82)
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
    nb = C.bezier_stack(net_ref(0, bias=False), net_ref(1, bias=False), net_ref(2, bias=False), [0.6])
    want = 0.16 * npw(net_ref(0, bias=False))[0][0] + 0.48 * npw(net_ref(1, bias=False))[0][0] \
        + 0.36 * npw(net_ref(2, bias=False))[0][0]
    np.testing.assert_allclose(npw(nb.member(0))[0][0], want, rtol=1e-5, atol=1e-6)


# =================================================================================================
# connectivity.fit_bezier
# =================================================================================================
@pytest.mark.reference
def test_fit_bezier_against_a_hand_written_sgd_loop():
    a, b = net_ref(90, depth=1), net_ref(91, depth=1)
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


# =================================================================================================
# connectivity.evaluate_bezier
# =================================================================================================
@pytest.mark.reference
def test_evaluate_bezier_is_the_path_of_the_curve():
    a, m, b = net_ref(80), net_ref(81), net_ref(82)
    p = C.evaluate_bezier(a, m, b, X_ref, Y_ref, [0.0, 0.3, 1.0])
    loss, acc = ref_path([C.bezier_stack(a, m, b, [t]).member(0) for t in (0.0, 0.3, 1.0)], X_ref, Y_ref)
    np.testing.assert_allclose(p.loss, loss, rtol=1e-5)
    np.testing.assert_allclose(p.acc, acc)
    assert len(C.evaluate_bezier(a, m, b, X_ref, Y_ref).alphas) == 25


# =================================================================================================
# connectivity.average
# =================================================================================================
def test_disagreement_ratio_known_answers():
    a, b = net(0), net(1)
    assert C.disagreement_ratio(a, a, X) == 0.0  # the soup of a copy is the ensemble
    r = C.disagreement_ratio(a, b, X)
    assert r >= 0.0 and r == pytest.approx(C.disagreement_ratio(b, a, X))
    ens = (a(X) + b(X)).argmax(-1)
    soup = (C.average([a, b])(X).argmax(-1) == ens).float().mean()
    single = max(float((m(X).argmax(-1) == ens).float().mean()) for m in (a, b))
    assert r == pytest.approx(float((1 - soup) / max(1 - single, 1 / len(X))))


@pytest.mark.reference
def test_average_of_three_by_hand():
    ms = [net_ref(s, act="tanh") for s in (1, 2, 3)]
    avg = C.average(ms)
    ps = [npw(m) for m in ms]
    for l in range(3):
        np.testing.assert_allclose(npw(avg)[0][l], sum(p[0][l] for p in ps) / 3, rtol=1e-6,
                                   atol=1e-7)
        np.testing.assert_allclose(npw(avg)[1][l], sum(p[1][l] for p in ps) / 3, rtol=1e-6,
                                   atol=1e-7)
    assert avg.act_name == "tanh"
    nb = C.average([net_ref(1, bias=False), net_ref(2, bias=False)])
    assert nb.layers[0].bias is None


# =================================================================================================
# connectivity.task_vector
# =================================================================================================
@pytest.mark.reference
def test_task_vector_layout_and_values():
    pre, ft = net_ref(1, depth=2), net_ref(2, depth=2, out=7)  # heads may differ in size
    tau = C.task_vector(pre, ft)
    (wp, bp), (wf, bf) = npw(pre), npw(ft)
    want = [wf[0] - wp[0], bf[0] - bp[0], wf[1] - wp[1], bf[1] - bp[1]]
    assert len(tau) == 4
    for t, w in zip(tau, want):
        np.testing.assert_allclose(t.double().numpy(), w, rtol=1e-6, atol=1e-7)
    tb = C.task_vector(net_ref(1, bias=False), net_ref(2, bias=False))
    assert len(tb) == 2 and tuple(tb[1].shape) == (W, W)


# =================================================================================================
# connectivity.apply_task_vectors
# =================================================================================================
def test_average_and_task_vectors():
    pre, ft1, ft2 = net(0), net(1), net(2)
    avg = C.average([ft1, ft2])
    assert torch.allclose(avg.layers[1].weight, (ft1.layers[1].weight + ft2.layers[1].weight) / 2)
    taus = [C.task_vector(pre, ft1)]
    merged = C.apply_task_vectors(pre, taus, 1.0, ft1)  # pre + tau = ft1
    assert all(torch.allclose(u.weight, v.weight, atol=1e-6) for u, v in zip(merged.layers, ft1.layers))
    same = C.apply_task_vectors(pre, taus, 0.0, pre)
    assert torch.allclose(same(X), pre(X))


@pytest.mark.reference
def test_apply_task_vectors_by_hand_with_two_vectors():
    pre, f1, f2 = net_ref(1, depth=2), net_ref(2, depth=2), net_ref(3, depth=2)
    head = net_ref(4, depth=2, out=6)
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
    nb = [net_ref(s, bias=False) for s in (1, 2, 3)]
    mb = C.apply_task_vectors(nb[0], [C.task_vector(nb[0], nb[1])], -0.4, nb[2])
    np.testing.assert_allclose(npw(mb)[0][1], 1.4 * npw(nb[0])[0][1] - 0.4 * npw(nb[1])[0][1],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(npw(mb)[0][2], npw(nb[2])[0][2])
    with pytest.raises(ValueError):
        C.apply_task_vectors(pre, [taus[0][:3]], 1.0, head)


# =================================================================================================
# connectivity.with_head
# =================================================================================================
@pytest.mark.reference
def test_with_head_replaces_only_the_output_layer():
    body = net_ref(5, depth=2)
    hw, hb = torch.randn(7, W), torch.randn(7)
    m = C.with_head(body, hw, hb)
    assert torch.equal(m.layers[-1].weight, hw) and torch.equal(m.layers[-1].bias, hb)
    for l in range(2):
        assert torch.equal(m.layers[l].weight, body.layers[l].weight)
        assert torch.equal(m.layers[l].bias, body.layers[l].bias)
    assert m(X_ref).shape == (len(X_ref), 7)
    with pytest.raises(ValueError):
        C.with_head(body, torch.randn(7, W + 1), hb)


# =================================================================================================
# connectivity.accuracy
# =================================================================================================
@pytest.mark.reference
def test_accuracy_by_hand():
    m = net_ref(6)
    pred = np_features(m, X_ref)[-1].argmax(1)
    y = torch.as_tensor(pred.copy())
    y[:5] = (y[:5] + 1) % K
    assert C.accuracy(m, X_ref, y) == pytest.approx((len(X_ref) - 5) / len(X_ref))


@pytest.mark.reference
def test_task_arithmetic_accuracies_and_best_lambda():
    base = net_ref(121, depth=1, out=5)
    ends = [net_ref(301, depth=1, out=5), net_ref(401, depth=1, out=5)]
    xt, _ = data(n=15, seed=13)
    with torch.no_grad():  # each task's labels are its fine-tuned model's predictions
        tr = [(X_ref, ends[t](X_ref).argmax(1)) for t in range(2)]
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


@pytest.mark.reference
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


# =================================================================================================
# connectivity.ConnectivityConfig
# =================================================================================================
def test_configs_construct():
    assert C.ConnectivityConfig.quick().validate().widths[-1] == 512
    full = C.ConnectivityConfig.full().validate()
    assert full.widths[-1] > 512 and full.recipe.epochs > C.ConnectivityConfig.quick().recipe.epochs


@pytest.mark.reference
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


@pytest.mark.boundary
def test_cross_task_lambdas_must_not_be_empty():
    with pytest.raises((ValueError, TypeError), match="lambdas"):
        C.ConnectivityConfig(lambdas=())


# =================================================================================================
# connectivity.train_pairs
# =================================================================================================
@pytest.mark.reference
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


def test_train_pairs_twin_shares_a_s_init_not_its_minibatch_order():
    cfg = tiny_cfg()
    x, y = data(n=20, seed=8)
    twin, snaps = {}, {}
    out = C.train_pairs(cfg, x, y, seed=1, twin=twin, snapshots=snaps)
    assert sorted(twin) == [4]   # the widest width only
    s = C._seeds(1, 11, 2)
    want, _ = ref_fit_member(make_mlp(s[0], D, 4, 1, K), x, y, cfg.recipe, 20_000 + s[0])
    same_params(twin[4], want, atol=1e-6)
    for i in range(2):   # A and B are what they are without the twin
        want, _ = ref_fit_member(make_mlp(s[i], D, 4, 1, K), x, y, cfg.recipe, 10_000 + s[i])
        same_params(out[4][i], want, atol=1e-6)
    assert all(len(v) == 2 for v in snaps.values())
    with pytest.raises(TypeError, match="twin"):
        C.train_pairs(cfg, x, y, seed=1, twin=[])


# =================================================================================================
# connectivity.weight_distance and perturb
# =================================================================================================
def test_weight_distance_by_hand_and_perturb_moves_exactly_that_far():
    a, b = make_mlp(0, 5, 4, 2, 3), make_mlp(1, 5, 4, 2, 3)
    want = float(np.sqrt(sum(((p - q) ** 2).sum().item()
                              for p, q in zip(a.parameters(), b.parameters()))))
    assert C.weight_distance(a, b) == pytest.approx(want, rel=1e-6)
    assert C.weight_distance(a, a) == 0.0
    assert C.weight_distance(a, b) == pytest.approx(C.weight_distance(b, a))
    for d in (0.0, 0.5, 3.0):
        m = C.perturb(a, d, seed=4)
        assert C.weight_distance(a, m) == pytest.approx(d, abs=1e-5)
    # the direction is add_noise's, rescaled: same seed, same direction
    n = C.add_noise(a, 1.0, 4)
    m = C.perturb(a, 2.0, seed=4)
    u = torch.cat([(q - p).flatten() for p, q in zip(a.parameters(), n.parameters())])
    v = torch.cat([(q - p).flatten() for p, q in zip(a.parameters(), m.parameters())])
    assert torch.allclose(v, u * (2.0 / u.norm()), atol=1e-5)
    with pytest.raises(ValueError):
        C.weight_distance(a, make_mlp(1, 5, 6, 2, 3))
    with pytest.raises(ValueError, match="distance"):
        C.perturb(a, -1.0)


# =================================================================================================
# connectivity.align
# =================================================================================================
@pytest.mark.reference
def test_align_is_matching_then_four_paths():
    a, b = net_ref(100, depth=2), net_ref(101, depth=2)
    xt, yt = data(n=19, seed=9)
    r = C.align(a, b, X_ref, Y_ref, xt, yt, alphas=6, max_iter=3, seed=2)
    perms = C.weight_matching(a, b, max_iter=3, seed=2)
    for u, v in zip(r.perms, perms):
        np.testing.assert_array_equal(u, v)
    bm = C.permute(b, perms)
    same_params(r.b_matched, bm)
    for got, (m, x, y) in zip([r.naive, r.matched, r.naive_train, r.matched_train],
                              [(b, xt, yt), (bm, xt, yt), (b, X_ref, Y_ref), (bm, X_ref, Y_ref)]):
        want = C.evaluate_path(a, m, x, y, 6)
        assert len(got.alphas) == 6
        np.testing.assert_allclose(got.loss, want.loss, rtol=1e-6)


# =================================================================================================
# connectivity.spawn_experiment
# =================================================================================================
def test_spawn_control_first_stable_and_sweeps():
    x, y = torch.randn(60, 6), torch.randint(0, 3, (60,))
    cfg = C.ConnectivityConfig(widths=(8, 16), spawn_width=8, spawn_pairs=1,
                               spawn_fractions=(0.0, 0.5), alphas=5,
                               spawn_recipe=C.Recipe(lr=0.05, epochs=2, batch_size=20),
                               recipe=C.Recipe(lr=0.05, epochs=2, batch_size=20),
                               depths=(1,), depth_width=8, epoch_width=8,
                               epoch_snapshots=(0, 1))
    sp = C.spawn_experiment(cfg, x, y, x, y, seed=0)
    assert sp.independent is not None and np.isfinite(sp.independent_error_barrier)
    assert sp.error_barrier.shape == (2, 1)
    sp.error_barrier = np.array([[5.0], [1.0]])
    assert sp.first_stable == pytest.approx(sp.fractions[1])
    sp.error_barrier = np.array([[1.0], [5.0]])
    assert sp.first_stable is None
    snaps = {}
    pairs = C.train_pairs(cfg, x, y, seed=0, snapshots=snaps)
    assert sorted(snaps) == [0, 3, 6] and torch.equal(snaps[6][0].layers[0].weight,
                                                     pairs[8][0].layers[0].weight)
    ev = C.barrier_vs_epoch(snaps, 3, x, y, alphas=5)
    assert [p.label for p in ev] == [0.0, 1.0, 2.0]
    assert [p.label for p in C.depth_sweep(cfg, x, y)] == [1]


def test_spawn_experiment_unshared_null():
    x, y = torch.randn(60, 6), torch.randint(0, 3, (60,))
    cfg = C.ConnectivityConfig(spawn_width=8, spawn_pairs=2, spawn_fractions=(0.0, 0.25, 0.5),
                               alphas=5, spawn_recipe=C.Recipe(lr=0.05, epochs=2, batch_size=20))
    plain = C.spawn_experiment(cfg, x, y, x, y, seed=1, control=False)
    sp = C.spawn_experiment(cfg, x, y, x, y, seed=1, control=False, unshared=True)
    assert plain.unshared_error_barrier is None
    assert sp.unshared_error_barrier.shape == (2,)
    np.testing.assert_array_equal(sp.error_barrier, plain.error_barrier)  # main run unchanged


@pytest.mark.reference
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


# =================================================================================================
# connectivity.task_labels
# =================================================================================================
def test_task_labels():
    y = torch.arange(10)
    assert C.task_labels(y, "pretrain").tolist() == [0] * 5 + [1] * 5
    assert C.task_labels(y, 0).tolist() == [0, 1, 2, 3, 4] * 2
    assert C.task_labels(y, 1).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]


@pytest.mark.reference
def test_task_labels_by_hand_and_bad_tasks():
    y = torch.tensor([7, 0, 9, 4, 5, 2])
    assert C.task_labels(y, "pretrain").tolist() == [1, 0, 1, 0, 1, 0]
    assert C.task_labels(y, 0).tolist() == [2, 0, 4, 4, 0, 2]
    assert C.task_labels(y, 1).tolist() == [3, 0, 4, 2, 2, 1]
    for bad in (2, True, "x", -1):
        with pytest.raises(ValueError):
            C.task_labels(y, bad)


# =================================================================================================
# connectivity.CrossTask
# =================================================================================================
@pytest.mark.reference
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


# =================================================================================================
# connectivity.cross_task_experiment
# =================================================================================================
def test_cross_task_experiment_tiny():
    x, y = torch.randn(80, 6), torch.randint(0, 10, (80,))
    r = C.Recipe(lr=0.05, epochs=1, batch_size=40, warmup=0.0)
    cfg = C.ConnectivityConfig(ctl_width=8, depth=2, spawn_recipe=r, probe_recipe=r,
                               ft_recipe=r, lambdas=(0.0, 0.5, 1.0))
    ct = C.cross_task_experiment(cfg, x, y, x, y, seed=0, x_pre=x, y_pre=y)
    assert len(ct.ctl) == len(ct.ctl_base) == len(ct.ctl_scratch) == 2
    assert ct.arith_acc.shape == (3, 2) and ct.scratch_arith_acc.shape == (3, 2)
    assert all(0 <= a <= 1 for a in ct.agreement + ct.single_agreement)
    assert ct.best_lambda in (0.0, 0.5, 1.0) and len(ct.scratch_gain_recovered) == 2
    assert sorted(ct.train_ends) == ["ft", "init", "pre", "scratch"]
    assert len(ct.random_vector_gain) == 2
    i = list(ct.lambdas).index(ct.best_lambda)
    e = ct.train_ends
    want = (ct.arith_train_acc[i, 0] - e["pre"][0]) / (e["ft"][0] - e["pre"][0])
    got = ct.train_gain_recovered[0]
    assert (np.isnan(got) and e["ft"][0] == e["pre"][0]) or got == pytest.approx(want)


# =================================================================================================
# connectivity.pretraining_sweep
# =================================================================================================
def test_pretraining_sweep_tiny():
    # seeded data: the comparison with cross_task_experiment below is on 80 points, and unseeded
    # draws (whatever the global generator holds after other tests) moved it by up to 8 points
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(80, 6, generator=g), torch.randint(0, 10, (80,), generator=g)
    r = C.Recipe(lr=0.05, epochs=2, batch_size=40, warmup=0.0)
    cfg = C.ConnectivityConfig(ctl_width=8, depth=2, spawn_recipe=r, probe_recipe=r,
                               ft_recipe=r, pretrain_epochs=(0, 1, 2), ft_runs=3)
    ps = C.pretraining_sweep(cfg, x, y, x, y, seed=0, x_pre=x, y_pre=y)
    assert ps.ctl.shape == ps.ctl_base.shape == (3, 3, 2)
    assert ps.null_ctl.shape == (3, 2) and ps.ctl_ratio.shape == (3, 3, 2)
    assert ps.displacement.shape == ps.acc.shape == (3, 2, 3) and ps.acc_probe.shape == (3, 2)
    assert ps.disagree.shape == (3, 2, 3) and ps.unshared_disagree.shape == (2, 3)
    assert (ps.displacement > 0).all() and ((ps.acc >= 0) & (ps.acc <= 1)).all()
    # the shuffled-label arm: same budget, its own CTL, averaging and displacement
    assert ps.shuffled_ctl.shape == ps.shuffled_ctl_base.shape == (3, 2)
    assert ps.shuffled_ctl_ratio.shape == (3, 2) and ps.shuffled_disagree.shape == (2, 3)
    assert ps.shuffled_displacement.shape == ps.shuffled_acc.shape == (2, 3)
    assert (ps.shuffled_displacement > 0).all()
    assert not np.allclose(ps.shuffled_ctl, ps.ctl[-1])
    # the fully pretrained body is the one cross_task_experiment pretrains (same seeds)
    ct = C.cross_task_experiment(cfg, x, y, x, y, seed=0, x_pre=x, y_pre=y)
    assert ps.acc_probe[-1].tolist() == pytest.approx(ct.acc_pre, abs=0.05)
    reuse = C.cross_task_experiment(cfg, x, y, x, y, seed=0, x_pre=x, y_pre=y, sweep=ps)
    assert reuse.pretrained is ps.pretrained and reuse.finetuned[1][1] is ps.finetuned[1][1]
    assert reuse.acc_ft[0][0] == C.accuracy(ps.finetuned[0][0], x, C.task_labels(y, 0))
    # with a sweep, the control is its arm without pretraining, at the same fine-tuning budget
    assert reuse.init is ps.start and reuse.scratch[1] is ps.start_finetuned[1][0]
    assert len(ps.start_finetuned) == 2 and len(ps.start_finetuned[0]) == 3
    w0 = C.params(ps.start)[0][0]
    assert not torch.equal(w0, C.params(ps.pretrained)[0][0])
    assert reuse.acc_scratch[0] == C.accuracy(ps.start_finetuned[0][0], x, C.task_labels(y, 0))
    # the shuffled-label arm's task addition, from its body and its first run per task
    assert ps.shuffled_finetuned[1][2] is not None and len(ps.shuffled_finetuned[0]) == 3
    lam = np.asarray(cfg.lambdas, dtype=float)
    tr = [(x, C.task_labels(y, t)) for t in (0, 1)]
    _, acc, best, lo, hi = C._task_arithmetic(
        ps.shuffled_body, [ps.shuffled_finetuned[t][0] for t in (0, 1)], lam, tr, tr)
    assert reuse.shuffled_best_lambda == best
    assert np.array_equal(reuse.shuffled_arith_train_acc, acc)
    i = list(lam).index(best)
    for t in (0, 1):
        g = reuse.shuffled_train_gain_recovered[t]
        assert (np.isnan(g) and hi[t] == lo[t]) or g == pytest.approx(
            (acc[i, t] - lo[t]) / (hi[t] - lo[t]))
    assert len(reuse.random_vector_gain) == 2
    assert all(np.isnan(v) for v in ct.shuffled_train_gain_recovered)   # no sweep, no arm
    with pytest.raises(ValueError, match="pretrain_epochs"):
        C.pretraining_sweep(C.ConnectivityConfig(ctl_width=8, depth=2, spawn_recipe=r,
                                                 pretrain_epochs=(0, 1)), x, y, x, y,
                            x_pre=x, y_pre=y)


# =================================================================================================
# connectivity.add_noise
# =================================================================================================
def test_add_noise_and_noisy_planted_check():
    m = net(width=20)
    assert all(torch.equal(u.weight, v.weight) for u, v in zip(C.add_noise(m, 0.0).layers,
                                                               m.layers))
    noisy = C.add_noise(m, 0.1, seed=3)
    rel = (noisy.layers[1].weight - m.layers[1].weight).std() / m.layers[1].weight.std()
    assert 0.05 < float(rel) < 0.2
    r = C.planted_permutation_check(m, X, Y, seed=0, noise=0.05)
    assert r["recovered"] == [1.0] * 3 and max(r["recovered_identity"]) < 0.5
    with pytest.raises(ValueError, match="scale"):
        C.add_noise(m, -1.0)


@pytest.mark.reference
def test_add_noise_is_relative_gaussian_from_one_generator():
    m = net_ref(7, depth=2)
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
    assert C.add_noise(net_ref(1, bias=False), 0.1).layers[0].bias is None


# =================================================================================================
# connectivity.planted_permutation_check
# =================================================================================================
def test_planted_check_reports_exact_symmetry():
    r = C.planted_permutation_check(net(width=20), X, Y, seed=0)
    assert r["max_logit_diff"] <= 1e-10 and r["recovered"] == [1.0] * 3 and r["barrier"] <= 1e-6


# =================================================================================================
# connectivity._seeds
# =================================================================================================
@pytest.mark.reference
def test_seeds_scheme_by_hand():
    assert C._seeds(0, 10, 2) == [10_000, 10_001]
    assert C._seeds(2, 31, 3) == [2_031_006, 2_031_007, 2_031_008]
    parts = [set(C._seeds(s, t, 4)) for s in range(3) for t in (10, 30, 31, 32, 40, 50)]
    assert len(set().union(*parts)) == sum(map(len, parts))


# =================================================================================================
# gtlib.connectivity as a whole
# =================================================================================================
@pytest.mark.reference
def test_spawning_first_stable_and_mean_by_hand():
    fr = [0.0, 0.1, 0.2, 0.3]
    s = spawning([[6.0, 4.0], [2.0, 2.0], [1.0, 2.0], [0.0, 1.0]], fr)
    np.testing.assert_allclose(s.mean_error_barrier, [5.0, 2.0, 1.5, 0.5])
    assert s.first_stable == 0.1  # a mean of exactly 2 points counts as stable
    assert spawning([[5.0], [1.0], [3.0], [1.0]], fr).first_stable == 0.3
    assert spawning([[5.0], [1.0], [1.0], [2.5]], fr).first_stable is None
    assert spawning([[1.0], [1.0], [1.0], [1.0]], fr).first_stable == 0.0


@pytest.mark.boundary
@pytest.mark.parametrize("call,error,name", SILENT + UNCLEAR)
def test_bad_input_is_refused_naming_the_argument(call, error, name):
    with pytest.raises(error, match=rf"\b{name}\b"):
        call()


def test_random_vector_gain_by_hand():
    # the random vector has the other task's norm tensor by tensor; with a zero other-task
    # vector it is zero and the merge is base + lam * tau_t
    torch.manual_seed(0)
    base = make_mlp(0, 5, 4, 2, 3)
    ends = [make_mlp(1, 5, 4, 2, 3), copy.deepcopy(base)]
    x, y = torch.randn(30, 5), torch.randint(0, 3, (30,))
    tr = [(x, y), (x, y)]
    lo, hi = [0.1, 0.1], [0.9, 0.9]
    got = C._random_vector_gain(base, ends, 1.0, tr, lo, hi, seed=3)
    acc = C.accuracy(C.apply_task_vectors(base, [C.task_vector(base, ends[0])], 1.0, ends[0]),
                     x, y)
    assert got[0] == pytest.approx((acc - 0.1) / 0.8)
    assert got == C._random_vector_gain(base, ends, 1.0, tr, lo, hi, seed=3)


def test_repair_norm_mode_is_data_free_and_sets_row_norms():
    a, b, x, _, _ = _repair_case(76, 77, data_seed=6)
    al = [0.0, 0.5, 1.0]
    s = C.repair_stack(a, b, al, x, mode="norm")
    other = C.repair_stack(a, b, al, 3 * x + 1, mode="norm")  # no statistics read from x
    for u, v in zip([*s.weights, *s.biases], [*other.weights, *other.biases]):
        torch.testing.assert_close(u, v)
    rows = lambda w, v: torch.cat([w, v.unsqueeze(-1)], -1).norm(dim=-1)
    (wa, ba), (wb, bb) = C.params(a), C.params(b)
    lin = C.path_stack(a, b, al)
    for l in range(len(wa) - 1):  # hidden layers: norms interpolated, directions kept
        for i, t in enumerate(al):
            want = (1 - t) * rows(wa[l], ba[l]) + t * rows(wb[l], bb[l])
            torch.testing.assert_close(rows(s.weights[l][i], s.biases[l][i]), want)
            k = s.weights[l][i][:, 0] / lin.weights[l][i][:, 0]
            torch.testing.assert_close(s.weights[l][i], k[:, None] * lin.weights[l][i])
    torch.testing.assert_close(s.weights[-1], lin.weights[-1])  # logits layer untouched
    for i, t in ((0, 0.0), (2, 1.0)):  # the endpoints stay as they are
        end = a if t == 0.0 else b
        torch.testing.assert_close(s.member(i)(x), end(x), atol=1e-5, rtol=1e-5)
    p = C.repair_path(a, b, x, x, torch.zeros(len(x), dtype=torch.long), al, mode="norm")
    q = C.evaluate_stack(s, al, x, torch.zeros(len(x), dtype=torch.long))
    np.testing.assert_allclose(p.loss, q.loss, rtol=1e-5)


def test_logit_interpolation_exact_bound():
    a, b = net_ref(78, depth=2), net_ref(79, depth=2)
    x, y = data(n=60, seed=7)
    r = C.logit_interpolation(a, b, x, y, 11)
    wa, wb = a(x).argmax(-1) != y, b(x).argmax(-1) != y
    assert r["either_wrong"] == pytest.approx(float((wa | wb).float().mean()))
    assert max(r["err_a"], r["err_b"]) <= r["either_wrong"] <= r["bound"] + 1e-12
    assert r["lerp_error"] <= r["either_wrong"] + 1e-12
