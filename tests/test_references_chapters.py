"""Chapter functions the book's results depend on, checked against references they cannot share a
bug with: symmetries, scipy, and the update rules written out by hand (issue 19, section 6)."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from gtlib import connectivity as C
from gtlib import uniform as U
from gtlib.models import BatchedMLP, make_mlp
from gtlib.train import TrainConfig, train_sequentially


def _blobs(n=48, d=5, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % classes
    x = torch.randn(n, d, generator=g, dtype=torch.float64) + 2 * F.one_hot(y, d).double()
    return x, y


# -- connectivity -----------------------------------------------------------------------------------
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


# -- uniform ----------------------------------------------------------------------------------------
def test_power_law_fit_matches_scipy():
    from scipy.stats import linregress

    rng = np.random.default_rng(0)
    x = np.array([500, 1000, 2000, 4000, 8000], dtype=float)
    y = 3.0 * x ** -0.4 * np.exp(0.05 * rng.normal(size=5))
    fit = U.power_law_fit(x, y)
    ref = linregress(np.log(x), np.log(y))
    assert fit.slope == pytest.approx(ref.slope, rel=1e-12)
    assert fit.intercept == pytest.approx(ref.intercept, rel=1e-12)
    assert fit.slope_se == pytest.approx(ref.stderr, rel=1e-10)


def test_train_on_subsets_is_gradient_descent_with_its_learning_rate():
    x, y = _blobs(n=40)
    sizes = [20, 40]
    model = BatchedMLP.init([3, 4], 5, 8, 1, 3, bias=False).double()
    init = [[w[e].detach().clone().requires_grad_() for w in model.weights] for e in range(2)]
    lr, epochs = 0.3, 3
    for e, n in enumerate(sizes):  # batch = the whole prefix: each step is a full-batch GD step
        cfg = TrainConfig(lr=lr, batch_size=n, margin_gamma=1e6)  # never met: runs max_epochs
        one = BatchedMLP([w[e:e + 1].detach() for w in model.weights], None).double()
        U.train_on_subsets(one, x, y, [n], cfg, max_epochs=epochs)
        ws = init[e]
        for _ in range(epochs):
            logits = torch.relu(x[:n] @ ws[0].T) @ ws[1].T
            grads = torch.autograd.grad(F.cross_entropy(logits, y[:n]), ws)
            ws = [(w - lr * g).detach().requires_grad_() for w, g in zip(ws, grads)]
        for got, want in zip(one.weights, ws):
            assert torch.allclose(got[0], want, atol=1e-10, rtol=0)


# -- preliminaries ----------------------------------------------------------------------------------
def test_train_models_uses_the_configs_learning_rate_and_weight_decay():
    from gtlib import preliminaries as prelim
    from gtlib.data import Dataset

    x, y = _blobs(n=60)
    x = x.float()
    ds = Dataset(x, y, x[:12], y[:12], num_classes=3)
    cfg = prelim.PrelimConfig(width=8, depth=1, seeds=2, epochs=3, batch_size=20, lr=0.03,
                              weight_decay=0.2)
    model, _ = prelim.train_models(ds, cfg, depth=1, seed=0)
    # the reference: each member alone, AdamW with the config's settings, the same seeds
    ref = train_sequentially([0, 1], x, y, TrainConfig(optimizer="adamw", lr=0.03, weight_decay=0.2,
                             batch_size=20, epochs=3, check_every=10**9), 5, 8, 1, 3)
    for e, m in enumerate(ref):
        assert torch.allclose(model(x)[e], m(x), atol=1e-5)
    assert not math.isclose(float(model.weights[0].norm()), float(
        BatchedMLP.init([0, 1], 5, 8, 1, 3).weights[0].norm()))
