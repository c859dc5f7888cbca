"""gtlib.connectivity's training loops on the engine give the numbers of the loops they replaced.

``fit`` and ``fit_bezier`` now compose gtlib.engine (StackedOptimizer, EpochBatches, engine.fit);
tests/reference_loops_connectivity.py keeps the loops as they were (torch.optim.SGD, hand-drawn
permutations, weight decay added to the gradients by hand). Each test trains a tiny configuration
with both and requires bitwise equality (``torch.equal``): the arithmetic is the same (the same
minibatches and draws of t in the same order, the same gradients, PyTorch's SGD formulas, and a
learning rate ``lr * lr_factor`` that is ``lr_at`` bit for bit), so no tolerance is needed.
"""
import pytest
import torch

from gtlib import connectivity as C
from gtlib.models import BatchedMLP
from tests.reference_loops_connectivity import old_fit, old_fit_bezier, old_lr_at


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


def test_schedule_factor_is_lr_at_bit_for_bit():
    for r in (C.Recipe(lr=0.05), C.Recipe(lr=0.3, warmup=0.0), C.Recipe(lr=0.07, warmup=0.33,
                                                                         start_factor=0.1)):
        for total in (1, 7, 60, 301):
            for step in range(total + 1):
                want = old_lr_at(r, step, total)
                assert r.lr_at(step, total) == want
                assert r.lr * r.lr_factor(step, total) == want


# float64 as well: there a learning rate one float64 ulp off would already show
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


def test_fit_one_training_set_per_member_without_momentum_or_bias():
    x, y = _data(n=20)
    X = torch.stack([x, x.flip(0)])
    Y = torch.stack([y, y.flip(0)])
    rec = C.Recipe(lr=0.2, momentum=0.0, batch_size=6, epochs=2, warmup=0.0)
    new, old = _both([0, 1], bias=False)
    C.fit(new, X, Y, rec, seeds=[0, 1], start_steps=[0, 2])
    old_fit(old, X, Y, rec, seeds=[0, 1], start_steps=[0, 2])
    _same_stack(new, old)


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
