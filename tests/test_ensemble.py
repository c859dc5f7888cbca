import pytest
import torch

from gtlib.models import BatchedMLP, make_mlp
from gtlib.train import TrainConfig, train_ensemble, train_sequentially


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


# -- references the implementation cannot share a bug with -------------------------------------------
import math  # noqa: E402

import torch.nn.functional as F  # noqa: E402

from gtlib.train import ensemble_loss, loss_fn  # noqa: E402


@pytest.mark.parametrize("name", ["cross_entropy", "mse"])
def test_ensemble_loss_is_each_members_train_loss(name):
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(3, 7, 4, generator=g, dtype=torch.float64)
    y = torch.randint(4, (7,), generator=g)
    per_member_y = torch.randint(4, (3, 7), generator=g)
    got = ensemble_loss(name, logits, y)
    got2 = ensemble_loss(name, logits, per_member_y)
    for e in range(3):
        assert got[e].item() == pytest.approx(loss_fn(name, logits[e], y).item(), rel=1e-12)
        assert got2[e].item() == pytest.approx(loss_fn(name, logits[e], per_member_y[e]).item(),
                                               rel=1e-12)


def test_ensemble_mse_by_hand():
    logits = torch.tensor([[[1.0, 0.0, 2.0], [0.5, 0.5, 0.5]]], dtype=torch.float64)
    y = torch.tensor([2, 0])
    # point 0: (1-0)^2 + 0 + (2-1)^2 = 2; point 1: 0.25 + 0.25 + 0.25 = 0.75; mean over points
    assert ensemble_loss("mse", logits, y).item() == pytest.approx((2 + 0.75) / 2)


def _hand_step_member(params, x, y, lr, momentum, wd, bufs):
    """One full-batch SGD step of one stand-alone MLP, PyTorch's update written out."""
    h = x
    for l, (w, b) in enumerate(params):
        h = h @ w.T + b
        if l < len(params) - 1:
            h = torch.relu(h)
    loss = F.cross_entropy(h, y)
    grads = torch.autograd.grad(loss, [t for wb in params for t in wb])
    out = []
    with torch.no_grad():
        for i, (p, g) in enumerate(zip([t for wb in params for t in wb], grads)):
            d = g + wd * p
            bufs[i] = d.clone() if bufs[i] is None else momentum * bufs[i] + d
            out.append((p - lr * bufs[i]).requires_grad_())
    return [(out[2 * l], out[2 * l + 1]) for l in range(len(params))]


def test_train_ensemble_equals_hand_sgd_member_by_member():
    x, y = data(n=40)
    b = BatchedMLP.init([0, 1, 2], 6, 5, 1, 3).double()
    ref = [[(b.weights[l][e].detach().clone().requires_grad_(),
             b.biases[l][e].detach().clone().requires_grad_()) for l in range(2)] for e in range(3)]
    lr, mom, wd, steps = 0.1, 0.9, 0.03, 6
    train_ensemble(b, x, y, TrainConfig(lr=lr, momentum=mom, weight_decay=wd, batch_size=None,
                                        epochs=steps, check_every=100))
    for e in range(3):
        params, bufs = ref[e], [None] * 4
        for _ in range(steps):
            params = _hand_step_member(params, x, y, lr, mom, wd, bufs)
        for l in range(2):
            assert torch.allclose(b.weights[l][e], params[l][0], atol=1e-12, rtol=0)
            assert torch.allclose(b.biases[l][e], params[l][1], atol=1e-12, rtol=0)


def test_batched_features_are_post_activation_by_hand():
    b = BatchedMLP.init([0, 1], 4, 6, 2, 3, act="tanh")
    x = torch.randn(5, 4)
    feats = b.features(x)
    for e in range(2):
        h = x
        for l in range(3):
            z = h @ b.weights[l][e].T + b.biases[l][e]
            h = torch.tanh(z) if l < 2 else z
            assert torch.allclose(feats[l][e], h, atol=1e-6)


# -- bad input names the argument ----------------------------------------------------------------------
@pytest.mark.parametrize("seeds,err", [([], ValueError), (0, TypeError), ([1.5], TypeError),
                                       ([-1], ValueError), ([2**70], ValueError)])
def test_bad_seeds_are_named_seeds(seeds, err):
    with pytest.raises(err, match="seeds"):
        BatchedMLP.init(seeds, 4, 8, 1, 2)


def test_train_ensemble_refuses_bad_data():
    b = BatchedMLP.init([0, 1], 4, 8, 1, 2)
    x = torch.randn(5, 4)
    y = torch.zeros(5, dtype=torch.int64)
    with pytest.raises(ValueError, match="x must be a torch.Tensor .non-empty"):
        train_ensemble(b, x[:0], y[:0], TrainConfig())
    with pytest.raises(TypeError, match="integer class labels"):
        train_ensemble(b, x, y.float(), TrainConfig())
    with pytest.raises(ValueError, match=r"labels in \[0, 2\)"):
        train_ensemble(b, x, y + 2, TrainConfig())
    with pytest.raises(ValueError, match="finite"):
        train_ensemble(b, x * math.nan, y, TrainConfig())
    with pytest.raises(ValueError, match="name must be one of"):
        ensemble_loss("hinge", torch.zeros(1, 2, 2), torch.zeros(2, dtype=torch.int64))


def test_stop_step_is_the_first_check_that_met_the_rule():
    x, y = data(n=60)
    labels = torch.stack([y, torch.randint(3, (60,), generator=torch.Generator().manual_seed(9))])
    b = BatchedMLP.init([0, 1], 6, 32, 1, 3).double()
    h = train_ensemble(b, x, labels, TrainConfig(optimizer="adamw", lr=1e-2, batch_size=None,
                                                  epochs=400, target_train_acc=0.9, check_every=1))
    for e, stop in enumerate(h.probes["stop_step"]):
        first = next(s for s, acc in zip(h.step, h.train_acc) if acc[e] >= 0.9)
        assert stop == first
    with torch.no_grad():  # the stopped member keeps the weights it had at its stop step
        assert torch.all((b(x).argmax(-1) == labels).double().mean(-1) >= 0.9)


def test_more_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="seed"):
        make_mlp(-1, 3, 4, 1, 2)
    with pytest.raises(TypeError, match="seed"):
        make_mlp(1.5, 3, 4, 1, 2)
    with pytest.raises(ValueError, match="hidden_mask must hold only 0s and 1s"):
        BatchedMLP.init([0], 3, 4, 1, 2, hidden_mask=torch.full((1, 4), 0.5))
    with pytest.raises(TypeError, match="i must be an int"):
        BatchedMLP.init([0], 3, 4, 1, 2).member(0.5)
    with pytest.raises(ValueError, match=r"y must hold labels in \[0, 2\)"):
        ensemble_loss("mse", torch.randn(1, 6, 2), torch.full((6,), 3))


def test_member_of_a_masked_stack_is_the_same_function_for_any_activation():
    # a masked unit outputs act(0), which is 0.5 for the sigmoid: the next layer must ignore it
    mask = torch.tensor([[1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]])
    for act in ("sigmoid", "relu", "tanh"):
        model = BatchedMLP.init([0, 1], 5, 8, 2, 3, act=act, hidden_mask=mask)
        x = torch.randn(7, 5)
        for i in range(2):
            torch.testing.assert_close(model.member(i)(x), model(x)[i], rtol=1e-5, atol=1e-6)
