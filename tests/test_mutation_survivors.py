"""Tests written for the mutants that survived an independent mutation test of gtlib (issue 19,
section 6; the mutants and results are in the issue's report). Each test checks one behaviour the
book's numbers depend on against a reference the library cannot share a bug with: torch.optim run
member by member, torch.randperm drawn by hand, a hand computation, numpy, or a symmetry."""
import pytest
import torch

from gtlib.data import Dataset
from gtlib.engine import StackedOptimizer, StreamBatches
from gtlib.ensemble import BatchedMLP, train_ensemble, train_sequentially
from gtlib.train import TrainConfig, check_data, stop_reason


# --- gtlib.engine -----------------------------------------------------------------------------------
def test_members_of_one_group_keep_their_own_learning_rates():
    """Members with the same optimizer settings but different learning rates (one group inside the
    optimizer) each follow torch.optim with their own lr, also when some of them are frozen."""
    E, lrs = 3, [0.1, 0.02, 0.3]
    g = torch.Generator().manual_seed(0)
    for kind in ("sgd", "adam"):
        p = torch.randn(E, 4, generator=g, dtype=torch.float64).requires_grad_()
        ref = [p.detach()[e].clone().requires_grad_() for e in range(E)]
        opt = StackedOptimizer([p], kind, lrs, momentum=0.5 if kind == "sgd" else 0.0,
                               members=E)
        refs = [torch.optim.SGD([q], lr=lr, momentum=0.5) if kind == "sgd"
                else torch.optim.Adam([q], lr=lr) for q, lr in zip(ref, lrs)]
        for t in range(6):
            grad = torch.randn(E, 4, generator=g, dtype=torch.float64)
            active = None if t % 2 == 0 else torch.tensor([False, True, True])
            opt.step([grad], active)
            for e in range(E):
                if active is None or bool(active[e]):
                    ref[e].grad = grad[e].clone()
                    refs[e].step()
        for e in range(E):
            torch.testing.assert_close(p.detach()[e], ref[e].detach(), rtol=1e-12, atol=1e-14)


def test_stream_batches_drop_only_a_short_remainder():
    """With drop_remainder, a remainder of exactly batch_size indices is a batch, not dropped."""
    s = StreamBatches([4], 2, [7], drop_remainder=True)
    got = torch.cat([next(s)[0] for _ in range(3)])
    g = torch.Generator().manual_seed(7)
    p1, p2 = torch.randperm(4, generator=g), torch.randperm(4, generator=g)
    assert torch.equal(got, torch.cat([p1, p2[:2]]))


# --- gtlib.train ------------------------------------------------------------------------------------
def test_target_accuracy_is_met_at_exactly_the_target():
    """The rule is 'accuracy >= target': 2 of 4 rows right meets a target of 0.5 (by hand)."""
    logits = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    y = torch.tensor([0, 1, 1, 1])  # rows 0 and 1 right, rows 2 and 3 wrong
    assert stop_reason(logits, y, TrainConfig(target_train_acc=0.5)) == "target_train_acc"
    assert stop_reason(logits, y, TrainConfig(target_train_acc=0.75)) is None


def test_check_data_refuses_labels_on_another_device():
    """x and y on different devices are refused by name (the meta device stands in for a GPU)."""
    x = torch.zeros(3, 2)
    with pytest.raises(ValueError, match="same device"):
        check_data(x, torch.zeros(3, dtype=torch.int64, device="meta"))


# --- gtlib.ensemble ---------------------------------------------------------------------------------
def test_default_minibatch_seeds_are_cfg_seed_plus_member_index():
    """Without ``seeds``, member i draws its minibatches from seed ``cfg.seed + i``: the plain
    PyTorch loop (train_sequentially, torch.optim) run with those seeds gives the same nets."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(40, 5, generator=g, dtype=torch.float64)
    y = torch.randint(3, (40,), generator=g)
    cfg = TrainConfig(lr=0.1, momentum=0.5, batch_size=8, epochs=2, check_every=100, seed=5)
    b = BatchedMLP.init([5, 6], 5, 7, 1, 3).double()
    train_ensemble(b, x, y, cfg)
    ref = train_sequentially([5, 6], x, y, cfg, 5, 7, 1, 3)
    with torch.no_grad():
        for i, m in enumerate(ref):
            torch.testing.assert_close(b(x)[i], m(x), rtol=0, atol=1e-10)


# --- gtlib.data -------------------------------------------------------------------------------------
def test_subset_keeps_each_row_with_its_own_label():
    """``subset`` picks rows of x and y together: here each row's label is written in the row."""
    y = torch.tensor([0, 1, 2, 1, 0, 2], dtype=torch.int64)
    x = torch.stack([y.double(), torch.arange(6.0, dtype=torch.float64)], 1)
    ds = Dataset(x=x, y=y, x_test=x[:2], y_test=y[:2], num_classes=3)
    sub = ds.subset([4, 1, 5, 2])
    assert sub.x[:, 1].tolist() == [4.0, 1.0, 5.0, 2.0]
    assert sub.y.tolist() == sub.x[:, 0].long().tolist() == [0, 1, 2, 2]
