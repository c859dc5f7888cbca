import pytest
import torch

from gtlib.models import MLP
from gtlib.train import TrainConfig, accuracy, margins, total_steps, train


def blobs(n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    x = torch.randn(n, 2, generator=g) + 3 * (2 * y[:, None] - 1).float()
    return x, y


def test_margins_known_values():
    logits = torch.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 1.0]])
    assert torch.allclose(margins(logits, torch.tensor([0, 2])), torch.tensor([1.0, -4.0]))
    stacked = torch.stack([logits, -logits])
    assert margins(stacked, torch.tensor([0, 2])).shape == (2, 2)
    assert accuracy(logits, torch.tensor([0, 1])) == 1.0


def test_training_reduces_loss_and_records_probes():
    torch.manual_seed(0)
    x, y = blobs()
    m = MLP(2, 16, 1, 2)
    h = train(m, x, y, TrainConfig(lr=0.1, epochs=5, batch_size=20, check_every=5),
              probes={"w_norm": lambda model: model.layers[0].weight.norm().item()})
    assert h.loss[-1] < h.loss[0] and h.train_acc[-1] > 0.95
    assert len(h.probes["w_norm"]) == len(h.step) and h.steps_taken == total_steps(200, TrainConfig(epochs=5, batch_size=20))


def test_stop_rules():
    torch.manual_seed(0)
    x, y = blobs()
    h = train(MLP(2, 16, 1, 2), x, y, TrainConfig(lr=0.1, epochs=100, batch_size=None,
                                                 target_train_acc=0.95, check_every=1))
    assert h.stopped_by == "target_train_acc" and h.train_acc[-1] >= 0.95 and h.steps_taken < 100
    h = train(MLP(2, 16, 1, 2), x, y, TrainConfig(optimizer="adamw", lr=0.05, epochs=2000, batch_size=None,
                                                 margin_gamma=2.0, margin_fraction=0.9, check_every=5))
    assert h.stopped_by == "margin"


def test_full_batch_step_count():
    assert total_steps(1000, TrainConfig(batch_size=None, epochs=7)) == 7
    assert total_steps(1000, TrainConfig(batch_size=300, epochs=2)) == 8
    assert total_steps(1000, TrainConfig(batch_size=300, epochs=2, steps=5)) == 5


@pytest.mark.parametrize("kw,match", [({"optimizer": "lbfgs"}, "optimizer"), ({"lr": 0}, "lr"),
                                      ({"momentum": 1.0}, "momentum"), ({"batch_size": 0}, "batch_size"),
                                      ({"epochs": 0}, "epochs"), ({"target_train_acc": 1.5}, "target_train_acc"),
                                      ({"margin_fraction": -1}, "margin_fraction"), ({"loss": "hinge"}, "loss"),
                                      ({"margin_gamma": -1.0}, "margin_gamma")])
def test_bad_config(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        TrainConfig(**kw).validate()


def test_bad_data_shapes():
    with pytest.raises(ValueError, match="same n"):
        train(MLP(2, 4, 1, 2), torch.randn(5, 2), torch.zeros(4, dtype=torch.int64), TrainConfig())
    with pytest.raises(ValueError, match="logits"):
        margins(torch.randn(3), torch.zeros(3, dtype=torch.int64))


# -- bad input is refused at the boundary, naming the argument --------------------------------------
import math  # noqa: E402

from gtlib.train import batch_indices, loss_fn, make_optimizer  # noqa: E402


@pytest.mark.parametrize("kw,match", [({"lr": math.inf}, "TrainConfig.lr"),
                                      ({"lr": math.nan}, "TrainConfig.lr"),
                                      ({"weight_decay": math.nan}, "TrainConfig.weight_decay"),
                                      ({"weight_decay": math.inf}, "TrainConfig.weight_decay"),
                                      ({"margin_gamma": math.nan}, "TrainConfig.margin_gamma"),
                                      ({"momentum": math.nan}, "TrainConfig.momentum"),
                                      ({"optimizer": "adam"}, "TrainConfig.optimizer"),
                                      ({"batch_size": 0}, "TrainConfig.batch_size"),
                                      ({"batch_size": 2.0}, "TrainConfig.batch_size"),
                                      ({"seed": 2**70}, "TrainConfig.seed"),
                                      ({"check_every": 0}, "TrainConfig.check_every")])
def test_non_finite_and_unknown_settings_are_refused(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        TrainConfig(**kw)
    cfg = TrainConfig()
    with pytest.raises((ValueError, TypeError), match=match):
        setattr(cfg, *next(iter(kw.items())))  # nor can a valid config be made invalid


def test_make_optimizer_names_what_it_builds():
    p = [torch.nn.Parameter(torch.zeros(2))]
    assert type(make_optimizer(p, TrainConfig(optimizer="sgd"))) is torch.optim.SGD
    assert type(make_optimizer(p, TrainConfig(optimizer="adamw"))) is torch.optim.AdamW
    with pytest.raises(TypeError, match="cfg"):
        make_optimizer(p, {"optimizer": "adam"})


def test_empty_data_never_hangs():
    gen = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="n must be"):
        batch_indices(0, TrainConfig(), gen, "cpu")  # used to loop forever on an empty permutation
    with pytest.raises(ValueError, match="n must be"):
        total_steps(0, TrainConfig())
    with pytest.raises(ValueError, match="x must hold at least one row"):
        train(MLP(2, 4, 1, 2), torch.zeros(0, 2), torch.zeros(0, dtype=torch.int64), TrainConfig())


@pytest.mark.parametrize("make,err,match", [
    (lambda x, y: (x, y.float()), TypeError, "y must hold integer class labels"),
    (lambda x, y: (x, y + 2), ValueError, r"y must hold labels in \[0, 2\)"),
    (lambda x, y: (x, y - 1), ValueError, "y must hold labels"),
    (lambda x, y: (x.masked_fill(x > 2, float("nan")), y), ValueError, "x must hold finite"),
    (lambda x, y: (x.long(), y), TypeError, "x must be a floating-point"),
    (lambda x, y: (x, y[:, None]), ValueError, "y must have 20 labels"),
    (lambda x, y: (x, y[None].expand(2, 20)), ValueError, r"y must have shape \(20,\)")])
def test_bad_training_data_is_refused_before_torch_sees_it(make, err, match):
    x, y = blobs(20)
    bx, by = make(x, y)
    with pytest.raises(err, match=match):
        train(MLP(2, 4, 1, 2), bx, by, TrainConfig(epochs=1))


def test_batches_cover_every_point_once_per_epoch():
    gen = torch.Generator().manual_seed(0)
    it = batch_indices(10, TrainConfig(batch_size=4), gen, "cpu")
    epoch = [next(it) for _ in range(3)]
    assert [len(b) for b in epoch] == [4, 4, 2]
    assert sorted(torch.cat(epoch).tolist()) == list(range(10))


# -- references the implementation cannot share a bug with -------------------------------------------
def test_loss_fn_against_hand_computation():
    g = torch.Generator().manual_seed(1)
    logits, y = torch.randn(5, 3, generator=g, dtype=torch.float64), torch.tensor([0, 2, 1, 1, 0])
    mse = sum(sum((logits[i, c] - (1.0 if c == y[i] else 0.0)) ** 2 for c in range(3))
              for i in range(5)) / 5
    assert loss_fn("mse", logits, y).item() == pytest.approx(float(mse), rel=1e-12)
    ce = sum(-logits[i, y[i]] + torch.logsumexp(logits[i], 0) for i in range(5)) / 5
    assert loss_fn("cross_entropy", logits, y).item() == pytest.approx(float(ce), rel=1e-12)


def _hand_sgd(model, x, y, lr, momentum, wd, steps):
    """Full-batch SGD with momentum and coupled weight decay, written out (PyTorch's convention:
    g <- grad + wd p; b <- momentum b + g (b = g at the first step); p <- p - lr b)."""
    bufs = [None] * len(list(model.parameters()))
    for _ in range(steps):
        model.zero_grad()
        loss_fn("cross_entropy", model(x), y).backward()
        with torch.no_grad():
            for i, p in enumerate(model.parameters()):
                g = p.grad + wd * p
                bufs[i] = g.clone() if bufs[i] is None else momentum * bufs[i] + g
                p -= lr * bufs[i]


@pytest.mark.parametrize("momentum,wd", [(0.0, 0.1), (0.9, 0.05)])
def test_sgd_weight_decay_matches_the_update_rule_by_hand(momentum, wd):
    x, y = blobs(30)
    x = x.double()
    torch.manual_seed(3)
    a = MLP(2, 5, 1, 2).double()
    b = MLP(2, 5, 1, 2).double()
    b.load_state_dict(a.state_dict())
    train(a, x, y, TrainConfig(lr=0.05, momentum=momentum, weight_decay=wd, batch_size=None,
                               epochs=7, check_every=100))
    _hand_sgd(b, x, y, 0.05, momentum, wd, 7)
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.allclose(p, q, atol=1e-12, rtol=0)


def test_adamw_weight_decay_matches_the_update_rule_by_hand():
    x, y = blobs(30)
    x = x.double()
    torch.manual_seed(4)
    a = MLP(2, 5, 1, 2).double()
    b = MLP(2, 5, 1, 2).double()
    b.load_state_dict(a.state_dict())
    lr, wd, b1, b2, eps, steps = 0.01, 0.3, 0.9, 0.999, 1e-8, 5
    train(a, x, y, TrainConfig(optimizer="adamw", lr=lr, weight_decay=wd, batch_size=None,
                               epochs=steps, check_every=100))
    m = [torch.zeros_like(p) for p in b.parameters()]
    v = [torch.zeros_like(p) for p in b.parameters()]
    for t in range(1, steps + 1):  # decoupled decay (Loshchilov and Hutter): p <- p (1 - lr wd)
        b.zero_grad()
        loss_fn("cross_entropy", b(x), y).backward()
        with torch.no_grad():
            for i, p in enumerate(b.parameters()):
                p.mul_(1 - lr * wd)
                m[i] = b1 * m[i] + (1 - b1) * p.grad
                v[i] = b2 * v[i] + (1 - b2) * p.grad ** 2
                p -= lr * (m[i] / (1 - b1 ** t)) / ((v[i] / (1 - b2 ** t)).sqrt() + eps)
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.allclose(p, q, atol=1e-12, rtol=0)


def test_margin_stop_rule_against_hand_margins():
    logits = torch.tensor([[2.0, 0.0], [0.0, 0.5], [3.0, 2.5]])
    y = torch.tensor([0, 1, 0])
    # margins by hand: 2.0, 0.5, 0.5 (one third have margin >= 1, all have margin >= 0.5)
    from gtlib.train import stop_reason
    assert stop_reason(logits, y, TrainConfig(margin_gamma=0.5, margin_fraction=1.0)) == "margin"
    assert stop_reason(logits, y, TrainConfig(margin_gamma=1.0, margin_fraction=0.5)) is None
    assert stop_reason(logits, y, TrainConfig(margin_gamma=1.0, margin_fraction=0.3)) == "margin"


@pytest.mark.parametrize("fn", [accuracy, margins, lambda lg, y: loss_fn("mse", lg, y),
                                lambda lg, y: loss_fn("cross_entropy", lg, y)])
def test_metrics_refuse_bad_labels_naming_them(fn):
    logits = torch.randn(4, 3)
    with pytest.raises(ValueError, match=r"y must hold labels in \[0, 3\)"):
        fn(logits, torch.tensor([0, 1, 2, 3]))
    with pytest.raises(TypeError, match="y must hold integer"):
        fn(logits, torch.zeros(4))
    with pytest.raises(ValueError, match="y must have 4 labels"):
        fn(logits, torch.zeros(5, dtype=torch.int64))


def test_loss_fn_refuses_non_finite_logits_and_unknown_losses():
    with pytest.raises(ValueError, match="logits must hold finite"):
        loss_fn("mse", torch.full((2, 2), math.nan), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="name must be one of"):
        loss_fn("hinge", torch.zeros(2, 2), torch.tensor([0, 1]))


def test_train_refuses_bad_model_and_probes():
    x, y = blobs(10)
    with pytest.raises(TypeError, match="model"):
        train("net", x, y, TrainConfig(epochs=1))
    with pytest.raises(TypeError, match="probes"):
        train(MLP(2, 4, 1, 2), x, y, TrainConfig(epochs=1), probes={"a": 3})
