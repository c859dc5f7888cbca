"""gtlib.contrastive's training loops, now compositions of gtlib.engine, against the loops they
replaced (tests/reference_loops_contrastive.py): one tiny configuration trained by both must give
the same parameters, histories and results."""
from dataclasses import replace

import numpy as np
import pytest
import torch

import gtlib.contrastive as C
from tests import reference_loops_contrastive as ref

# train_encoders: the old loop decayed by hand, W <- W * (1 - lr * wd) - lr * g; the engine's SGD
# (torch.optim.SGD's rule) computes W <- W - lr * (g + wd * W). The two round differently in
# float32 (a few ulps per step); over 40 steps the measured gap is below 3e-7 on weights of size
# ~0.3 (1e-6 on the top/second ratios), so 1e-5 relative and 1e-6 absolute is tight.
RTOL, ATOL = 1e-5, 1e-6


def _tiny_encoders():
    return replace(C.ContrastiveConfig.quick(), dim=8, n_features=4, n_minority=2, neurons=6,
                   batch=16, steps=40, log_every=10, bias_ramp=20, prune_every=10,
                   replicates=2, probe_samples=40)


@pytest.mark.parametrize("hard_mask", [False, True])
def test_train_encoders_matches_the_old_loop(hard_mask):
    cfg = _tiny_encoders()
    old = ref.old_train_encoders(cfg, [1.0, 4.0], [0.0, 0.5], seed=0, hard_mask=hard_mask)
    new = C.train_encoders(cfg, [1.0, 4.0], [0.0, 0.5], seed=0, hard_mask=hard_mask)
    torch.testing.assert_close(new.W, old.W, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(new.A, old.A, rtol=RTOL, atol=ATOL)
    assert torch.equal(new.M, old.M)
    assert (new.ratios, new.fractions, new.seeds) == (old.ratios, old.fractions, old.seeds)
    assert set(new.history) == set(old.history)
    # a check at step t sees the weights after t updates, as the old loop logged before update t
    assert new.history["step"].tolist() == old.history["step"].tolist() == [0, 10, 20, 30, 40]
    for k, v in old.history.items():
        assert new.history[k].shape == v.shape, k
        np.testing.assert_allclose(new.history[k], v, rtol=RTOL, atol=ATOL, err_msg=k)
    # before any update the two are the same numbers
    for k, v in old.history.items():
        assert np.array_equal(new.history[k][0], v[0]), k


def test_train_encoders_logs_the_last_step_off_the_grid():
    cfg = replace(_tiny_encoders(), steps=25, replicates=1)
    old = ref.old_train_encoders(cfg, [2.0], [0.5], seed=3)
    new = C.train_encoders(cfg, [2.0], [0.5], seed=3)
    assert new.history["step"].tolist() == old.history["step"].tolist() == [0, 10, 20, 25]
    np.testing.assert_allclose(new.history["proj"], old.history["proj"], rtol=RTOL, atol=ATOL)


def _capture(monkeypatch, module, name):
    """Replace ``module.name`` (an optimizer class) by a subclass that keeps its parameters."""
    base = getattr(module, name)
    kept = []

    class Keeping(base):
        def __init__(self, params, *args, **kwargs):
            params = list(params)
            kept.append(params)
            super().__init__(params, *args, **kwargs)

    monkeypatch.setattr(module, name, Keeping)
    return kept


def test_train_longtail_is_exactly_the_old_loop(monkeypatch):
    # same draw order from one generator (minibatch, then the two augmentations) and the same
    # arithmetic (torch.optim.SGD with momentum and coupled weight decay): bitwise equal
    cfg = replace(C.LongTailConfig.quick(), n_train=600, n_test=200, width=16, out_dim=8,
                  batch=24, steps=7, prune_every=3)
    old_params = _capture(monkeypatch, torch.optim, "SGD")
    old = ref.old_train_longtail(cfg, (0.0, 0.5), seed=1)
    new_params = _capture(monkeypatch, C, "StackedOptimizer")
    new = C.train_longtail(cfg, (0.0, 0.5), seed=1)
    assert len(old_params) == len(new_params) == 1
    for p, q in zip(new_params[0], old_params[0]):
        assert torch.equal(p.detach(), q.detach())
    assert set(new) == set(old) | {"masks"}  # the mask kinds are new; all else as before
    assert new["masks"] == ["magnitude", "magnitude"]
    for k, v in old.items():
        assert np.array_equal(np.asarray(new[k]), np.asarray(v)), k
