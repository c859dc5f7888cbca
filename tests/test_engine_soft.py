"""gtlib.soft's training loops, now compositions of gtlib.engine, against the loops they replaced
(tests/reference_loops_soft.py): one tiny configuration trained by both gives the same numbers."""
import numpy as np
import pytest
import torch

from gtlib import soft
from tests import reference_loops_soft as ref

# train_subspace: the old loop took its learning rate from torch's CosineAnnealingLR, which updates
# it recursively (lr_t from lr_{t-1}); the engine's schedule is the closed form
# lr (1 + cos(pi t / T)) / 2. The two float64 learning rates differ at 33 of 40 steps, by at most
# 3e-16 relative (1.6e-15 over 1500 steps). Adam's update rounds its step size to float32 (z's
# precision), so the parameters differ only when that rounding falls between the two values
# (about 1e-8 per step): measured, z is bitwise equal here (and at 300 steps, d = 200). Should
# the rounding split, one float32 ulp of a step (lr 0.05) moves z by ~4e-9, hence rtol 1e-6 and
# atol 1e-7.
RTOL, ATOL = 1e-6, 1e-7


def _data(n=60, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 40, generator=g), torch.randint(0, 10, (n,), generator=g)


def _net():
    return soft.SubspaceNet(40, 10, 24, channels=4, seed=3)


@pytest.mark.parametrize("batch_size", [None, 16, 60, 100])
def test_train_subspace_matches_the_old_loop(batch_size):
    # 60 points in batches of 16: three batches, then a fresh permutation (12 left over)
    x, y = _data()
    old, new = _net(), _net()
    ref.old_train_subspace(old, x, y, steps=40, lr=0.05, batch_size=batch_size, seed=5)
    soft.train_subspace(new, x, y, steps=40, lr=0.05, batch_size=batch_size, seed=5)
    assert not torch.equal(new.z, torch.zeros_like(new.z))
    torch.testing.assert_close(new.z.detach(), old.z.detach(), rtol=RTOL, atol=ATOL)
    with torch.no_grad():
        assert torch.equal(new(x).argmax(1), old(x).argmax(1))


def test_train_subspace_draws_the_old_minibatches():
    # at the first step the cosine factor is exactly 1 in both, so the arithmetic is the same and
    # the first minibatch (the first 16 of the seeded permutation) is checked bitwise
    x, y = _data()
    old, new = _net(), _net()
    ref.old_train_subspace(old, x, y, steps=1, lr=0.05, batch_size=16, seed=5)
    soft.train_subspace(new, x, y, steps=1, lr=0.05, batch_size=16, seed=5)
    assert torch.equal(new.z, old.z)


def test_tune_centres_is_exactly_the_old_loop():
    # the same Adam arithmetic on the same full batch: bitwise equal
    x, y = _data()
    net = _net()
    soft.train_subspace(net, x, y, steps=10, lr=0.05, seed=1)
    centres, sym = soft.quantize(net.z.detach().numpy(), 5)
    kept = centres.copy()
    old = ref.old_tune_centres(net, x, y, centres.copy(), sym, steps=12, lr=0.01)
    new = soft.tune_centres(net, x, y, centres, sym, steps=12, lr=0.01)
    # the old loop moved the caller's array in place (torch.as_tensor shares its memory); the new
    # one works on a copy
    assert np.array_equal(centres, kept)
    assert new.dtype == old.dtype == np.float32
    assert not np.array_equal(new, centres)
    assert np.array_equal(new, old)
    assert np.array_equal(soft.tune_centres(net, x, y, centres, sym, steps=0), centres)
