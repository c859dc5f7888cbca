"""gtlib.uniform's training loops, now compositions of gtlib.engine, against the loops they
replaced (tests/reference_loops_uniform.py): one tiny configuration trained by both must give the
same parameters and results.

The old loops updated by hand, ``p.sub_(lr * g)``; the engine's SGD (torch.optim.SGD's rule) calls
``p.add_(g, alpha=-lr)``, which the CPU kernel evaluates as one fused multiply-add, so the two
differ by one rounding of ``lr * g`` per step. With a power-of-two learning rate ``lr * g`` is
exact and the two are bitwise equal: those tests use ``torch.equal`` (but for one CNN member, see
there). At the chapter's lr = 0.1 they are compared to a tolerance (below).

One deliberate difference: the old subset trainer compared a float32 fraction of margins, taken
to a Python float, with ``margin_fraction`` in double precision, so exactly 18 of 20 points did
not meet ``margin_fraction=0.9`` (float32(0.9) < 0.9); :func:`gtlib.engine.stop_rule` compares in
float32 and counts them. The two agree whenever the float32 rounding of ``margin_fraction`` is not
below it (0.99, the chapter's, and 0.75 below), which the tests use.
"""

import pytest
import torch

from gtlib import uniform as U
from gtlib.models import BatchedMLP
from gtlib.train import TrainConfig
from tests import reference_loops_uniform as ref

# lr = 0.1: one float32 rounding of lr * g per step (a few 1e-9 each); measured over the runs below
# (430 and 380 steps, weights up to ~1.3) the largest gap is 6e-7 (subset trainer) and 9e-7 (CNN),
# so 1e-5 relative and 1e-6 absolute is tight
RTOL, ATOL = 1e-5, 1e-6


def _pool(n=48, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = ((x[:, 0] + 0.5 * x[:, 1] > 0).long() + (x[:, 2] > 1).long())   # 3 classes
    return x, y


def _both(sizes, cfg, bias, **kw):
    """The same ensemble trained by the old loop and by the new one."""
    x, y = _pool()
    models = [BatchedMLP.init([5 + i for i in range(len(sizes))], 6, 16, 2, 3, bias=bias)
              for _ in range(2)]
    seeds = [40 + i for i in range(len(sizes))]
    old = ref.old_train_on_subsets(models[0], x, y, sizes, cfg, seeds=seeds, **kw)
    new = U.train_on_subsets(models[1], x, y, sizes, cfg, seeds=seeds, **kw)
    return old, new, models[0], models[1]


@pytest.mark.parametrize("bias", [False, True])
def test_train_on_subsets_is_exactly_the_old_loop(bias):
    # margin rule, members stopping at different steps (so most steps update only some members:
    # the active_only path) and one member running out of epochs; lr a power of two: bitwise
    cfg = TrainConfig(lr=0.5, batch_size=5, margin_gamma=3.0, margin_fraction=0.75)
    old, new, m_old, m_new = _both([8, 20, 48], cfg, bias, check_every_epochs=0.5,
                                   max_epochs=20)
    assert (new.stop_step, new.met_rule, new.epochs) == (old.stop_step, old.met_rule,
                                                         old.epochs)
    assert len(set(old.stop_step)) == 3 and old.met_rule == [True, False, True]
    for p, q in zip(m_new.parameters(), m_old.parameters()):
        assert torch.equal(p.detach(), q.detach())


def test_train_on_subsets_accuracy_rule_matches_at_the_chapters_learning_rate():
    cfg = TrainConfig(lr=0.1, batch_size=4, target_train_acc=1.0)
    old, new, m_old, m_new = _both([8, 16, 40], cfg, True, max_epochs=80)
    assert (new.stop_step, new.met_rule, new.epochs) == (old.stop_step, old.met_rule,
                                                         old.epochs)
    assert len(set(old.stop_step)) > 1 and any(old.met_rule)
    for p, q in zip(m_new.parameters(), m_old.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=RTOL, atol=ATOL)


def _capture(monkeypatch):
    """Make the CNNs that both loops build keep themselves, so that the test can read them."""
    kept = []

    class Keeping(U.BatchedCNN1d):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            kept.append(self)

    monkeypatch.setattr(U, "BatchedCNN1d", Keeping)
    monkeypatch.setattr(ref, "BatchedCNN1d", Keeping)
    return kept


@pytest.mark.parametrize("lr", [0.25, 0.1])
def test_cnn_randomization_matches_the_old_loop(monkeypatch, lr):
    # 60 signals: the members reach 90% training accuracy at different checks, so steps with
    # frozen members (the loss computes only the others: active_only) are covered
    cfg = U.CNNRandomizationConfig(n_train=60, n_test=50, channels=8, hidden=32, lr=lr,
                                   batch_size=20, max_steps=600, check_every=20,
                                   target_train_acc=0.9, true_runs=2, random_runs=1)
    kept = _capture(monkeypatch)
    old = ref.old_cnn_randomization(cfg, seed=3)
    new = U.cnn_randomization(cfg, seed=3)
    assert len(kept) == 2
    assert new.stop_step == old.stop_step and new.reached_target == old.reached_target
    assert len(set(old.stop_step)) == 3 and all(old.reached_target)
    # members stopped while another was still training are the same arithmetic at lr = 0.25;
    # once one member is left, PyTorch computes its first convolution's weight gradient with the
    # ungrouped kernel (groups=1), which sums in another order (measured: 4e-7 on gradients of
    # size 0.6), so the last member, and every member at lr = 0.1, is compared to RTOL/ATOL
    last = old.stop_step.index(max(old.stop_step))
    exact = [lr == 0.25 and e != last for e in range(3)]
    for p, q in zip(kept[1].parameters(), kept[0].parameters()):
        for e in range(3):
            if exact[e]:
                assert torch.equal(p[e].detach(), q[e].detach())
            else:
                torch.testing.assert_close(p[e].detach(), q[e].detach(), rtol=RTOL, atol=ATOL)
    assert new.init_test_error == old.init_test_error
    for e in range(3):
        if exact[e]:
            assert (new.train_acc[e], new.test_error[e]) == (old.train_acc[e], old.test_error[e])
        else:   # at most one point whose arg-max flips
            assert new.train_acc[e] == pytest.approx(old.train_acc[e], abs=1.01 / 60)
            assert new.test_error[e] == pytest.approx(old.test_error[e], abs=1.01 / 50)
