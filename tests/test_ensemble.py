import pytest
import torch

from gtlib.ensemble import BatchedMLP, make_mlp, train_ensemble, train_sequentially
from gtlib.train import TrainConfig


def data(n=120, d=6, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=torch.float64), torch.randint(c, (n,), generator=g)


def test_members_match_their_mlps():
    models = [make_mlp(s, 6, 8, 2, 3) for s in range(3)]
    b = BatchedMLP.from_models(models)
    x = torch.randn(10, 6)
    out = b(x)
    for i, m in enumerate(models):
        assert torch.allclose(out[i], m(x), atol=1e-6)
        assert torch.allclose(b.member(i)(x), m(x), atol=1e-6)
    assert b.size == 3 and [f.shape for f in b.features(x)][0] == (3, 10, 8)


@pytest.mark.parametrize("opt,mom,wd", [("sgd", 0.9, 1e-3), ("adamw", 0.0, 1e-2)])
def test_batched_training_equals_sequential(opt, mom, wd):
    x, y = data()
    cfg = TrainConfig(optimizer=opt, lr=0.05 if opt == "sgd" else 1e-2, momentum=mom,
                      weight_decay=wd, batch_size=32, epochs=6, check_every=7)
    seeds = [3, 11, 5]
    b = BatchedMLP.init(seeds, 6, 8, 2, 3).double()
    train_ensemble(b, x, y, cfg, seeds=seeds)
    ref = train_sequentially(seeds, x, y, cfg, 6, 8, 2, 3)
    for i, m in enumerate(ref):
        assert torch.allclose(b(x)[i], m(x), atol=1e-10)


def test_hidden_mask_makes_narrower_nets():
    mask = torch.zeros(2, 8)
    mask[0, :3] = 1
    mask[1, :] = 1
    b = BatchedMLP.init([0, 1], 4, 8, 1, 2, hidden_mask=mask)
    x = torch.randn(5, 4)
    h = b.features(x)[0]
    assert torch.all(h[0, :, 3:] == 0)
    narrow = b.member(0)
    assert torch.allclose(narrow(x), b(x)[0], atol=1e-6)
    loss = b(x).sum()
    loss.backward()
    assert torch.all(b.weights[1].grad[0][:, 3:] == 0)  # masked units receive no gradient downstream


def test_per_member_labels_and_stop_rules():
    x, y = data(n=60)
    labels = torch.stack([y, torch.randint(3, (60,), generator=torch.Generator().manual_seed(9))])
    b = BatchedMLP.init([0, 1], 6, 64, 1, 3).double()
    h = train_ensemble(b, x, labels, TrainConfig(optimizer="adamw", lr=1e-2, batch_size=None, epochs=3000,
                                                  target_train_acc=1.0, check_every=10))
    stops = h.probes["stop_step"]
    assert all(s < 3000 for s in stops)
    with torch.no_grad():
        acc = (b(x).argmax(-1) == labels).double().mean(-1)
    assert torch.all(acc == 1.0)


def test_bad_input():
    b = BatchedMLP.init([0, 1], 4, 8, 1, 2)
    with pytest.raises(ValueError, match="x must have shape"):
        b(torch.randn(3, 2, 4))
    with pytest.raises(ValueError, match="seeds"):
        train_ensemble(b, torch.randn(5, 4), torch.zeros(5, dtype=torch.int64), TrainConfig(), seeds=[1])
    with pytest.raises(ValueError, match="y must have shape"):
        train_ensemble(b, torch.randn(5, 4), torch.zeros(4, dtype=torch.int64), TrainConfig())
    with pytest.raises(ValueError, match="hidden_mask"):
        BatchedMLP.init([0, 1], 4, 8, 1, 2, hidden_mask=torch.ones(3, 8))
    with pytest.raises(ValueError, match="i must lie"):
        b.member(5)
    with pytest.raises(ValueError, match="models"):
        BatchedMLP.from_models([])
